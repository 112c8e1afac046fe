package serve

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestHostNeverReachesAnswers: a client chooses its Host header, and a
// shared cache that does not key on it would hand a poisoned answer to
// everyone. No answer, cacheable or not, carries it; links use the
// configured public URL or stay relative.
func TestHostNeverReachesAnswers(t *testing.T) {
	for _, public := range []string{"", "https://kwdata.example.com/api/"} {
		ds := newDemoServer(t)
		srv := New(Options{Index: ds.index, Access: ds.access, Registrar: ds.registrar, PublicURL: public})
		for _, target := range []string{"/", "/llms.txt", "/v1/openapi.json", "/keyword?q=running+shoes",
			"/keyword?q=no+such+keyword", "/keyword?q=", "/v1/keyword?q=running+shoes", "/nowhere", "/problems/invalid_q"} {
			r := httptest.NewRequest(http.MethodGet, target, nil)
			r.Host = "poison.invalid:666"
			r.RemoteAddr = "10.0.0.2:5000"
			r.Header.Set("X-Forwarded-Host", "poison.invalid")
			r.Header.Set("X-Forwarded-Proto", "https")
			w := httptest.NewRecorder()
			srv.ServeHTTP(w, r)
			for k, v := range w.Header() {
				if strings.Contains(strings.Join(v, " "), "poison") {
					t.Errorf("public %q, %s: field %s carries the Host: %q", public, target, k, v)
				}
			}
			body := w.Body.String()
			if strings.Contains(body, "poison") {
				t.Errorf("public %q, %s (%d): the answer carries the Host", public, target, w.Code)
			}
			if public != "" && (target == "/" || target == "/llms.txt") && !strings.Contains(body, "https://kwdata.example.com/api/v1/") {
				t.Errorf("public %q, %s: links do not use the public URL", public, target)
			}
		}
	}
}

func TestParsePublicURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"https://kwdata.example.com", "https://kwdata.example.com"},
		{"https://kwdata.example.com/", "https://kwdata.example.com"},
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080"},
		{"http://[::1]:8080/", "http://[::1]:8080"},
		{"https://example.com/kw/", "https://example.com/kw"},
	} {
		got, err := ParsePublicURL(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParsePublicURL(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"kwdata.example.com", "/relative", "ftp://x.example", "https://", "https://u:p@x.example",
		"https://x.example/?a=1", "https://x.example/#top", "https://x.example?", "javascript:alert(1)", "https://x.exa mple"} {
		if got, err := ParsePublicURL(in); err == nil {
			t.Errorf("ParsePublicURL(%q) = %q; want an error", in, got)
		}
	}
}
