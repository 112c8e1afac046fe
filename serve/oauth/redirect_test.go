package oauth

import (
	"net/url"
	"strings"
	"testing"
)

func TestCheckRedirectURI(t *testing.T) {
	for _, tc := range []struct {
		uri string
		ok  bool
	}{
		{"https://app.example.com/callback", true},
		{"https://app.example.com/callback?x=1", true},
		{"http://127.0.0.1/callback", true},
		{"http://127.0.0.1:33418/callback", true},
		{"http://[::1]:8080/cb", true},
		{"http://localhost:3000/callback", true},
		{"http://app.example.com/callback", false}, // plain http off loopback
		{"http://127.0.0.2/callback", false},       // loopback range, but not the address clients use
		{"http://localhost.evil.com/callback", false},
		{"https://app.example.com/cb#frag", false},    // fragment
		{"https://user:pw@app.example.com/cb", false}, // userinfo
		{"https:///cb", false},                        // no host
		{"/callback", false},                          // relative
		{"cursor://anysphere.cursor-retrieval/oauth", false},
		{"javascript:alert(1)", false},
		{"", false},
		{"https://app.example.com/" + strings.Repeat("a", 3000), false},
	} {
		err := checkRedirectURI(tc.uri)
		if (err == nil) != tc.ok {
			t.Errorf("checkRedirectURI(%q) = %v, want ok=%v", tc.uri, err, tc.ok)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("checkRedirectURI(%q): error is not one line: %q", tc.uri, err)
		}
	}
}

func TestRedirectMatches(t *testing.T) {
	for _, tc := range []struct {
		registered, presented string
		ok                    bool
	}{
		{"https://app.example.com/cb", "https://app.example.com/cb", true},
		{"https://app.example.com/cb", "https://app.example.com/cb/", false},
		{"https://app.example.com/cb", "https://app.example.com:8443/cb", false}, // port matters off loopback
		{"https://app.example.com/cb", "https://APP.example.com/cb", false},
		{"https://app.example.com/cb", "https://app.example.com/cb?x=1", false},
		{"http://127.0.0.1/callback", "http://127.0.0.1:54321/callback", true}, // RFC 8252 §7.3
		{"http://127.0.0.1:3000/callback", "http://127.0.0.1:54321/callback", true},
		{"http://[::1]/cb", "http://[::1]:9999/cb", true},
		{"http://localhost:3000/cb", "http://localhost:4000/cb", true},
		{"http://127.0.0.1/callback", "http://127.0.0.1:54321/other", false},
		{"http://127.0.0.1/callback", "http://localhost:54321/callback", false},
		{"http://127.0.0.1/callback", "http://127.0.0.1:54321/callback?x=1", false},
		{"http://127.0.0.1/callback", "https://127.0.0.1:54321/callback", false},
		{"http://127.0.0.1/callback", "http://127.0.0.1:54321/callback#x", false},
		{"http://127.0.0.1/callback", "http://u@127.0.0.1:54321/callback", false},
		{"http://127.0.0.1/callback", "http://127.0.0.1:99999/callback", false},
		{"http://127.0.0.1/callback", "http://127.0.0.1:/callback", true},
	} {
		if got := redirectMatches(tc.registered, tc.presented); got != tc.ok {
			t.Errorf("redirectMatches(%q, %q) = %v, want %v", tc.registered, tc.presented, got, tc.ok)
		}
	}
}

// FuzzRedirectURI checks the invariants of the redirect URI rules on any
// input: a match is either the exact string or a loopback http URI that
// differs only in its port, and a presented URI that matches a valid
// registered one is valid itself.
func FuzzRedirectURI(f *testing.F) {
	for _, s := range []string{
		"https://app.example.com/cb", "http://127.0.0.1/callback",
		"http://127.0.0.1:5000/callback", "http://[::1]:1/x", "http://localhost/",
		"http://127.0.0.1:0/%2e%2e", "https://a/b?c#d", "http://[::1%25en0]:80/",
	} {
		f.Add(s, s)
		f.Add(s, strings.Replace(s, "/c", ":7/c", 1))
	}
	f.Fuzz(func(t *testing.T, registered, presented string) {
		regErr := checkRedirectURI(registered)
		if !redirectMatches(registered, presented) {
			if regErr == nil && registered == presented {
				t.Fatalf("a valid URI %q does not match itself", registered)
			}
			return
		}
		if regErr != nil {
			t.Fatalf("invalid registered URI %q (%v) matched %q", registered, regErr, presented)
		}
		if registered == presented {
			return
		}
		if err := checkRedirectURI(presented); err != nil {
			t.Fatalf("%q matched %q but is invalid: %v", presented, registered, err)
		}
		r, _ := url.Parse(registered)
		p, _ := url.Parse(presented)
		if r.Scheme != "http" || p.Scheme != "http" || r.Hostname() != p.Hostname() || !isLoopbackHost(p.Hostname()) {
			t.Fatalf("%q matched %q off loopback", presented, registered)
		}
	})
}
