package serve

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/serve/internal/servetest"
	"github.com/kwdata/kwdata/serve/web"
)

// FuzzKeywordQuery sends arbitrary q and country values, both properly
// escaped and raw, and checks that the answer is never a 500 and always
// valid JSON of the right kind.
func FuzzKeywordQuery(f *testing.F) {
	for _, seed := range [][2]string{
		{"running shoes", "us"}, {"  Running   SHOES ", "US"}, {"laufschuhe", "dE"}, {"", ""},
		{"%", "%zz"}, {"\xff\xfe", "us"}, {strings.Repeat("a ", 11), "gb"}, {strings.Repeat("x", 81), "xx"},
		{"Ｒｕｎｎｉｎｇ", "us"}, {`shoes "<b>" & más`, "us"}, {"a&q=b", "us&country=de"}, {"\u2028", "\x00"},
		{"ﬁ", " us "}, {"q=1;2", "u%53"}, {"a\x00b", "u\u017f"}, {"\x1b[31m", "\u0131d"},
	} {
		f.Add(seed[0], seed[1])
	}
	ts := newTestServer(f)
	ts.index.PanicOn = ""
	ts.Server.Log = slog.New(slog.DiscardHandler) // millions of access-log lines help nobody
	f.Fuzz(func(t *testing.T, q, country string) {
		for _, raw := range []string{
			"q=" + url.QueryEscape(q) + "&country=" + url.QueryEscape(country),
			"q=" + q + "&country=" + country,
		} {
			r := httptest.NewRequest("GET", "/v1/keyword", nil)
			r.URL.RawQuery = raw
			w := httptest.NewRecorder()
			ts.ServeHTTP(w, r)
			body := w.Body.Bytes()
			if !json.Valid(body) {
				t.Fatalf("%q: body is not JSON: %q", raw, body)
			}
			switch w.Code {
			case http.StatusOK:
				var doc servetest.KeywordDoc
				if err := json.Unmarshal(body, &doc); err != nil {
					t.Fatal(err)
				}
				values, _ := url.ParseQuery(raw)
				if want, err := kw.NormalizeKeyword(values.Get("q")); err == nil && doc.Keyword != want {
					t.Fatalf("%q: answered %q, want %q", raw, doc.Keyword, want)
				}
			case http.StatusBadRequest, http.StatusNotFound:
				values, _ := url.ParseQuery(raw)
				if n, err := kw.NormalizeKeyword(values.Get("q")); w.Code == http.StatusNotFound && err == nil && web.Unindexable(n) {
					t.Fatalf("%q: looked up a keyword no index can hold", raw)
				}
				var p web.ProblemDoc
				if err := json.Unmarshal(body, &p); err != nil || p.Status != w.Code || p.Code == "" {
					t.Fatalf("%q: bad problem %s (%v)", raw, body, err)
				}
			default:
				t.Fatalf("%q: status %d: %s", raw, w.Code, body)
			}
		}
	})
}
