package access

import (
	"context"
	"testing"
	"time"

	"github.com/kwdata/kwdata/internal/testservers"
)

// TestEmbeddedAccountEntriesExpire: a pending sign-up code's entry goes
// CodeRecordLifetime after the code expired, an applied billing event's id
// AppliedEventLifetime after it was applied, each at the first daily
// sweep past that; before it, both are kept.
func TestEmbeddedAccountEntriesExpire(t *testing.T) {
	clk := newClock(t, "2026-11-22T12:00:00Z")
	s := openStore(t, t.TempDir(), clk)
	su, err := s.StartSignup(ctx, "ann@example.com", mustAddr(t, "192.0.2.1"))
	if err != nil {
		t.Fatal(err)
	}
	_, rec := mustCreate(t, s, Registered, time.Time{})
	if applied, err := s.ApplyBilling(ctx, "evt_1", BillingChange{AccountID: rec.ID, Customer: "cus_1"}); !applied || err != nil {
		t.Fatalf("ApplyBilling = %v, %v", applied, err)
	}
	codeEnd := su.Expires.Add(CodeRecordLifetime)   // 2026-11-24 12:15
	eventEnd := clk.Now().Add(AppliedEventLifetime) // 2026-12-27 12:00
	sweepOn := func(day time.Time) {
		t.Helper()
		clk.Set(day.Truncate(24 * time.Hour).Add(30 * time.Minute))
		if err := s.flush(); err != nil {
			t.Fatal(err)
		}
	}
	has := func(key string) bool {
		t.Helper()
		_, ok, err := s.keys.getString(key)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	code, event := codePrefix+FoldEmail(su.Email), eventPrefix+"evt_1"
	sweepOn(codeEnd) // the day it ends, before its time
	if !has(code) || !has(event) {
		t.Fatalf("before their end: code kept %v, event kept %v", has(code), has(event))
	}
	sweepOn(codeEnd.Add(24 * time.Hour))
	if has(code) {
		t.Error("a pending code's entry outlived CodeRecordLifetime")
	}
	if !has(event) {
		t.Fatal("an event id went with the code")
	}
	sweepOn(eventEnd)
	if applied, err := s.ApplyBilling(ctx, "evt_1", BillingChange{AccountID: rec.ID}); applied || err != nil {
		t.Errorf("an event redelivered within its lifetime: applied %v, %v", applied, err)
	}
	sweepOn(eventEnd.Add(24 * time.Hour))
	if has(event) {
		t.Error("an applied event id outlived AppliedEventLifetime")
	}
}

// TestRedisAccountEntriesExpire: on Redis the same entries carry their end
// of life as an expiry, set on every write, and kept by a migration.
func TestRedisAccountEntriesExpire(t *testing.T) {
	rd := testservers.StartRedis(t)
	// Redis expires by its own clock: the stores' clock is the real one.
	clk := &clock{t: time.Now()}
	s := openRedisStores(t, rd, 1, Options{Now: clk.Now})[0]
	bg := context.Background()
	su, err := s.StartSignup(bg, "ann@example.com", mustAddr(t, "192.0.2.1"))
	if err != nil {
		t.Fatal(err)
	}
	_, rec := mustCreate(t, s, Registered, time.Time{})
	if _, err := s.ApplyBilling(bg, "evt_1", BillingChange{AccountID: rec.ID, Customer: "cus_1"}); err != nil {
		t.Fatal(err)
	}
	expiresAt := func(key string) time.Time {
		t.Helper()
		ms, err := s.rdb.PExpireTime(bg, redisName(key)).Result()
		if err != nil {
			t.Fatal(err)
		}
		if ms < 0 {
			t.Fatalf("%s has no expiry (%v)", redisName(key), ms)
		}
		return time.UnixMilli(int64(ms / time.Millisecond))
	}
	check := func(what, key string, want time.Time) {
		t.Helper()
		if got := expiresAt(key); got.Sub(want).Abs() > time.Second {
			t.Errorf("%s expires at %s, want %s", what, got, want)
		}
	}
	code, event := codePrefix+FoldEmail(su.Email), eventPrefix+"evt_1"
	check("a pending code", code, su.Expires.Add(CodeRecordLifetime))
	check("an applied event", event, clk.Now().Add(AppliedEventLifetime))
	// A wrong attempt rewrites the entry; its end stays.
	if _, _, err := s.VerifySignup(bg, su.Email, "not-the-code"); err == nil {
		t.Fatal("a wrong code was accepted")
	}
	check("a pending code after a wrong attempt", code, su.Expires.Add(CodeRecordLifetime))
	// A billing link is not an entry that expires.
	if ttl, err := s.rdb.PTTL(bg, redisName(customerPrefix+"cus_1")).Result(); err != nil || ttl != -1 {
		t.Errorf("a customer link has TTL %v (%v), want none", ttl, err)
	}
}
