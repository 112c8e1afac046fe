package serve

import (
	"encoding/json"
	"html"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/serve/api"
)

// TestCountryWithoutData: a supported country the served index holds no
// keyword of is answered 404 country_not_indexed by every lookup path, is
// never counted, and carries no RateLimit fields; a country with data is
// still answered and counted.
func TestCountryWithoutData(t *testing.T) {
	for _, tc := range []struct {
		name, method, target, body string
		wantCode                   string // problem code; empty for an HTML page
		wantStatus                 int
	}{
		{"api", "GET", "/v1/keyword?q=running+shoes&country=fr", "", CodeCountryNotIndexed, 404},
		{"api upper case", "GET", "/v1/keyword?q=running+shoes&country=FR", "", CodeCountryNotIndexed, 404},
		{"head", "HEAD", "/v1/keyword?q=running+shoes&country=fr", "", "", 404},
		{"page", "GET", "/keyword?q=running+shoes&country=fr", "", "", 404},
		{"bulk", "POST", "/v1/keywords", `{"country": "fr", "keywords": ["running shoes", "laufschuhe"]}`, CodeCountryNotIndexed, 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := newDemoServer(t)
			r, _ := http.NewRequest(tc.method, tc.target, strings.NewReader(tc.body))
			if tc.body != "" {
				r.Header.Set("Content-Type", "application/json")
			}
			w := httptest.NewRecorder()
			ds.ServeHTTP(w, r)
			if w.Code != tc.wantStatus {
				t.Fatalf("status %d, want %d; body %s", w.Code, tc.wantStatus, w.Body)
			}
			if tc.wantCode != "" {
				var p struct{ Code, Detail string }
				if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
					t.Fatalf("not a problem document: %v: %s", err, w.Body)
				}
				if p.Code != tc.wantCode || !strings.Contains(p.Detail, "France (FR)") || !strings.Contains(p.Detail, "/v1/countries") {
					t.Errorf("problem %+v, want code %s naming the country and /v1/countries", p, tc.wantCode)
				}
			}
			if tc.name == "page" && !strings.Contains(w.Body.String(), "No data for France yet") {
				t.Errorf("page does not say the country has no data:\n%s", w.Body)
			}
			if len(ds.access.admits) != 0 || len(ds.access.committed) != 0 {
				t.Errorf("counted: admits %v, committed %v", ds.access.admits, ds.access.committed)
			}
			if h := w.Header().Get("RateLimit"); h != "" {
				t.Errorf("RateLimit %q on an uncounted answer", h)
			}
		})
	}
	ds := newDemoServer(t)
	if w := do(t, ds, "GET", "/v1/keyword?q=running+shoes&country=us", nil); w.Code != 200 || len(ds.access.committed) != 1 {
		t.Errorf("a country with data: status %d, committed %v", w.Code, ds.access.committed)
	}
	if w := do(t, ds, "GET", "/v1/keyword?q=running+sandals&country=us", nil); w.Code != 404 || len(ds.access.committed) != 2 {
		t.Errorf("an unknown keyword of a country with data: status %d, committed %v (want counted)", w.Code, ds.access.committed)
	}
}

// TestCountriesWithDataFirst: GET /v1/countries lists every supported
// country once, those with keywords first.
func TestCountriesWithDataFirst(t *testing.T) {
	ds := newDemoServer(t)
	w := do(t, ds, "GET", "/v1/countries", nil)
	var doc api.CountriesJSON
	if err := json.Unmarshal(w.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Countries) != len(kw.Countries()) {
		t.Fatalf("%d countries, want %d", len(doc.Countries), len(kw.Countries()))
	}
	seen, withData, zero := map[string]bool{}, 0, false
	for _, c := range doc.Countries {
		if seen[c.Code] {
			t.Errorf("%s listed twice", c.Code)
		}
		seen[c.Code] = true
		if c.Keywords > 0 {
			withData++
			if zero {
				t.Errorf("%s has keywords but comes after a country without", c.Code)
			}
		} else {
			zero = true
		}
	}
	if withData != 2 || doc.Countries[0].Code != "DE" || doc.Countries[1].Code != "US" {
		t.Errorf("first countries %v, want DE and US (the ones with data)", doc.Countries[:2])
	}
}

// TestHomeExamplesFromIndex: the home page offers the example keywords the
// served build recorded, every link answers 200, the country menu puts
// the countries with data first, and a build without examples shows no
// links that could 404.
func TestHomeExamplesFromIndex(t *testing.T) {
	ds := newDemoServer(t)
	ds.index.IndexInfo.Examples = map[string][]string{"US": {"running shoes", "running shoe"}, "DE": {"laufschuhe"}}
	ds.index.Add(kw.Entry{Keyword: "laufschuhe", Country: "DE", Volume: kw.Ptr[int64](74000), Intent: "laufschuhe"})
	body := do(t, ds, "GET", "/", nil).Body.String()
	block := regexp.MustCompile(`(?s)<div class="examples">(.*?)</div>`).FindStringSubmatch(body)
	if block == nil {
		t.Fatalf("no examples on the home page:\n%s", body)
	}
	links := regexp.MustCompile(`href="([^"]+)"`).FindAllStringSubmatch(block[1], -1)
	// One per country first, then the next of each: DE and US both show.
	want := []string{"/keyword?q=laufschuhe&country=de", "/keyword?q=running+shoes&country=us", "/keyword?q=running+shoe&country=us"}
	if len(links) != len(want) {
		t.Fatalf("links %q, want %q", links, want)
	}
	for i, l := range links {
		href := html.UnescapeString(l[1]) // what a browser follows
		if href != want[i] {
			t.Errorf("link %d is %q, want %q", i, href, want[i])
		}
		if w := do(t, ds, "GET", href, nil); w.Code != 200 {
			t.Errorf("example %s answers %d", href, w.Code)
		}
	}
	if !strings.Contains(body, "in 2 countries") {
		t.Error("the home page does not count the countries with data")
	}
	if i, j := strings.Index(body, `<optgroup label="With data">`), strings.Index(body, `<optgroup label="No data yet">`); i < 0 || j < i {
		t.Error("the country menu does not put the countries with data first")
	}
	if !strings.Contains(body, "/v1/keyword?q=laufschuhe&amp;country=de") {
		t.Error("the curl example does not use an example keyword")
	}

	ds = newDemoServer(t)
	if body := do(t, ds, "GET", "/", nil).Body.String(); strings.Contains(body, `class="examples"`) {
		t.Error("a build without examples still shows example links")
	}
}
