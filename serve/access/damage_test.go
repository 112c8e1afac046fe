package access

import (
	"bytes"
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
			checks := s.watched.Load()
			eventually(t, "twenty more checks", func() bool { return s.watched.Load() >= checks+20 })
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
