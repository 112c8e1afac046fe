// Package retry holds the small pieces the API clients of ingest share:
// waiting with a context, exponential backoff, and quoting an error body.
package retry

import (
	"context"
	"strings"
	"time"
)

// Sleep waits d or until ctx is done, whichever comes first, and returns
// ctx's error in the second case.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Backoff is base·2^n capped at limit. There is no jitter: a run is one
// sequential client, so there is no herd to spread.
func Backoff(base, limit time.Duration, n int) time.Duration {
	d := base
	for i := 0; i < n && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}

// Snippet quotes at most 300 characters of a response body for an error
// message.
func Snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	if s == "" {
		s = "(empty body)"
	}
	return s
}
