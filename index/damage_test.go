package index

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/kwdata/kwdata/internal/testservers"
	"github.com/kwdata/kwdata/kw"
)

// damageKeywords is large enough for a table of many data blocks, so that
// a damaged block in its middle holds none of the probe keys (the first
// and last key of the table).
const damageKeywords = 5000

// flipMiddle inverts n bytes in the middle of a file, the damage of a
// disk or a copy that went wrong without changing the file's size.
func flipMiddle(tb testing.TB, name string, n int) {
	tb.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		tb.Fatal(err)
	}
	if len(b) < 4*n {
		tb.Fatalf("%s has %d bytes, too few to damage its middle %d", name, len(b), n)
	}
	for i := len(b)/2 - n/2; i < len(b)/2+n/2; i++ {
		b[i] ^= 0xff
	}
	if err := os.WriteFile(name, b, 0o644); err != nil {
		tb.Fatal(err)
	}
}

func truncateHalf(tb testing.TB, name string) {
	tb.Helper()
	st, err := os.Stat(name)
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.Truncate(name, st.Size()/2); err != nil {
		tb.Fatal(err)
	}
}

// lookupAll looks up every step-th keyword of simpleLake and returns how
// many failed; every failure must wrap kw.ErrIndexDamaged, and every
// answer must come from a build of volume want. (A lookup that meets a
// flipped block costs Pebble's search for a single flipped bit, so tests
// of damage look up a sample.)
func lookupAll(tb testing.TB, s *Store, want int64, step int) (failed int) {
	tb.Helper()
	for i := 0; i < damageKeywords; i += step {
		k := fmt.Sprintf("kw %06d", i)
		e, err := s.Lookup(context.Background(), "US", k)
		switch {
		case err != nil && !errors.Is(err, kw.ErrIndexDamaged):
			tb.Fatalf("Lookup(%q): %v, want an error wrapping ErrIndexDamaged", k, err)
		case err != nil:
			failed++
		case kw.Deref(e.Volume) != want:
			tb.Fatalf("Lookup(%q) = volume %d, want %d", k, kw.Deref(e.Volume), want)
		}
	}
	return failed
}

// logBuffer keeps what a store logs, for tests that check a line, and
// shows it in the test log too.
type logBuffer struct {
	tb testing.TB
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.b.Write(p)
	l.mu.Unlock()
	l.tb.Log(string(p))
	return len(p), nil
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func openLoggedStore(tb testing.TB, data string) (*Store, *logBuffer) {
	tb.Helper()
	logs := &logBuffer{tb: tb}
	s, err := OpenStore(context.Background(), data, StoreOptions{
		Logger:       slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
		PollInterval: time.Hour,
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s, logs
}

// TestStoreRefusesFlippedBlock: a build whose table has 4 KiB flipped in
// its middle is refused before the swap, although every probe key of its
// manifest still reads (the check before the swap once read only those),
// and the served build keeps answering every keyword.
func TestStoreRefusesFlippedBlock(t *testing.T) {
	data := t.TempDir()
	simpleLake(t, data, "2026-11-20", "us", damageKeywords, 1)
	good := buildIndex(t, data, "2026-11-20").BuildID
	simpleLake(t, data, "2026-11-21", "us", damageKeywords, 2)
	bad := buildIndex(t, data, "2026-11-21")
	publish(t, data, good)
	s := openStore(t, data)

	sst := keywordSST(t, filepath.Join(data, "index", bad.BuildID))
	flipMiddle(t, sst, 4<<10)
	// The premise: the probes alone do not see this damage, some
	// keywords do.
	probesRead, keywordsFail := probeDamaged(t, filepath.Join(data, "index", bad.BuildID, dbDirName), bad)
	if !probesRead || keywordsFail == 0 {
		t.Fatalf("flipping the middle of the table: probes read %v, %d keywords fail; want the probes to read and some keywords to fail", probesRead, keywordsFail)
	}

	publish(t, data, bad.BuildID)
	err := s.Reload()
	if err == nil || !strings.Contains(err.Error(), "checksum mismatch") || !strings.Contains(err.Error(), filepath.Base(sst)) {
		t.Fatalf("Reload of a build with a flipped block: %v, want a checksum mismatch naming %s", err, filepath.Base(sst))
	}
	if info, _ := s.Info(); info.Version != good || info.Damaged != "" {
		t.Errorf("after the refusal: serving %s (damaged %q), want %s undamaged", info.Version, info.Damaged, good)
	}
	if failed := lookupAll(t, s, 1, 1); failed != 0 {
		t.Errorf("%d lookups failed on the served build after the refusal", failed)
	}
}

// probeDamaged opens a build's database the way the store did before it
// checked every block, and reports whether every probe of m reads and
// how many of a sample of the simpleLake keywords do not.
func probeDamaged(tb testing.TB, dbDir string, m Manifest) (probesRead bool, keywordsFail int) {
	tb.Helper()
	opts := dbOptions(vfs.Default, pebbleLogger{log: testLogger(tb), fatal: panicFatal})
	opts.ReadOnly = true
	opts.EventListener = &pebble.EventListener{DataCorruption: func(pebble.DataCorruptionInfo) {}}
	db, err := pebble.Open(dbDir, opts)
	if err != nil {
		tb.Fatalf("cannot open %s: %v", dbDir, err)
	}
	defer db.Close()
	get := func(cc, word string) error {
		key, _ := appendKey(nil, cc, word)
		_, closer, err := db.Get(key)
		if err == nil {
			closer.Close()
		}
		return err
	}
	probesRead = true
	for _, p := range m.Probes {
		if get(p.Country, p.Keyword) != nil {
			probesRead = false
		}
	}
	for i := 0; i < damageKeywords; i += 7 {
		if get("US", fmt.Sprintf("kw %06d", i)) != nil {
			keywordsFail++
		}
	}
	return probesRead, keywordsFail
}

// TestStoreDamageUnderServedBuild damages the table of the served build:
// the lookups that meet the damage fail with kw.ErrIndexDamaged (the
// others still answer), Info says the build is damaged and why, the log
// names the table, and the store serves a good build once there is one:
// the same build with its table restored, or a newly published one.
func TestStoreDamageUnderServedBuild(t *testing.T) {
	tmpl := t.TempDir()
	simpleLake(t, tmpl, "2026-11-20", "us", damageKeywords, 1)
	served := buildIndex(t, tmpl, "2026-11-20").BuildID
	simpleLake(t, tmpl, "2026-11-21", "us", damageKeywords, 2)
	next := buildIndex(t, tmpl, "2026-11-21").BuildID

	damages := []struct {
		name   string
		damage func(tb testing.TB, sst string)
	}{
		{"truncated", truncateHalf},
		{"flipped", func(tb testing.TB, sst string) { flipMiddle(tb, sst, 4<<10) }},
	}
	repairs := []struct {
		name   string
		repair func(tb testing.TB, data, sst string, original []byte)
		want   string // the build then served
		volume int64
	}{
		{"restored in place", func(tb testing.TB, data, sst string, original []byte) {
			if err := os.WriteFile(sst, original, 0o644); err != nil {
				tb.Fatal(err)
			}
		}, served, 1},
		{"new build published", func(tb testing.TB, data, sst string, original []byte) {
			publish(tb, data, next)
		}, next, 2},
	}
	for _, d := range damages {
		for _, r := range repairs {
			t.Run(d.name+"/"+r.name, func(t *testing.T) {
				data := t.TempDir()
				copyDir(t, filepath.Join(tmpl, "index"), filepath.Join(data, "index"))
				publish(t, data, served)
				s, logs := openLoggedStore(t, data)
				// One lookup only: the blocks it reads are cached, and a
				// cached block no longer shows damage on disk.
				if e, err := s.Lookup(context.Background(), "US", "kw 000000"); err != nil || kw.Deref(e.Volume) != 1 {
					t.Fatalf("lookup before the damage: %+v, %v", e, err)
				}

				sst := keywordSST(t, filepath.Join(data, "index", served))
				original, err := os.ReadFile(sst)
				if err != nil {
					t.Fatal(err)
				}
				d.damage(t, sst)
				failed := lookupAll(t, s, 1, 7)
				if failed == 0 || failed == (damageKeywords+6)/7 && d.name == "flipped" {
					t.Fatalf("%d of %d lookups failed after the table was %s", failed, (damageKeywords+6)/7, d.name)
				}
				info, ok := s.Info()
				if !ok || info.Version != served || info.Damaged == "" {
					t.Fatalf("Info after the damage = %+v, %v; want build %s marked damaged", info, ok, served)
				}
				// The store checks the published build again; while it is
				// damaged it stays refused, and the log and Info name the
				// table.
				if err := s.Reload(); err == nil || !strings.Contains(err.Error(), filepath.Base(sst)) {
					t.Fatalf("Reload of the damaged served build: %v, want a refusal naming %s", err, filepath.Base(sst))
				}
				if !strings.Contains(logs.String(), filepath.Base(sst)) || !strings.Contains(logs.String(), served) {
					t.Errorf("the log does not name the damaged table %s of build %s", filepath.Base(sst), served)
				}
				if info, _ := s.Info(); !strings.Contains(info.Damaged, filepath.Base(sst)) {
					t.Errorf("Info's Damaged = %q, want it to name %s", info.Damaged, filepath.Base(sst))
				}

				r.repair(t, data, sst, original)
				if err := s.Reload(); err != nil {
					t.Fatalf("Reload after the repair: %v", err)
				}
				if info, ok := s.Info(); !ok || info.Version != r.want || info.Damaged != "" {
					t.Fatalf("Info after the repair = %+v, %v; want build %s undamaged", info, ok, r.want)
				}
				if failed := lookupAll(t, s, r.volume, 1); failed != 0 {
					t.Errorf("%d lookups failed after the repair", failed)
				}
			})
		}
	}
}

// TestStoreDamageWakesWatcher: the first lookup that meets damage makes
// the store check the published build without waiting for a poll, so a
// build restored by then is served again on its own.
func TestStoreDamageWakesWatcher(t *testing.T) {
	data := t.TempDir()
	simpleLake(t, data, "2026-11-20", "us", damageKeywords, 1)
	id := buildIndex(t, data, "2026-11-20").BuildID
	s, _ := openLoggedStore(t, data) // polls hourly: only the damage wakes it
	closed := make(chan string, 1)
	s.onClose = func(id string) { closed <- id }

	sst := keywordSST(t, filepath.Join(data, "index", id))
	original, err := os.ReadFile(sst)
	if err != nil {
		t.Fatal(err)
	}
	// The served build reads its table through an open file, so a
	// replacement by rename goes unseen until the store opens it again;
	// the flip is written in place.
	flipMiddle(t, sst, 4<<10)
	restore := func() {
		if err := os.WriteFile(sst, original, 0o644); err != nil {
			t.Error(err)
		}
	}
	// Look up until one lookup meets the damage; restore the table at
	// once, before the watcher's check can have read it.
	s.mu.Lock() // holds the watcher back until the table is restored
	met := false
	for i := 0; i < damageKeywords && !met; i++ {
		_, err := s.Lookup(context.Background(), "US", fmt.Sprintf("kw %06d", i))
		met = errors.Is(err, kw.ErrIndexDamaged)
	}
	restore()
	s.mu.Unlock()
	if !met {
		t.Fatal("no lookup met the damage")
	}
	// The damaged instance is closed once the watcher reopens the build.
	select {
	case <-closed:
	case <-time.After(time.Minute):
		t.Fatal("the watcher did not reopen the damaged build within a minute")
	}
	testservers.WaitFor(t, 10*time.Second, "the build to be served undamaged", func() bool {
		info, ok := s.Info()
		return ok && info.Damaged == ""
	})
	if info, ok := s.Info(); !ok || info.Version != id || info.Damaged != "" {
		t.Fatalf("Info = %+v, %v; want build %s served again undamaged", info, ok, id)
	}
	if failed := lookupAll(t, s, 1, 1); failed != 0 {
		t.Errorf("%d lookups failed after the watcher reopened the build", failed)
	}
}

// TestStoreRemembersFailedKeys: once a lookup of a keyword has met the
// damage, asking for it again reads nothing from the table (Pebble's
// search for a flipped bit would cost milliseconds each time).
func TestStoreRemembersFailedKeys(t *testing.T) {
	data := t.TempDir()
	simpleLake(t, data, "2026-11-20", "us", damageKeywords, 1)
	id := buildIndex(t, data, "2026-11-20").BuildID
	var reads atomic.Int64
	fs := errorfs.Wrap(vfs.Default, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if op.Kind == errorfs.OpFileReadAt && strings.HasSuffix(op.Path, ".sst") {
			reads.Add(1)
		}
		return nil
	}))
	s, err := OpenStore(context.Background(), data, StoreOptions{Logger: testLogger(t), PollInterval: time.Hour, FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.mu.Lock() // no reload: the damaged build stays served
	defer s.mu.Unlock()
	flipMiddle(t, keywordSST(t, filepath.Join(data, "index", id)), 4<<10)
	var bad string
	for i := 0; i < damageKeywords && bad == ""; i += 7 {
		k := fmt.Sprintf("kw %06d", i)
		if _, err := s.Lookup(context.Background(), "US", k); errors.Is(err, kw.ErrIndexDamaged) {
			bad = k
		}
	}
	if bad == "" {
		t.Fatal("no lookup met the damage")
	}
	before := reads.Load()
	for range 3 {
		if _, err := s.Lookup(context.Background(), "US", bad); !errors.Is(err, kw.ErrIndexDamaged) {
			t.Fatalf("Lookup(%q) again: %v, want ErrIndexDamaged", bad, err)
		}
	}
	if n := reads.Load() - before; n != 0 {
		t.Errorf("asking again for a keyword that met the damage read the table %d times, want 0", n)
	}
	if e, err := s.Lookup(context.Background(), "US", "kw 000000"); err != nil || kw.Deref(e.Volume) != 1 {
		t.Errorf("a keyword outside the damage: %+v, %v", e, err)
	}
}

// TestStoreUndecodableValueIsNoDamage: a value whose block reads cleanly
// but does not decode is a fault of the build's contents, not of the
// disk: the lookup fails without kw.ErrIndexDamaged and the build is not
// marked damaged (reading it again would not mend it).
func TestStoreUndecodableValueIsNoDamage(t *testing.T) {
	data := t.TempDir()
	simpleLake(t, data, "2026-11-20", "us", 10, 1)
	id := buildIndex(t, data, "2026-11-20").BuildID
	opts := dbOptions(vfs.Default, pebbleLogger{log: testLogger(t), fatal: panicFatal})
	db, err := pebble.Open(filepath.Join(data, "index", id, dbDirName), opts)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := appendKey(nil, "US", "kw bad value")
	if err := db.Set(key, []byte{0xff, 0xff, 0xff}, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	s := openStore(t, data)
	_, err = s.Lookup(context.Background(), "US", "kw bad value")
	if err == nil || errors.Is(err, kw.ErrIndexDamaged) {
		t.Fatalf("Lookup of an undecodable value: %v, want an error that is not ErrIndexDamaged", err)
	}
	if info, ok := s.Info(); !ok || info.Version != id || info.Damaged != "" {
		t.Errorf("Info = %+v, %v; want build %s served, not damaged", info, ok, id)
	}
	if e, err := s.Lookup(context.Background(), "US", "kw 000003"); err != nil || kw.Deref(e.Volume) != 1 {
		t.Errorf("Lookup of a good value: %+v, %v", e, err)
	}
}
