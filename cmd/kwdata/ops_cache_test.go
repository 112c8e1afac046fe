package main

import (
	"context"
	"github.com/kwdata/kwdata/internal/testservers"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestServeCacheFlag: --cache-mb sizes the index's block cache, and a size
// below 1 MiB is refused before anything starts; --answer-cache-mb takes 0
// (off) and refuses a negative size.
func TestServeCacheFlag(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string // empty: the server starts
		wantLog string
	}{
		{"default", nil, "", "cache_mib=256"},
		{"set", []string{"--cache-mb", "8"}, "", "cache_mib=8"},
		{"zero", []string{"--cache-mb", "0"}, "--cache-mb is 0", ""},
		{"negative", []string{"--cache-mb", "-5"}, "--cache-mb is -5", ""},
		{"answer cache off", []string{"--answer-cache-mb", "0"}, "", "cache_mib=256"},
		{"answer cache negative", []string{"--answer-cache-mb", "-1"}, "--answer-cache-mb is -1", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _, _ := testMain(t)
			var logs syncBuffer
			m.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			args := append([]string{"serve", "--data", t.TempDir(), "--addr", "127.0.0.1:0"}, tc.args...)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- m.Run(ctx, args) }()
			if tc.wantErr != "" {
				select {
				case err := <-done:
					if _, ok := err.(usageError); !ok || !strings.Contains(err.Error(), tc.wantErr) {
						t.Errorf("serve %v: %v, want a usage error containing %q", tc.args, err, tc.wantErr)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("serve %v did not refuse", tc.args)
				}
				return
			}
			if !testservers.Poll(10*time.Second, func() bool { return strings.Contains(logs.String(), "watching the index") }) {
				t.Fatalf("the server did not open the index within 10s; log:\n%s", logs.String())
			}
			if !strings.Contains(logs.String(), tc.wantLog) {
				t.Errorf("serve %v logged no %q:\n%s", tc.args, tc.wantLog, logs.String())
			}
			cancel()
			if err := <-done; err != nil {
				t.Errorf("serve: %v", err)
			}
		})
	}
}
