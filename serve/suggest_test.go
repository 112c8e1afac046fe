package serve

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestSuggestHandler(t *testing.T) {
	ds := newDemoServer(t)
	w := do(t, ds, "GET", "/v1/suggest?q=Running+Shoes+&country=us", nil)
	if w.Code != 200 {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	var d struct {
		Q           string   `json:"q"`
		Country     string   `json:"country"`
		Suggestions []string `json:"suggestions"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &d); err != nil {
		t.Fatal(err)
	}
	if d.Q != "running shoes" || d.Country != "US" || strings.Join(d.Suggestions, ",") != "running shoes,running shoes for women,running shoes sale,best running shoes,mens running shoes,trail running shoes,nike running shoes,cushioned running shoes,wide running shoes" {
		t.Errorf("answer %+v", d)
	}
	// Nothing matches: an empty list, not a 404.
	if w := do(t, ds, "GET", "/v1/suggest?q=zzz", nil); w.Code != 200 || !strings.Contains(w.Body.String(), `"suggestions":[]`) {
		t.Errorf("no match: %d %s", w.Code, w.Body)
	}
	for _, tt := range []struct{ target, code string }{{"/v1/suggest", CodeMissingQ}, {"/v1/suggest?q=a&country=zz", CodeUnsupportedCountry}, {"/v1/suggest?q=a&country=fr", CodeCountryNotIndexed}} {
		if w := do(t, ds, "GET", tt.target, nil); !strings.Contains(w.Body.String(), `"code":"`+tt.code+`"`) {
			t.Errorf("%s: %d %s", tt.target, w.Code, w.Body)
		}
	}
	if len(ds.access.admits) != 0 {
		t.Errorf("suggestions were admitted as lookups: %v", ds.access.admits)
	}
}

// TestSuggestRateLimit: the demo server's clock stands still, so a
// client's bucket never refills: 10 answers, then 429 with Retry-After;
// another client (or another IPv6 /64) has its own bucket, the same /64
// shares one.
func TestSuggestRateLimit(t *testing.T) {
	ds := newDemoServer(t)
	send := func(remote string) int {
		t.Helper()
		r := httptest.NewRequest("GET", "/v1/suggest?q=run", nil)
		r.RemoteAddr = remote
		w := httptest.NewRecorder()
		ds.ServeHTTP(w, r)
		if w.Code == 429 {
			if w.Header().Get("Retry-After") == "" || !strings.Contains(w.Body.String(), `"code":"rate_limited"`) || !strings.Contains(w.Body.String(), "retry in 1 second.") {
				t.Errorf("429 without Retry-After or code: %v %s", w.Header(), w.Body)
			}
		}
		return w.Code
	}
	for i := range 10 {
		if c := send("192.0.2.1:1000"); c != 200 {
			t.Fatalf("request %d: status %d", i, c)
		}
	}
	if c := send("192.0.2.1:2000"); c != 429 {
		t.Fatalf("11th request: status %d, want 429", c)
	}
	if c := send("192.0.2.2:1000"); c != 200 {
		t.Errorf("another client: status %d", c)
	}
	for range 10 {
		send("[2001:db8:1:2::1]:1000")
	}
	if c := send("[2001:db8:1:2::ffff]:1000"); c != 429 {
		t.Errorf("same /64: status %d, want 429", c)
	}
	if c := send("[2001:db8:1:3::1]:1000"); c != 200 {
		t.Errorf("another /64: status %d", c)
	}
	if len(ds.access.admits) != 0 {
		t.Errorf("suggestions were admitted as lookups: %v", ds.access.admits)
	}
}

func TestDidYouMean(t *testing.T) {
	ds := newDemoServer(t)
	w := do(t, ds, "GET", "/v1/keyword?q=running+sandals", nil)
	if w.Code != 404 || !strings.Contains(w.Body.String(), `Did you mean \"running shoes\", \"running shoe\" or \"running sneakers\"?`) {
		t.Errorf("API 404: %s", w.Body)
	}
	w = do(t, ds, "GET", "/keyword?q=running+sandals", nil)
	if !strings.Contains(w.Body.String(), `<p id="did-you-mean">Did you mean <a href="/keyword?q=running&#43;shoes&amp;country=us">running shoes</a>, <a href="/keyword?q=running&#43;shoe&amp;country=us">running shoe</a>`) {
		t.Errorf("page 404 offers nothing: %s", w.Body)
	}
	w = mcpPost(t, ds, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"keyword_lookup","arguments":{"keyword":"running sandals"}}}`, nil)
	if !strings.Contains(w.Body.String(), `Did you mean \"running shoes\"`) {
		t.Errorf("MCP 404 offers nothing: %s", w.Body)
	}
	// Nothing close: the detail is the plain 404's. Sharing only a first
	// letter or two ("ru" of "rugby balls") is not close.
	for _, q := range []string{"zzzz", "rugby+balls", "rx"} {
		w = do(t, ds, "GET", "/v1/keyword?q="+q, nil)
		if w.Code != 404 || strings.Contains(w.Body.String(), "Did you mean") {
			t.Errorf("%s: no suggestion wanted: %s", q, w.Body)
		}
	}
	// Suggestions are not lookups: six 404s, six counted lookups.
	if sprint(ds.access.committed) != "[1 1 1 1 1 1]" {
		t.Errorf("committed %v", ds.access.committed)
	}
}

func TestSuggestScript(t *testing.T) {
	ds := newDemoServer(t)
	w := do(t, ds, "GET", "/suggest.js", nil)
	if w.Code != 200 || w.Header().Get("Content-Type") != "text/javascript; charset=utf-8" || !strings.Contains(w.Body.String(), "/v1/suggest?q=") {
		t.Errorf("GET /suggest.js: %d %v", w.Code, w.Header())
	}
	page := do(t, ds, "GET", "/keyword?q=running+shoes", nil)
	if !strings.Contains(page.Body.String(), `<script src="/suggest.js" defer></script>`) || !strings.Contains(page.Header().Get("Content-Security-Policy"), "script-src 'self'") {
		t.Error("the keyword page does not load the script its policy allows")
	}
}
