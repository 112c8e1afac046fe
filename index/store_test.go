package index

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/kwdata/kwdata/internal/testservers"
	"github.com/kwdata/kwdata/kw"
)

var _ kw.Index = (*Store)(nil)

func TestStoreBeforeAnyIndex(t *testing.T) {
	data := t.TempDir()
	s := openStore(t, data)
	if _, err := s.Lookup(context.Background(), "US", "kw 000001"); !errors.Is(err, kw.ErrNoIndex) {
		t.Fatalf("Lookup before any build: %v, want ErrNoIndex", err)
	}
	if _, ok := s.Info(); ok {
		t.Fatal("Info ok before any build")
	}
	if err := s.Reload(); err != nil {
		t.Fatalf("Reload with nothing published: %v", err)
	}
	simpleLake(t, data, "2026-11-21", "us", 10, 42)
	m := buildIndex(t, data, "2026-11-21")
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if info, ok := s.Info(); !ok || info.Version != m.BuildID {
		t.Fatalf("Info after Reload = %+v, %v; want build %s", info, ok, m.BuildID)
	}
	e, err := s.Lookup(context.Background(), "US", "kw 000001")
	if err != nil || kw.Deref(e.Volume) != 42 {
		t.Fatalf("Lookup = %+v, %v", e, err)
	}
}

func TestStorePollsPointer(t *testing.T) {
	data := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := OpenStore(ctx, data, StoreOptions{Logger: testLogger(t), PollInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	simpleLake(t, data, "2026-11-21", "us", 10, 42)
	m := buildIndex(t, data, "2026-11-21")
	// Bounded wait for the poller; no timing is asserted.
	testservers.WaitFor(t, 10*time.Second, "the store to pick up the published build", func() bool {
		info, ok := s.Info()
		return ok && info.Version == m.BuildID
	})
}

func TestStoreClose(t *testing.T) {
	data := t.TempDir()
	simpleLake(t, data, "2026-11-21", "us", 10, 42)
	buildIndex(t, data, "2026-11-21")
	s, err := OpenStore(context.Background(), data, StoreOptions{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	var closed []string
	s.onClose = func(id string) { closed = append(closed, id) }
	if _, err := s.Lookup(context.Background(), "us", "kw 000003"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if len(closed) != 1 {
		t.Errorf("Close closed %d builds, want 1", len(closed))
	}
	if _, err := s.Lookup(context.Background(), "us", "kw 000003"); !errors.Is(err, kw.ErrNoIndex) {
		t.Errorf("Lookup after Close: %v, want ErrNoIndex", err)
	}
	if err := s.Reload(); err == nil {
		t.Error("Reload after Close succeeded")
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	// The directory is no longer locked: a new store can open it.
	s2 := openStore(t, data)
	if _, ok := s2.Info(); !ok {
		t.Error("a second store cannot open the build after the first closed")
	}
}

func TestStoreLookupCanceled(t *testing.T) {
	data := t.TempDir()
	simpleLake(t, data, "2026-11-21", "us", 3, 1)
	buildIndex(t, data, "2026-11-21")
	s := openStore(t, data)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Lookup(ctx, "us", "kw 000001"); !errors.Is(err, context.Canceled) {
		t.Errorf("Lookup with a canceled context: %v", err)
	}
}

// damage functions break a published build in the ways a disk, an
// operator or an older binary can.
var damages = []struct {
	name    string
	damage  func(tb testing.TB, buildDir string)
	wantErr string
}{
	{"truncated table", func(tb testing.TB, dir string) {
		sst := keywordSST(tb, dir)
		st, err := os.Stat(sst)
		if err != nil {
			tb.Fatal(err)
		}
		if err := os.Truncate(sst, st.Size()/2); err != nil {
			tb.Fatal(err)
		}
	}, "size mismatch"},
	{"table replaced by garbage of the same size", func(tb testing.TB, dir string) {
		sst := keywordSST(tb, dir)
		st, err := os.Stat(sst)
		if err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(sst, make([]byte, st.Size()), 0o644); err != nil {
			tb.Fatal(err)
		}
	}, "is damaged: pebble/table: invalid table"},
	{"missing table", func(tb testing.TB, dir string) {
		if err := os.Remove(keywordSST(tb, dir)); err != nil {
			tb.Fatal(err)
		}
	}, "table"},
	{"wrong format version", func(tb testing.TB, dir string) {
		editManifest(tb, dir, func(s string) string {
			return strings.Replace(s, `"format_version": 3`, `"format_version": 99`, 1)
		})
	}, "format version 99"},
	{"manifest of another build", func(tb testing.TB, dir string) {
		editManifest(tb, dir, func(s string) string { return strings.Replace(s, `"build_id": "`, `"build_id": "x`, 1) })
	}, "names build"},
	{"manifest without probes", func(tb testing.TB, dir string) {
		editManifest(tb, dir, func(s string) string { return strings.Replace(s, `"probes": [`, `"xprobes": [`, 1) })
	}, "no probe keys"},
	{"probe not in the database", func(tb testing.TB, dir string) {
		editManifest(tb, dir, func(s string) string {
			return strings.Replace(s, `"keyword": "kw 000000"`, `"keyword": "kw 999999"`, 1)
		})
	}, "not found"},
	{"missing manifest", func(tb testing.TB, dir string) {
		if err := os.Remove(filepath.Join(dir, manifestName)); err != nil {
			tb.Fatal(err)
		}
	}, "cannot open manifest"},
	{"truncated manifest", func(tb testing.TB, dir string) {
		editManifest(tb, dir, func(s string) string { return s[:len(s)/2] })
	}, "cannot parse manifest"},
	{"missing database", func(tb testing.TB, dir string) {
		if err := os.RemoveAll(filepath.Join(dir, dbDirName)); err != nil {
			tb.Fatal(err)
		}
	}, "cannot open database"},
	{"missing build", func(tb testing.TB, dir string) {
		if err := os.RemoveAll(dir); err != nil {
			tb.Fatal(err)
		}
	}, "cannot open manifest"},
}

// keywordSST returns the table of a small build that holds its keyword
// entries, the one a lookup reads (the intent groups and suggestion
// tables are written into tables of their own).
func keywordSST(tb testing.TB, buildDir string) string {
	tb.Helper()
	ssts, err := filepath.Glob(filepath.Join(buildDir, dbDirName, "*.sst"))
	if err != nil {
		tb.Fatal(err)
	}
	ro := dbOptions(vfs.Default, pebbleLogger{log: testLogger(tb), fatal: panicFatal}).MakeReaderOptions()
	var found []string
	for _, name := range ssts {
		if firstKey(tb, name, ro)[2] == 0 {
			found = append(found, name)
		}
	}
	if len(found) != 1 {
		tb.Fatalf("keyword tables in %s: %v (of %v); want one", buildDir, found, ssts)
	}
	return found[0]
}

// openTable opens one SSTable file of a build for reading.
func openTable(tb testing.TB, name string, ro sstable.ReaderOptions) *sstable.Reader {
	tb.Helper()
	f, err := vfs.Default.Open(name)
	if err != nil {
		tb.Fatal(err)
	}
	readable, err := objstorageprovider.NewFileReadable(f, vfs.Default, objstorageprovider.NewReadaheadConfig(), name)
	if err != nil {
		tb.Fatal(err)
	}
	r, err := sstable.NewReader(context.Background(), readable, ro)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// firstKey returns the first key of a table.
func firstKey(tb testing.TB, name string, ro sstable.ReaderOptions) []byte {
	tb.Helper()
	r := openTable(tb, name, ro)
	defer r.Close()
	it, err := r.NewIter(sstable.NoTransforms, nil, nil, sstable.AssertNoBlobHandles)
	if err != nil {
		tb.Fatal(err)
	}
	defer it.Close()
	kv := it.First()
	if kv == nil || len(kv.K.UserKey) < 3 {
		tb.Fatalf("table %s has no key of a country and a separator: %v", name, it.Error())
	}
	return bytes.Clone(kv.K.UserKey)
}

func editManifest(tb testing.TB, buildDir string, edit func(string) string) {
	tb.Helper()
	name := filepath.Join(buildDir, manifestName)
	b, err := os.ReadFile(name)
	if err != nil {
		tb.Fatal(err)
	}
	s := edit(string(b))
	if s == string(b) {
		tb.Fatalf("edit changed nothing in %s", b)
	}
	if err := os.WriteFile(name, []byte(s), 0o644); err != nil {
		tb.Fatal(err)
	}
}

func TestStoreRefusesDamagedBuild(t *testing.T) {
	// Three builds are made once (volumes 1, 2, 3) and copied into a fresh
	// data folder for each damage.
	tmpl := t.TempDir()
	var ids [3]string
	for i := range ids {
		date := fmt.Sprintf("2026-11-%02d", 20+i)
		simpleLake(t, tmpl, date, "us", 50, int64(i+1))
		ids[i] = buildIndex(t, tmpl, date).BuildID
	}
	for _, d := range damages {
		t.Run(d.name, func(t *testing.T) {
			data := t.TempDir()
			copyDir(t, filepath.Join(tmpl, "index"), filepath.Join(data, "index"))
			publish(t, data, ids[0])
			s := openStore(t, data)
			var closed atomic.Int32
			s.onClose = func(string) { closed.Add(1) }

			d.damage(t, filepath.Join(data, "index", ids[1]))
			publish(t, data, ids[1])
			err := s.Reload()
			if err == nil || !strings.Contains(err.Error(), d.wantErr) {
				t.Fatalf("Reload of a damaged build: %v, want an error containing %q", err, d.wantErr)
			}
			if info, _ := s.Info(); info.Version != ids[0] {
				t.Errorf("serving %s after refusing a damaged build, want %s", info.Version, ids[0])
			}
			if e, err := s.Lookup(context.Background(), "US", "kw 000007"); err != nil || kw.Deref(e.Volume) != 1 {
				t.Errorf("old build after a refusal: %+v, %v", e, err)
			}
			if closed.Load() != 0 {
				t.Errorf("the served build was closed")
			}
			// The poller waits out the refused build's backoff.
			if err := s.reload(false); err != nil {
				t.Errorf("poller retried the refused build at once: %v", err)
			}
			// A good build published later is taken.
			publish(t, data, ids[2])
			if err := s.reload(false); err != nil {
				t.Fatal(err)
			}
			if e, err := s.Lookup(context.Background(), "US", "kw 000007"); err != nil || kw.Deref(e.Volume) != 3 {
				t.Errorf("after a good build: %+v, %v", e, err)
			}
			if info, _ := s.Info(); info.Version != ids[2] {
				t.Errorf("serving %s, want %s", info.Version, ids[2])
			}
		})
	}
}

// publish points CURRENT at a build the way Build does.
func publish(tb testing.TB, data, id string) {
	tb.Helper()
	dir := filepath.Join(data, "index")
	if err := os.WriteFile(filepath.Join(dir, pointerTmpName), []byte(id+"\n"), 0o644); err != nil {
		tb.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, pointerTmpName), filepath.Join(dir, pointerName)); err != nil {
		tb.Fatal(err)
	}
}

func copyDir(tb testing.TB, from, to string) {
	tb.Helper()
	if err := os.CopyFS(to, os.DirFS(from)); err != nil {
		tb.Fatal(err)
	}
}

func TestOpenStoreWithDamagedBuild(t *testing.T) {
	data := t.TempDir()
	simpleLake(t, data, "2026-11-21", "us", 5, 1)
	m := buildIndex(t, data, "2026-11-21")
	if err := os.Remove(filepath.Join(data, "index", m.BuildID, manifestName)); err != nil {
		t.Fatal(err)
	}
	s := openStore(t, data)
	if _, err := s.Lookup(context.Background(), "US", "kw 000001"); !errors.Is(err, kw.ErrNoIndex) {
		t.Errorf("Lookup with only a damaged build: %v, want ErrNoIndex", err)
	}
}

func TestStoreRefusesBadPointer(t *testing.T) {
	data := t.TempDir()
	simpleLake(t, data, "2026-11-21", "us", 5, 1)
	m := buildIndex(t, data, "2026-11-21")
	s := openStore(t, data)
	for _, content := range []string{"../../etc\n", ".building-x\n", "\n", "no-such-build\n"} {
		if err := os.WriteFile(filepath.Join(data, "index", pointerName), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := s.Reload(); err == nil {
			t.Errorf("Reload accepted pointer %q", content)
		}
		if info, _ := s.Info(); info.Version != m.BuildID {
			t.Errorf("pointer %q replaced the served build", content)
		}
	}
}

// TestStoreSwap publishes builds while readers look up keywords: no lookup
// may fail, the readers must see the new data, and every replaced build's
// database must be closed once, after its readers are done. A build is
// replaced only once a reader has answered from it, so the test does not
// depend on how the scheduler interleaves the readers with the swaps
// (with -cpu 1 they may not run at all before the first swap).
func TestStoreSwap(t *testing.T) {
	const (
		builds   = 5
		readers  = 8
		keywords = 200
		patience = time.Minute // bounds every wait; never reached unless broken
	)
	data := t.TempDir()
	// Builds are made first; the swaps publish them while readers run.
	var ids []string
	for b := 0; b <= builds; b++ {
		date := fmt.Sprintf("2026-11-%02d", b+1)
		simpleLake(t, data, date, "us", keywords, int64(100+b))
		ids = append(ids, buildIndex(t, data, date).BuildID)
	}
	publish(t, data, ids[0])
	s := openStore(t, data)
	var mu sync.Mutex
	closed := map[string]int{}
	closes := make(chan string, 2*(builds+1))
	s.onClose = func(id string) {
		mu.Lock()
		closed[id]++
		mu.Unlock()
		closes <- id
	}

	var (
		stop     atomic.Bool
		failures atomic.Int64
		seen     [builds + 1]atomic.Int64  // lookups answered per build
		first    [builds + 1]chan struct{} // closed by the first answer from a build
		wg       sync.WaitGroup
	)
	for b := range first {
		first[b] = make(chan struct{})
	}
	for r := 0; r < readers; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Bounded: the loop ends when told or after many lookups.
			for i := 0; i < 2_000_000 && !stop.Load(); i++ {
				k := fmt.Sprintf("kw %06d", (i*7+r)%keywords)
				e, err := s.Lookup(context.Background(), "US", k)
				if err != nil || e.Keyword != k || kw.Deref(e.Volume) < 100 || kw.Deref(e.Volume) > 100+builds || len(e.Related) != 2 {
					if failures.Add(1) < 5 {
						t.Errorf("Lookup(%q) = %+v, %v", k, e, err)
					}
					continue
				}
				v := kw.Deref(e.Volume) - 100
				if seen[v].Add(1) == 1 {
					close(first[v])
				}
				// On one core, eight busy readers would leave the
				// swapping goroutine a ninth of the time slices.
				runtime.Gosched()
			}
		}()
	}
	waitSeen := func(b int) {
		t.Helper()
		select {
		case <-first[b]:
		case <-time.After(patience):
			stop.Store(true)
			wg.Wait()
			t.Fatalf("no reader answered from build %d within %v (%d failures)", b, patience, failures.Load())
		}
	}
	for b := 1; b <= builds; b++ {
		waitSeen(b - 1)
		publish(t, data, ids[b])
		if err := s.Reload(); err != nil {
			t.Fatal(err)
		}
	}
	waitSeen(builds)
	stop.Store(true)
	wg.Wait()
	if failures.Load() > 0 {
		t.Fatalf("%d lookups failed during swaps", failures.Load())
	}
	if info, _ := s.Info(); info.Version != ids[builds] {
		t.Errorf("serving %s, want the last build %s", info.Version, ids[builds])
	}
	// Replaced builds close asynchronously once their last reader is done;
	// the readers are done, so the closes are due.
	for range builds {
		select {
		case <-closes:
		case <-time.After(patience):
			t.Fatalf("replaced builds not closed within %v: %v", patience, closed)
		}
	}
	mu.Lock()
	for _, id := range ids[:builds] {
		if closed[id] != 1 {
			t.Errorf("replaced build %s closed %d times, want once", id, closed[id])
		}
	}
	if closed[ids[builds]] != 0 {
		t.Errorf("the served build was closed")
	}
	mu.Unlock()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if closed[ids[builds]] != 1 || len(closed) != builds+1 {
		t.Errorf("after Close: closes %v, want each of %d builds once", closed, builds+1)
	}
}

// retryStore opens a store over data whose file system counts the
// attempts to open a build (reads of a manifest) and fails the next
// lockFails Pebble LOCKs, and whose clock the test moves. The poller is
// left idle: the test calls reload(false) for each of its ticks.
type retryStore struct {
	*Store
	clock     time.Time
	attempts  atomic.Int32
	lockFails atomic.Int32
}

func openRetryStore(tb testing.TB, data string) *retryStore {
	tb.Helper()
	rs := &retryStore{clock: fixedNow}
	fs := errorfs.Wrap(vfs.Default, errorfs.InjectorFunc(func(op errorfs.Op) error {
		switch {
		case op.Kind == errorfs.OpOpen && filepath.Base(op.Path) == manifestName:
			rs.attempts.Add(1)
		case op.Kind == errorfs.OpLock && rs.lockFails.Add(-1) >= 0:
			return errors.New("too many open files")
		}
		return nil
	}))
	s, err := OpenStore(context.Background(), data, StoreOptions{
		Logger: testLogger(tb), PollInterval: time.Hour, FS: fs,
		Now: func() time.Time { return rs.clock },
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	rs.Store = s
	return rs
}

// TestStoreRetriesRefusedBuild: a build that fails to open once (a
// temporary failure) is picked up by the poller when its backoff ends,
// without a new publish and without Reload.
func TestStoreRetriesRefusedBuild(t *testing.T) {
	data := t.TempDir()
	simpleLake(t, data, "2026-11-20", "us", 10, 1)
	old := buildIndex(t, data, "2026-11-20").BuildID
	simpleLake(t, data, "2026-11-21", "us", 10, 2)
	next := buildIndex(t, data, "2026-11-21").BuildID
	publish(t, data, old)
	s := openRetryStore(t, data)
	if info, _ := s.Info(); info.Version != old {
		t.Fatalf("serving %q, want %s", info.Version, old)
	}

	s.lockFails.Store(1)
	publish(t, data, next)
	if err := s.reload(false); err == nil || !strings.Contains(err.Error(), "too many open files") {
		t.Fatalf("first poll of a build that cannot be locked: %v", err)
	}
	tries := s.attempts.Load()
	s.clock = s.clock.Add(minRetry - time.Millisecond)
	if err := s.reload(false); err != nil || s.attempts.Load() != tries {
		t.Fatalf("poll before the backoff ended: err %v, %d attempts, want none", err, s.attempts.Load()-tries)
	}
	if info, _ := s.Info(); info.Version != old {
		t.Fatalf("serving %s during the backoff, want %s", info.Version, old)
	}
	s.clock = s.clock.Add(time.Millisecond)
	if err := s.reload(false); err != nil {
		t.Fatalf("poll after the backoff: %v", err)
	}
	if info, _ := s.Info(); info.Version != next {
		t.Fatalf("serving %s after the backoff, want the retried build %s", info.Version, next)
	}
	if e, err := s.Lookup(context.Background(), "US", "kw 000003"); err != nil || kw.Deref(e.Volume) != 2 {
		t.Errorf("lookup in the retried build: %+v, %v", e, err)
	}
}

// TestStoreBacksOffDamagedBuild: a damaged build stays refused, but the
// poller tries it again at a rate that halves after each refusal, down to
// one try every maxRetry; Reload tries it at once.
func TestStoreBacksOffDamagedBuild(t *testing.T) {
	data := t.TempDir()
	simpleLake(t, data, "2026-11-20", "us", 10, 1)
	old := buildIndex(t, data, "2026-11-20").BuildID
	simpleLake(t, data, "2026-11-21", "us", 10, 2)
	bad := buildIndex(t, data, "2026-11-21").BuildID
	editManifest(t, filepath.Join(data, "index", bad), func(s string) string {
		return strings.Replace(s, `"format_version": 3`, `"format_version": 99`, 1)
	})
	publish(t, data, old)
	s := openRetryStore(t, data)
	publish(t, data, bad)
	if err := s.reload(false); err == nil {
		t.Fatal("the damaged build was taken")
	}

	wait := minRetry
	for range 10 {
		tries := s.attempts.Load()
		s.clock = s.clock.Add(wait - time.Millisecond)
		if err := s.reload(false); err != nil || s.attempts.Load() != tries {
			t.Fatalf("poll %v into a %v backoff: err %v, %d attempts, want none", wait-time.Millisecond, wait, err, s.attempts.Load()-tries)
		}
		s.clock = s.clock.Add(time.Millisecond)
		if err := s.reload(false); err == nil || !strings.Contains(err.Error(), "format version 99") || s.attempts.Load() != tries+1 {
			t.Fatalf("poll at the end of a %v backoff: err %v, %d attempts, want one refusal", wait, err, s.attempts.Load()-tries)
		}
		wait = min(2*wait, maxRetry)
	}
	if s.backoff != maxRetry {
		t.Errorf("backoff after 11 refusals is %v, want the cap %v", s.backoff, maxRetry)
	}
	tries := s.attempts.Load()
	if err := s.Reload(); err == nil || s.attempts.Load() != tries+1 {
		t.Errorf("Reload during the backoff: err %v, %d attempts, want one refusal", err, s.attempts.Load()-tries)
	}
	if info, _ := s.Info(); info.Version != old {
		t.Errorf("serving %s, want %s", info.Version, old)
	}
}

// TestStoreReadsFormatVersion1: a build written before values could hold
// missing numbers (format 1) is still served after an upgrade, until the
// next build replaces it.
func TestStoreReadsFormatVersion1(t *testing.T) {
	data := t.TempDir()
	simpleLake(t, data, "2026-11-21", "us", 10, 1)
	id := buildIndex(t, data, "2026-11-21").BuildID
	editManifest(t, filepath.Join(data, "index", id), func(s string) string {
		return strings.Replace(s, `"format_version": 3`, `"format_version": 1`, 1)
	})
	s := openStore(t, data)
	if e, err := s.Lookup(context.Background(), "US", "kw 000003"); err != nil || kw.Deref(e.Volume) != 1 {
		t.Fatalf("Lookup in a format 1 build = %+v, %v", e, err)
	}
}
