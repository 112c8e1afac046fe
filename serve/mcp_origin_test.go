package serve

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/kwdata/kwdata/serve/internal/servetest"
)

func TestMCPOrigins(t *testing.T) {
	ds := newDemoServer(t)
	allowing := New(Options{Index: ds.index, Access: ds.access,
		AllowedOrigins: []string{"https://KWDATA.example.com/", " http://tools.example:8080"}})
	const ping = `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	tests := []struct {
		name         string
		host, origin string
		configured   bool // through Options.AllowedOrigins
		want         int
	}{
		{"no origin", "kwdata.example", "", false, 200},
		{"rebinding: origin host equals Host", "evil.example", "http://evil.example", false, 403},
		{"rebinding with allowed origins", "evil.example", "http://evil.example", true, 403},
		{"localhost", "evil.example", "http://localhost:6274", false, 200},
		{"127.0.0.0/8", "kwdata.example", "http://127.1.2.3:3000", false, 200},
		{"::1", "kwdata.example", "http://[::1]:3000", false, 200},
		{"mapped loopback", "kwdata.example", "http://[::ffff:127.0.0.1]", false, 200},
		{"localhost look-alike", "kwdata.example", "http://localhost.evil.example", false, 403},
		{"configured origin, not allowed by default", "kwdata.example.com", "https://kwdata.example.com", false, 403},
		{"configured origin", "kwdata.example.com", "https://kwdata.example.com", true, 200},
		{"configured origin, default port", "kwdata.example.com", "https://kwdata.example.com:443", true, 200},
		{"configured origin with port", "x", "http://tools.example:8080", true, 200},
		{"configured host, other scheme", "kwdata.example.com", "http://kwdata.example.com", true, 403},
		{"configured host, other port", "x", "http://tools.example", true, 403},
		{"null origin", "kwdata.example", "null", true, 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h http.Handler = ds
			if tt.configured {
				h = allowing
			}
			header := http.Header{}
			if tt.origin != "" {
				header.Set("Origin", tt.origin)
			}
			w := mcpPostHost(t, h, tt.host, ping, header)
			if w.Code != tt.want {
				t.Fatalf("status %d, want %d: %s", w.Code, tt.want, w.Body)
			}
			if tt.want == 403 {
				checkProblem(t, w, CodeForbiddenOrigin)
			}
		})
	}
}

func TestCanonicalOriginRefusesNonOrigins(t *testing.T) {
	for _, o := range []string{"kwdata.example.com", "ftp://kwdata.example.com", "https://kwdata.example.com/mcp", "https://", "https://u@kwdata.example.com", "*"} {
		if c, err := CanonicalOrigin(o); err == nil {
			t.Errorf("CanonicalOrigin(%q) = %q, want an error", o, c)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("New accepted an AllowedOrigins entry that is not an origin")
		}
	}()
	New(Options{Index: servetest.NewDemoIndex(t), AllowedOrigins: []string{"kwdata.example.com"}})
}

// mcpPostHost is mcpPost with the request's Host set to host.
func mcpPostHost(tb testing.TB, h http.Handler, host, body string, header http.Header) *httptest.ResponseRecorder {
	tb.Helper()
	return mcpPost(tb, hostHandler{h, host}, body, header)
}

// hostHandler sets the Host of requests before h answers them.
type hostHandler struct {
	h    http.Handler
	host string
}

func (hh hostHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r.Host = hh.host
	hh.h.ServeHTTP(w, r)
}
