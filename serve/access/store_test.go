package access

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var ctx = context.Background()

func TestAnonymousDailyRollover(t *testing.T) {
	clk := newClock(t, "2026-11-22T23:59:00Z")
	s := openStore(t, t.TempDir(), clk)
	c := mustIdentify(t, s, "", mustAddr(t, "203.0.113.7"))
	if c.Tier != Anonymous {
		t.Fatalf("tier = %s, want anonymous", c.Tier)
	}
	if got := use(t, s, c, 25); got != 20 {
		t.Fatalf("admitted %d anonymous lookups, want 20", got)
	}
	_, err := s.Reserve(ctx, c, 1)
	var qe *QuotaError
	if !errors.As(err, &qe) || !errors.Is(err, ErrQuotaExhausted) {
		t.Fatalf("21st lookup: err = %v, want a QuotaError", err)
	}
	if qe.RetryAfter != time.Minute || qe.Remaining != 0 || qe.Quota != 20 || qe.Policy != "daily" {
		t.Errorf("QuotaError = %+v", qe)
	}
	h := http.Header{}
	qe.SetHeaders(h)
	if h.Get("Retry-After") != "60" || h.Get("RateLimit") != `"daily";r=0;t=60` {
		t.Errorf("refusal headers = %v", h)
	}
	// Another address has its own allowance.
	if got := use(t, s, mustIdentify(t, s, "", mustAddr(t, "203.0.113.8")), 1); got != 1 {
		t.Errorf("other address refused")
	}

	clk.Set(time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC))
	r, err := s.Reserve(ctx, c, 1)
	if err != nil {
		t.Fatalf("after midnight: %v", err)
	}
	l, _ := r.Limits()
	if l.Remaining != 19 || l.Reset != 24*time.Hour {
		t.Errorf("after midnight: limits = %+v, want 19 left and a whole day to reset", l)
	}
	r.Commit(1, nil)
}

func TestRegisteredMonthlyRollover(t *testing.T) {
	tests := []struct {
		name        string
		before      string
		after       string
		windowAfter int64 // seconds in the month after the rollover
	}{
		{"nov-dec", "2026-11-30T23:59:59Z", "2026-12-01T00:00:00Z", 31 * 86400},
		{"dec-jan", "2026-12-31T23:59:59Z", "2027-01-01T00:00:00Z", 31 * 86400},
		{"jan-feb", "2027-01-31T12:00:00Z", "2027-02-01T00:00:00Z", 28 * 86400},
		{"leap-feb", "2028-01-31T23:00:00Z", "2028-02-01T00:00:00Z", 29 * 86400},
		{"leap-feb-mar", "2028-02-29T23:59:59Z", "2028-03-01T00:00:00Z", 31 * 86400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newClock(t, tt.before)
			s := openStore(t, t.TempDir(), clk, func(o *Options) { o.RegisteredPerMonth = 5 })
			key, _ := mustCreate(t, s, Registered, time.Time{})
			c := mustIdentify(t, s, key, mustAddr(t, "198.51.100.1"))
			if got := use(t, s, c, 8); got != 5 {
				t.Fatalf("admitted %d, want 5", got)
			}
			after, _ := time.Parse(time.RFC3339, tt.after)
			_, err := s.Reserve(ctx, c, 1)
			var qe *QuotaError
			if !errors.As(err, &qe) || qe.RetryAfter != after.Sub(clk.Now()) {
				t.Fatalf("refusal = %v, want retry after %s", err, after.Sub(clk.Now()))
			}
			clk.Set(after)
			r, err := s.Reserve(ctx, c, 1)
			if err != nil {
				t.Fatalf("after rollover: %v", err)
			}
			h := http.Header{}
			r.Commit(1, h)
			if want := fmt.Sprintf(`"monthly";q=5;w=%d`, tt.windowAfter); h.Get("RateLimit-Policy") != want {
				t.Errorf("RateLimit-Policy = %s, want %s", h.Get("RateLimit-Policy"), want)
			}
			if l, _ := r.Limits(); l.Remaining != 4 {
				t.Errorf("remaining = %d, want 4", l.Remaining)
			}
		})
	}
}

func TestTiersHeaders(t *testing.T) {
	clk := newClock(t, "2026-11-22T12:00:00Z")
	s := openStore(t, t.TempDir(), clk)
	regKey, _ := mustCreate(t, s, Registered, time.Time{})
	paidKey, _ := mustCreate(t, s, Paid, time.Time{})
	client := mustAddr(t, "192.0.2.1")
	tests := []struct {
		key, policy, rl string
		tier            Tier
	}{
		{"", `"daily";q=20;w=86400`, `"daily";r=19;t=43200`, Anonymous},
		{regKey, `"monthly";q=500;w=2592000`, `"monthly";r=499;t=734400`, Registered},
		{paidKey, "", "", Paid},
	}
	for _, tt := range tests {
		c := mustIdentify(t, s, tt.key, client)
		if c.Tier != tt.tier {
			t.Errorf("tier = %s, want %s", c.Tier, tt.tier)
		}
		r, err := s.Reserve(ctx, c, 1)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := r.Limits(); ok != (tt.tier != Paid) {
			t.Errorf("%s: Limits ok = %v", tt.tier, ok)
		}
		h := http.Header{}
		r.Commit(1, h)
		if h.Get("RateLimit-Policy") != tt.policy || h.Get("RateLimit") != tt.rl {
			t.Errorf("%s headers = %v, want %s / %s", tt.tier, h, tt.policy, tt.rl)
		}
	}
	// Paid is unlimited.
	c := mustIdentify(t, s, paidKey, client)
	if got := use(t, s, c, 2000); got != 2000 {
		t.Errorf("paid admitted %d of 2000", got)
	}
	if _, err := s.Reserve(ctx, c, 1_000_000); err != nil {
		t.Errorf("paid bulk refused: %v", err)
	}
}

func TestPaidLapse(t *testing.T) {
	clk := newClock(t, "2026-11-22T12:00:00Z")
	s := openStore(t, t.TempDir(), clk, func(o *Options) { o.RegisteredPerMonth = 3 })
	until, err := ParsePaidUntil("2026-11-22")
	if err != nil || !until.Equal(time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("ParsePaidUntil = %s, %v", until, err)
	}
	key, rec := mustCreate(t, s, Paid, until)
	client := mustAddr(t, "192.0.2.1")
	c := mustIdentify(t, s, key, client)
	if c.Tier != Paid || rec.ActiveTier(clk.Now()) != Paid {
		t.Fatalf("tier = %s, want paid", c.Tier)
	}
	if got := use(t, s, c, 10); got != 10 {
		t.Fatalf("paid admitted %d", got)
	}
	clk.Set(until)
	c = mustIdentify(t, s, key, client)
	if c.Tier != Registered || rec.ActiveTier(until) != Registered {
		t.Fatalf("after paid-until: tier = %s, want registered", c.Tier)
	}
	// Lookups made while paid do not eat the registered allowance.
	if got := use(t, s, c, 10); got != 3 {
		t.Errorf("lapsed key admitted %d, want 3", got)
	}
	// Renewing makes it paid again.
	if err := s.SetTier(ctx, rec.ID, Paid, until.AddDate(0, 1, 0)); err != nil {
		t.Fatal(err)
	}
	if c := mustIdentify(t, s, key, client); c.Tier != Paid {
		t.Errorf("after renewal: tier = %s", c.Tier)
	}
	keys, err := s.ListKeys(ctx)
	if err != nil || len(keys) != 1 || keys[0].Lookups != 13 {
		t.Errorf("ListKeys = %+v, %v; want 13 lookups", keys, err)
	}
}

func TestInvalidKeys(t *testing.T) {
	clk := newClock(t, "2026-11-22T12:00:00Z")
	s := openStore(t, t.TempDir(), clk)
	key, rec := mustCreate(t, s, Registered, time.Time{})
	revoked, rrec := mustCreate(t, s, Paid, time.Time{})
	if err := s.RevokeKey(ctx, rrec.ID); err != nil {
		t.Fatal(err)
	}
	client := mustAddr(t, "192.0.2.1")
	for _, k := range []string{
		"garbage",
		" ",
		newKey(), // well formed, unknown
		revoked,
		key + " ",
		key[:len(key)-1],
		key + "a",
		"KWD_" + key[4:],
		"kwd_" + "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567",
		"kwd_0000000000000000000000000000000",
		rec.ID,
	} {
		if _, err := s.Identify(ctx, k, client); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Identify(%q) err = %v, want ErrInvalidKey", k, err)
		}
	}
	if c := mustIdentify(t, s, key, client); c.KeyID != rec.ID || c.Tier != Registered {
		t.Errorf("valid key: %+v", c)
	}
	// Revoking takes effect at once in the same store.
	if err := s.RevokeKey(ctx, key); err != nil { // by the key itself
		t.Fatal(err)
	}
	if _, err := s.Identify(ctx, key, client); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("revoked key: err = %v", err)
	}
	if err := s.RevokeKey(ctx, "nosuchid"); !errors.Is(err, ErrKeyNotFound) {
		t.Errorf("RevokeKey(unknown) = %v", err)
	}
	if err := s.SetTier(ctx, rec.ID, Paid, time.Time{}); err == nil {
		t.Error("SetTier on a revoked key succeeded")
	}
}

func TestAddressGrouping(t *testing.T) {
	tests := []struct{ in, want string }{
		{"203.0.113.7", "203.0.113.7"},
		{"::ffff:203.0.113.7", "203.0.113.7"},
		{"2001:db8:1:2:3:4:5:6", "2001:db8:1:2::"},
		{"2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::"},
		{"fe80::1%eth0", "fe80::"},
		{"::1", "::"},
	}
	for _, tt := range tests {
		if got := GroupAddr(mustAddr(t, tt.in)).String(); got != tt.want {
			t.Errorf("GroupAddr(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}

	clk := newClock(t, "2026-11-22T12:00:00Z")
	s := openStore(t, t.TempDir(), clk)
	a := mustIdentify(t, s, "", mustAddr(t, "2001:db8:1:2::1"))
	b := mustIdentify(t, s, "", mustAddr(t, "2001:db8:1:2:aaaa:bbbb:cccc:dddd"))
	other := mustIdentify(t, s, "", mustAddr(t, "2001:db8:1:3::1"))
	if got := use(t, s, a, 12) + use(t, s, b, 12); got != 20 {
		t.Errorf("one /64 admitted %d, want 20", got)
	}
	if got := use(t, s, other, 20); got != 20 {
		t.Errorf("neighbouring /64 admitted %d, want 20", got)
	}
	if a.String() != "anonymous 2001:db8:1:2::/64" {
		t.Errorf("Caller.String = %q", a.String())
	}
	v4 := mustIdentify(t, s, "", mustAddr(t, "198.51.100.9"))
	mapped := mustIdentify(t, s, "", mustAddr(t, "::ffff:198.51.100.9"))
	if got := use(t, s, v4, 15) + use(t, s, mapped, 15); got != 20 {
		t.Errorf("IPv4 and IPv4-mapped admitted %d, want 20", got)
	}
}

// parallel runs n goroutines that each reserve and commit one lookup at
// the same moment; it returns admitted and refused counts.
func parallel(tb testing.TB, s *Store, c Caller, n int) (admitted, refused int64) {
	tb.Helper()
	var wg sync.WaitGroup
	var ok, no, other atomic.Int64
	start := make(chan struct{})
	for range n {
		wg.Go(func() {
			<-start
			r, err := s.Reserve(ctx, c, 1)
			switch {
			case err == nil:
				r.Commit(1, nil)
				ok.Add(1)
			case errors.Is(err, ErrQuotaExhausted):
				no.Add(1)
			default:
				other.Add(1)
			}
		})
	}
	close(start)
	wg.Wait()
	if other.Load() != 0 {
		tb.Fatalf("%d unexpected errors", other.Load())
	}
	return ok.Load(), no.Load()
}

func TestExactUnderConcurrency(t *testing.T) {
	clk := newClock(t, "2026-11-22T12:00:00Z")
	s := openStore(t, t.TempDir(), clk)
	key, _ := mustCreate(t, s, Registered, time.Time{})
	tests := []struct {
		name         string
		key          string
		n            int
		wantAdmitted int64
	}{
		{"anonymous", "", 100, 20},
		{"registered", key, 600, 500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustIdentify(t, s, tt.key, mustAddr(t, "192.0.2.55"))
			ok, no := parallel(t, s, c, tt.n)
			if ok != tt.wantAdmitted || no != int64(tt.n)-tt.wantAdmitted {
				t.Errorf("%d parallel requests: %d admitted, %d refused; want %d admitted", tt.n, ok, no, tt.wantAdmitted)
			}
		})
	}
}

func TestReservationsGiveBack(t *testing.T) {
	clk := newClock(t, "2026-11-22T12:00:00Z")
	s := openStore(t, t.TempDir(), clk)
	c := mustIdentify(t, s, "", mustAddr(t, "192.0.2.66"))

	// A bulk request bigger than what is left is refused whole.
	r, err := s.Reserve(ctx, c, 15)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reserve(ctx, c, 6); !errors.Is(err, ErrQuotaExhausted) {
		t.Fatalf("over-asking bulk: err = %v", err)
	}
	clk.Add(time.Second)
	h := http.Header{}
	r.Commit(10, h) // 5 answered otherwise: given back
	if got := h.Get("RateLimit"); got != `"daily";r=10;t=43199` {
		t.Errorf("RateLimit after a partial commit = %s, want r=10 (counted after the commit)", got)
	}
	r.Commit(15, nil) // no effect
	r.Cancel()        // no effect
	if got := remaining(t, s, c); got != 10 {
		t.Fatalf("remaining = %d, want 10", got)
	}

	// Failed requests give everything back, concurrently too.
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Go(func() {
			r, err := s.Reserve(ctx, c, 1)
			if err != nil {
				return
			}
			if i%2 == 0 {
				r.Cancel()
			} else {
				r.Commit(0, nil)
			}
		})
	}
	wg.Wait()
	if got := remaining(t, s, c); got != 10 {
		t.Errorf("remaining after cancelled requests = %d, want 10", got)
	}
	if _, err := s.Reserve(ctx, c, 0); err == nil {
		t.Error("Reserve(0) succeeded")
	}
}

func TestAdmitAndRequestKey(t *testing.T) {
	clk := newClock(t, "2026-11-22T12:00:00Z")
	s := openStore(t, t.TempDir(), clk)
	key, rec := mustCreate(t, s, Registered, time.Time{})
	client := mustAddr(t, "192.0.2.1")
	tests := []struct {
		name    string
		headers map[string]string
		wantErr error
		wantID  string
	}{
		{"none", nil, nil, ""},
		{"bearer", map[string]string{"Authorization": "Bearer " + key}, nil, rec.ID},
		{"bearer-lower-case", map[string]string{"Authorization": "bearer  " + key}, nil, rec.ID},
		{"x-api-key", map[string]string{"X-API-Key": key}, nil, rec.ID},
		{"bearer-wins", map[string]string{"Authorization": "Bearer " + key, "X-API-Key": "kwd_other"}, nil, rec.ID},
		{"empty-bearer", map[string]string{"Authorization": "Bearer "}, ErrInvalidKey, ""},
		{"basic", map[string]string{"Authorization": "Basic dXNlcjpwYXNz"}, ErrInvalidKey, ""},
		{"empty-x-api-key", map[string]string{"X-API-Key": ""}, ErrInvalidKey, ""},
		{"bad-key", map[string]string{"X-API-Key": "kwd_nope"}, ErrInvalidKey, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := http.NewRequest("GET", "/v1/keyword?q=x", nil)
			for k, v := range tt.headers {
				r.Header.Set(k, v)
			}
			res, err := s.Admit(ctx, r, client, 1)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			defer res.Cancel()
			if res.c.key.id != tt.wantID {
				t.Errorf("counted on key %q, want %q", res.c.key.id, tt.wantID)
			}
		})
	}
}

func TestRegister(t *testing.T) {
	clk := newClock(t, "2026-11-22T12:00:00Z")
	s := openStore(t, t.TempDir(), clk)
	client := mustAddr(t, "2001:db8:5::1")
	key, rec, err := s.Register(ctx, "Ann@Example.com", client)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Tier != Registered || rec.Email != "ann@example.com" {
		t.Errorf("record = %+v", rec)
	}
	if c := mustIdentify(t, s, key, client); c.Tier != Registered {
		t.Errorf("registered key tier = %s", c.Tier)
	}
	if _, _, err := s.Register(ctx, "ann@EXAMPLE.com", client); !errors.Is(err, ErrEmailTaken) {
		t.Errorf("second registration: err = %v, want ErrEmailTaken", err)
	}
	for _, bad := range []string{"", "ann", "ann@", "@example.com", "Ann <ann@example.com>", "ann@localhost", "a b@example.com", "ann@exa mple.com"} {
		if _, _, err := s.Register(ctx, bad, client); !errors.Is(err, ErrInvalidEmail) {
			t.Errorf("Register(%q) err = %v, want ErrInvalidEmail", bad, err)
		}
	}
	// Revoking frees the email.
	if err := s.RevokeKey(ctx, rec.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Register(ctx, "ann@example.com", client); err != nil {
		t.Errorf("registration after revoke: %v", err)
	}
	// Two registrations so far from this /64; the limit is 3 a day.
	if _, _, err := s.Register(ctx, "bob@example.com", mustAddr(t, "2001:db8:5::99")); err != nil {
		t.Fatal(err)
	}
	_, _, err = s.Register(ctx, "cid@example.com", client)
	var qe *QuotaError
	if !errors.Is(err, ErrTooManyRegistrations) || !errors.As(err, &qe) || qe.RetryAfter != 12*time.Hour {
		t.Errorf("fourth registration: err = %v, want ErrTooManyRegistrations retrying in 12h", err)
	}
	if _, _, err := s.Register(ctx, "cid@example.com", mustAddr(t, "2001:db8:6::1")); err != nil {
		t.Errorf("registration from another /64: %v", err)
	}
	clk.Add(12 * time.Hour)
	if _, _, err := s.Register(ctx, "dee@example.com", client); err != nil {
		t.Errorf("registration the next day: %v", err)
	}
}

func TestNormalizeEmail(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"ann@example.com", "ann@example.com", true},
		{"  Ann.Lee+kw@Mail.Example.co.uk ", "ann.lee+kw@mail.example.co.uk", true},
		{"ann@bücher.de", "ann@bücher.de", true},
		{"", "", false},
		{"ann@example", "", false},
		{"ann@@example.com", "", false},
		{"ann@-example.com", "", false},
		{"ann@example..com", "", false},
		{"\"ann\"@example.com", "", false},
		{"ann@[192.0.2.1]", "", false},
		{"ann (comment)@example.com", "", false},
		{"ann@example.com\n", "ann@example.com", true},
		{"ann@exam\u00a0ple.com", "", false},
		{string(make([]byte, 300)), "", false},
	}
	for _, tt := range tests {
		got, err := NormalizeEmail(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("NormalizeEmail(%q) = %q, %v; want %q, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalidEmail) {
			t.Errorf("NormalizeEmail(%q) err %v does not wrap ErrInvalidEmail", tt.in, err)
		}
	}
}

func TestClosedStore(t *testing.T) {
	clk := newClock(t, "2026-11-22T12:00:00Z")
	s := openStore(t, t.TempDir(), clk)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := s.Identify(ctx, "", netip.MustParseAddr("192.0.2.1")); !errors.Is(err, ErrClosed) {
		t.Errorf("Identify after Close: %v", err)
	}
	if _, err := s.Reserve(ctx, Caller{Tier: Anonymous}, 1); !errors.Is(err, ErrClosed) {
		t.Errorf("Reserve after Close: %v", err)
	}
}

// The server's Ticket interface, restated so this package need not import
// it: a *Reservation is a Ticket as it is.
var _ interface {
	Commit(counted int, h http.Header)
	Cancel()
} = (*Reservation)(nil)
