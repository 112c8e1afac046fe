package index

import (
	"fmt"
	"log/slog"
	"sync"
)

// pebbleLogger routes Pebble's log lines into slog.
type pebbleLogger struct {
	log *slog.Logger
	// fatal decides what Fatalf does after logging. Pebble calls Fatalf for
	// errors it cannot unwind; a store cannot go on reading (panic), a build
	// can always be abandoned (record the error, fail the build).
	fatal func(msg string)
}

// Infof logs at debug: Pebble's informational lines ("Found 0 WALs", WAL
// replays) describe its internals, not anything an operator acts on.
func (l pebbleLogger) Infof(format string, args ...any) {
	l.log.Debug(fmt.Sprintf(format, args...))
}

func (l pebbleLogger) Errorf(format string, args ...any) {
	l.log.Error(fmt.Sprintf(format, args...))
}

func (l pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.log.Error(msg, "fatal", true)
	l.fatal(msg)
}

func panicFatal(msg string) { panic("pebble: " + msg) }

// fatalRecorder keeps the first fatal message of a build's Pebble database.
type fatalRecorder struct {
	mu  sync.Mutex
	msg string
}

func (r *fatalRecorder) record(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.msg == "" {
		r.msg = msg
	}
}

func (r *fatalRecorder) err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.msg == "" {
		return nil
	}
	return fmt.Errorf("pebble failed: %s", r.msg)
}
