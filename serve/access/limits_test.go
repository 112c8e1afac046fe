package access

import (
	"errors"
	"net/http"
	"testing"
	"time"
)

func TestWindows(t *testing.T) {
	tests := []struct {
		kind      kind
		at        string
		name      string
		start     string
		end       string
		windowSec int64
	}{
		{kindAnon, "2026-11-22T00:00:00Z", "2026-11-22", "2026-11-22T00:00:00Z", "2026-11-23T00:00:00Z", 86400},
		{kindAnon, "2026-11-22T23:59:59.999Z", "2026-11-22", "2026-11-22T00:00:00Z", "2026-11-23T00:00:00Z", 86400},
		{kindAnon, "2026-11-22T23:30:00-05:00", "2026-11-23", "2026-11-23T00:00:00Z", "2026-11-24T00:00:00Z", 86400},
		{kindAnon, "2026-12-31T12:00:00Z", "2026-12-31", "2026-12-31T00:00:00Z", "2027-01-01T00:00:00Z", 86400},
		{kindAnon, "2028-02-29T12:00:00Z", "2028-02-29", "2028-02-29T00:00:00Z", "2028-03-01T00:00:00Z", 86400},
		{kindAnon, "1969-12-31T23:00:00Z", "1969-12-31", "1969-12-31T00:00:00Z", "1970-01-01T00:00:00Z", 86400},
		{kindReg, "2026-11-22T10:00:00Z", "2026-11-22", "2026-11-22T00:00:00Z", "2026-11-23T00:00:00Z", 86400},
		{kindKey, "2026-11-22T10:00:00Z", "2026-11", "2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z", 30 * 86400},
		{kindKey, "2026-12-31T23:59:59Z", "2026-12", "2026-12-01T00:00:00Z", "2027-01-01T00:00:00Z", 31 * 86400},
		{kindKey, "2027-01-01T00:00:00Z", "2027-01", "2027-01-01T00:00:00Z", "2027-02-01T00:00:00Z", 31 * 86400},
		{kindKey, "2026-02-10T00:00:00Z", "2026-02", "2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z", 28 * 86400},
		{kindPaid, "2028-02-29T23:59:59Z", "2028-02", "2028-02-01T00:00:00Z", "2028-03-01T00:00:00Z", 29 * 86400},
	}
	for _, tt := range tests {
		t.Run(tt.kind.prefix()+tt.at, func(t *testing.T) {
			at, _ := time.Parse(time.RFC3339Nano, tt.at)
			w := tt.kind.window(at)
			if got := tt.kind.windowName(w); got != tt.name {
				t.Errorf("windowName = %s, want %s", got, tt.name)
			}
			start, end := tt.kind.bounds(w)
			if got := start.Format(time.RFC3339); got != tt.start {
				t.Errorf("start = %s, want %s", got, tt.start)
			}
			if got := end.Format(time.RFC3339); got != tt.end {
				t.Errorf("end = %s, want %s", got, tt.end)
			}
			if got := int64(end.Sub(start) / time.Second); got != tt.windowSec {
				t.Errorf("window = %d s, want %d", got, tt.windowSec)
			}
			if at.Before(start) || !at.Before(end) {
				t.Errorf("%s is not in [%s, %s)", at, start, end)
			}
			if back, ok := tt.kind.parseWindow(tt.name); !ok || back != w {
				t.Errorf("parseWindow(%s) = %d, %v; want %d", tt.name, back, ok, w)
			}
			if tt.kind.window(end) != w+1 {
				t.Errorf("the instant after the window is window %d, want %d", tt.kind.window(end), w+1)
			}
		})
	}
}

func TestLimitsHeaders(t *testing.T) {
	tests := []struct {
		l          Limits
		policy, rl string
	}{
		{Limits{Policy: "daily", Quota: 20, Window: 24 * time.Hour, Remaining: 7, Reset: time.Hour},
			`"daily";q=20;w=86400`, `"daily";r=7;t=3600`},
		{Limits{Policy: "monthly", Quota: 500, Window: 30 * 24 * time.Hour, Remaining: 0, Reset: 1500 * time.Millisecond},
			`"monthly";q=500;w=2592000`, `"monthly";r=0;t=2`}, // t rounds up
	}
	for _, tt := range tests {
		h := http.Header{}
		tt.l.SetHeaders(h)
		if got := h.Get("RateLimit-Policy"); got != tt.policy {
			t.Errorf("RateLimit-Policy = %s, want %s", got, tt.policy)
		}
		if got := h.Get("RateLimit"); got != tt.rl {
			t.Errorf("RateLimit = %s, want %s", got, tt.rl)
		}
	}
}

func TestQuotaErrorHeaders(t *testing.T) {
	e := &QuotaError{Limits: Limits{Policy: "daily", Quota: 20, Window: 24 * time.Hour, Reset: 90 * time.Second},
		Requested: 1, RetryAfter: 90 * time.Second, err: ErrQuotaExhausted}
	h := http.Header{}
	e.SetHeaders(h)
	if h.Get("Retry-After") != "90" || h.Get("RateLimit") != `"daily";r=0;t=90` {
		t.Errorf("headers = %v", h)
	}
	if !errors.Is(e, ErrQuotaExhausted) || errors.Is(e, ErrTooManyRegistrations) {
		t.Errorf("QuotaError wraps the wrong error")
	}
	if e.Error() == "" {
		t.Error("empty message")
	}
}
