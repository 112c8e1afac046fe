package main

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer that the server's goroutines and the test
// may use at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// serveOnce serves data with m until one GET of path has been answered,
// then stops the server.
func serveOnce(tb testing.TB, m *Main, data, path string) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrc, done := make(chan string, 1), make(chan error, 1)
	go func() {
		done <- m.serve(ctx, serveConfig{data: data, addr: "127.0.0.1:0", ready: func(a string) { addrc <- a }})
	}()
	select {
	case a := <-addrc:
		resp, err := http.Get("http://" + a + path)
		if err != nil {
			tb.Fatal(err)
		}
		resp.Body.Close()
	case err := <-done:
		tb.Fatalf("serve stopped: %v", err)
	case <-time.After(30 * time.Second):
		tb.Fatal("server did not start")
	}
	cancel()
	if err := <-done; err != nil {
		tb.Errorf("serve: %v", err)
	}
}

// TestLogLevelAccessLog: access logs are written at debug level, which the
// global --log-level flag or KWDATA_LOG_LEVEL switches on for a run.
func TestLogLevelAccessLog(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		args       []string
		env        string
		wantAccess bool
	}{
		{"default", nil, "", false},
		{"flag debug", []string{"--log-level", "debug"}, "", true},
		{"flag=DEBUG", []string{"--log-level=DEBUG"}, "", true},
		{"environment debug", nil, "debug", true},
		{"flag wins over environment", []string{"--log-level", "warn"}, "debug", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _, _ := testMain(t)
			var logs syncBuffer
			m.Level = new(slog.LevelVar)
			m.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: m.Level}))
			m.Getenv = func(name string) string {
				if name == logLevelEnv {
					return tc.env
				}
				return ""
			}
			if err := m.Run(context.Background(), append(tc.args, "help")); err != nil {
				t.Fatal(err)
			}
			serveOnce(t, m, t.TempDir(), "/healthz")
			got := strings.Contains(logs.String(), "msg=request") && strings.Contains(logs.String(), "route=/healthz")
			if got != tc.wantAccess {
				t.Errorf("access log line written: %v, want %v; log:\n%s", got, tc.wantAccess, logs.String())
			}
		})
	}
}

func TestLogLevelRefusesUnknownLevel(t *testing.T) {
	t.Parallel()
	m, _, _ := testMain(t)
	err := m.Run(context.Background(), []string{"--log-level", "loud", "help"})
	if _, ok := err.(usageError); !ok || !strings.Contains(err.Error(), "debug, info, warn, error") {
		t.Errorf("--log-level loud: %v, want a usage error naming the levels", err)
	}
}
