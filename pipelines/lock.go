package pipelines

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"
)

// ErrLocked is matched (errors.Is) by the error of Lock, RunOnce and
// Scheduler.Run when another process holds the lock.
var ErrLocked = errors.New("the pipeline lock is held")

// LockHolder is the content of a lock file: who holds it.
type LockHolder struct {
	PID     int       `json:"pid"`
	Host    string    `json:"host"`
	Started time.Time `json:"started"`
}

// LockedError says who holds a lock. It matches ErrLocked.
type LockedError struct {
	Path   string
	Holder LockHolder // zero when the holder could not be read
}

// Error names the holder and what to do.
func (e *LockedError) Error() string {
	if e.Holder.PID == 0 {
		return fmt.Sprintf("another kwdata pipeline holds the lock %s; wait for it to finish", e.Path)
	}
	return fmt.Sprintf("another kwdata pipeline holds the lock %s (pid %d on %s since %s); wait for it to finish or stop it",
		e.Path, e.Holder.PID, e.Holder.Host, e.Holder.Started.UTC().Format(time.RFC3339))
}

// Is makes errors.Is(err, ErrLocked) true.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// Lock takes the run lock of the data folder (<data>/state/run.lock), so
// that a scheduled run and a manual one never overlap. RunOnce takes it
// itself; other commands that write the lake or the index may take it too.
// It refuses with a *LockedError while another process holds the lock, and
// takes over the lock of a process that died, with a log line. release
// gives the lock up.
func Lock(data string, logger *slog.Logger) (release func() error, err error) {
	return lockFile(filepath.Join(StateDir(data), "run.lock"), logger)
}

// lockScheduler takes the scheduler lock, held for the scheduler's life, so
// that a second `kwdata schedule` on the same data folder is refused.
func lockScheduler(data string, logger *slog.Logger) (release func() error, err error) {
	return lockFile(filepath.Join(StateDir(data), "scheduler.lock"), logger)
}

// lockFile takes the lock at path.
//
// The lock is an flock(2) on the file, which the kernel drops when its
// holder dies, however it dies; so a lock that can be taken is never held
// by a live process, and a reused pid cannot keep it forever. The file
// names the holder (pid, host, start) for the refusal message and the
// takeover log line. Where flock is not supported, the holder's pid decides:
// a live process on this host, or any process on another, keeps the lock.
func lockFile(path string, logger *slog.Logger) (func() error, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("cannot create state folder: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("cannot open lock %s: %w", path, err)
	}
	host, _ := os.Hostname()
	flocked := true
	if err := flock(f); err != nil {
		switch {
		case errors.Is(err, errWouldBlock):
			holder, _ := readHolder(f)
			f.Close()
			return nil, &LockedError{Path: path, Holder: holder}
		case errors.Is(err, errNoFlock):
			flocked = false
			if holder, ok := readHolder(f); ok && (holder.Host != host || processAlive(holder.PID)) {
				f.Close()
				return nil, &LockedError{Path: path, Holder: holder}
			}
		default:
			f.Close()
			return nil, fmt.Errorf("cannot lock %s: %w", path, err)
		}
	}
	if old, ok := readHolder(f); ok {
		logger.Warn("taking over a stale lock; its holder is gone", slog.String("lock", path),
			slog.Int("pid", old.PID), slog.String("host", old.Host), slog.Time("since", old.Started))
	}
	me := LockHolder{PID: os.Getpid(), Host: host, Started: time.Now().UTC()}
	b, _ := json.Marshal(me)
	if err := writeHolder(f, append(b, '\n')); err != nil {
		if flocked {
			_ = funlock(f)
		}
		f.Close()
		return nil, fmt.Errorf("cannot write lock %s: %w", path, err)
	}
	released := false
	return func() error {
		if released {
			return nil
		}
		released = true
		// An empty file is a free lock; the file itself stays, because
		// removing it would let two processes lock two different files.
		err := writeHolder(f, nil)
		if flocked {
			err = errors.Join(err, funlock(f))
		}
		return errors.Join(err, f.Close())
	}, nil
}

// readHolder reads the holder a lock file names; ok is false for a free
// (empty) or unreadable lock.
func readHolder(f *os.File) (LockHolder, bool) {
	var h LockHolder
	b, err := io.ReadAll(io.NewSectionReader(f, 0, 4096))
	if err != nil || len(b) == 0 {
		return h, false
	}
	if err := json.Unmarshal(b, &h); err != nil || h.PID <= 0 {
		return h, false
	}
	return h, true
}

func writeHolder(f *os.File, b []byte) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	if len(b) > 0 {
		if _, err := f.WriteAt(b, 0); err != nil {
			return err
		}
	}
	return f.Sync()
}
