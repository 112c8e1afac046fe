package access

import (
	"errors"
	"github.com/kwdata/kwdata/internal/testservers"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

func TestCloseReopenKeepsCounts(t *testing.T) {
	dir := t.TempDir()
	clk := newClock(t, "2026-11-22T12:00:00Z")
	s := openStore(t, dir, clk)
	regKey, regRec := mustCreate(t, s, Registered, time.Time{})
	paidKey, paidRec := mustCreate(t, s, Paid, time.Time{})
	client := mustAddr(t, "2001:db8::7")
	anon := mustIdentify(t, s, "", client)
	reg := mustIdentify(t, s, regKey, client)
	paid := mustIdentify(t, s, paidKey, client)
	use(t, s, anon, 7)
	use(t, s, reg, 123)
	use(t, s, paid, 42)
	// An open reservation is not counted.
	if _, err := s.Reserve(ctx, anon, 3); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openStore(t, dir, clk)
	if got := remaining(t, s, mustIdentify(t, s, "", client)); got != 13 {
		t.Errorf("anonymous remaining after reopen = %d, want 13", got)
	}
	if got := remaining(t, s, mustIdentify(t, s, regKey, client)); got != 377 {
		t.Errorf("registered remaining after reopen = %d, want 377", got)
	}
	keys, err := s.ListKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{regRec.ID: 123, paidRec.ID: 42}
	for _, k := range keys {
		if k.Lookups != want[k.ID] || !k.LastUsed.Equal(clk.Now()) {
			t.Errorf("key %s: %d lookups, last used %s; want %d at %s", k.ID, k.Lookups, k.LastUsed, want[k.ID], clk.Now())
		}
	}
}

// TestCrashKeepsFlushedCounts stops a store without Close on a file system
// that loses everything not synced, as a kill -9 or power cut would.
func TestCrashKeepsFlushedCounts(t *testing.T) {
	dir := t.TempDir()
	clk := newClock(t, "2026-11-22T12:00:00Z")
	mem := vfs.NewCrashableMem()
	s := openStore(t, dir, clk, func(o *Options) { o.fs = mem })
	key, _ := mustCreate(t, s, Registered, time.Time{})
	client := mustAddr(t, "192.0.2.9")
	anon := mustIdentify(t, s, "", client)
	reg := mustIdentify(t, s, key, client)

	use(t, s, anon, 5)
	use(t, s, reg, 50)
	if err := s.flush(); err != nil { // what the flusher does every interval
		t.Fatal(err)
	}
	use(t, s, anon, 4) // within the last interval: may be lost
	use(t, s, reg, 40)

	crashed := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	s.admin.close() // a dead server's socket answers no one
	s2 := openStore(t, dir, clk, func(o *Options) { o.fs = crashed })
	if got := remaining(t, s2, mustIdentify(t, s2, "", client)); got != 15 {
		t.Errorf("anonymous remaining after crash = %d, want 15 (5 flushed)", got)
	}
	if got := remaining(t, s2, mustIdentify(t, s2, key, client)); got != 450 {
		t.Errorf("registered remaining after crash = %d, want 450 (50 flushed)", got)
	}
}

// TestFlusherRuns checks the background flusher writes without Close.
func TestFlusherRuns(t *testing.T) {
	dir := t.TempDir()
	clk := newClock(t, "2026-11-22T12:00:00Z")
	mem := vfs.NewCrashableMem()
	s := openStore(t, dir, clk, func(o *Options) { o.fs = mem; o.FlushInterval = 5 * time.Millisecond })
	client := mustAddr(t, "192.0.2.10")
	use(t, s, mustIdentify(t, s, "", client), 6)
	var n int64
	var err error
	flushed := testservers.Poll(10*time.Second, func() bool {
		crashed := mem.CrashClone(vfs.CrashCloneCfg{})
		db, oerr := pebble.Open(filepath.Join(dir, countersName), &pebble.Options{FS: crashed, ReadOnly: true, Logger: pebbleLogger{slog.New(slog.DiscardHandler)}})
		if oerr != nil {
			err = oerr
			return true
		}
		defer db.Close()
		v, closer, gerr := db.Get(dbKey(ckey{kind: kindAnon, window: kindAnon.window(clk.Now()), addr: client}))
		if err = gerr; err != nil {
			return !errors.Is(err, pebble.ErrNotFound)
		}
		n, _ = decodeInt(v)
		closer.Close()
		return true
	})
	if !flushed || err != nil {
		t.Fatalf("counter never flushed: %v", err)
	}
	if n != 6 {
		t.Fatalf("flushed count = %d, want 6", n)
	}
}

func TestExpiredWindowsAreDeleted(t *testing.T) {
	dir := t.TempDir()
	clk := newClock(t, "2026-11-22T12:00:00Z")
	s := openStore(t, dir, clk)
	key, _ := mustCreate(t, s, Registered, time.Time{})
	client := mustAddr(t, "192.0.2.11")
	use(t, s, mustIdentify(t, s, "", client), 3)
	use(t, s, mustIdentify(t, s, key, client), 3)
	if _, _, err := s.Register(ctx, "ann@example.com", client); err != nil {
		t.Fatal(err)
	}
	if err := s.flush(); err != nil {
		t.Fatal(err)
	}
	clk.Add(24 * time.Hour) // yesterday is kept
	use(t, s, mustIdentify(t, s, "", client), 1)
	if err := s.flush(); err != nil {
		t.Fatal(err)
	}
	if got := countKeys(t, s, "anon/"); got != 2 {
		t.Errorf("after one day: %d anonymous counters, want 2", got)
	}
	clk.Add(24 * time.Hour)
	if err := s.flush(); err != nil {
		t.Fatal(err)
	}
	if got := countKeys(t, s, "anon/"); got != 1 {
		t.Errorf("after two days: %d anonymous counters, want 1 (yesterday's)", got)
	}
	if got := countKeys(t, s, "reg/"); got != 0 {
		t.Errorf("after two days: %d registration counters, want 0", got)
	}
	if got := countKeys(t, s, "key/"); got != 1 {
		t.Errorf("monthly key counters = %d, want 1 (kept as history)", got)
	}
	inMemory := 0
	for i := range s.shards {
		for k := range s.shards[i].m {
			if k.kind == kindAnon && k.window < kindAnon.window(clk.Now())-1 {
				inMemory++
			}
		}
	}
	if inMemory != 0 {
		t.Errorf("%d expired counters still in memory", inMemory)
	}
}

func countKeys(tb testing.TB, s *Store, prefix string) int {
	tb.Helper()
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte(prefix), UpperBound: []byte(prefix[:len(prefix)-1] + "0")})
	if err != nil {
		tb.Fatal(err)
	}
	defer it.Close()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	return n
}

func TestOnlyOneServerPerFolder(t *testing.T) {
	dir := t.TempDir()
	clk := newClock(t, "2026-11-22T12:00:00Z")
	openStore(t, dir, clk)
	_, err := Open(Options{Dir: dir, Now: clk.Now})
	if err == nil || !strings.Contains(err.Error(), "already running") {
		t.Errorf("second Open: err = %v, want a refusal naming the running server", err)
	}
	// The command line can still manage keys meanwhile.
	k, err := OpenKeys(Options{Dir: dir, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := k.CreateKey(ctx, Registered, "", time.Time{}); err != nil {
		t.Errorf("CreateKey while the server runs: %v", err)
	}
}

func TestDBKeyRoundTrip(t *testing.T) {
	keys := []ckey{
		{kind: kindAnon, window: 20414, addr: mustAddr(t, "203.0.113.7")},
		{kind: kindAnon, window: 20414, addr: mustAddr(t, "2001:db8:1:2::")},
		{kind: kindAnon, window: 20414},
		{kind: kindReg, window: 20414, addr: mustAddr(t, "::")},
		{kind: kindKey, window: 2026*12 + 10, id: "abcdefgh2345"},
		{kind: kindPaid, window: 2028*12 + 1, id: "abcdefgh2345"},
	}
	for _, k := range keys {
		b := dbKey(k)
		got, ok := parseDBKey(b)
		if !ok || got != k {
			t.Errorf("parseDBKey(%s) = %+v, %v; want %+v", b, got, ok, k)
		}
	}
	if string(dbKey(keys[0])) != "anon/2025-11-22/203.0.113.7" {
		t.Errorf("dbKey = %s", dbKey(keys[0]))
	}
	for _, bad := range []string{"", "anon/", "anon/2026-11-22", "anon/x/1.2.3.4", "anon/2026-11-22/nope", "key/2026-11/", "zzz/2026-11/a"} {
		if _, ok := parseDBKey([]byte(bad)); ok {
			t.Errorf("parseDBKey(%q) accepted", bad)
		}
	}
}

func TestKeyForm(t *testing.T) {
	dir := t.TempDir()
	clk := newClock(t, "2026-11-22T12:00:00Z")
	s := openStore(t, dir, clk)
	key, rec := mustCreate(t, s, Paid, time.Date(2026, 12, 23, 0, 0, 0, 0, time.UTC))
	if !strings.HasPrefix(key, "kwd_") || len(key) != 36 || !wellFormed(key) {
		t.Errorf("key %q does not have the documented form", key)
	}
	if len(rec.ID) != 12 {
		t.Errorf("id %q is not 12 characters", rec.ID)
	}
	// Two keys never collide.
	seen := map[string]bool{}
	for range 1000 {
		k := newKey()
		if seen[k] || !wellFormed(k) {
			t.Fatalf("bad or repeated key %q", k)
		}
		seen[k] = true
	}
}

func hexString(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}
