package access

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// eventually polls cond every 5 ms for up to 10 s; it is for effects that
// another process causes, so it never asserts how fast they arrive.
func eventually(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	for range 2000 {
		if cond() {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	tb.Fatalf("%s never happened", what)
}

func TestKeysFromAnotherProcess(t *testing.T) {
	dir := t.TempDir()
	clk := newClock(t, "2026-11-22T12:00:00Z")
	s := openStore(t, dir, clk)
	cli, err := OpenKeys(Options{Dir: dir, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	client := mustAddr(t, "192.0.2.1")

	// A key created elsewhere works on its first request.
	key, rec, err := cli.CreateKey(ctx, Registered, "ops@example.com", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if c := mustIdentify(t, s, key, client); c.KeyID != rec.ID || c.Tier != Registered {
		t.Fatalf("new key identified as %+v", c)
	}

	// A tier change arrives within the poll interval.
	if err := cli.SetTier(ctx, rec.ID, Paid, time.Time{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "tier change reaching the server", func() bool {
		c, err := s.Identify(ctx, key, client)
		return err == nil && c.Tier == Paid
	})

	// So does a revocation.
	if err := cli.RevokeKey(ctx, rec.ID); err != nil {
		t.Fatal(err)
	}
	eventually(t, "revocation reaching the server", func() bool {
		_, err := s.Identify(ctx, key, client)
		return errors.Is(err, ErrInvalidKey)
	})

	// And keys the server creates are visible to the command line.
	_, srec, err := s.Register(ctx, "ann@example.com", client)
	if err != nil {
		t.Fatal(err)
	}
	list, err := cli.ListKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != rec.ID || !list[0].IsRevoked() || list[1].ID != srec.ID || list[1].Email != "ann@example.com" {
		t.Errorf("command line lists %+v", list)
	}
}

func TestListKeysWhileServerRuns(t *testing.T) {
	dir := t.TempDir()
	clk := newClock(t, "2026-11-22T12:00:00Z")
	s := openStore(t, dir, clk)
	key, rec := mustCreate(t, s, Registered, time.Time{})
	c := mustIdentify(t, s, key, mustAddr(t, "192.0.2.1"))
	cli, err := OpenKeys(Options{Dir: dir, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	listed := func() KeyRecord {
		t.Helper()
		list, err := cli.ListKeys(ctx)
		if err != nil || len(list) != 1 || list[0].ID != rec.ID {
			t.Fatalf("ListKeys = %+v, %v", list, err)
		}
		return list[0]
	}
	if got := listed(); got.Lookups != 0 || got.LookupsAsOf.IsZero() {
		t.Errorf("before any lookup: %+v", got)
	}

	use(t, s, c, 5)
	clk.Add(time.Second)
	if err := s.flush(); err != nil {
		t.Fatal(err)
	}
	flushedAt := clk.Now()
	use(t, s, c, 2) // not flushed yet
	if got := listed(); got.Lookups != 5 || !got.LookupsAsOf.Equal(flushedAt) || got.LastUsed.IsZero() {
		t.Errorf("after a flush: %+v; want 5 lookups as of %s", got, flushedAt)
	}
	if live, _ := s.ListKeys(ctx); live[0].Lookups != 7 {
		t.Errorf("server lists %d lookups, want 7 (live)", live[0].Lookups)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := listed(); got.Lookups != 7 {
		t.Errorf("after Close: %d lookups, want 7", got.Lookups)
	}
	// Next month the snapshot's counts are last month's: zero this period.
	clk.Set(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	if got := listed(); got.Lookups != 0 || got.LastUsed.IsZero() {
		t.Errorf("next month: %+v; want 0 lookups and a last-used time", got)
	}
}

func TestConcurrentWriters(t *testing.T) {
	dir := t.TempDir()
	clk := newClock(t, "2026-11-22T12:00:00Z")
	var wg sync.WaitGroup
	for range 3 {
		k, err := OpenKeys(Options{Dir: dir, Now: clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		for range 10 {
			wg.Go(func() {
				if _, _, err := k.CreateKey(ctx, Registered, "", time.Time{}); err != nil {
					t.Error(err)
				}
			})
		}
	}
	wg.Wait()
	k, _ := OpenKeys(Options{Dir: dir, Now: clk.Now})
	list, err := k.ListKeys(ctx)
	if err != nil || len(list) != 30 {
		t.Errorf("%d keys after 30 concurrent creates (%v)", len(list), err)
	}
}

func TestCorruptRegistryKeepsServing(t *testing.T) {
	dir := t.TempDir()
	clk := newClock(t, "2026-11-22T12:00:00Z")
	s := openStore(t, dir, clk, func(o *Options) { o.KeysPollInterval = time.Millisecond })
	key, _ := mustCreate(t, s, Registered, time.Time{})
	if err := os.WriteFile(filepath.Join(dir, keysFileName), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Unknown keys make the store read the broken file; it keeps its view.
	for range 5 {
		if _, err := s.Identify(ctx, newKey(), mustAddr(t, "192.0.2.1")); !errors.Is(err, ErrInvalidKey) {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	if _, err := s.Identify(ctx, key, mustAddr(t, "192.0.2.1")); err != nil {
		t.Errorf("known key refused after the registry broke: %v", err)
	}
	if _, err := OpenKeys(Options{Dir: dir}); err == nil {
		t.Error("OpenKeys accepted a broken registry")
	}
}

func TestKeyGrants(t *testing.T) {
	dir := t.TempDir()
	k, err := OpenKeys(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(time.Hour)
	tests := []struct {
		tier  Tier
		email string
		until time.Time
		ok    bool
	}{
		{Registered, "", time.Time{}, true},
		{Paid, "a@example.com", future, true},
		{Paid, "", time.Time{}, true},
		{Registered, "", future, false},
		{Anonymous, "", time.Time{}, false},
		{"gold", "", time.Time{}, false},
		{Registered, "not an email", time.Time{}, false},
	}
	for _, tt := range tests {
		_, rec, err := k.CreateKey(ctx, tt.tier, tt.email, tt.until)
		if (err == nil) != tt.ok {
			t.Errorf("CreateKey(%s, %q, %v) err = %v, want ok=%v", tt.tier, tt.email, tt.until, err, tt.ok)
		}
		if err == nil && (rec.Tier != tt.tier || !rec.PaidUntil.Equal(tt.until)) {
			t.Errorf("record = %+v", rec)
		}
	}
	for _, s := range []string{"registered", " PAID ", "anonymous"} {
		if _, err := ParseTier(s); err != nil {
			t.Errorf("ParseTier(%q): %v", s, err)
		}
	}
	if _, err := ParseTier("gold"); err == nil {
		t.Error("ParseTier(gold) succeeded")
	}
	if _, err := ParsePaidUntil("31/12/2026"); err == nil {
		t.Error("ParsePaidUntil accepted a non-ISO date")
	}
}

// TestUnknownKeysLookRarely: a flood of made-up keys looks at the registry
// file at most once per unknownKeyGap, every one of them is refused, and a
// key another process creates during the flood still works on its first
// request.
func TestUnknownKeysLookRarely(t *testing.T) {
	dir := t.TempDir()
	clk := newClock(t, "2026-11-22T12:00:00Z")
	// No polling: only unknown keys make the store look at the file.
	s := openStore(t, dir, clk, func(o *Options) { o.KeysPollInterval = time.Hour })
	cli, err := OpenKeys(Options{Dir: dir, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	client := mustAddr(t, "192.0.2.1")

	const workers, each = 50, 10
	before := s.keys.looks.Load()
	start := time.Now()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				if _, err := s.Identify(ctx, newKey(), client); !errors.Is(err, ErrInvalidKey) {
					t.Errorf("a made-up key: %v, want ErrInvalidKey", err)
				}
			}
		})
	}
	key, rec, err := cli.CreateKey(ctx, Registered, "", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if c := mustIdentify(t, s, key, client); c.KeyID != rec.ID {
		t.Errorf("new key identified as %+v", c)
	}
	wg.Wait()
	elapsed := time.Since(start)
	looks := s.keys.looks.Load() - before
	t.Logf("%d made-up keys in %s: %d looks at the registry", workers*each, elapsed.Round(time.Millisecond), looks)
	if bound := int64(elapsed/unknownKeyGap) + 2; looks > bound {
		t.Errorf("%d looks at the registry in %s, want at most %d (one per %s)", looks, elapsed, bound, unknownKeyGap)
	}
}
