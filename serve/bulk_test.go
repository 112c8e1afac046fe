package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/serve/api"
	"github.com/kwdata/kwdata/serve/internal/servetest"
	"github.com/kwdata/kwdata/serve/web"
)

// bulkDoc is the answer of POST /v1/keywords as encoding/json sees it.
type bulkDoc struct {
	Country string `json:"country"`
	Updated string `json:"updated"`
	Results []struct {
		Query  string                `json:"query"`
		Status int                   `json:"status"`
		Record *servetest.KeywordDoc `json:"record"`
		Error  *web.ProblemDoc       `json:"error"`
	} `json:"results"`
}

func post(tb testing.TB, h http.Handler, target, body string, header http.Header) *httptest.ResponseRecorder {
	tb.Helper()
	r := httptest.NewRequest("POST", target, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		r.Header[k] = v
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestBulk(t *testing.T) {
	tests := []struct {
		name          string
		body          string
		setup         func(ds *demoServer)
		wantStatus    int
		wantCode      string // problem code of a refused request
		wantStatuses  string // per-keyword statuses, e.g. "[200,404]"
		wantAdmits    string
		wantCommitted string
		golden        string
	}{
		{name: "mixed", body: `{"country":"us","keywords":["running shoes","Running  Shoes","running sandals","","` + strings.Repeat("a", 81) + `","\u0000"]}`,
			wantStatus: 200, wantStatuses: "[200,200,404,400,400,400]", wantAdmits: "[3]", wantCommitted: "[3]", golden: "bulk_mixed.json"},
		// encoding/json turns invalid UTF-8 and lone surrogates into
		// U+FFFD: each such keyword is its own invalid_q, never looked up.
		{name: "undecodable keywords", body: "{\"keywords\":[\"running shoes\",\"a\xffb\",\"\\ud800x\",\"\\u001b[31m\",\"a\\u0000b\",\"\\ufffd\"]}",
			wantStatus: 200, wantStatuses: "[200,400,400,400,400,400]", wantAdmits: "[1]", wantCommitted: "[1]"},
		{name: "country default and case", body: `{"keywords":["running shoe"]}`, wantStatus: 200, wantStatuses: "[200]", wantAdmits: "[1]", wantCommitted: "[1]"},
		{name: "other country", body: `{"country":"DE","keywords":["laufschuhe","running shoes"]}`, wantStatus: 200, wantStatuses: "[200,404]", wantAdmits: "[2]", wantCommitted: "[2]"},
		{name: "only invalid keywords", body: `{"keywords":["", "  "]}`, wantStatus: 200, wantStatuses: "[400,400]", wantAdmits: "[0]", wantCommitted: "[]"},
		{name: "only invalid keywords, invalid key", body: `{"keywords":["", "  "]}`, wantStatus: 401, wantCode: CodeInvalidKey,
			setup: func(ds *demoServer) { ds.access.err = ErrInvalidKey }, wantAdmits: "[0]", wantCommitted: "[]"},
		{name: "exactly 100", body: keywordsBody(100), wantStatus: 200, wantAdmits: "[100]", wantCommitted: "[100]"},
		{name: "101", body: keywordsBody(101), wantStatus: 400, wantCode: CodeTooManyKeywords, wantAdmits: "[]"},
		{name: "empty list", body: `{"keywords":[]}`, wantStatus: 400, wantCode: CodeInvalidBody, wantAdmits: "[]"},
		{name: "no list", body: `{"country":"us"}`, wantStatus: 400, wantCode: CodeInvalidBody},
		{name: "unknown field", body: `{"country":"us","keyword":["x"]}`, wantStatus: 400, wantCode: CodeInvalidBody, golden: "bulk_unknown_field.json"},
		{name: "malformed", body: `{"keywords":["x"`, wantStatus: 400, wantCode: CodeInvalidBody},
		{name: "not JSON", body: `keywords=x`, wantStatus: 400, wantCode: CodeInvalidBody},
		{name: "two values", body: `{"keywords":["x"]} {}`, wantStatus: 400, wantCode: CodeInvalidBody},
		{name: "empty body", body: ``, wantStatus: 400, wantCode: CodeInvalidBody},
		{name: "keyword not a string", body: `{"keywords":[1]}`, wantStatus: 400, wantCode: CodeInvalidBody},
		{name: "unsupported country", body: `{"country":"xx","keywords":["x"]}`, wantStatus: 400, wantCode: CodeUnsupportedCountry},
		{name: "too large", body: `{"keywords":["` + strings.Repeat("a", 1<<20) + `"]}`, wantStatus: 413, wantCode: CodeBodyTooLarge},
		{name: "quota cannot cover", body: `{"keywords":["running shoes","x","y"]}`, wantStatus: 429, wantCode: CodeQuotaExhausted,
			setup: func(ds *demoServer) {
				ds.access.err = &QuotaError{Policy: "daily", Quota: 20, Remaining: 2, Requested: 3, RetryAfter: time.Hour,
					Header: http.Header{"Ratelimit": {`"daily";r=2;t=3600`}}}
			}, wantAdmits: "[3]", wantCommitted: "[]"},
		{name: "quota used up", body: `{"keywords":["running shoes"]}`, wantStatus: 429, wantCode: CodeQuotaExhausted,
			setup: func(ds *demoServer) {
				ds.access.err = &QuotaError{Policy: "monthly", Quota: 500, Requested: 1, RetryAfter: 50 * time.Hour}
			}, wantAdmits: "[1]"},
		{name: "invalid key", body: `{"keywords":["running shoes"]}`, wantStatus: 401, wantCode: CodeInvalidKey,
			setup: func(ds *demoServer) { ds.access.err = ErrInvalidKey }},
		{name: "no index", body: `{"keywords":["running shoes"]}`, wantStatus: 503, wantCode: CodeIndexUnavailable,
			setup: func(ds *demoServer) { ds.index.OK = false }, wantAdmits: "[]"},
		{name: "lookup failure is per keyword and not counted", body: `{"keywords":["running shoes","trail running shoes"]}`,
			setup:      func(ds *demoServer) { ds.index.Err = errors.New("disk on fire") },
			wantStatus: 200, wantStatuses: "[500,500]", wantAdmits: "[2]", wantCommitted: "[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := newDemoServer(t)
			if tt.setup != nil {
				tt.setup(ds)
			}
			w := post(t, ds, "/v1/keywords", tt.body, nil)
			if w.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d: %.300s", w.Code, tt.wantStatus, w.Body)
			}
			if strings.Contains(w.Body.String(), "disk on fire") {
				t.Errorf("the cause reached the client")
			}
			if tt.wantCode != "" {
				checkProblem(t, w, tt.wantCode)
			} else {
				var doc bulkDoc
				if err := json.Unmarshal(w.Body.Bytes(), &doc); err != nil {
					t.Fatalf("answer is not JSON: %v", err)
				}
				var statuses []int
				for _, r := range doc.Results {
					statuses = append(statuses, r.Status)
					if (r.Status == 200) != (r.Record != nil) || (r.Status != 200) != (r.Error != nil) {
						t.Errorf("result %+v has the wrong parts", r)
					}
					if r.Error != nil && (r.Error.Status != r.Status || r.Error.Code == "" || r.Error.Detail == "") {
						t.Errorf("per-keyword problem %+v", r.Error)
					}
				}
				if tt.wantStatuses != "" && mustJSON(statuses) != tt.wantStatuses {
					t.Errorf("statuses %v, want %s", statuses, tt.wantStatuses)
				}
				if doc.Updated != "2026-11-21" {
					t.Errorf("updated %q", doc.Updated)
				}
			}
			if tt.wantAdmits != "" && fmt.Sprint(ds.access.admits) != strings.ReplaceAll(tt.wantAdmits, ",", " ") {
				t.Errorf("admits %v, want %s", ds.access.admits, tt.wantAdmits)
			}
			if tt.wantCommitted != "" && fmt.Sprint(ds.access.committed) != strings.ReplaceAll(tt.wantCommitted, ",", " ") {
				t.Errorf("committed %v, want %s", ds.access.committed, tt.wantCommitted)
			}
			if tt.golden != "" {
				golden(t, tt.golden, w.Body.Bytes())
			}
			if tt.name == "quota cannot cover" {
				if !strings.Contains(w.Body.String(), "needs 3 lookups but the daily allowance of 20 lookups for this address has 2 left; send at most 2 keywords, or wait: it renews in 1h.") ||
					w.Header().Get("Retry-After") != "3600" {
					t.Errorf("refusal %s, Retry-After %q", w.Body, w.Header().Get("Retry-After"))
				}
			}
			if tt.name == "quota used up" && !strings.Contains(w.Body.String(), "This API key's monthly allowance of 500 lookups is used up; it renews in 2d 2h.") {
				t.Errorf("refusal %s", w.Body)
			}
		})
	}
}

func TestBulkResultsInRequestOrder(t *testing.T) {
	ds := newDemoServer(t)
	var kws []string
	for _, r := range servetest.DemoRelated {
		kws = append(kws, strings.ToUpper(r.Keyword))
	}
	body, _ := json.Marshal(api.BulkRequest{Keywords: kws})
	w := post(t, ds, "/v1/keywords", string(body), nil)
	var doc bulkDoc
	if err := json.Unmarshal(w.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Results) != len(kws) {
		t.Fatalf("%d results for %d keywords", len(doc.Results), len(kws))
	}
	for i, r := range doc.Results {
		if r.Query != kws[i] || r.Record == nil || r.Record.Keyword != servetest.DemoRelated[i].Keyword || kw.Deref(r.Record.Volume) != *servetest.DemoRelated[i].Volume {
			t.Errorf("result %d = %+v, want %s", i, r, servetest.DemoRelated[i].Keyword)
		}
	}
	// A record inside a bulk answer is the single lookup's document.
	single := do(t, ds, "GET", "/v1/keyword?q=running+shoe", nil).Body.String()
	if !strings.Contains(w.Body.String(), strings.TrimSuffix(single, "\n")) {
		t.Error("the bulk record differs from GET /v1/keyword")
	}
	if w.Header().Get("RateLimit") == "" {
		t.Error("a counted bulk answer lacks RateLimit")
	}
}

// FuzzBulkBody posts arbitrary bodies to POST /v1/keywords: never a 500,
// never a panic, always JSON, and never more lookups counted than
// reserved.
func FuzzBulkBody(f *testing.F) {
	for _, seed := range []string{
		`{"country":"us","keywords":["running shoes","x"]}`, `{"keywords":[""]}`, `{"keywords":[]}`,
		`{"country":"de","keywords":["laufschuhe"]}`, `{"country":"","keywords":["\u0000","\ud800"]}`,
		`{"keywords":null}`, `{"keywords":["a"],"keywords":["b"]}`, `[]`, `{}`, `null`, `{"country":1}`,
		`{"keywords":["a"]}garbage`, "\xff", keywordsBody(101), `{"keywords":["` + strings.Repeat("a ", 50) + `"]}`,
	} {
		f.Add(seed)
	}
	ds := newDemoServer(f)
	ds.Server.Log = slog.New(slog.DiscardHandler)
	f.Fuzz(func(t *testing.T, body string) {
		ds.access.mu.Lock()
		ds.access.admits, ds.access.committed = ds.access.admits[:0], ds.access.committed[:0]
		ds.access.mu.Unlock()
		w := post(t, ds, "/v1/keywords", body, nil)
		if w.Code >= 500 {
			t.Fatalf("status %d for %q: %s", w.Code, body, w.Body)
		}
		if !json.Valid(w.Body.Bytes()) {
			t.Fatalf("answer to %q is not JSON: %q", body, w.Body)
		}
		if w.Code == 200 {
			var doc bulkDoc
			if err := json.Unmarshal(w.Body.Bytes(), &doc); err != nil || len(doc.Results) == 0 || len(doc.Results) > MaxBulkKeywords {
				t.Fatalf("answer to %q: %v, %d results", body, err, len(doc.Results))
			}
		}
		ds.access.mu.Lock()
		defer ds.access.mu.Unlock()
		if len(ds.access.admits) > 0 && len(ds.access.committed) > 0 &&
			ds.access.committed[len(ds.access.committed)-1] > ds.access.admits[len(ds.access.admits)-1] {
			t.Fatalf("counted more than reserved for %q", body)
		}
	})
}
