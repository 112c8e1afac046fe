package access

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/kwdata/kwdata/internal/testservers"
)

// sessionStore is what the session and account-by-id tests need of a
// store.
type sessionStore interface {
	signinStore
	NewSession(ctx0 context.Context, accountID string) (string, error)
	Session(ctx0 context.Context, raw string) (KeyRecord, error)
	EndSession(ctx0 context.Context, raw string) error
	AdmitAccount(ctx0 context.Context, id string, client netip.Addr, n int) (*Reservation, error)
	AccountByID(ctx0 context.Context, id string) (KeyRecord, Billing, error)
	RotateAccountKey(ctx0 context.Context, id string) (string, KeyRecord, error)
	SetTier(ctx0 context.Context, idOrKey string, tier Tier, paidUntil time.Time) error
}

func mustSession(tb testing.TB, s sessionStore, id string) string {
	tb.Helper()
	raw, err := s.NewSession(ctx, id)
	if err != nil {
		tb.Fatalf("NewSession(%s): %v", id, err)
	}
	return raw
}

// TestSession: a session names its account until it ends; only a hash of
// it is stored.
func TestSession(t *testing.T) { forBackends(t, testSession) }

func testSession(t *testing.T, b backend) {
	_, open := b.start(t)
	s := open().(sessionStore)
	_, rec := mustCreate(t, s, Registered, time.Time{})
	raw := mustSession(t, s, rec.ID)
	if len(raw) < 43 {
		t.Errorf("session id %q is shorter than 256 bits of base32", raw)
	}
	if other := mustSession(t, s, rec.ID); other == raw {
		t.Error("two sessions got one id")
	}
	got, err := s.Session(ctx, raw)
	if err != nil || got.ID != rec.ID {
		t.Fatalf("Session = %+v, %v; want account %s", got, err, rec.ID)
	}
	for _, bad := range []string{"", "x", raw + "x", strings.ToUpper(raw), newSessionID()} {
		if _, err := s.Session(ctx, bad); !errors.Is(err, ErrNoSession) {
			t.Errorf("Session(%q) = %v, want ErrNoSession", bad, err)
		}
	}
	if err := s.EndSession(ctx, raw); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Session(ctx, raw); !errors.Is(err, ErrNoSession) {
		t.Errorf("an ended session: %v, want ErrNoSession", err)
	}
	if err := s.EndSession(ctx, raw); err != nil {
		t.Errorf("ending an ended session: %v", err)
	}
	if _, err := s.NewSession(ctx, "nosuchaccount"); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("a session for an unknown account: %v, want ErrInvalidKey", err)
	}
}

// TestSessionIdleExpiry: a session used at least every SessionIdle lives
// on; one left idle that long is refused.
func TestSessionIdleExpiry(t *testing.T) { forBackends(t, testSessionIdleExpiry) }

func testSessionIdleExpiry(t *testing.T, b backend) {
	clk, open := b.start(t)
	s := open().(sessionStore)
	_, rec := mustCreate(t, s, Registered, time.Time{})
	raw := mustSession(t, s, rec.ID)
	for range 3 {
		clk.Add(SessionIdle - time.Hour - SessionRefresh)
		if _, err := s.Session(ctx, raw); err != nil {
			t.Fatalf("a session used within %s: %v", SessionIdle, err)
		}
	}
	// A second use within SessionRefresh does not move the idle clock.
	clk.Add(SessionRefresh / 2)
	if _, err := s.Session(ctx, raw); err != nil {
		t.Fatal(err)
	}
	clk.Add(SessionIdle - SessionRefresh/2)
	if _, err := s.Session(ctx, raw); !errors.Is(err, ErrNoSession) {
		t.Errorf("a session idle for %s: %v, want ErrNoSession", SessionIdle, err)
	}
}

// TestSessionOfRevokedAccount is an attack: the account of a session is
// revoked (an operator's decision); the session must stop working at once,
// and no new one may start.
func TestSessionOfRevokedAccount(t *testing.T) { forBackends(t, testSessionOfRevokedAccount) }

func testSessionOfRevokedAccount(t *testing.T, b backend) {
	_, open := b.start(t)
	s := open().(sessionStore)
	_, rec := mustCreate(t, s, Registered, time.Time{})
	raw := mustSession(t, s, rec.ID)
	if err := s.RevokeKey(ctx, rec.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Session(ctx, raw); !errors.Is(err, ErrNoSession) {
		t.Errorf("the session of a revoked account: %v, want ErrNoSession", err)
	}
	if _, err := s.NewSession(ctx, rec.ID); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("a new session of a revoked account: %v, want ErrInvalidKey", err)
	}
	if _, err := s.AdmitAccount(ctx, rec.ID, mustAddr(t, "192.0.2.1"), 1); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("admitting a revoked account: %v, want ErrInvalidKey", err)
	}
	if _, _, err := s.RotateAccountKey(ctx, rec.ID); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("rotating a revoked account's key: %v, want ErrInvalidKey", err)
	}
}

// TestSessionKeepsAcrossRotation: rotating the API key does not sign the
// person out; the session follows the account, not the key.
func TestSessionKeepsAcrossRotation(t *testing.T) { forBackends(t, testSessionKeepsAcrossRotation) }

func testSessionKeepsAcrossRotation(t *testing.T, b backend) {
	_, open := b.start(t)
	s := open().(sessionStore)
	key, rec := mustCreate(t, s, Registered, time.Time{})
	raw := mustSession(t, s, rec.ID)
	if _, _, err := s.RotateKey(ctx, key); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Session(ctx, raw); err != nil || got.ID != rec.ID {
		t.Errorf("session after key rotation: %+v, %v", got, err)
	}
}

// TestRedisSessionAcrossServers: a session made on one server works on
// another, and signing out on one ends it on all.
func TestRedisSessionAcrossServers(t *testing.T) {
	rd := testservers.StartRedis(t)
	stores := openRedisStores(t, rd, 3, Options{})
	_, rec, err := stores[0].CreateKey(ctx, Registered, "", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := stores[0].NewSession(ctx, rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range stores {
		if got, err := s.Session(ctx, raw); err != nil || got.ID != rec.ID {
			t.Fatalf("server %d: %+v, %v", i, got, err)
		}
	}
	if err := stores[1].EndSession(ctx, raw); err != nil {
		t.Fatal(err)
	}
	for i, s := range stores {
		if _, err := s.Session(ctx, raw); !errors.Is(err, ErrNoSession) {
			t.Errorf("server %d after sign-out on server 1: %v, want ErrNoSession", i, err)
		}
	}
	// What Redis holds is the hash, never the session id.
	names, err := stores[0].rdb.Keys(ctx, redisPrefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if strings.Contains(n, raw) {
			t.Errorf("Redis holds the session id in %s", n)
		}
	}
}

// TestAccountSharesCount: lookups admitted by account id (a session's or
// an agent's grant) and by the account's API key are one monthly count;
// a paid account is unlimited either way.
func TestAccountSharesCount(t *testing.T) { forBackends(t, testAccountSharesCount) }

func testAccountSharesCount(t *testing.T, b backend) {
	clk, open := b.start(t, func(o *Options) { o.RegisteredPerMonth = 10 })
	s := open().(sessionStore)
	client := mustAddr(t, "192.0.2.1")
	key, rec := mustCreate(t, s, Registered, time.Time{})
	if n := use(t, s, mustIdentify(t, s, key, client), 4); n != 4 {
		t.Fatalf("used %d", n)
	}
	r, err := s.AdmitAccount(ctx, rec.ID, client, 3)
	if err != nil {
		t.Fatal(err)
	}
	if l, ok := r.Limits(); !ok || l.Remaining != 3 || l.Quota != 10 {
		t.Errorf("limits by account id after 4 by key: %+v %v, want 3 of 10 left", l, ok)
	}
	r.Commit(3, nil)
	if got := remaining(t, s, mustIdentify(t, s, key, client)); got != 3 {
		t.Errorf("remaining by key = %d, want 3", got)
	}
	if _, err := s.AdmitAccount(ctx, rec.ID, client, 4); !errors.Is(err, ErrQuotaExhausted) {
		t.Errorf("4 more by account id with 3 left: %v, want ErrQuotaExhausted", err)
	}
	got, _, err := s.AccountByID(ctx, rec.ID)
	if err != nil || got.Lookups != 7 || got.ID != rec.ID {
		t.Errorf("AccountByID = %+v, %v; want 7 lookups", got, err)
	}
	// The tier is read on every call: paid now, unlimited.
	if err := s.SetTier(ctx, rec.ID, Paid, clk.Now().Add(48*time.Hour)); err != nil {
		t.Fatal(err)
	}
	r, err = s.AdmitAccount(ctx, rec.ID, client, 100)
	if err != nil {
		t.Fatalf("a paid account: %v", err)
	}
	if _, ok := r.Limits(); ok {
		t.Error("a paid account's reservation has limits")
	}
	r.Commit(100, nil)
	// Nothing to count authenticates only.
	if _, err := s.AdmitAccount(ctx, "nosuchaccount", client, 0); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("an unknown account: %v, want ErrInvalidKey", err)
	}
	// An API key is not an account id.
	if _, err := s.AdmitAccount(ctx, key, client, 1); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("a key passed as an account id: %v, want ErrInvalidKey", err)
	}
}

// TestRotateAccountKey: a signed-in account's key is created (or
// replaced) by id; the old key stops working and the count stays.
func TestRotateAccountKey(t *testing.T) { forBackends(t, testRotateAccountKey) }

func testRotateAccountKey(t *testing.T, b backend) {
	_, open := b.start(t)
	s := open().(sessionStore)
	client := mustAddr(t, "192.0.2.1")
	si := mustStartSignin(t, s, "kim@example.com")
	rec, err := s.VerifySignin(ctx, si.Email, si.Code)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.AdmitAccount(ctx, rec.ID, client, 2)
	if err != nil {
		t.Fatal(err)
	}
	r.Commit(2, nil)
	key, got, err := s.RotateAccountKey(ctx, rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != rec.ID || got.NoKeyShown || !wellFormed(key) {
		t.Errorf("created key for %+v: %+v", rec, got)
	}
	if after, _, err := s.AccountByID(ctx, rec.ID); err != nil || after.NoKeyShown {
		t.Errorf("account after its key was created: %+v, %v", after, err)
	}
	if got := remaining(t, s, mustIdentify(t, s, key, client)); got != 498 {
		t.Errorf("remaining on the created key = %d, want 498", got)
	}
	key2, _, err := s.RotateAccountKey(ctx, rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Identify(ctx, key, client); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("the replaced key: %v, want ErrInvalidKey", err)
	}
	mustIdentify(t, s, key2, client)
}

// TestSessionEntriesExpire: an idle session's entry goes at the first
// daily sweep past its end (embedded), or carries that end as its Redis
// expiry, renewed with the idle clock.
func TestSessionEntriesExpire(t *testing.T) {
	t.Run("embedded", func(t *testing.T) {
		clk := newClock(t, "2026-11-22T12:00:00Z")
		s := openStore(t, t.TempDir(), clk)
		_, rec := mustCreate(t, s, Registered, time.Time{})
		raw := mustSession(t, s, rec.ID)
		key := sessionPrefix + secretHash(raw)
		sweepAt := func(at time.Time) bool {
			t.Helper()
			clk.Set(at)
			if err := s.flush(); err != nil {
				t.Fatal(err)
			}
			_, ok, err := s.keys.getString(key)
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		end := clk.Now().Add(SessionIdle)
		if !sweepAt(end.Add(-time.Hour)) {
			t.Fatal("a session's entry went before its end")
		}
		if sweepAt(end.Add(24 * time.Hour)) {
			t.Error("an idle session's entry outlived SessionIdle")
		}
	})
	t.Run("redis", func(t *testing.T) {
		rd := testservers.StartRedis(t)
		clk := &clock{t: time.Now()}
		s := openRedisStores(t, rd, 1, Options{Now: clk.Now})[0]
		_, rec := mustCreate(t, s, Registered, time.Time{})
		raw := mustSession(t, s, rec.ID)
		name := redisName(sessionPrefix + secretHash(raw))
		expires := func() time.Time {
			t.Helper()
			d, err := s.rdb.PExpireTime(ctx, name).Result()
			if err != nil || d < 0 {
				t.Fatalf("%s has no expiry (%v, %v)", name, d, err)
			}
			return time.UnixMilli(int64(d / time.Millisecond))
		}
		if got, want := expires(), clk.Now().Add(SessionIdle); got.Sub(want).Abs() > time.Second {
			t.Errorf("a new session expires at %s, want %s", got, want)
		}
		clk.Add(SessionRefresh)
		if _, err := s.Session(ctx, raw); err != nil {
			t.Fatal(err)
		}
		if got, want := expires(), clk.Now().Add(SessionIdle); got.Sub(want).Abs() > time.Second {
			t.Errorf("a used session expires at %s, want %s", got, want)
		}
	})
}
