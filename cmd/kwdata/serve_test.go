package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The profiler answers on its own address only, and stops with the server.
func TestPprofListener(t *testing.T) {
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
