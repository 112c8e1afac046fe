package access

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Bounds on how the counter database meets a disk that refuses writes.
const (
	// probeBytes is written and synced before the database opens, on top
	// of the size of its write-ahead logs, which opening turns into a
	// table: a full disk then fails the start with one line.
	probeBytes = 1 << 20
	// openFailures is how many background errors in a row while opening
	// make Open give up: Pebble retries a failed flush at once and
	// forever, and an Open waiting for it never returns.
	openFailures = 3
	// Background errors are retried after a pause that doubles from
	// minRetryPause to maxRetryPause, and logged at most once per
	// bgLogGap with how many there were: Pebble alone retries in a tight
	// loop, which wrote thousands of lines a second.
	minRetryPause = 100 * time.Millisecond
	maxRetryPause = 10 * time.Second
	bgLogGap      = 10 * time.Second
)

// openCounters opens the counter database in dir. It fails with one
// error, and never a flood of log lines or a hang, on a disk that is full
// or refuses writes, and with one error for a database another process
// holds.
func openCounters(dir string, opt Options) (*pebble.DB, error) {
	return openDB(dir, "counters", "counter database", opt)
}

// openDB opens one of the store's Pebble databases (what names it in
// errors and logs, short in the db attribute) with the handling
// openCounters describes.
func openDB(dir, short, what string, opt Options) (*pebble.DB, error) {
	if err := probeSpace(opt.fs, dir); err != nil {
		return nil, fmt.Errorf("cannot write to %s %s: %w; free some disk space and start again", what, dir, err)
	}
	bg := &backgroundErrors{what: what, log: opt.Logger.With("db", short), failed: make(chan error, 1), park: make(chan struct{})}
	bg.opening.Store(true)
	type result struct {
		db  *pebble.DB
		err error
	}
	done := make(chan result, 1)
	go func() {
		// Pebble reports an invariant it cannot keep (a MANIFEST it
		// cannot write) through Logger.Fatalf, which panics.
		defer func() {
			if p := recover(); p != nil {
				done <- result{err: fmt.Errorf("%v", p)}
			}
		}()
		o := &pebble.Options{
			FS:                 opt.fs,
			FormatMajorVersion: pebble.FormatNewest,
			Logger:             pebbleLogger{bg.log},
			EventListener: &pebble.EventListener{
				BackgroundError: bg.report,
				FlushEnd: func(info pebble.FlushInfo) {
					if info.Err == nil {
						bg.succeeded()
					}
				},
			},
		}
		// Point reads of absent keys (made-up API keys) are answered by
		// the filters without reading a data block.
		for i := range o.Levels {
			o.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
		}
		db, err := pebble.Open(dir, o)
		done <- result{db, err}
	}()
	select {
	case r := <-done:
		bg.opening.Store(false)
		if r.err != nil {
			return nil, fmt.Errorf("cannot open %s %s (is a kwdata server already running on this folder?): %w", what, dir, r.err)
		}
		return r.db, nil
	case err := <-bg.failed:
		// The open is stuck behind a flush that keeps failing; its
		// goroutine waits in report from now on. Should it ever finish,
		// the database is closed again.
		go func() {
			if r := <-done; r.db != nil {
				r.db.Close()
			}
		}()
		return nil, fmt.Errorf("cannot open %s %s: %w; free some disk space and start again", what, dir, err)
	}
}

// probeSpace writes and syncs a scratch file in dir as large as what
// opening the database writes at least, and removes it again.
func probeSpace(fs vfs.FS, dir string) error {
	if err := mkdirAllSynced(fs, dir); err != nil {
		return err
	}
	size := int64(probeBytes)
	if names, err := fs.List(dir); err == nil {
		for _, name := range names {
			if strings.HasSuffix(name, ".log") {
				if info, err := fs.Stat(fs.PathJoin(dir, name)); err == nil {
					size += info.Size()
				}
			}
		}
	}
	name := fs.PathJoin(dir, "space-probe.tmp")
	f, err := fs.Create(name, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	defer fs.Remove(name)
	buf := make([]byte, 64<<10)
	for left := size; left > 0; left -= int64(len(buf)) {
		if _, err := f.Write(buf[:min(left, int64(len(buf)))]); err != nil {
			f.Close()
			return err
		}
	}
	return errors.Join(f.Sync(), f.Close())
}

// mkdirAllSynced creates dir and its missing parents, and syncs the
// parent of each one created, as Pebble does for its own folder: a
// folder made here and not synced could vanish in a crash with the
// database inside.
func mkdirAllSynced(fs vfs.FS, dir string) error {
	var parents []string
	for p := fs.PathDir(dir); ; p = fs.PathDir(p) {
		parents = append(parents, p)
		if fs.PathDir(p) == p {
			break
		}
		if _, err := fs.Stat(p); err == nil {
			break
		}
	}
	if _, err := fs.Stat(dir); err == nil {
		return nil
	}
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, p := range parents {
		d, err := fs.OpenDir(p)
		if err != nil {
			return err
		}
		err = errors.Join(d.Sync(), d.Close())
		if err != nil {
			return err
		}
	}
	return nil
}

// backgroundErrors paces and logs the counter database's background
// errors (failed flushes and compactions). Pebble calls report on the
// failing job's goroutine and retries when it returns, so the pause in
// report is the retry's backoff.
type backgroundErrors struct {
	what    string // the database, in log lines
	log     *slog.Logger
	opening atomic.Bool   // true until the open returns
	failed  chan error    // receives the error that makes an open give up
	park    chan struct{} // never closed: a given-up open's flush waits here

	mu       sync.Mutex
	inARow   int           // errors since the last success
	pause    time.Duration // before the next retry
	unlogged int           // errors since the last log line
	loggedAt time.Time
}

func (b *backgroundErrors) report(err error) {
	b.mu.Lock()
	b.inARow++
	b.unlogged++
	b.pause = min(max(2*b.pause, minRetryPause), maxRetryPause)
	pause, inARow := b.pause, b.inARow
	if now := time.Now(); now.Sub(b.loggedAt) >= bgLogGap {
		b.log.Error(b.what+" cannot write; retrying with a growing pause (logged at most every 10s)",
			"errors", b.unlogged, "retry_in", pause, "err", err)
		b.loggedAt, b.unlogged = now, 0
	}
	b.mu.Unlock()
	if b.opening.Load() && inARow >= openFailures {
		select {
		case b.failed <- err:
		default:
		}
		<-b.park
	}
	time.Sleep(pause)
}

// succeeded resets the backoff after a flush that worked.
func (b *backgroundErrors) succeeded() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.inARow > 0 {
		b.log.Info(b.what+" writes again", "errors", b.inARow)
	}
	b.inARow, b.pause, b.unlogged = 0, 0, 0
}
