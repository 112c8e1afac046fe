package access

import (
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// diskFull fails writes with ENOSPC while on: every write, or only those
// of tables (so that a start gets past the space probe and meets the
// failure in Pebble's own flush).
type diskFull struct {
	on         atomic.Bool
	onlyTables bool
	refused    atomic.Int64 // writes refused so far
}

func (d *diskFull) String() string { return "disk full" }

func (d *diskFull) MaybeError(op errorfs.Op) error {
	if !d.on.Load() {
		return nil
	}
	switch op.Kind {
	case errorfs.OpCreate, errorfs.OpFileWrite, errorfs.OpFileWriteAt, errorfs.OpFilePreallocate,
		errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo, errorfs.OpFileFlush:
	default:
		return nil
	}
	if d.onlyTables && !strings.HasSuffix(op.Path, ".sst") {
		return nil
	}
	d.refused.Add(1)
	return &os.PathError{Op: "write", Path: op.Path, Err: syscall.ENOSPC}
}

// openWithin opens a Store and reports what Open returned, or fails the
// test if it neither returns nor panics within a bound.
func openWithin(tb testing.TB, opt Options) (*Store, error) {
	tb.Helper()
	type result struct {
		s   *Store
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- result{err: fmt.Errorf("Open panicked: %v", p)}
			}
		}()
		s, err := Open(opt)
		done <- result{s, err}
	}()
	select {
	case r := <-done:
		return r.s, r.err
	case <-time.After(30 * time.Second):
		tb.Fatal("Open did not return within 30s")
		return nil, nil
	}
}

// TestFullDiskAtStart: a counter database on a full disk makes Open fail
// with one error naming the cause, logging a few lines at most, instead
// of panicking or retrying a flush in a tight loop forever.
func TestFullDiskAtStart(t *testing.T) {
	for _, tc := range []struct {
		name       string
		existing   bool // counts are waiting in the write-ahead log
		onlyTables bool
	}{
		{"new store", false, false},
		{"existing store", true, false},
		{"existing store, tables cannot be written", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			clk := newClock(t, "2026-11-22T12:00:00Z")
			full := &diskFull{onlyTables: tc.onlyTables}
			fs := errorfs.Wrap(vfs.Default, full)
			if tc.existing {
				s, err := Open(Options{Dir: dir, Now: clk.Now, FlushInterval: time.Hour, fs: fs})
				if err != nil {
					t.Fatal(err)
				}
				use(t, s, mustIdentify(t, s, "", mustAddr(t, "192.0.2.1")), 5)
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			}
			full.on.Store(true)
			var log logBuffer
			opt := Options{Dir: dir, Now: clk.Now, FlushInterval: time.Hour, fs: fs}
			withLog(&log)(&opt)
			start := time.Now()
			s, err := openWithin(t, opt)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded on a full disk")
			}
			if strings.Contains(err.Error(), "Open panicked") {
				t.Errorf("Open panicked, which ends a server with a stack trace: %v", err)
			}
			if !strings.Contains(err.Error(), "no space left on device") || strings.Contains(err.Error(), "\n") {
				t.Errorf("Open: %q; want one line naming the full disk", err)
			}
			if n := len(log.lines("level=ERROR")) + len(log.lines("level=WARN")); n > 2 {
				t.Errorf("%d error lines in %s, want at most 2:\n%s", n, time.Since(start).Round(time.Millisecond), strings.Join(log.lines("level=ERROR"), "\n"))
			}

			if tc.onlyTables {
				// The given-up open still holds the database's lock in
				// this process; a real start exits here.
				return
			}
			// Once there is space again, the counts are all there.
			full.on.Store(false)
			s = openStore(t, dir, clk, func(o *Options) { o.fs = fs })
			want := int64(20)
			if tc.existing {
				want = 15
			}
			if got := remaining(t, s, mustIdentify(t, s, "", mustAddr(t, "192.0.2.1"))); got != want {
				t.Errorf("remaining after the disk has space again = %d, want %d", got, want)
			}
		})
	}
}

// TestDiskFillsWhileRunning: tables that cannot be written under a
// running Store are retried with a growing pause and logged a few times,
// not thousands of times a second, and written once there is space.
func TestDiskFillsWhileRunning(t *testing.T) {
	dir := t.TempDir()
	clk := newClock(t, "2026-11-22T12:00:00Z")
	full := &diskFull{onlyTables: true}
	var log logBuffer
	s := openStore(t, dir, clk, withLog(&log), func(o *Options) { o.fs = errorfs.Wrap(vfs.Default, full) })
	c := mustIdentify(t, s, "", mustAddr(t, "192.0.2.1"))
	use(t, s, c, 3)
	if err := s.flush(); err != nil {
		t.Fatal(err)
	}
	full.on.Store(true)
	if _, err := s.db.AsyncFlush(); err != nil {
		t.Fatal(err)
	}
	// Pebble alone retried thousands of times a second; a few refused
	// table writes are enough to see the retries logged once.
	eventually(t, "table writes refused", func() bool { return full.refused.Load() >= 5 })
	use(t, s, c, 4)
	if err := s.flush(); err != nil {
		t.Fatalf("counting into the write-ahead log while tables fail: %v", err)
	}
	if n := len(log.lines("level=ERROR")); n < 1 || n > 2 {
		t.Errorf("%d error lines in a second of failing flushes, want 1 or 2:\n%s", n, strings.Join(log.lines("level=ERROR"), "\n"))
	}
	full.on.Store(false)
	eventually(t, "the flush succeeds once there is space", func() bool { return len(log.lines("writes again")) == 1 })
	if err := s.Close(); err != nil {
		t.Fatalf("Close once there is space: %v", err)
	}
	s2 := openStore(t, dir, clk)
	if got := remaining(t, s2, mustIdentify(t, s2, "", mustAddr(t, "192.0.2.1"))); got != 13 {
		t.Errorf("remaining after reopening = %d, want 13 (7 counted)", got)
	}
}
