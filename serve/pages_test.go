package serve

import (
	"errors"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kwdata/kwdata/kw"
)

func TestHomePage(t *testing.T) {
	ds := newDemoServer(t)
	w := do(t, ds, "GET", "/", nil)
	if w.Code != 200 || w.Header().Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("status %d Content-Type %q", w.Code, w.Header().Get("Content-Type"))
	}
	body := w.Body.String()
	for _, want := range []string{
		`<form class="search" action="/keyword" method="get"`, `name="q"`, `name="country"`,
		`href="/v1/openapi.json"`, `href="/llms.txt"`, `href="/#api"`,
		"20 lookups per UTC day", "500 lookups per UTC month", "4.99 USD", "Unlimited lookups",
		`<option value="US" selected>United States (US)</option>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("home page lacks %q", want)
		}
	}
	if n := strings.Count(body, "<option "); n != len(kw.Countries()) {
		t.Errorf("%d countries in the select, want %d", n, len(kw.Countries()))
	}
	if strings.Contains(body, "<script") || regexp.MustCompile(`(src|href)="https?://`).MatchString(body) {
		t.Error("the page loads scripts or external assets")
	}
	if csp := w.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("CSP %q", csp)
	}
	if len(ds.access.admits) != 0 {
		t.Error("the home page was counted")
	}
}

func TestKeywordPage(t *testing.T) {
	ds := newDemoServer(t)
	w := do(t, ds, "GET", "/keyword?q=Running+Shoes&country=us", nil)
	if w.Code != 200 {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	body := w.Body.String()
	for _, want := range []string{
		`<h1>running shoes</h1>`, `id="volume">301,000<`, `id="cpc">$1.23<`, `id="competition">0.87<`, `id="country">US<`,
		"2026-11-21", `<a class="pill" id="intent" href="/intent?q=running&#43;shoes&amp;country=us" title="this keyword leads its intent group">running shoes</a>`,
		`<a href="/keyword?q=running&#43;shoe&amp;country=us">running shoe</a>`, `16/20`, `>$0<`, "8,100",
		`<text x="`, `>Nov</text>`, `>2026</text>`, `>367K</text>`, "January 2026: 367,220 searches",
		`href="/v1/keyword?q=running&#43;shoes&amp;country=us"`,
		`id="yoy" title="year over year: the latest month against the same month a year earlier">—<`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("keyword page lacks %q", want)
		}
	}
	if n := strings.Count(body, `<td class="kw">`); n != 10 {
		t.Errorf("%d related rows", n)
	}
	if n := strings.Count(body, `<span class="same"`); n != 2 {
		t.Errorf("%d same-intent marks, want 2", n)
	}
	if mustJSON(ds.access.admits) != "[1]" || mustJSON(ds.access.committed) != "[1]" {
		t.Errorf("admits %v committed %v", ds.access.admits, ds.access.committed)
	}
	if w.Header().Get("RateLimit") == "" || w.Header().Get("Cache-Control") != "private, no-store" {
		t.Errorf("header %v", w.Header())
	}

	// The intent chip links to the keyword's intent group page, named by
	// its leader; a keyword without trend or related says so.
	body = do(t, ds, "GET", "/keyword?q=running+sneakers", nil).Body.String()
	if !strings.Contains(body, `<a class="pill" id="intent" href="/intent?q=running&#43;sneakers&amp;country=us" title="the intent group led by running shoes">running shoes</a>`) {
		t.Error("the intent group is not linked")
	}
	body = do(t, ds, "GET", "/keyword?q=laufschuhe&country=de", nil).Body.String()
	for _, want := range []string{"There is no monthly data for this keyword", "No other keyword", `id="cpc">$0.83<`, `<option value="DE" selected>`} {
		if !strings.Contains(body, want) {
			t.Errorf("laufschuhe page lacks %q", want)
		}
	}
	if strings.Contains(body, "last 0 months") {
		t.Error(`a keyword without trend is headed "Searches over the last 0 months"`)
	}

	// A keyword whose source gave no numbers shows a dash for each, never
	// 0 or $0; a month without a value is a dash in the table and no bar.
	body = do(t, ds, "GET", "/keyword?q=airgun&country=us", nil).Body.String()
	for _, want := range []string{`id="volume">—<`, `id="cpc">—<`, `id="competition">—<`, "September 2026: no data", ">—</td>"} {
		if !strings.Contains(body, want) {
			t.Errorf("airgun page lacks %q", want)
		}
	}
	for _, bad := range []string{`id="volume">0<`, `id="cpc">$0<`, `id="competition">0.00<`} {
		if strings.Contains(body, bad) {
			t.Errorf("airgun page shows %q for a missing value", bad)
		}
	}
}

// TestPageFragmentLinks: every link to a section of the home page ("/#api")
// lands on a section that exists.
func TestPageFragmentLinks(t *testing.T) {
	ds := newDemoServer(t)
	home := do(t, ds, "GET", "/", nil).Body.String()
	for _, target := range []string{"/", "/keyword?q=running+shoes", "/keyword?q=running+sandals"} {
		body := do(t, ds, "GET", target, nil).Body.String()
		links := regexp.MustCompile(`href="/#([^"]+)"`).FindAllStringSubmatch(body, -1)
		if target == "/" && len(links) == 0 {
			t.Fatal("the home page links to none of its sections")
		}
		for _, l := range links {
			if !strings.Contains(home, `id="`+l[1]+`"`) {
				t.Errorf("%s links to /#%s, which the home page does not have", target, l[1])
			}
		}
	}
}

func TestKeywordPageEscapes(t *testing.T) {
	ts := newTestServer(t)
	w := do(t, ts, "GET", "/keyword?q="+urlEscape(`SHOES "<b>" & MÁS`), nil)
	if w.Code != 200 {
		t.Fatalf("status %d", w.Code)
	}
	// The page's own script tag is the one markup that may hold </script>.
	body := strings.Replace(w.Body.String(), `<script src="/suggest.js" defer></script>`, "", 1)
	if strings.Contains(body, `"<b>"`) || strings.Contains(body, `<b>" &`) || strings.Contains(body, "</script>") {
		t.Errorf("markup from the data reached the page unescaped")
	}
	if !strings.Contains(body, `shoes &#34;&lt;b&gt;&#34; &amp; más`) || !strings.Contains(body, `a\b&lt;/script&gt;`) {
		t.Errorf("escaped keyword missing")
	}
	w = do(t, ts, "GET", `/keyword?q=%3Cscript%3Ealert(1)%3C/script%3E`, nil)
	if w.Code != 404 || strings.Contains(w.Body.String(), "<script>") {
		t.Errorf("status %d; the 404 page echoes markup", w.Code)
	}
}

func TestKeywordPageErrors(t *testing.T) {
	tests := []struct {
		name       string
		target     string
		setup      func(ds *demoServer)
		wantStatus int
		wantText   []string
		wantForm   bool
		wantCount  string // committed lookups
		wantHeader string // a response field that must be present
	}{
		{name: "unknown keyword", target: "/keyword?q=running+sandals&country=us", wantStatus: 404,
			wantText: []string{"No data for “running sandals”", "United States"}, wantForm: true, wantCount: "[1]"},
		{name: "missing q", target: "/keyword", wantStatus: 400, wantText: []string{"Which keyword?"}, wantForm: true, wantCount: "[]"},
		{name: "too long", target: "/keyword?q=" + strings.Repeat("a", 81), wantStatus: 400, wantText: []string{"too long"}, wantForm: true, wantCount: "[]"},
		{name: "bad country", target: "/keyword?q=x&country=zz", wantStatus: 400, wantText: []string{"not supported"}, wantForm: true, wantCount: "[]"},
		{name: "bad escape", target: "/keyword?q=%zz", wantStatus: 400, wantText: []string{"cannot be read"}, wantForm: true, wantCount: "[]"},
		{name: "quota", target: "/keyword?q=running+shoes",
			setup: func(ds *demoServer) {
				ds.access.err = &QuotaError{Policy: "daily", Quota: 20, Requested: 1, RetryAfter: 19*time.Hour + 30*time.Minute, Header: http.Header{"Ratelimit-Policy": {`"daily";q=20;w=86400`}}}
			},
			wantStatus: 429, wantText: []string{`<b id="reset">00:00 UTC on Mon 23 Nov 2026</b>`, "in 19h 30m", "/v1/register", "500 lookups a month"},
			wantCount: "[]", wantHeader: "Retry-After"},
		{name: "invalid key", target: "/keyword?q=running+shoes", setup: func(ds *demoServer) { ds.access.err = ErrInvalidKey },
			wantStatus: 401, wantText: []string{"not valid"}, wantForm: true, wantHeader: "Www-Authenticate"},
		{name: "no index", target: "/keyword?q=running+shoes", setup: func(ds *demoServer) { ds.index.OK = false },
			wantStatus: 503, wantText: []string{"loading"}, wantHeader: "Retry-After"},
		{name: "failure", target: "/keyword?q=running+shoes", setup: func(ds *demoServer) { ds.index.Err = errors.New("disk on fire") },
			wantStatus: 500, wantText: []string{"Something went wrong"}, wantCount: "[]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := newDemoServer(t)
			if tt.setup != nil {
				tt.setup(ds)
			}
			w := do(t, ds, "GET", tt.target, nil)
			if w.Code != tt.wantStatus || w.Header().Get("Content-Type") != "text/html; charset=utf-8" {
				t.Fatalf("status %d Content-Type %q", w.Code, w.Header().Get("Content-Type"))
			}
			body := w.Body.String()
			for _, want := range tt.wantText {
				if !strings.Contains(body, want) {
					t.Errorf("page lacks %q", want)
				}
			}
			if got := strings.Contains(body, `<form class="search"`); got != tt.wantForm {
				t.Errorf("search form shown: %v, want %v", got, tt.wantForm)
			}
			if tt.wantCount != "" && mustJSON(ds.access.committed) != tt.wantCount && !(tt.wantCount == "[]" && len(ds.access.committed) == 0) {
				t.Errorf("committed %v, want %s", ds.access.committed, tt.wantCount)
			}
			if tt.wantHeader != "" && w.Header().Get(tt.wantHeader) == "" {
				t.Errorf("no %s field", tt.wantHeader)
			}
			if strings.Contains(body, "disk on fire") {
				t.Error("the cause reached the page")
			}
		})
	}
}
