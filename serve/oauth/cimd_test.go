package oauth

import (
	"context"
	"errors"
	"github.com/kwdata/kwdata/internal/testservers"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"
)

// authorizeCIMD opens the authorization endpoint for a CIMD client and
// returns the status and body.
func authorizeCIMD(t *testing.T, h *harness, id, redirect string) (int, string) {
	t.Helper()
	resp := h.get("/oauth/authorize?"+h.authParams(id, redirect, oauth2.GenerateVerifier()).Encode(), true)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.Header.Get("Location") != "" {
		t.Fatalf("client %s: redirected to %s before the client was verified", id, resp.Header.Get("Location"))
	}
	return resp.StatusCode, string(b)
}

func TestAttackCIMDPrivateAddress(t *testing.T) {
	id, ts, _ := clientDoc(t, cimdDoc(cb), nil)
	roots := ts.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	// The production guard (no AllowAddr) refuses loopback on the first
	// fetch, by address or by a name that resolves to it.
	h := newHarness(t, func(c *Config) { c.Fetch = NewFetchClient(FetchOptions{RootCAs: roots}) })
	for _, u := range []string{id, strings.Replace(id, "127.0.0.1", "localhost", 1)} {
		if status, body := authorizeCIMD(t, h, u, cb); status != http.StatusBadRequest || !strings.Contains(body, "private") {
			t.Errorf("%s: %d %s", u, status, body)
		}
	}
	// Refused at the URL already: not https, userinfo, fragment, no path.
	for _, u := range []string{"https://u:p@example.com/c.json", "https://example.com/c.json#x", "https://example.com", "https://example.com/a/../c.json"} {
		if status, _ := authorizeCIMD(t, h, u, cb); status != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", u, status)
		}
	}
}

func TestDialGuard(t *testing.T) {
	for _, tc := range []struct {
		addr string
		ok   bool
	}{
		{"93.184.216.34:443", true},
		{"[2606:2800:220:1:248:1893:25c8:1946]:443", true},
		{"127.0.0.1:443", false},
		{"10.1.2.3:443", false},
		{"172.16.0.1:443", false},
		{"192.168.1.1:443", false},
		{"169.254.169.254:80", false}, // cloud metadata
		{"100.64.0.1:443", false},     // CGNAT
		{"0.0.0.0:443", false},
		{"224.0.0.1:443", false},
		{"255.255.255.255:443", false},
		{"[::1]:443", false},
		{"[::]:443", false},
		{"[fe80::1]:443", false},
		{"[fc00::1]:443", false},
		{"[ff02::1]:443", false},
		{"[::ffff:127.0.0.1]:443", false},
		{"[::ffff:10.0.0.1]:443", false},
		{"[64:ff9b::a00:1]:443", false}, // NAT64 of 10.0.0.1
		{"not an address", false},
	} {
		err := dialGuard(nil)("tcp", tc.addr, nil)
		if (err == nil) != tc.ok {
			t.Errorf("dialGuard(%s) = %v, want ok=%v", tc.addr, err, tc.ok)
		}
	}
}

func TestAttackCIMDRedirectToPrivate(t *testing.T) {
	// The allowed document server redirects elsewhere; the guard refuses
	// the connection the redirect asks for, or the redirect itself.
	id, _, fetch := clientDoc(t, cimdDoc(cb), nil)
	h := newHarness(t, func(c *Config) { c.Fetch = fetch })
	for _, target := range []string{"https://10.1.2.3/client.json", "https://[::1]:1/client.json", "https://[::ffff:169.254.169.254]/x", "http://example.com/client.json"} {
		_, err := h.srv.clients.fetch(t.Context(), id+"?redirect="+url.QueryEscape(target))
		if err == nil || !strings.Contains(err.Error(), "private") && !strings.Contains(err.Error(), "https") {
			t.Errorf("redirect to %s: %v", target, err)
		}
	}
}

func TestAttackCIMDClientIDMismatch(t *testing.T) {
	id, _, fetch := clientDoc(t, func(string) any {
		return map[string]any{"client_id": "https://evil.example/client.json", "client_name": "x", "redirect_uris": []string{cb}}
	}, nil)
	h := newHarness(t, func(c *Config) { c.Fetch = fetch })
	if status, body := authorizeCIMD(t, h, id, cb); status != http.StatusBadRequest || !strings.Contains(body, "client_id") {
		t.Fatalf("mismatched client_id: %d %s", status, body)
	}
}

func TestAttackCIMDBadRedirects(t *testing.T) {
	id, _, fetch := clientDoc(t, cimdDoc("http://app.example.com/cb"), nil)
	h := newHarness(t, func(c *Config) { c.Fetch = fetch })
	if status, _ := authorizeCIMD(t, h, id, "http://app.example.com/cb"); status != http.StatusBadRequest {
		t.Fatalf("plain http redirect in a document: %d", status)
	}
	id, _, fetch = clientDoc(t, cimdDoc(cb), nil)
	h = newHarness(t, func(c *Config) { c.Fetch = fetch })
	if status, _ := authorizeCIMD(t, h, id, "https://evil.example/cb"); status != http.StatusBadRequest {
		t.Fatalf("redirect_uri not in the document: %d", status)
	}
}

func TestAttackCIMDOversized(t *testing.T) {
	id, _, fetch := clientDoc(t, func(id string) any {
		return map[string]any{"client_id": id, "client_name": strings.Repeat("x", maxClientDocument), "redirect_uris": []string{cb}}
	}, nil)
	h := newHarness(t, func(c *Config) { c.Fetch = fetch })
	if status, body := authorizeCIMD(t, h, id, cb); status != http.StatusBadRequest || !strings.Contains(body, "larger") {
		t.Fatalf("oversized document: %d %s", status, body)
	}
}

func TestCIMDCache(t *testing.T) {
	var hits atomic.Int32
	id, _, fetch := clientDoc(t, func(id string) any {
		hits.Add(1)
		return cimdDoc(cb)(id)
	}, http.Header{"Cache-Control": {"max-age=120"}})
	h := newHarness(t, func(c *Config) { c.Fetch = fetch })
	ctx := context.Background()
	for range 3 {
		if _, err := h.srv.clients.fetch(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if hits.Load() != 1 {
		t.Fatalf("fetched %d times within max-age, want 1", hits.Load())
	}
	h.clock.Advance(121 * time.Second)
	if _, err := h.srv.clients.fetch(ctx, id); err != nil {
		t.Fatal(err)
	}
	if hits.Load() != 2 {
		t.Fatalf("fetched %d times after max-age, want 2", hits.Load())
	}
}

func TestCIMDTimeLimit(t *testing.T) {
	release := make(chan struct{})
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
	}))
	defer ts.Close()
	defer close(release)
	allowed := netip.MustParseAddrPort(strings.TrimPrefix(ts.URL, "https://"))
	fetch := NewFetchClient(FetchOptions{
		AllowAddr: func(ap netip.AddrPort) bool { return ap == allowed },
		RootCAs:   ts.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs,
		Timeout:   50 * time.Millisecond,
	})
	h := newHarness(t, func(c *Config) { c.Fetch = fetch })
	_, err := h.srv.clients.fetch(t.Context(), ts.URL+"/client.json")
	// Whichever stage the limit hits (handshake, headers), it is a timeout.
	if err == nil || !errors.Is(err, context.DeadlineExceeded) && !strings.Contains(strings.ToLower(err.Error()), "timeout") {
		t.Fatalf("slow document: %v, want a timeout", err)
	}
}

// TestCIMDFetchesBounded: anyone can make the server fetch a document by
// opening the authorization endpoint, so fetches under way are bounded;
// one over the bound is refused at once instead of queueing.
func TestCIMDFetchesBounded(t *testing.T) {
	var arrived atomic.Int32
	release := make(chan struct{})
	id, _, fetch := clientDoc(t, func(id string) any {
		arrived.Add(1)
		<-release
		return cimdDoc(cb)(id)
	}, nil)
	h := newHarness(t, func(c *Config) { c.Fetch = fetch })
	h.srv.clients.slots = make(chan struct{}, 1)
	done := make(chan error, 1)
	go func() {
		_, err := h.srv.clients.fetch(context.Background(), id)
		done <- err
	}()
	if !testservers.Poll(10*time.Second, func() bool { return arrived.Load() > 0 }) {
		close(release)
		t.Fatal("the first fetch never reached the document server")
	}
	_, err := h.srv.clients.fetch(context.Background(), id+"?other")
	close(release)
	if err == nil || !strings.Contains(err.Error(), "busy") {
		t.Errorf("a fetch over the bound: %v, want busy", err)
	}
	if err := <-done; err != nil {
		t.Errorf("the first fetch: %v", err)
	}
}
