package serve

import (
	"net/http"
	"testing"
)

// TestUnindexableInputIsRefusedUncounted: a keyword with control
// characters or undecodable bytes can never be in the index (ingest
// refuses it), and a country code is two ASCII letters; such requests are
// 400s, never looked up and never counted, on the API and the page alike.
func TestUnindexableInputIsRefusedUncounted(t *testing.T) {
	for _, tc := range []struct {
		name, target string
		status       int
		code         string
	}{
		{"NUL", "/v1/keyword?q=a%00b", 400, CodeInvalidQ},
		{"ANSI escape", "/v1/keyword?q=%1b%5b31m", 400, CodeInvalidQ},
		{"DEL", "/v1/keyword?q=running%7Fshoes", 400, CodeInvalidQ},
		{"C1 control", "/v1/keyword?q=running%C2%85%C2%9Bshoes", 400, CodeInvalidQ},
		{"replacement character", "/v1/keyword?q=%EF%BF%BD", 400, CodeInvalidQ},
		{"invalid UTF-8", "/v1/keyword?q=%FF", 400, CodeInvalidQ},
		{"long s", "/v1/keyword?q=running+shoes&country=u%C5%BF", 400, CodeUnsupportedCountry},
		{"dotless i", "/v1/keyword?q=running+shoes&country=%C4%B1d", 400, CodeUnsupportedCountry},
		{"fullwidth", "/v1/keyword?q=running+shoes&country=%EF%BD%95%EF%BD%93", 400, CodeUnsupportedCountry},
		{"tab is white space", "/v1/keyword?q=running%09shoes", 200, ""},
		{"NEL is white space", "/v1/keyword?q=running%C2%85shoes", 200, ""},
		{"country in upper case", "/v1/keyword?q=running+shoes&country=US", 200, ""},
		{"page", "/keyword?q=a%00b", 400, ""},
		{"page, long s", "/keyword?q=running+shoes&country=u%C5%BF", 400, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := newDemoServer(t)
			w := do(t, ds, http.MethodGet, tc.target, nil)
			if w.Code != tc.status {
				t.Fatalf("status %d, want %d: %.300s", w.Code, tc.status, w.Body)
			}
			if tc.code != "" {
				checkProblem(t, w, tc.code)
			}
			if tc.status == 400 && (len(ds.access.admits) != 0 || len(ds.access.committed) != 0) {
				t.Errorf("refused request reached Access: admits %v, committed %v", ds.access.admits, ds.access.committed)
			}
		})
	}
}
