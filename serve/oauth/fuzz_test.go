package oauth

import (
	"strings"
	"testing"
)

// FuzzClientDocument feeds arbitrary bytes to the client ID metadata
// document check: it never panics, and a document it accepts names its
// own URL and only redirect URIs that pass the registration rule.
func FuzzClientDocument(f *testing.F) {
	const id = "https://app.example.com/client.json"
	f.Add(`{"client_id":"` + id + `","client_name":"A","redirect_uris":["http://127.0.0.1/cb"]}`)
	f.Add(`{"client_id":"` + id + `","redirect_uris":["https://a/b","http://x/"]}`)
	f.Add(`{"client_id":"https://evil/client.json","redirect_uris":["https://a/b"]}`)
	f.Add(`{"client_id":"` + id + `","redirect_uris":[],"grant_types":["implicit"]}`)
	f.Add(`[1,2`)
	f.Fuzz(func(t *testing.T, body string) {
		c, err := parseClientDocument(id, []byte(body))
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error is not one line: %q", err)
			}
			return
		}
		if c.ID != id || len(c.RedirectURIs) == 0 {
			t.Fatalf("accepted %+v", c)
		}
		for _, r := range c.RedirectURIs {
			if err := checkRedirectURI(r); err != nil {
				t.Fatalf("accepted redirect URI %q: %v", r, err)
			}
		}
	})
}

// FuzzCacheTTL checks that any Cache-Control header gives a lifetime
// within the cache's bounds.
func FuzzCacheTTL(f *testing.F) {
	for _, s := range []string{"", "max-age=120", "no-store", "public, max-age=99999999999", "max-age=-5", `max-age="60"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cc string) {
		if ttl := cacheTTL(cc); ttl < minDocTTL || ttl > maxDocTTL {
			t.Fatalf("cacheTTL(%q) = %v, outside [%v, %v]", cc, ttl, minDocTTL, maxDocTTL)
		}
	})
}
