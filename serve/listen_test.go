package serve

import (
	"context"
	"fmt"
	"github.com/kwdata/kwdata/internal/testservers"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

func TestServeDrainsInFlightRequests(t *testing.T) {
	ts := newTestServer(t)
	entered, release := make(chan struct{}), make(chan struct{})
	mux := http.NewServeMux()
	mux.Handle("/", ts)
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
		// The shutdown must not cancel the request's context.
		fmt.Fprintf(w, "drained ctx=%v", r.Context().Err())
	})

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- Serve(ctx, ln, mux, nil) }()

	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get("http://" + addr + "/v1/keyword?q=running+shoes&country=US")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET: status %d, err %v", resp.StatusCode, err)
	}
	golden(t, "keyword_running_shoes.json", body)

	type result struct {
		status int
		body   string
		err    error
	}
	slow := make(chan result, 1)
	go func() {
		resp, err := client.Get("http://" + addr + "/slow")
		if err != nil {
			slow <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		slow <- result{resp.StatusCode, string(b), err}
	}()
	<-entered
	cancel()

	// Wait (bounded) until the listener is closed, so the slow request is
	// known to be in flight while the server shuts down.
	closed := testservers.Poll(4*time.Second, func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return true
		}
		c.Close()
		return false
	})
	if !closed {
		t.Fatal("the listener still accepts connections after ctx was cancelled")
	}
	select {
	case err := <-errc:
		t.Fatalf("Serve returned %v before the in-flight request finished", err)
	default:
	}
	close(release)

	r := <-slow
	if r.err != nil || r.status != 200 || r.body != "drained ctx=<nil>" {
		t.Errorf("in-flight request: status %d body %q err %v", r.status, r.body, r.err)
	}
	if err := <-errc; err != nil {
		t.Errorf("Serve = %v, want nil after a clean shutdown", err)
	}
}

func TestServeReportsListenerFailure(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	if err := Serve(context.Background(), ln, http.NotFoundHandler(), nil); err == nil {
		t.Error("Serve on a closed listener returned nil")
	}
}
