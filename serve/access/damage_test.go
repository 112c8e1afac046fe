package access

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// logBuffer collects a Store's log lines for assertions.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// lines returns the logged lines that contain all of subs.
func (l *logBuffer) lines(subs ...string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range strings.Split(l.b.String(), "\n") {
		ok := line != ""
		for _, s := range subs {
			ok = ok && strings.Contains(line, s)
		}
		if ok {
			out = append(out, line)
		}
	}
	return out
}

func withLog(l *logBuffer) func(*Options) {
	return func(o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
}

// TestDamagedRegistryKeepsLastGood: a registry that goes missing, empty
// or damaged under a running server keeps the keys last read (a paid key
// stays paid), is logged once and not four times a second, refuses
// writes that would drop the keys, and is read again once restored.
func TestDamagedRegistryKeepsLastGood(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(tb testing.TB, path string)
	}{
		{"missing", func(tb testing.TB, path string) { mustRename(tb, path, path+".away") }},
		{"empty", func(tb testing.TB, path string) { mustWrite(tb, path, "") }},
		{"damaged", func(tb testing.TB, path string) { mustWrite(tb, path, `{"version": 1, "keys": [{"id": `) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, keysFileName)
			clk := newClock(t, "2026-11-22T12:00:00Z")
			var log logBuffer
			s := openStore(t, dir, clk, withLog(&log), func(o *Options) { o.KeysPollInterval = time.Millisecond })
			key, _ := mustCreate(t, s, Paid, time.Time{})
			good, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			tc.damage(t, path)

			// Poll after poll, and unknown keys forcing extra looks: the
			// paid key stays paid and one line says why.
			for i := range 100 {
				if c, err := s.Identify(ctx, key, mustAddr(t, "192.0.2.1")); err != nil || c.Tier != Paid {
					t.Fatalf("paid key after the registry went %s: %+v, %v", tc.name, c, err)
				}
				if i%25 == 0 { // each waits up to unknownKeyGap
					if _, err := s.Identify(ctx, newKey(), mustAddr(t, "192.0.2.1")); err == nil {
						t.Fatal("an unknown key was accepted")
					}
				}
				time.Sleep(time.Millisecond)
			}
			if n := len(log.lines("level=ERROR", "key registry")); n != 1 {
				t.Errorf("%d error lines about the %s registry, want 1:\n%s", n, tc.name, strings.Join(log.lines("level=ERROR"), "\n"))
			}
			if _, _, err := s.Register(context.Background(), "new@example.com", mustAddr(t, "192.0.2.9")); err == nil {
				t.Error("a registration replaced the damaged registry, dropping the keys it held")
			}

			os.Remove(path + ".away")
			mustWrite(t, path+".restore", string(good))
			mustRename(t, path+".restore", path)
			eventually(t, "the restored registry is read", func() bool { return len(log.lines("level=INFO", "readable again")) == 1 })
			if c, err := s.Identify(ctx, key, mustAddr(t, "192.0.2.1")); err != nil || c.Tier != Paid {
				t.Errorf("paid key after the restore: %+v, %v", c, err)
			}
			if _, _, err := s.Register(context.Background(), "new@example.com", mustAddr(t, "192.0.2.9")); err != nil {
				t.Errorf("registration after the restore: %v", err)
			}
		})
	}
}

// TestStaleTempFilesRemovedAtStart: a writer killed between writing its
// temporary registry file and renaming it leaves key hashes and emails
// behind; the next open removes them, but never a file a live writer
// holds the registry lock for.
func TestStaleTempFilesRemovedAtStart(t *testing.T) {
	dir := t.TempDir()
	k, err := OpenKeys(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := k.CreateKey(ctx, Registered, "ann@example.com", time.Time{}); err != nil {
		t.Fatal(err)
	}
	stale := []string{".keys-123.tmp", ".keys-456.tmp"}
	for _, name := range stale {
		mustWrite(t, filepath.Join(dir, name), `{"version":1,"keys":[{"sha256":"00","email":"ann@example.com"}]}`)
	}
	other := filepath.Join(dir, "notes.tmp") // not ours: stays
	mustWrite(t, other, "x")

	// While a writer holds the lock, opening waits instead of deleting
	// the file that writer is about to rename.
	unlock, err := lockFile(filepath.Join(dir, keysLockName))
	if err != nil {
		t.Fatal(err)
	}
	opened := make(chan error, 1)
	go func() {
		k, err := OpenKeys(Options{Dir: dir})
		if err == nil {
			k.Close()
		}
		opened <- err
	}()
	time.Sleep(50 * time.Millisecond)
	for _, name := range stale {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s was removed while the registry lock was held: %v", name, err)
		}
	}
	unlock()
	if err := <-opened; err != nil {
		t.Fatal(err)
	}
	for _, name := range stale {
		if _, err := os.Stat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			t.Errorf("%s survived the open: %v", name, err)
		}
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("a file that is not a registry write was removed: %v", err)
	}
	recs, err := k.ListKeys(ctx)
	if err != nil || len(recs) != 1 {
		t.Errorf("registry after the clean-up: %v, %v", recs, err)
	}
}

func mustWrite(tb testing.TB, path, data string) {
	tb.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		tb.Fatal(err)
	}
}

func mustRename(tb testing.TB, from, to string) {
	tb.Helper()
	if err := os.Rename(from, to); err != nil {
		tb.Fatal(err)
	}
}

// TestFolderGoneIsNotReady: the access folder deleted or replaced under a
// running Store (the whole data folder removed, say) makes Ready fail and
// is logged once, instead of counts going silently into deleted files.
func TestFolderGoneIsNotReady(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(tb testing.TB, dir string)
	}{
		{"deleted", func(tb testing.TB, dir string) {
			if err := os.RemoveAll(dir); err != nil {
				tb.Fatal(err)
			}
		}},
		{"replaced", func(tb testing.TB, dir string) {
			mustRename(tb, dir, dir+".old")
			if err := os.Mkdir(dir, 0o750); err != nil {
				tb.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "access")
			clk := newClock(t, "2026-11-22T12:00:00Z")
			var log logBuffer
			s := openStore(t, dir, clk, withLog(&log), func(o *Options) { o.FlushInterval = 5 * time.Millisecond })
			if err := s.Ready(); err != nil {
				t.Fatalf("Ready before any damage: %v", err)
			}
			c := mustIdentify(t, s, "", mustAddr(t, "192.0.2.1"))
			use(t, s, c, 3)
			tc.damage(t, dir)
			eventually(t, "Ready fails", func() bool { return s.Ready() != nil })
			if err := s.Ready(); !strings.Contains(err.Error(), dir) {
				t.Errorf("Ready: %v; want it to name %s", err, dir)
			}
			time.Sleep(100 * time.Millisecond) // twenty more checks
			if n := len(log.lines("level=ERROR", "access folder is gone")); n != 1 {
				t.Errorf("%d error lines, want 1:\n%s", n, strings.Join(log.lines("level=ERROR"), "\n"))
			}
			// Lookups are still answered and counted, in memory.
			if n := use(t, s, c, 5); n != 5 {
				t.Errorf("%d of 5 lookups admitted after the folder went", n)
			}
		})
	}
}
