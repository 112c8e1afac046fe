package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The profiler answers on its own address only, and stops with the server.
func TestPprofListener(t *testing.T) {
	t.Parallel()
	m, _, _ := testMain(t)
	addr, stop, err := m.servePprof("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + addr + "/debug/pprof/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "kwdata") {
		t.Errorf("pprof cmdline: status %d, body %q", resp.StatusCode, body)
	}
	stop()
	if resp, err := client.Get("http://" + addr + "/debug/pprof/"); err == nil {
		resp.Body.Close()
		t.Errorf("pprof still answers after stop: %s", resp.Status)
	}
	if _, _, err := m.servePprof("256.0.0.1:1"); err == nil || !strings.Contains(err.Error(), "--pprof") {
		t.Errorf("bad --pprof address: err = %v", err)
	}
}

// Without --public-url, links name the listening address when it is one
// host, and are relative when it is every interface.
func TestDefaultPublicURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}, "http://127.0.0.1:8080"},
		{&net.TCPAddr{IP: net.IPv6loopback, Port: 8080}, "http://[::1]:8080"},
		{&net.TCPAddr{IP: net.IPv4(203, 0, 113, 7), Port: 80}, "http://203.0.113.7:80"},
		{&net.TCPAddr{IP: net.IPv4zero, Port: 8080}, ""},
		{&net.TCPAddr{IP: net.IPv6unspecified, Port: 8080}, ""},
		{&net.UnixAddr{Name: "/run/kwdata.sock", Net: "unix"}, ""},
	} {
		if got := defaultPublicURL(tc.addr); got != tc.want {
			t.Errorf("defaultPublicURL(%v) = %q, want %q", tc.addr, got, tc.want)
		}
	}
}

// A --public-url that is no http(s) URL is refused before anything opens.
func TestServeRefusesBadPublicURL(t *testing.T) {
	t.Parallel()
	m, _, _ := testMain(t)
	err := m.Run(context.Background(), []string{"serve", "--data", t.TempDir(), "--public-url", "kwdata.example.com"})
	if err == nil || !strings.Contains(err.Error(), "--public-url") {
		t.Errorf("serve --public-url kwdata.example.com: err = %v", err)
	}
}
