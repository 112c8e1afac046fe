package access

import (
	"bytes"
	"errors"
	"github.com/kwdata/kwdata/internal/testservers"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// eventually polls cond every 5 ms for up to 10 s; it is for effects that
// another goroutine causes, so it never asserts how fast they arrive.
func eventually(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	testservers.WaitFor(tb, 10*time.Second, what, cond)
}

// TestKeysFromAnotherProcess: while a server holds the account database,
// the command line's changes go through its admin socket and take effect
// on the server before the command returns: no polling, no delay.
func TestKeysFromAnotherProcess(t *testing.T) {
	dir := t.TempDir()
	clk := newClock(t, "2026-11-22T12:00:00Z")
	s := openStore(t, dir, clk)
	cli, err := OpenKeys(Options{Dir: dir, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if cli.remote == "" {
		t.Fatal("OpenKeys opened the database a server holds instead of using its socket")
	}
	client := mustAddr(t, "192.0.2.1")

	key, rec, err := cli.CreateKey(ctx, Registered, "ops@example.com", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if c := mustIdentify(t, s, key, client); c.KeyID != rec.ID || c.Tier != Registered {
		t.Fatalf("new key identified as %+v", c)
	}
	if err := cli.SetTier(ctx, rec.ID, Paid, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if c := mustIdentify(t, s, key, client); c.Tier != Paid {
		t.Errorf("after set-tier the server sees %s", c.Tier)
	}
	if err := cli.RevokeKey(ctx, rec.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Identify(ctx, key, client); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("revoked key: %v, want ErrInvalidKey", err)
	}

	// Errors cross the socket with their kind.
	if _, _, err := cli.CreateKey(ctx, Registered, "Ann@Example.com", time.Time{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := cli.CreateKey(ctx, Registered, "ann+x@example.com", time.Time{}); !errors.Is(err, ErrEmailTaken) {
		t.Errorf("second key of a mailbox: %v, want ErrEmailTaken", err)
	}
	if err := cli.RevokeKey(ctx, "nosuchid0000"); !errors.Is(err, ErrKeyNotFound) {
		t.Errorf("revoking an unknown id: %v, want ErrKeyNotFound", err)
	}

	// Keys the server issues are listed by the command line.
	_, srec, err := s.Register(ctx, "bob@example.com", client)
	if err != nil {
		t.Fatal(err)
	}
	list, err := cli.ListKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 3 || list[0].ID != rec.ID || !list[0].IsRevoked() || list[2].ID != srec.ID || list[2].Email != "bob@example.com" {
		t.Errorf("command line lists %+v", list)
	}
}

// TestListKeysWhileServerRuns: through the server the command line sees
// live counts; with the server stopped, its last usage snapshot.
func TestListKeysWhileServerRuns(t *testing.T) {
	dir := t.TempDir()
	clk := newClock(t, "2026-11-22T12:00:00Z")
	s := openStore(t, dir, clk)
	key, rec := mustCreate(t, s, Registered, time.Time{})
	c := mustIdentify(t, s, key, mustAddr(t, "192.0.2.1"))
	listed := func() KeyRecord {
		t.Helper()
		cli, err := OpenKeys(Options{Dir: dir, Now: clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		defer cli.Close()
		list, err := cli.ListKeys(ctx)
		if err != nil || len(list) != 1 || list[0].ID != rec.ID {
			t.Fatalf("ListKeys = %+v, %v", list, err)
		}
		return list[0]
	}
	if got := listed(); got.Lookups != 0 || got.LookupsAsOf.IsZero() {
		t.Errorf("before any lookup: %+v", got)
	}
	use(t, s, c, 7) // not flushed yet
	if got := listed(); got.Lookups != 7 || got.LastUsed.IsZero() {
		t.Errorf("while the server runs: %+v; want 7 live lookups", got)
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

// TestConcurrentWriters: command lines run at the same time, with a
// server and without one, and every key they create is kept.
func TestConcurrentWriters(t *testing.T) {
	for _, withServer := range []bool{true, false} {
		t.Run(map[bool]string{true: "server", false: "no-server"}[withServer], func(t *testing.T) {
			dir := t.TempDir()
			clk := newClock(t, "2026-11-22T12:00:00Z")
			if withServer {
				openStore(t, dir, clk)
			}
			var wg sync.WaitGroup
			for range 3 {
				wg.Go(func() {
					k, err := OpenKeys(Options{Dir: dir, Now: clk.Now})
					if err != nil {
						t.Error(err)
						return
					}
					defer k.Close()
					var inner sync.WaitGroup
					for range 10 {
						inner.Go(func() {
							if _, _, err := k.CreateKey(ctx, Registered, "", time.Time{}); err != nil {
								t.Error(err)
							}
						})
					}
					inner.Wait()
				})
			}
			wg.Wait()
			k, err := OpenKeys(Options{Dir: dir, Now: clk.Now})
			if err != nil {
				t.Fatal(err)
			}
			defer k.Close()
			list, err := k.ListKeys(ctx)
			if err != nil || len(list) != 30 {
				t.Errorf("%d keys after 30 concurrent creates (%v)", len(list), err)
			}
		})
	}
}

// TestMigrateKeysJSON: a keys.json of an older kwdata is imported on the
// first open, every key keeping its id, tier, end and revocation, and is
// renamed so that it is never imported twice.
func TestMigrateKeysJSON(t *testing.T) {
	dir := t.TempDir()
	clk := newClock(t, "2026-11-22T12:00:00Z")
	reg, paid, gone := newKey(), newKey(), newKey()
	hex := func(k string) string { h := hashKey(k); return hexString(h[:]) }
	mustWrite(t, filepath.Join(dir, keysFileName), `{"version": 1, "keys": [
 {"id": "aaaaaaaaaaaa", "sha256": "`+hex(reg)+`", "tier": "registered", "email": "ann@example.com", "created": "2026-10-01T00:00:00Z"},
 {"id": "bbbbbbbbbbbb", "sha256": "`+hex(paid)+`", "tier": "paid", "created": "2026-10-02T00:00:00Z", "paid_until": "2027-01-01T00:00:00Z"},
 {"id": "cccccccccccc", "sha256": "`+hex(gone)+`", "tier": "registered", "email": "cy@example.com", "created": "2026-10-03T00:00:00Z", "revoked": "2026-10-04T00:00:00Z"}
]}`)
	s := openStore(t, dir, clk)
	client := mustAddr(t, "192.0.2.1")
	if c := mustIdentify(t, s, reg, client); c.KeyID != "aaaaaaaaaaaa" || c.Tier != Registered {
		t.Errorf("registered key after import: %+v", c)
	}
	if c := mustIdentify(t, s, paid, client); c.KeyID != "bbbbbbbbbbbb" || c.Tier != Paid {
		t.Errorf("paid key after import: %+v", c)
	}
	if _, err := s.Identify(ctx, gone, client); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("revoked key after import: %v", err)
	}
	// The imported emails hold their mailboxes; a revoked one does not.
	if _, _, err := s.Register(ctx, "ANN+new@example.com", client); !errors.Is(err, ErrEmailTaken) {
		t.Errorf("registering an imported mailbox: %v, want ErrEmailTaken", err)
	}
	if _, _, err := s.Register(ctx, "cy@example.com", client); err != nil {
		t.Errorf("registering the mailbox of a revoked key: %v", err)
	}
	list, _ := s.ListKeys(ctx)
	if len(list) != 4 || list[0].ID != "aaaaaaaaaaaa" || list[2].ID != "cccccccccccc" || !list[1].PaidUntil.Equal(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("listed after import: %+v", list)
	}
	if _, err := os.Stat(filepath.Join(dir, keysFileName)); !os.IsNotExist(err) {
		t.Errorf("keys.json still in place after the import: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, keysFileName+migratedSuffix)); err != nil {
		t.Errorf("no backup of the imported registry: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// A reopen imports nothing again, even with the old file put back.
	mustRename(t, filepath.Join(dir, keysFileName+migratedSuffix), filepath.Join(dir, keysFileName))
	s = openStore(t, dir, clk)
	if list, _ := s.ListKeys(ctx); len(list) != 4 {
		t.Errorf("%d keys after a second open, want 4", len(list))
	}
}

// TestMigrateDamagedKeysJSON: a keys.json that cannot be read stops the
// start with the reason, and stays as it was.
func TestMigrateDamagedKeysJSON(t *testing.T) {
	for name, data := range map[string]string{
		"empty":     "",
		"truncated": `{"version": 1, "keys": [{"id": `,
		"bad hash":  `{"version": 1, "keys": [{"id": "x", "sha256": "zz", "tier": "registered"}]}`,
		"version":   `{"version": 2, "keys": []}`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, keysFileName)
			mustWrite(t, path, data)
			_, err := Open(Options{Dir: dir})
			if err == nil || !strings.Contains(err.Error(), "keys.json") {
				t.Fatalf("Open with a %s keys.json: %v; want an error naming it", name, err)
			}
			if got, _ := os.ReadFile(path); string(got) != data {
				t.Errorf("keys.json changed to %q", got)
			}
		})
	}
}

func TestKeyGrants(t *testing.T) {
	dir := t.TempDir()
	k, err := OpenKeys(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
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

// TestUnknownKeysRefused: made-up keys are refused from the database, not
// remembered, and a key the command line creates meanwhile works at once.
func TestUnknownKeysRefused(t *testing.T) {
	dir := t.TempDir()
	clk := newClock(t, "2026-11-22T12:00:00Z")
	s := openStore(t, dir, clk)
	cli, err := OpenKeys(Options{Dir: dir, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	client := mustAddr(t, "192.0.2.1")
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			for range 50 {
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
	cached := 0
	for i := range s.keys.cache {
		cached += len(s.keys.cache[i].m)
	}
	if cached != 1 {
		t.Errorf("%d keys in the cache after 1,000 made-up ones and one real one, want 1", cached)
	}
}

func TestFoldEmail(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"ann@example.com", "ann@example.com"},
		{"Ann@Example.COM", "ann@example.com"},
		{"ann+news@example.com", "ann@example.com"},
		{"ann+a+b@example.com", "ann@example.com"},
		{"a.n.n@example.com", "a.n.n@example.com"},
		{"A.nn+x@gmail.com", "ann@gmail.com"},
		{"ann@googlemail.com", "ann@gmail.com"},
		{"+ann@example.com", "+ann@example.com"},
		{"", ""},
	} {
		if got := FoldEmail(tt.in); got != tt.want {
			t.Errorf("FoldEmail(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestAccountsHoldOnlyHashes: no file of the account database holds a key.
func TestAccountsHoldOnlyHashes(t *testing.T) {
	dir := t.TempDir()
	clk := newClock(t, "2026-11-22T12:00:00Z")
	s := openStore(t, dir, clk)
	var keys []string
	for range 20 {
		k, _ := mustCreate(t, s, Registered, time.Time{})
		keys = append(keys, k)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	found := 0
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil // the socket
		}
		for _, k := range keys {
			if bytes.Contains(data, []byte(k[len(keyPrefix):])) {
				t.Errorf("%s holds a key", path)
			}
			if h := hashKey(k); bytes.Contains(data, h[:]) {
				found++
			}
		}
		return nil
	})
	if found < len(keys) {
		t.Errorf("found %d of %d key hashes on disk", found, len(keys))
	}
}

// TestNoAdminSocket: a folder whose path is too long for a Unix socket
// still serves; the command line is told the database is held.
func TestNoAdminSocket(t *testing.T) {
	dir := filepath.Join(t.TempDir(), strings.Repeat("d", 110))
	clk := newClock(t, "2026-11-22T12:00:00Z")
	var log logBuffer
	s := openStore(t, dir, clk, withLog(&log))
	key, _ := mustCreate(t, s, Registered, time.Time{})
	mustIdentify(t, s, key, mustAddr(t, "192.0.2.1"))
	if n := len(log.lines("level=ERROR", "cannot reach this server")); n != 1 {
		t.Errorf("%d error lines about the socket, want 1", n)
	}
	start := time.Now()
	if _, err := openLocalKeys(Options{Dir: dir, Logger: s.log, Now: clk.Now, fs: s.opt.fs}); err == nil || !isLocked(err) {
		t.Errorf("opening the held database: %v, want a lock error", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Error("a held database made the open wait")
	}
}
