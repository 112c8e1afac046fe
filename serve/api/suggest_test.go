package api

import (
	"net/netip"
	"testing"
	"time"
)

func TestRateLimiterRefills(t *testing.T) {
	now := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	l := newRateLimiter(10, func() time.Time { return now })
	a := netip.MustParseAddr("192.0.2.7")
	for i := range 10 {
		if ok, _ := l.allow(a); !ok {
			t.Fatalf("token %d refused", i)
		}
	}
	ok, wait := l.allow(a)
	if ok || wait != 100*time.Millisecond {
		t.Fatalf("empty bucket: ok %v wait %v, want a refusal for 100ms", ok, wait)
	}
	now = now.Add(250 * time.Millisecond)
	for i := range 2 {
		if ok, _ := l.allow(a); !ok {
			t.Errorf("refilled token %d refused", i)
		}
	}
	if ok, _ := l.allow(a); ok {
		t.Error("a third token after 250ms")
	}
	now = now.Add(time.Hour)
	for range 10 {
		l.allow(a)
	}
	if ok, _ := l.allow(a); ok {
		t.Error("the bucket holds more than its burst after an idle hour")
	}
}
