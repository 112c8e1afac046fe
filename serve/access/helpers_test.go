package access

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/kwdata/kwdata/internal/testservers"
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

// accountStore is what the tests of keys, sign-up, rotation and billing
// need of a store; the embedded Store and the RedisStore both are one.
type accountStore interface {
	CreateKey(ctx context.Context, tier Tier, email string, paidUntil time.Time) (string, KeyRecord, error)
	RevokeKey(ctx context.Context, idOrKey string) error
	ListKeys(ctx context.Context) ([]KeyRecord, error)
	Identify(ctx context.Context, apiKey string, client netip.Addr) (Caller, error)
	Reserve(ctx context.Context, c Caller, n int) (*Reservation, error)
	StartSignup(ctx context.Context, email string, client netip.Addr) (Signup, error)
	VerifySignup(ctx context.Context, email, code string) (string, KeyRecord, error)
	RotateKey(ctx context.Context, key string) (string, KeyRecord, error)
	ApplyBilling(ctx context.Context, eventID string, c BillingChange) (bool, error)
	Account(ctx context.Context, key string) (KeyRecord, Billing, error)
	Close() error
}

// backend is one kind of account storage the sign-up, rotation and
// billing tests run on.
type backend struct {
	name string
	// start makes an empty storage and returns the clock of its stores
	// and a function that opens a store on it, as a server would: the
	// embedded store (close the last one first; one process holds the
	// folder) or a RedisStore (as many at once as there are servers).
	start func(tb testing.TB, mod ...func(*Options)) (*clock, func() accountStore)
}

var backends = []backend{
	{"embedded", func(tb testing.TB, mod ...func(*Options)) (*clock, func() accountStore) {
		clk := newClock(tb, "2026-11-22T12:00:00Z")
		dir := tb.TempDir()
		return clk, func() accountStore { return openStore(tb, dir, clk, mod...) }
	}},
	{"redis", func(tb testing.TB, mod ...func(*Options)) (*clock, func() accountStore) {
		rd := testservers.StartRedis(tb)
		// Redis expires day counters by its own clock, so the stores'
		// clock starts at noon of the real day.
		clk := &clock{t: time.Now().UTC().Truncate(24 * time.Hour).Add(12 * time.Hour)}
		opt := Options{Now: clk.Now, FlushInterval: time.Hour}
		for _, m := range mod {
			m(&opt)
		}
		return clk, func() accountStore { return openRedisStores(tb, rd, 1, opt)[0] }
	}},
}

// forBackends runs f on every backend, as subtests named after them.
func forBackends(t *testing.T, f func(t *testing.T, b backend)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { f(t, b) })
	}
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

func mustCreate(tb testing.TB, s accountStore, tier Tier, paidUntil time.Time) (string, KeyRecord) {
	tb.Helper()
	key, rec, err := s.CreateKey(context.Background(), tier, "", paidUntil)
	if err != nil {
		tb.Fatalf("CreateKey: %v", err)
	}
	return key, rec
}

func mustIdentify(tb testing.TB, s accountStore, key string, client netip.Addr) Caller {
	tb.Helper()
	c, err := s.Identify(context.Background(), key, client)
	if err != nil {
		tb.Fatalf("Identify(%q): %v", key, err)
	}
	return c
}

// use reserves and commits n lookups one at a time; it returns how many
// were admitted before the first refusal.
func use(tb testing.TB, s accountStore, c Caller, n int) int {
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
func remaining(tb testing.TB, s accountStore, c Caller) int64 {
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
