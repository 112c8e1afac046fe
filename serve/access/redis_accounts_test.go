package access

import (
	"context"
	"errors"
	"net/netip"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/kwdata/kwdata/internal/testservers"
)

// TestRedisSignupAcrossServers: a code mailed by one server is verified
// on another, and the key works on a third.
func TestRedisSignupAcrossServers(t *testing.T) {
	rd := testservers.StartRedis(t)
	stores := openRedisStores(t, rd, 3, Options{})
	client := netip.MustParseAddr("192.0.2.9")
	su, err := stores[0].StartSignup(ctx, "Bo@Example.com", client)
	if err != nil {
		t.Fatal(err)
	}
	key, rec, err := stores[1].VerifySignup(ctx, "bo@example.com", su.Code)
	if err != nil {
		t.Fatalf("verifying on another server: %v", err)
	}
	if c := mustIdentify(t, stores[2], key, client); c.KeyID != rec.ID || c.Tier != Registered {
		t.Errorf("the new key on a third server: %+v, want registered %s", c, rec.ID)
	}
	// The mailbox now holds a key, whichever server is asked.
	if su, err := stores[2].StartSignup(ctx, "bo@example.com", client); err != nil || !su.Replaces {
		t.Errorf("a second code: %+v %v, want one that replaces the key", su, err)
	}
}

// TestRedisVerifyRace: servers verifying one code at once issue exactly
// one key; the others find the code used.
func TestRedisVerifyRace(t *testing.T) {
	rd := testservers.StartRedis(t)
	stores := openRedisStores(t, rd, 2, Options{RegistrationsPerAddressPerDay: 100})
	for round := range 5 {
		email := "race" + string(rune('a'+round)) + "@example.com"
		su, err := stores[0].StartSignup(ctx, email, netip.MustParseAddr("192.0.2.10"))
		if err != nil {
			t.Fatal(err)
		}
		const callers = 6
		keys := make(chan string, callers)
		var wg sync.WaitGroup
		for i := range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				key, _, err := stores[i%len(stores)].VerifySignup(ctx, email, su.Code)
				switch {
				case err == nil:
					keys <- key
				case !errors.Is(err, ErrCodeInvalid):
					t.Errorf("verify: %v, want a key or ErrCodeInvalid", err)
				}
			}()
		}
		wg.Wait()
		close(keys)
		if n := len(keys); n != 1 {
			t.Fatalf("round %d: %d keys for one code, want exactly 1", round, n)
		}
	}
	list, err := stores[1].ListKeys(ctx)
	if err != nil || len(list) != 5 {
		t.Errorf("%d accounts (%v), want 5", len(list), err)
	}
}

// TestRedisMailboxLimitAcrossServers: the codes a mailbox gets a day are
// counted once for all servers, also when they race.
func TestRedisMailboxLimitAcrossServers(t *testing.T) {
	rd := testservers.StartRedis(t)
	stores := openRedisStores(t, rd, 2, Options{RegistrationsPerAddressPerDay: 100})
	const callers = CodesPerMailboxPerDay + 3
	errs := make(chan error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := stores[i%len(stores)].StartSignup(ctx, "flood@example.com", netip.MustParseAddr("192.0.2.11"))
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	sent := 0
	for err := range errs {
		switch {
		case err == nil:
			sent++
		case !errors.Is(err, ErrTooManyRegistrations):
			t.Errorf("StartSignup: %v", err)
		}
	}
	if sent != CodesPerMailboxPerDay {
		t.Errorf("%d codes to one mailbox from %d racing requests, want %d", sent, callers, CodesPerMailboxPerDay)
	}
}

// TestRedisBillingOnce: one Stripe event delivered to two servers at once
// is applied once.
func TestRedisBillingOnce(t *testing.T) {
	rd := testservers.StartRedis(t)
	stores := openRedisStores(t, rd, 2, Options{})
	key, rec, err := stores[0].CreateKey(ctx, Registered, "", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	until := time.Now().UTC().AddDate(0, 1, 0).Truncate(time.Second)
	for round := range 5 {
		event := "evt_" + string(rune('a'+round))
		c := BillingChange{AccountID: rec.ID, Customer: "cus_1", Subscription: "sub_1", Status: "active", PaidUntil: until.AddDate(0, 0, round)}
		var wg sync.WaitGroup
		applied := make(chan bool, 4)
		for i := range cap(applied) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ok, err := stores[i%len(stores)].ApplyBilling(ctx, event, c)
				if err != nil {
					t.Errorf("ApplyBilling: %v", err)
				}
				applied <- ok
			}()
		}
		wg.Wait()
		close(applied)
		n := 0
		for ok := range applied {
			if ok {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("event %s delivered 4 times to 2 servers: applied %d times, want 1", event, n)
		}
	}
	r, b, err := stores[1].Account(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if r.Tier != Paid || !r.PaidUntil.Equal(until.AddDate(0, 0, 4)) || b.Subscription != "sub_1" || b.Customer != "cus_1" {
		t.Errorf("account after the events: %+v %+v", r, b)
	}
	if c := mustIdentify(t, stores[1], key, netip.MustParseAddr("192.0.2.12")); c.Tier != Paid {
		t.Errorf("the key on the other server counts as %s, want paid", c.Tier)
	}
}

// TestRedisRotationReachesEveryServer: a key rotated on one server stops
// working on the others within 250 ms, although they had it cached.
func TestRedisRotationReachesEveryServer(t *testing.T) {
	rd := testservers.StartRedis(t)
	stores := openRedisStores(t, rd, 3, Options{})
	client := netip.MustParseAddr("192.0.2.13")
	key, rec, err := stores[0].CreateKey(ctx, Paid, "", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stores {
		mustIdentify(t, s, key, client) // cached now
	}
	fresh, _, err := stores[0].RotateKey(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	rotated := time.Now()
	if _, err := stores[0].Identify(ctx, key, client); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("the old key on the rotating server: %v, want ErrInvalidKey at once", err)
	}
	for i, s := range stores[1:] {
		var err error
		if !testservers.Poll(250*time.Millisecond-time.Since(rotated), func() bool {
			_, err = s.Identify(ctx, key, client)
			return errors.Is(err, ErrInvalidKey)
		}) {
			t.Fatalf("server %d still takes the old key 250 ms after rotation (%v)", i+1, err)
		}
		if c := mustIdentify(t, s, fresh, client); c.KeyID != rec.ID || c.Tier != Paid {
			t.Errorf("server %d: new key is %+v, want paid %s", i+1, c, rec.ID)
		}
	}
}

// TestRedisAccountsUnavailable: with Redis down, sign-up, verification,
// rotation, billing and the account page fail with ErrUnavailable (the
// server's 503), and change nothing.
func TestRedisAccountsUnavailable(t *testing.T) {
	rd := testservers.StartRedis(t)
	s := openRedisStores(t, rd, 1, Options{})[0]
	key, _, err := s.CreateKey(ctx, Registered, "", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	rd.Stop()
	client := netip.MustParseAddr("192.0.2.14")
	for _, tc := range []struct {
		name string
		do   func(context.Context) error
	}{
		{"StartSignup", func(ctx context.Context) error { _, err := s.StartSignup(ctx, "a@example.com", client); return err }},
		{"VerifySignup", func(ctx context.Context) error {
			_, _, err := s.VerifySignup(ctx, "a@example.com", "123456")
			return err
		}},
		{"RotateKey", func(ctx context.Context) error { _, _, err := s.RotateKey(ctx, key); return err }},
		{"ApplyBilling", func(ctx context.Context) error {
			_, err := s.ApplyBilling(ctx, "evt_1", BillingChange{Customer: "cus_1"})
			return err
		}},
		{"Account", func(ctx context.Context) error { _, _, err := s.Account(ctx, key); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.do(ctx); !errors.Is(err, ErrUnavailable) {
				t.Errorf("with Redis down: %v, want ErrUnavailable", err)
			}
		})
	}
	rd.Start()
	// The key was not rotated away while Redis was down.
	if !testservers.Poll(5*time.Second, func() bool { _, _, err = s.Account(ctx, key); return err == nil }) {
		t.Fatalf("the key after Redis is back: %v", err)
	}
}

// BenchmarkAccountBackends: a sign-up verification (which issues a key)
// and a key rotation on each backend, in the same run: one synced Pebble
// batch against one optimistic Redis transaction (a WATCH and a GET per
// value read, then MULTI/EXEC) over loopback.
func BenchmarkAccountBackends(b *testing.B) {
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			_, open := be.start(b, func(o *Options) { o.RegistrationsPerAddressPerDay = 1 << 60 })
			s := open()
			client := netip.MustParseAddr("192.0.2.1")
			b.Run("verify", func(b *testing.B) {
				for i := range b.N {
					b.StopTimer()
					email := "bench" + strconv.Itoa(b.N) + "-" + strconv.Itoa(i) + "@example.org"
					su, err := s.StartSignup(ctx, email, client)
					if err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					if _, _, err := s.VerifySignup(ctx, email, su.Code); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("rotate", func(b *testing.B) {
				key, _, err := s.CreateKey(ctx, Registered, "", time.Time{})
				if err != nil {
					b.Fatal(err)
				}
				for range b.N {
					if key, _, err = s.RotateKey(ctx, key); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
