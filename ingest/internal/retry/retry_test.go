package retry

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want time.Duration
	}{{0, time.Second}, {1, 2 * time.Second}, {3, 8 * time.Second}, {10, time.Minute}} {
		if got := Backoff(time.Second, time.Minute, tc.n); got != tc.want {
			t.Errorf("Backoff(1s, 1m, %d) = %v, want %v", tc.n, got, tc.want)
		}
	}
}

func TestSleepStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep on a cancelled context = %v", err)
	}
	if err := Sleep(context.Background(), 0); err != nil {
		t.Fatalf("Sleep(0) = %v", err)
	}
}

func TestSnippet(t *testing.T) {
	if got := Snippet([]byte("  \n")); got != "(empty body)" {
		t.Errorf("empty: %q", got)
	}
	if got := Snippet([]byte(strings.Repeat("x", 400))); len([]rune(got)) != 301 || !strings.HasSuffix(got, "…") {
		t.Errorf("long body not cut to 300 characters: %d", len([]rune(got)))
	}
}
