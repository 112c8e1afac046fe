package access

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"testing"
	"time"
)

// clock is a settable time source for Options.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock(tb testing.TB, s string) *clock {
	tb.Helper()
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		tb.Fatal(err)
	}
	return &clock{t: t}
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// openStore opens a Store on dir with a long flush interval (tests flush
// explicitly) and closes it at cleanup.
func openStore(tb testing.TB, dir string, clk *clock, mod ...func(*Options)) *Store {
	tb.Helper()
	opt := Options{Dir: dir, Now: clk.Now, FlushInterval: time.Hour}
	for _, m := range mod {
		m(&opt)
	}
	s, err := Open(opt)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

func mustAddr(tb testing.TB, s string) netip.Addr {
	tb.Helper()
	a, err := netip.ParseAddr(s)
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

func mustCreate(tb testing.TB, s *Store, tier Tier, paidUntil time.Time) (string, KeyRecord) {
	tb.Helper()
	key, rec, err := s.CreateKey(context.Background(), tier, "", paidUntil)
	if err != nil {
		tb.Fatalf("CreateKey: %v", err)
	}
	return key, rec
}

func mustIdentify(tb testing.TB, s *Store, key string, client netip.Addr) Caller {
	tb.Helper()
	c, err := s.Identify(context.Background(), key, client)
	if err != nil {
		tb.Fatalf("Identify(%q): %v", key, err)
	}
	return c
}

// use reserves and commits n lookups one at a time; it returns how many
// were admitted before the first refusal.
func use(tb testing.TB, s *Store, c Caller, n int) int {
	tb.Helper()
	for i := range n {
		r, err := s.Reserve(context.Background(), c, 1)
		var qe *QuotaError
		if errors.As(err, &qe) {
			return i
		}
		if err != nil {
			tb.Fatalf("Reserve: %v", err)
		}
		r.Commit(1, nil)
	}
	return n
}

// remaining reserves one lookup, reads what remains before it, and cancels.
func remaining(tb testing.TB, s *Store, c Caller) int64 {
	tb.Helper()
	r, err := s.Reserve(context.Background(), c, 1)
	var qe *QuotaError
	if errors.As(err, &qe) {
		return qe.Remaining
	}
	if err != nil {
		tb.Fatalf("Reserve: %v", err)
	}
	defer r.Cancel()
	l, ok := r.Limits()
	if !ok {
		tb.Fatal("no limits for a limited caller")
	}
	return l.Remaining + 1
}
