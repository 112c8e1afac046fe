package serve

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/serve/api"
	"github.com/kwdata/kwdata/serve/internal/servetest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// golden compares got with testdata/golden/<name>, or rewrites it with -update.
func golden(tb testing.TB, name string, got []byte) {
	tb.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			tb.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("cannot read golden file (run go test -update to create it): %v", err)
	}
	if string(got) != string(want) {
		tb.Errorf("answer differs from %s (run go test -update if the change is intended)\ngot:  %s\nwant: %s", path, got, want)
	}
}

func TestKeywordHandler(t *testing.T) {
	tests := []struct {
		name       string
		method     string // GET when empty
		target     string
		wantStatus int
		wantCode   string // problem code; empty for a 200
		golden     string // file under testdata/golden; empty for none
		check      func(t *testing.T, doc servetest.KeywordDoc)
	}{
		{name: "found", target: "/v1/keyword?q=running+shoes&country=us", wantStatus: 200, golden: "keyword_running_shoes.json",
			check: func(t *testing.T, d servetest.KeywordDoc) {
				if d.Keyword != "running shoes" || d.Country != "US" || kw.Deref(d.Volume) != 301000 || d.Updated != "2026-11-21" {
					t.Errorf("got %+v", d)
				}
			}},
		{name: "normalized", target: "/v1/keyword?q=" + "%20%20Running%20%20%20SHOES%20", wantStatus: 200,
			check: func(t *testing.T, d servetest.KeywordDoc) {
				if d.Keyword != "running shoes" {
					t.Errorf("keyword = %q, want running shoes", d.Keyword)
				}
			}},
		{name: "fullwidth NFKC", target: "/v1/keyword?q=%EF%BC%B2unning+shoes", wantStatus: 200},
		{name: "country default us", target: "/v1/keyword?q=running+shoes", wantStatus: 200,
			check: func(t *testing.T, d servetest.KeywordDoc) {
				if d.Country != "US" {
					t.Errorf("country = %q, want US", d.Country)
				}
			}},
		{name: "country empty means default", target: "/v1/keyword?q=running+shoes&country=", wantStatus: 200},
		{name: "country upper case", target: "/v1/keyword?q=laufschuhe&country=DE", wantStatus: 200},
		{name: "country mixed case", target: "/v1/keyword?country=dE&q=laufschuhe", wantStatus: 200,
			check: func(t *testing.T, d servetest.KeywordDoc) {
				if d.Country != "DE" || kw.Deref(d.Volume) != 74000 {
					t.Errorf("got %+v", d)
				}
			}},
		{name: "escaped parameter name", target: "/v1/keyword?%71=laufschuhe&country=de", wantStatus: 200},
		{name: "first q wins", target: "/v1/keyword?q=laufschuhe&q=nothing&country=de", wantStatus: 200},
		{name: "cpc rounds down below half", target: "/v1/keyword?q=running+shoes", wantStatus: 200,
			check: func(t *testing.T, d servetest.KeywordDoc) {
				if kw.Deref(d.CPC) != 1.23 || kw.Deref(d.Competition) != 0.87 {
					t.Errorf("cpc %v competition %v, want 1.23 0.87", kw.Deref(d.CPC), kw.Deref(d.Competition))
				}
			}},
		{name: "cpc rounds half up", target: "/v1/keyword?q=trail+shoes", wantStatus: 200, golden: "keyword_trail_shoes.json",
			check: func(t *testing.T, d servetest.KeywordDoc) {
				if kw.Deref(d.CPC) != 1.24 || kw.Deref(d.Competition) != 0.5 {
					t.Errorf("cpc %v competition %v, want 1.24 0.5", kw.Deref(d.CPC), kw.Deref(d.Competition))
				}
			}},
		{name: "cpc zero", target: "/v1/keyword?q=free+shoes", wantStatus: 200, golden: "keyword_free_shoes.json",
			check: func(t *testing.T, d servetest.KeywordDoc) {
				if d.CPC == nil || *d.CPC != 0 || d.Competition == nil || *d.Competition != 0 || len(d.Trend) != 0 || len(d.Related) != 0 || d.VolumeRange != "" {
					t.Errorf("got %+v", d)
				}
			}},
		{name: "cpc one cent and volume range", target: "/v1/keyword?q=cheap+shoes", wantStatus: 200, golden: "keyword_cheap_shoes.json",
			check: func(t *testing.T, d servetest.KeywordDoc) {
				if kw.Deref(d.CPC) != 0.01 || kw.Deref(d.Competition) != 0.29 || d.VolumeRange != "1K – 10K" {
					t.Errorf("got %+v", d)
				}
			}},
		{name: "trend sorted and trimmed", target: "/v1/keyword?q=shoe+sizes", wantStatus: 200, golden: "keyword_shoe_sizes.json",
			check: func(t *testing.T, d servetest.KeywordDoc) {
				if len(d.Trend) != 12 || d.Trend[0].Month != "2024-12" || d.Trend[11].Month != "2025-11" {
					t.Errorf("trend = %+v", d.Trend)
				}
				if kw.Deref(d.CPC) != 1 || kw.Deref(d.Competition) != 1 {
					t.Errorf("cpc %v competition %v, want 1 1", kw.Deref(d.CPC), kw.Deref(d.Competition))
				}
			}},
		{name: "no values", target: "/v1/keyword?q=airgun", wantStatus: 200, golden: "keyword_airgun.json",
			check: func(t *testing.T, d servetest.KeywordDoc) {
				if d.Volume != nil || d.CPC != nil || d.Competition != nil {
					t.Errorf("volume %v cpc %v competition %v, want null for each", d.Volume, d.CPC, d.Competition)
				}
				if len(d.Trend) != 2 || d.Trend[0].Volume != nil || d.Trend[1].Volume == nil || *d.Trend[1].Volume != 0 {
					t.Errorf("trend %+v, want a null month then a zero one", d.Trend)
				}
				if len(d.Related) != 1 || d.Related[0].Volume != nil || d.Related[0].CPC != nil {
					t.Errorf("related %+v, want one with null volume and cpc", d.Related)
				}
			}},
		{name: "tricky strings", target: "/v1/keyword?q=" + urlEscape(`SHOES "<b>" & MÁS`), wantStatus: 200, golden: "keyword_tricky.json"},
		{name: "HEAD", method: "HEAD", target: "/v1/keyword?q=running+shoes", wantStatus: 200},

		{name: "missing q", target: "/v1/keyword", wantStatus: 400, wantCode: CodeMissingQ, golden: "problem_missing_q.json"},
		{name: "empty q", target: "/v1/keyword?q=&country=us", wantStatus: 400, wantCode: CodeMissingQ},
		{name: "blank q", target: "/v1/keyword?q=+%09+", wantStatus: 400, wantCode: CodeMissingQ},
		{name: "q too many characters", target: "/v1/keyword?q=" + strings.Repeat("a", 81), wantStatus: 400, wantCode: CodeQTooLong, golden: "problem_q_too_long.json"},
		{name: "any number of words", target: "/v1/keyword?q=" + strings.Repeat("a+", 11), wantStatus: 404, wantCode: CodeKeywordNotFound},
		{name: "q huge", target: "/v1/keyword?q=" + strings.Repeat("+", 5000) + "a", wantStatus: 400, wantCode: CodeQTooLong},
		{name: "q at the limit", target: "/v1/keyword?q=" + strings.Repeat("a", 80), wantStatus: 404, wantCode: CodeKeywordNotFound},
		{name: "q invalid UTF-8", target: "/v1/keyword?q=%FF%FE", wantStatus: 400, wantCode: CodeInvalidQ, golden: "problem_invalid_q.json"},
		{name: "q bad escape", target: "/v1/keyword?q=100%zz", wantStatus: 400, wantCode: CodeInvalidQ},
		{name: "unsupported country", target: "/v1/keyword?q=running+shoes&country=xx", wantStatus: 400, wantCode: CodeUnsupportedCountry, golden: "problem_unsupported_country.json"},
		{name: "country bad escape", target: "/v1/keyword?q=running+shoes&country=%zz", wantStatus: 400, wantCode: CodeUnsupportedCountry},
		{name: "country three letters", target: "/v1/keyword?q=running+shoes&country=usa", wantStatus: 400, wantCode: CodeUnsupportedCountry},
		{name: "not found", target: "/v1/keyword?q=running+sandals", wantStatus: 404, wantCode: CodeKeywordNotFound, golden: "problem_keyword_not_found.json"},
		{name: "not found in other country", target: "/v1/keyword?q=laufschuhe&country=us", wantStatus: 404, wantCode: CodeKeywordNotFound},
		{name: "wrong method", method: "POST", target: "/v1/keyword?q=running+shoes", wantStatus: 405, wantCode: CodeMethodNotAllowed, golden: "problem_method_not_allowed.json"},
		{name: "unknown path", target: "/v1/keywordz?q=x", wantStatus: 404, wantCode: CodeNotFound, golden: "problem_not_found.json"},
		{name: "panic becomes 500", target: "/v1/keyword?q=panic+please", wantStatus: 500, wantCode: CodeInternal, golden: "problem_internal.json"},
	}
	ts := newTestServer(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := tt.method
			if method == "" {
				method = "GET"
			}
			w := do(t, ts, method, tt.target, nil)
			body := w.Body.Bytes()
			if w.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d; body %s", w.Code, tt.wantStatus, body)
			}
			if method == "HEAD" {
				if len(body) != 0 || w.Header().Get("Content-Length") == "" {
					t.Errorf("HEAD answered %d body bytes, Content-Length %q", len(body), w.Header().Get("Content-Length"))
				}
				return
			}
			if !json.Valid(body) {
				t.Fatalf("body is not JSON: %q", body)
			}
			if tt.wantCode != "" {
				checkProblem(t, w, tt.wantCode)
			} else {
				if ct := w.Header().Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type %q", ct)
				}
				var doc servetest.KeywordDoc
				if err := json.Unmarshal(body, &doc); err != nil {
					t.Fatal(err)
				}
				if len(doc.Trend) > 12 || len(doc.Related) > 10 {
					t.Errorf("%d trend months, %d related", len(doc.Trend), len(doc.Related))
				}
				if tt.check != nil {
					tt.check(t, doc)
				}
			}
			if tt.golden != "" {
				golden(t, tt.golden, body)
			}
		})
	}
	if !strings.Contains(ts.log.String(), "handler panicked") {
		t.Errorf("the panic was not logged; log:\n%s", ts.log.String())
	}
}

// checkProblem asserts that w is an RFC 9457 problem document with code.
func checkProblem(tb testing.TB, w *httptest.ResponseRecorder, code string) {
	tb.Helper()
	if ct := w.Header().Get("Content-Type"); ct != ProblemContentType {
		tb.Errorf("Content-Type %q, want %s", ct, ProblemContentType)
	}
	var p map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
		tb.Fatalf("problem is not JSON: %v", err)
	}
	if p["code"] != code || p["type"] != "/problems/"+code || p["status"] != float64(w.Code) ||
		p["title"] == "" || p["detail"] == "" || len(p) != 5 {
		tb.Errorf("problem %v, want code %s and status %d", p, code, w.Code)
	}
	if strings.Contains(w.Body.String(), "goroutine") || strings.Contains(w.Body.String(), ".go:") {
		tb.Errorf("problem leaks a stack trace: %s", w.Body)
	}
}

func urlEscape(s string) string {
	return strings.NewReplacer("%", "%25", "&", "%26", "+", "%2B", " ", "+", "#", "%23", `"`, "%22").Replace(s)
}

func TestKeywordRelatedAndTrend(t *testing.T) {
	ts := newTestServer(t)
	w := do(t, ts, "GET", "/v1/keyword?q=running+shoes", nil)
	var doc servetest.KeywordDoc
	if err := json.Unmarshal(w.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	full := ts.index.Entries[[2]string{"US", "running shoes"}]
	if len(doc.Related) != 10 {
		t.Fatalf("%d related, want 10", len(doc.Related))
	}
	for i, r := range doc.Related {
		want := full.Related[i]
		if r.Keyword != want.Keyword || kw.Deref(r.Volume) != kw.Deref(want.Volume) || r.Overlap != fmt.Sprintf("%d/20", want.Overlap) || r.SameIntent != want.SameIntent {
			t.Errorf("related[%d] = %+v, want %+v", i, r, want)
		}
	}
	if len(doc.Trend) != 12 {
		t.Fatalf("%d trend months, want 12", len(doc.Trend))
	}
	for i, m := range doc.Trend {
		want := full.Trend[len(full.Trend)-12+i]
		if m.Month != want.Month || kw.Deref(m.Volume) != kw.Deref(want.Searches) {
			t.Errorf("trend[%d] = %+v, want %+v", i, m, want)
		}
	}
	// Field order is the documented one (docs/API.md).
	order := []string{`"keyword"`, `"country"`, `"volume"`, `"cpc"`, `"competition"`, `"updated"`, `"intent"`, `"trend"`, `"related"`}
	body, last := w.Body.String(), -1
	for _, f := range order {
		i := strings.Index(body, f)
		if i <= last {
			t.Errorf("field %s out of order in %s", f, body)
		}
		last = i
	}
}

func TestIndexUnavailable(t *testing.T) {
	for _, tt := range []struct {
		name  string
		setup func(f *servetest.Index)
	}{
		{"no index loaded", func(f *servetest.Index) { f.OK = false }},
		{"index lost between Info and Lookup", func(f *servetest.Index) { f.Err = fmt.Errorf("cannot read: %w", kw.ErrNoIndex) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ts := newTestServer(t)
			tt.setup(ts.index)
			w := do(t, ts, "GET", "/v1/keyword?q=running+shoes", nil)
			if w.Code != 503 {
				t.Fatalf("status %d, want 503", w.Code)
			}
			checkProblem(t, w, CodeIndexUnavailable)
			if w.Header().Get("Retry-After") == "" {
				t.Error("503 without Retry-After")
			}
			if len(ts.access.committed) != 0 {
				t.Errorf("a 503 was counted: %v", ts.access.committed)
			}
			if tt.name == "no index loaded" {
				golden(t, "problem_index_unavailable.json", w.Body.Bytes())
			}
		})
	}
}

func TestLookupFailureIs500(t *testing.T) {
	ts := newTestServer(t)
	ts.index.Err = errors.New("disk on fire")
	w := do(t, ts, "GET", "/v1/keyword?q=running+shoes", nil)
	if w.Code != 500 {
		t.Fatalf("status %d, want 500", w.Code)
	}
	checkProblem(t, w, CodeInternal)
	if strings.Contains(w.Body.String(), "disk on fire") {
		t.Errorf("the cause reached the client: %s", w.Body)
	}
	if !strings.Contains(ts.log.String(), "disk on fire") {
		t.Errorf("the cause was not logged: %s", ts.log.String())
	}
	if ts.access.cancelled != 1 || len(ts.access.committed) != 0 {
		t.Errorf("cancelled %d committed %v, want the reservation cancelled", ts.access.cancelled, ts.access.committed)
	}
}

func TestAccessSeam(t *testing.T) {
	tests := []struct {
		name          string
		target        string
		header        http.Header
		admitErr      error
		wantStatus    int
		wantCode      string
		wantAdmits    int
		wantCommitted []int
		wantClient    string
		wantHeader    map[string]string
	}{
		{name: "200 counts", target: "/v1/keyword?q=running+shoes", wantStatus: 200, wantAdmits: 1, wantCommitted: []int{1},
			wantClient: "192.0.2.1", wantHeader: map[string]string{"RateLimit": `"daily";r=19;t=3600`, "RateLimit-Policy": `"daily";q=20;w=86400`}},
		{name: "404 counts", target: "/v1/keyword?q=nothing+here", wantStatus: 404, wantCode: CodeKeywordNotFound, wantAdmits: 1, wantCommitted: []int{1},
			wantClient: "192.0.2.1", wantHeader: map[string]string{"RateLimit": `"daily";r=19;t=3600`}},
		{name: "400 before admit even when spent", target: "/v1/keyword?q=", admitErr: &QuotaError{RetryAfter: time.Hour},
			wantStatus: 400, wantCode: CodeMissingQ, wantAdmits: 0},
		{name: "bad country before admit", target: "/v1/keyword?q=x&country=zz", admitErr: ErrInvalidKey,
			wantStatus: 400, wantCode: CodeUnsupportedCountry, wantAdmits: 0},
		{name: "invalid key", target: "/v1/keyword?q=running+shoes", header: http.Header{"Authorization": {"Bearer nope"}},
			admitErr: fmt.Errorf("cannot find key: %w", ErrInvalidKey), wantStatus: 401, wantCode: CodeInvalidKey, wantAdmits: 1,
			wantClient: "192.0.2.1", wantHeader: map[string]string{"WWW-Authenticate": `Bearer realm="kwdata", error="invalid_token"`}},
		{name: "quota exhausted", target: "/v1/keyword?q=running+shoes",
			admitErr:   &QuotaError{Policy: "daily", Quota: 20, Requested: 1, RetryAfter: 3599500 * time.Millisecond, Header: http.Header{"Ratelimit-Policy": {`"daily";q=20;w=86400`}}},
			wantStatus: 429, wantCode: CodeQuotaExhausted, wantAdmits: 1, wantClient: "192.0.2.1",
			wantHeader: map[string]string{"Retry-After": "3600", "RateLimit-Policy": `"daily";q=20;w=86400`}},
		{name: "access failure", target: "/v1/keyword?q=running+shoes", admitErr: errors.New("counter store closed"),
			wantStatus: 500, wantCode: CodeInternal, wantAdmits: 1, wantClient: "192.0.2.1"},
		{name: "trusted proxy", target: "/v1/keyword?q=running+shoes", header: http.Header{"X-Forwarded-For": {"203.0.113.9, 10.1.2.3"}},
			wantStatus: 200, wantAdmits: 1, wantCommitted: []int{1}, wantClient: "203.0.113.9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := newTestServer(t)
			ts.access.err = tt.admitErr
			r := httptest.NewRequest("GET", tt.target, nil)
			for k, v := range tt.header {
				r.Header[k] = v
			}
			if tt.name == "trusted proxy" {
				r.RemoteAddr = "10.9.9.9:4711"
			}
			w := httptest.NewRecorder()
			ts.ServeHTTP(w, r)
			if w.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", w.Code, tt.wantStatus, w.Body)
			}
			if tt.wantCode != "" {
				checkProblem(t, w, tt.wantCode)
			}
			if len(ts.access.admits) != tt.wantAdmits {
				t.Errorf("%d admits, want %d", len(ts.access.admits), tt.wantAdmits)
			}
			if fmt.Sprint(ts.access.committed) != fmt.Sprint(tt.wantCommitted) && !(len(tt.wantCommitted) == 0 && len(ts.access.committed) == 0) {
				t.Errorf("committed %v, want %v", ts.access.committed, tt.wantCommitted)
			}
			if tt.wantAdmits > 0 && tt.admitErr == nil && len(ts.access.committed)+ts.access.cancelled != 1 {
				t.Errorf("ticket ended %d times", len(ts.access.committed)+ts.access.cancelled)
			}
			if tt.wantClient != "" && (len(ts.access.clients) == 0 || ts.access.clients[0] != netip.MustParseAddr(tt.wantClient)) {
				t.Errorf("clients %v, want %s", ts.access.clients, tt.wantClient)
			}
			for k, v := range tt.wantHeader {
				if got := w.Header().Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
			if tt.wantCode == CodeQuotaExhausted {
				golden(t, "problem_quota_exhausted.json", w.Body.Bytes())
			}
			if tt.wantCode == CodeInvalidKey {
				golden(t, "problem_invalid_key.json", w.Body.Bytes())
			}
		})
	}
}

func TestCountries(t *testing.T) {
	ts := newTestServer(t)
	w := do(t, ts, "GET", "/v1/countries", nil)
	if w.Code != 200 || w.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, Content-Type %q", w.Code, w.Header().Get("Content-Type"))
	}
	golden(t, "countries.json", w.Body.Bytes())
	var doc api.CountriesJSON
	if err := json.Unmarshal(w.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Updated != "2026-11-21" || len(doc.Countries) != len(kw.Countries()) || len(doc.Countries) < 55 {
		t.Fatalf("updated %q, %d countries", doc.Updated, len(doc.Countries))
	}
	byCode := map[string]api.CountryJSON{}
	for _, c := range doc.Countries {
		byCode[c.Code] = c
	}
	for code, want := range map[string]api.CountryJSON{
		"US": {Code: "US", Name: "United States", Language: "en", GeoTarget: 2840, Keywords: 7},
		"DE": {Code: "DE", Name: "Germany", Language: "de", GeoTarget: 2276, Keywords: 1},
		"GB": {Code: "GB", Name: "United Kingdom", Language: "en", GeoTarget: 2826, Keywords: 0},
	} {
		if byCode[code] != want {
			t.Errorf("%s = %+v, want %+v", code, byCode[code], want)
		}
	}

	ts.index.OK = false
	w = do(t, ts, "GET", "/v1/countries", nil)
	if w.Code != 200 || strings.Contains(w.Body.String(), "updated") || strings.Contains(w.Body.String(), `"keywords":6`) {
		t.Errorf("without an index: status %d body %.200s", w.Code, w.Body)
	}
}

func TestProbes(t *testing.T) {
	ts := newTestServer(t)
	for _, tt := range []struct {
		target string
		ready  bool
		status int
		body   string
	}{
		{"/healthz", true, 200, "ok\n"},
		{"/healthz", false, 200, "ok\n"},
		{"/readyz", true, 200, "ok\n"},
		{"/readyz", false, 503, ""},
		{"/problems/missing_q", true, 200, "Missing keyword\n\nThe q parameter is absent or empty. Pass the keyword to look up, e.g. /v1/keyword?q=running+shoes.\n"},
		{"/problems/nonsense", true, 404, ""},
	} {
		ts.index.OK = tt.ready
		w := do(t, ts, "GET", tt.target, nil)
		if w.Code != tt.status {
			t.Errorf("%s ready=%v: status %d, want %d", tt.target, tt.ready, w.Code, tt.status)
			continue
		}
		switch {
		case tt.status == 503:
			checkProblem(t, w, CodeIndexUnavailable)
		case tt.status == 404:
			checkProblem(t, w, CodeNotFound)
		case w.Body.String() != tt.body:
			t.Errorf("%s: body %q, want %q", tt.target, w.Body, tt.body)
		}
	}
	w := do(t, ts, "DELETE", "/healthz", nil)
	if w.Code != 405 || w.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("DELETE /healthz: status %d Allow %q", w.Code, w.Header().Get("Allow"))
	}
	checkProblem(t, w, CodeMethodNotAllowed)
}

func TestMetrics(t *testing.T) {
	ts := newTestServer(t)
	do(t, ts, "GET", "/v1/keyword?q=running+shoes", nil)
	do(t, ts, "GET", "/v1/keyword?q=running+shoes", nil)
	do(t, ts, "GET", "/v1/keyword?q=", nil)
	do(t, ts, "GET", "/random/path/12345", nil)
	do(t, ts, "GET", "/problems/q_too_long", nil)
	w := do(t, ts, "GET", "/metrics", nil)
	if w.Code != 200 || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
		t.Fatalf("status %d Content-Type %q", w.Code, w.Header().Get("Content-Type"))
	}
	body := w.Body.String()
	dataDate := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC).Unix()
	for _, want := range []string{
		`kwdata_http_requests_total{code="200",route="/v1/keyword"} 2`,
		`kwdata_http_requests_total{code="400",route="/v1/keyword"} 1`,
		`kwdata_http_requests_total{code="404",route="unmatched"} 1`,
		`kwdata_http_requests_total{code="200",route="/problems/{code}"} 1`,
		// Latency is labelled by status class, not code.
		`kwdata_http_request_duration_seconds_count{route="/v1/keyword",status="2xx"} 2`,
		`kwdata_http_request_duration_seconds_count{route="/v1/keyword",status="4xx"} 1`,
		`kwdata_index_ready 1`,
		`kwdata_index_build_age_seconds 5400`,
		`go_goroutines `,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if got := metricValue(t, body, "kwdata_index_data_date_seconds"); got != float64(dataDate) {
		t.Errorf("kwdata_index_data_date_seconds = %v, want %d", got, dataDate)
	}
	if strings.Contains(body, "12345") {
		t.Error("a raw path became a label")
	}

	ts.index.OK = false
	body = do(t, ts, "GET", "/metrics", nil).Body.String()
	for _, want := range []string{"kwdata_index_ready 0\n", "kwdata_index_build_age_seconds 0\n", "kwdata_index_data_date_seconds 0\n"} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics without an index lack %q", want)
		}
	}
}

// metricValue returns the value of an unlabelled sample in a text exposition.
func metricValue(tb testing.TB, body, name string) float64 {
	tb.Helper()
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				tb.Fatalf("%s: %v", name, err)
			}
			return f
		}
	}
	tb.Fatalf("metrics lack %s", name)
	return 0
}

func TestAccessLog(t *testing.T) {
	ts := newTestServer(t)
	do(t, ts, "GET", "/v1/keyword?q=running+shoes", nil)
	log := ts.log.String()
	for _, want := range []string{"level=DEBUG", "msg=request", "route=/v1/keyword", "status=200", "client=192.0.2.1"} {
		if !strings.Contains(log, want) {
			t.Errorf("access log lacks %q: %s", want, log)
		}
	}
}

func TestNewWithoutIndexPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("New accepted a nil Index")
		}
	}()
	New(Options{})
}
