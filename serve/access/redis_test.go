package access

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kwdata/kwdata/internal/testservers"
)

// openRedisStores opens n RedisStores on one Redis, as n servers would.
func openRedisStores(tb testing.TB, rd *testservers.Redis, n int, opt Options) []*RedisStore {
	tb.Helper()
	var stores []*RedisStore
	for range n {
		// A stopped Redis refuses connections at once, so the timeout
		// only bounds a Redis that is slow to answer: hundreds of
		// requests at once on a loaded machine, not a fault under test.
		s, err := OpenRedis(context.Background(), RedisOptions{URL: rd.URL(), Timeout: 2 * time.Second}, opt)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { s.Close() })
		// The subscription must be in place before a change is made,
		// or its message goes nowhere (the version check then covers
		// it, but that is another test).
		select {
		case <-s.subscribe:
		case <-time.After(5 * time.Second):
			tb.Fatal("no subscription within 5s")
		}
		stores = append(stores, s)
	}
	return stores
}

func keyRequest(key string) *http.Request {
	r := httptest.NewRequest("GET", "/v1/keyword?q=x", nil)
	if key != "" {
		r.Header.Set("Authorization", "Bearer "+key)
	}
	return r
}

// admitMany sends total requests of one lookup each, spread round robin
// over stores with 4 in flight on each (enough to race the stores on one
// counter; 600 at once outwaited the 300 ms command timeout on a loaded
// machine), and returns how many were admitted and committed.
func admitMany(tb testing.TB, stores []*RedisStore, key string, client netip.Addr, total int) int {
	tb.Helper()
	var ok atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, total)
	inFlight := make(chan struct{}, 4*len(stores))
	for i := range total {
		wg.Add(1)
		inFlight <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-inFlight }()
			res, err := stores[i%len(stores)].Admit(context.Background(), keyRequest(key), client, 1)
			var qe *QuotaError
			switch {
			case errors.As(err, &qe):
				return
			case err != nil:
				errs <- err
				return
			}
			res.Commit(1, http.Header{})
			ok.Add(1)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		tb.Fatalf("unexpected refusal: %v", err)
	}
	return int(ok.Load())
}

func TestRedisExactAcrossServers(t *testing.T) {
	rd := testservers.StartRedis(t)
	stores := openRedisStores(t, rd, 3, Options{})
	key, _, err := stores[0].CreateKey(context.Background(), Registered, "", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		key         string
		total, want int
	}{
		{"anonymous", "", 100, 20},
		{"registered", key, 600, 500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := admitMany(t, stores, tc.key, netip.MustParseAddr("203.0.113.7"), tc.total)
			if got != tc.want {
				t.Fatalf("%d parallel requests over 3 servers: %d admitted, want exactly %d", tc.total, got, tc.want)
			}
		})
	}
}

func TestRedisRateLimitFields(t *testing.T) {
	rd := testservers.StartRedis(t)
	// Redis expires counters by its own clock, so the test's clock stays
	// near the real one: 23:00 UTC today.
	clk := &clock{t: time.Now().UTC().Truncate(24 * time.Hour).Add(23 * time.Hour)}
	stores := openRedisStores(t, rd, 2, Options{Now: clk.Now})
	client := netip.MustParseAddr("198.51.100.1")
	for i, tc := range []struct {
		n, counted int
		remaining  string
	}{
		{5, 5, `"daily";r=15;t=3600`},
		{5, 2, `"daily";r=13;t=3600`}, // three given back
		{1, 0, `"daily";r=13;t=3600`},
	} {
		res, err := stores[i%2].Admit(context.Background(), keyRequest(""), client, tc.n)
		if err != nil {
			t.Fatal(err)
		}
		h := http.Header{}
		res.Commit(tc.counted, h)
		if got := h.Get("RateLimit"); got != tc.remaining {
			t.Errorf("step %d: RateLimit %q, want %q", i, got, tc.remaining)
		}
		if got := h.Get("RateLimit-Policy"); got != `"daily";q=20;w=86400` {
			t.Errorf("step %d: RateLimit-Policy %q", i, got)
		}
	}
	// Cancel gives everything back.
	res, err := stores[0].Admit(context.Background(), keyRequest(""), client, 13)
	if err != nil {
		t.Fatal(err)
	}
	res.Cancel()
	if _, err := stores[1].Admit(context.Background(), keyRequest(""), client, 14); err == nil {
		t.Fatal("14 lookups admitted with 13 left")
	} else if qe := (*QuotaError)(nil); !errors.As(err, &qe) || qe.Remaining != 13 || qe.RetryAfter != time.Hour {
		t.Fatalf("refusal %v, want a QuotaError with 13 left, 1h to reset", err)
	}
	// The next UTC day is a new window.
	clk.Add(time.Hour)
	res, err = stores[1].Admit(context.Background(), keyRequest(""), client, 20)
	if err != nil {
		t.Fatalf("a new day: %v", err)
	}
	res.Commit(20, nil)
}

// TestRedisKeyChangesReachEveryServer checks that a key created, re-tiered
// or revoked through one server takes effect on the others within 250 ms,
// also when they had cached the key before.
func TestRedisKeyChangesReachEveryServer(t *testing.T) {
	rd := testservers.StartRedis(t)
	stores := openRedisStores(t, rd, 3, Options{})
	ctx := context.Background()
	client := netip.MustParseAddr("192.0.2.1")
	// A key asked for before it exists is remembered as unknown.
	key, rec, err := stores[0].CreateKey(ctx, Registered, "a@example.com", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	tierOn := func(s *RedisStore) (Tier, error) {
		c, err := s.Identify(ctx, key, client)
		return c.Tier, err
	}
	within := func(what string, want func(Tier, error) bool) {
		t.Helper()
		deadline := time.Now().Add(250 * time.Millisecond)
		for _, s := range stores {
			var tier Tier
			var err error
			if !testservers.Poll(time.Until(deadline), func() bool { tier, err = tierOn(s); return want(tier, err) }) {
				t.Fatalf("%s: not seen by every server within 250ms (tier %q, err %v)", what, tier, err)
			}
		}
	}
	within("create", func(tier Tier, err error) bool { return err == nil && tier == Registered })
	if _, _, err := stores[1].CreateKey(ctx, Registered, "A@example.com", time.Time{}); !errors.Is(err, ErrEmailTaken) {
		t.Fatalf("second key for one mailbox: %v, want ErrEmailTaken", err)
	}
	if err := stores[1].SetTier(ctx, rec.ID, Paid, time.Time{}); err != nil {
		t.Fatal(err)
	}
	within("set-tier paid", func(tier Tier, err error) bool { return err == nil && tier == Paid })
	if err := stores[2].RevokeKey(ctx, rec.ID); err != nil {
		t.Fatal(err)
	}
	within("revoke", func(_ Tier, err error) bool { return errors.Is(err, ErrInvalidKey) })
	if err := stores[2].SetTier(ctx, rec.ID, Paid, time.Time{}); err == nil {
		t.Fatal("set-tier of a revoked key succeeded")
	}
	if err := stores[2].RevokeKey(ctx, "nosuchid1234"); !errors.Is(err, ErrKeyNotFound) {
		t.Fatalf("revoke of an unknown id: %v", err)
	}
	// The mailbox is free again.
	if _, _, err := stores[0].CreateKey(ctx, Registered, "a@example.com", time.Time{}); err != nil {
		t.Fatalf("new key for a freed mailbox: %v", err)
	}
	recs, err := stores[0].ListKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].ID != rec.ID || !recs[0].IsRevoked() || recs[1].IsRevoked() {
		t.Fatalf("ListKeys = %+v, want the revoked key then the new one", recs)
	}
}

// TestRedisMissedInvalidation checks that a change made while a server's
// subscription was down still reaches it, through the version key.
func TestRedisMissedInvalidation(t *testing.T) {
	rd := testservers.StartRedis(t)
	stores := openRedisStores(t, rd, 1, Options{})
	s := stores[0]
	ctx := context.Background()
	key, rec, err := s.CreateKey(ctx, Paid, "", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	waitHandled(t, s, 1) // the creation's own message passes
	if c, err := s.Identify(ctx, key, netip.Addr{}); err != nil || c.Tier != Paid {
		t.Fatalf("Identify = %v, %v", c, err)
	}
	// Change the record behind the subscription's back, as if the
	// message had been lost, then let the subscription reconnect.
	sk, _, err := s.get(ctx, fmt.Sprintf("%x", hashKey(key)))
	if err != nil {
		t.Fatal(err)
	}
	sk.Revoked = time.Now()
	data := mustJSON(t, sk)
	if err := s.rdb.Set(ctx, redisRecord+fmt.Sprintf("%x", hashKey(key)), data, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.rdb.Incr(ctx, redisVersion).Err(); err != nil {
		t.Fatal(err)
	}
	if c, err := s.Identify(ctx, key, netip.Addr{}); err != nil {
		t.Fatalf("before the reconnect the cached record should still answer: %v", err)
	} else if c.KeyID != rec.ID {
		t.Fatal("wrong key")
	}
	if err := s.rdb.ClientKillByFilter(ctx, "TYPE", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.subscribe:
	case <-time.After(5 * time.Second):
		t.Fatal("no resubscription within 5s")
	}
	if _, err := s.Identify(ctx, key, netip.Addr{}); !errors.Is(err, ErrInvalidKey) {
		t.Fatalf("after the reconnect: %v, want ErrInvalidKey", err)
	}
}

// TestRedisDownAndBack checks the faults: with Redis gone counted callers
// get ErrUnavailable (never admitted free), a paid key already known is
// still served, Ready reports it, and everything works again when Redis
// returns, with the counts it had.
func TestRedisDownAndBack(t *testing.T) {
	rd := testservers.StartRedis(t)
	stores := openRedisStores(t, rd, 1, Options{FlushInterval: 50 * time.Millisecond})
	s := stores[0]
	ctx := context.Background()
	paid, _, err := s.CreateKey(ctx, Paid, "", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	reg, _, err := s.CreateKey(ctx, Registered, "", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	client := netip.MustParseAddr("192.0.2.9")
	for _, k := range []string{"", reg, paid} {
		res, err := s.Admit(ctx, keyRequest(k), client, 3)
		if err != nil {
			t.Fatal(err)
		}
		res.Commit(3, nil)
	}
	// Redis holds the paid count once a flush has run.
	var recs []KeyRecord
	if !testservers.Poll(5*time.Second, func() bool {
		recs, err = s.ListKeys(ctx)
		return err == nil && len(recs) == 2 && recs[0].Lookups == 3 && recs[1].Lookups == 3
	}) {
		t.Fatalf("ListKeys = %+v, %v; want 3 paid and 3 registered lookups flushed within 5s", recs, err)
	}
	rd.Stop()
	for _, k := range []string{"", reg} {
		if _, err := s.Admit(ctx, keyRequest(k), client, 1); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("Admit with Redis down (key %q): %v, want ErrUnavailable", k, err)
		}
	}
	res, err := s.Admit(ctx, keyRequest(paid), client, 1)
	if err != nil {
		t.Fatalf("paid key with Redis down: %v", err)
	}
	res.Commit(1, nil)
	testservers.WaitFor(t, 3*time.Second, "Ready to fail after Redis stopped", func() bool { return s.Ready() != nil })
	if !errors.Is(s.Ready(), ErrUnavailable) {
		t.Fatalf("Ready = %v", s.Ready())
	}
	rd.Start()
	if !testservers.Poll(5*time.Second, func() bool { return s.Ready() == nil }) {
		t.Fatalf("not ready 5s after Redis returned: %v", s.Ready())
	}
	res, err = s.Admit(ctx, keyRequest(""), client, 17)
	if err != nil {
		t.Fatalf("after recovery: %v", err)
	}
	res.Commit(17, nil)
	if _, err := s.Admit(ctx, keyRequest(""), client, 1); err == nil {
		t.Fatal("the anonymous count was lost over the restart")
	}
	// The paid lookup made while Redis was down is flushed once it is
	// back.
	if !testservers.Poll(5*time.Second, func() bool {
		recs, err = s.ListKeys(ctx)
		return err == nil && len(recs) == 2 && recs[0].Lookups == 4 && recs[1].Lookups == 3
	}) {
		t.Fatalf("ListKeys after recovery = %+v, %v; want 4 paid and 3 registered lookups", recs, err)
	}
}

func TestOpenRedisRefusesBadURL(t *testing.T) {
	for _, u := range []string{"", "http://localhost:6379", "redis://127.0.0.1:1/0"} {
		if s, err := OpenRedis(context.Background(), RedisOptions{URL: u, Timeout: 200 * time.Millisecond}, Options{}); err == nil {
			s.Close()
			t.Errorf("OpenRedis(%q) succeeded", u)
		}
	}
}

func mustJSON(tb testing.TB, v any) []byte {
	tb.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// TestMigrateToRedis moves an embedded store to Redis: keys keep working
// (revoked ones stay refused, mailboxes stay taken), every allowance
// continues where it was, and a second copy replaces rather than adds.
func TestMigrateToRedis(t *testing.T) {
	rd := testservers.StartRedis(t)
	dir := t.TempDir()
	clk := &clock{t: time.Now()}
	ctx := context.Background()
	emb := openStore(t, dir, clk)
	regKey, regRec, err := emb.CreateKey(ctx, Registered, "ann@example.com", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	paidKey, _ := mustCreate(t, emb, Paid, time.Time{})
	goneKey, goneRec := mustCreate(t, emb, Registered, time.Time{})
	if err := emb.RevokeKey(ctx, goneRec.ID); err != nil {
		t.Fatal(err)
	}
	client := mustAddr(t, "203.0.113.50")
	use(t, emb, mustIdentify(t, emb, "", client), 7)
	use(t, emb, mustIdentify(t, emb, regKey, client), 30)
	use(t, emb, mustIdentify(t, emb, paidKey, client), 4)
	paidRec, _, _ := emb.Account(ctx, paidKey)
	if _, err := emb.ApplyBilling(ctx, "evt_checkout", BillingChange{AccountID: paidRec.ID, Customer: "cus_1", Subscription: "sub_1", Status: "active"}); err != nil {
		t.Fatal(err)
	}
	su, err := emb.StartSignup(ctx, "bo@example.com", client)
	if err != nil {
		t.Fatal(err)
	}
	if err := emb.Close(); err != nil {
		t.Fatal(err)
	}

	s := openRedisStores(t, rd, 1, Options{Now: clk.Now})[0]
	for range 2 {
		rep, err := MigrateToRedis(ctx, Options{Dir: dir, Now: clk.Now}, s)
		if err != nil {
			t.Fatal(err)
		}
		// The code, the customer, the subscription and the event.
		if rep.Keys != 3 || rep.Counters != 3 || rep.Accounts != 4 {
			t.Fatalf("report %+v, want 3 keys, 3 counters and 4 other entries", rep)
		}
	}
	if _, err := s.Identify(ctx, goneKey, client); !errors.Is(err, ErrInvalidKey) {
		t.Fatalf("revoked key after migration: %v", err)
	}
	if c, err := s.Identify(ctx, paidKey, client); err != nil || c.Tier != Paid {
		t.Fatalf("paid key after migration: %v, %v", c, err)
	}
	if _, _, err := s.CreateKey(ctx, Registered, "ann@example.com", time.Time{}); !errors.Is(err, ErrEmailTaken) {
		t.Fatalf("mailbox after migration: %v, want ErrEmailTaken", err)
	}
	for _, tc := range []struct {
		key  string
		want int
	}{{"", 13}, {regKey, 470}} {
		if got := admitMany(t, []*RedisStore{s}, tc.key, client, tc.want+5); got != tc.want {
			t.Errorf("key %q: %d admitted after migration, want the %d left", tc.key, got, tc.want)
		}
	}
	recs, err := s.ListKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 || recs[0].ID != regRec.ID || recs[0].Lookups != 500 || recs[1].Lookups != 4 || recs[0].LastUsed.IsZero() {
		t.Fatalf("ListKeys = %+v", recs)
	}
	// Billing continues: an applied event is not applied again, and the
	// subscription still finds its account.
	if applied, err := s.ApplyBilling(ctx, "evt_checkout", BillingChange{AccountID: paidRec.ID}); applied || err != nil {
		t.Errorf("an event applied before the migration: applied %v, %v", applied, err)
	}
	if applied, err := s.ApplyBilling(ctx, "evt_update", BillingChange{Subscription: "sub_1", Status: "past_due"}); !applied || err != nil {
		t.Errorf("an event of the subscription after the migration: applied %v, %v", applied, err)
	}
	if _, b, err := s.Account(ctx, paidKey); err != nil || b.Status != "past_due" || b.Customer != "cus_1" {
		t.Errorf("billing after the migration: %+v, %v", b, err)
	}
	// Codes and event ids keep their end of life.
	for _, name := range []string{redisName(codePrefix + "bo@example.com"), redisName(eventPrefix + "evt_checkout")} {
		if ttl, err := s.rdb.PTTL(ctx, name).Result(); err != nil || ttl <= 0 {
			t.Errorf("%s after the migration: TTL %v, %v; want one", name, ttl, err)
		}
	}
	// A code mailed before the migration works after it.
	if _, rec, err := s.VerifySignup(ctx, "bo@example.com", su.Code); err != nil || rec.Email != "bo@example.com" {
		t.Errorf("a code mailed before the migration: %+v, %v", rec, err)
	}
}

// paidKeyOnTwo starts Redis and two stores on it, creates a paid key on
// the first, and gives the second time to take the creation's message, so
// that any message a test sends after it is late.
func paidKeyOnTwo(t *testing.T) (rd *testservers.Redis, a, b *RedisStore, paid string) {
	t.Helper()
	rd = testservers.StartRedis(t)
	stores := openRedisStores(t, rd, 2, Options{})
	a, b = stores[0], stores[1]
	paid, _, err := a.CreateKey(context.Background(), Paid, "", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	waitHandled(t, b, 1)
	return rd, a, b, paid
}

// waitHandled waits up to 10 s until s has handled n invalidation
// messages.
func waitHandled(tb testing.TB, s *RedisStore, n int64) {
	tb.Helper()
	if !testservers.Poll(10*time.Second, func() bool { return s.handled.Load() >= n }) {
		tb.Fatalf("%d invalidation messages handled within 10s, want %d", s.handled.Load(), n)
	}
}

// TestRedisLateInvalidationKeepsNewerRecord: the message of a key's
// creation can reach a server after that server has read the new record
// (its first lookup); the record must stay cached, since it is what serves
// the paid key while Redis is down. A message about a later change must
// still drop it.
func TestRedisLateInvalidationKeepsNewerRecord(t *testing.T) {
	rd, a, b, paid := paidKeyOnTwo(t)
	ctx := context.Background()
	client := netip.MustParseAddr("192.0.2.10")
	if _, err := b.Identify(ctx, paid, client); err != nil {
		t.Fatal(err)
	}
	h := hashKey(paid)
	b.invalidate(hex.EncodeToString(h[:])) // the creation's message, late
	b.cacheMu.RLock()
	_, kept := b.known[h]
	b.cacheMu.RUnlock()
	if !kept {
		t.Fatal("a late message of the key's creation dropped the record read after it")
	}
	// A later change (another key's, bumping the version) means a message
	// may be about something newer than the record: it is dropped.
	if _, _, err := a.CreateKey(ctx, Registered, "", time.Time{}); err != nil {
		t.Fatal(err)
	}
	b.invalidate(hex.EncodeToString(h[:]))
	b.cacheMu.RLock()
	_, kept = b.known[h]
	b.cacheMu.RUnlock()
	if kept {
		t.Fatal("a message after a later change left the record cached")
	}
	// Read again, it serves with Redis down.
	if _, err := b.Identify(ctx, paid, client); err != nil {
		t.Fatal(err)
	}
	b.invalidate(hex.EncodeToString(h[:]))
	rd.Stop()
	if c, err := b.Identify(ctx, paid, client); err != nil || c.Tier != Paid {
		t.Fatalf("known paid key with Redis down: %+v, %v", c, err)
	}
}

// TestRedisInvalidationDuringRead: a key's creation message that reaches a
// server while it reads the new key must not keep the server from caching
// it (it would then refuse the paid key while Redis is down); a message
// about a later change, or one that could not tell versions, must.
func TestRedisInvalidationDuringRead(t *testing.T) {
	_, a, b, paid := paidKeyOnTwo(t)
	ctx := context.Background()
	h := hashKey(paid)
	hx := hex.EncodeToString(h[:])
	// readDuring reads the record as lookup does, runs between (the
	// messages that arrive meanwhile), and reports whether it may be kept.
	readDuring := func(between func()) bool {
		t.Helper()
		b.cacheMu.RLock()
		gen := b.gen
		b.cacheMu.RUnlock()
		_, ok, at, err := b.getAt(ctx, hx)
		if err != nil || !ok {
			t.Fatalf("read: %v, found %v", err, ok)
		}
		between()
		b.cacheMu.Lock()
		defer b.cacheMu.Unlock()
		return b.fresh(gen, at)
	}
	if !readDuring(func() { b.invalidate(hx) }) {
		t.Error("the creation's message during the read dropped the record read after the creation")
	}
	if readDuring(func() {
		if _, _, err := a.CreateKey(ctx, Registered, "", time.Time{}); err != nil {
			t.Fatal(err)
		}
		b.invalidate(hx)
	}) {
		t.Error("a message after a later change kept the record read before it")
	}
	if readDuring(func() { b.invalidate(redisAllChanged) }) {
		t.Error("a message about every key kept the record read during it")
	}
	if !readDuring(func() {}) {
		t.Error("a read with no message during it was not kept")
	}
}

// TestRedisVersionUnreadableAfterSubscribe: when Redis goes away between a
// resubscription and the version read that follows it, the cache keeps
// serving known paid keys, and the version is compared once Redis answers.
// The change the server missed lands before Redis goes away: landed after
// it answered again, the server could compare the version before it, and
// nothing would ever compare it again.
func TestRedisVersionUnreadableAfterSubscribe(t *testing.T) {
	rd := testservers.StartRedis(t)
	s := openRedisStores(t, rd, 1, Options{})[0]
	ctx := context.Background()
	paid, _, err := s.CreateKey(ctx, Paid, "", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	client := netip.MustParseAddr("192.0.2.11")
	// Every invalidation of the creation first: one handled after the
	// change below would drop the key as that change's own. Each change
	// bumped the version once, and its server handles it twice: at once
	// when it writes, and again when its own message comes back.
	created, err := s.rdb.Get(ctx, redisVersion).Int64()
	if err != nil {
		t.Fatal(err)
	}
	waitHandled(t, s, 2*created)
	if _, err := s.Identify(ctx, paid, client); err != nil {
		t.Fatal(err)
	}
	h := hashKey(paid)
	cached := func() bool {
		s.cacheMu.RLock()
		defer s.cacheMu.RUnlock()
		_, ok := s.known[h]
		return ok
	}
	if !cached() {
		t.Fatal("the paid key was not cached by its lookup")
	}
	// A change whose message this server missed: the version moved, and
	// nothing was published. A version that moves forward drops nothing
	// until the server compares it after a subscription.
	if err := s.rdb.Incr(ctx, redisVersion).Err(); err != nil {
		t.Fatal(err)
	}
	if !cached() {
		t.Fatal("a version moved without a message emptied the key cache before any resubscription")
	}
	rd.Stop()
	s.checkVersion() // as after a subscription, with Redis gone again
	if !cached() {
		t.Fatal("an unreadable version emptied the key cache")
	}
	if c, err := s.Identify(ctx, paid, client); err != nil || c.Tier != Paid {
		t.Fatalf("known paid key with Redis down: %+v, %v", c, err)
	}
	rd.Start()
	testservers.WaitFor(t, 5*time.Second, "the version to be compared once Redis answered again (the key cache emptied)",
		func() bool { return !cached() })
}
