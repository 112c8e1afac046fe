package main

import (
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
)

// unitBytes is the unit of a stage that counts bytes read: its bar shows
// kB, MB and MB/s.
const unitBytes = "bytes"

// barEvery is how often a bar on a terminal is redrawn at most: often
// enough to be seen moving, seldom enough to cost nothing.
const barEvery = 100 * time.Millisecond

// barTerminal is a terminal that shows at most one progress bar, on its
// last line, below the log. NewMain makes one when stderr is a terminal,
// and the logger writes through it: a log line clears the bar, prints,
// and the bar is drawn again below it.
type barTerminal struct {
	mu    sync.Mutex
	out   io.Writer
	every time.Duration            // redraw at most this often (0: at every update, as tests want)
	bar   *progressbar.ProgressBar // on screen; nil when none is
}

// Write prints log lines above the bar.
func (t *barTerminal) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.bar == nil {
		return t.out.Write(p)
	}
	_ = t.bar.Clear()
	n, err := t.out.Write(p)
	if s := t.bar.String(); s != "" {
		io.WriteString(t.out, "\r"+s)
	}
	return n, err
}

// progress returns a callback for a long stage counting unit ("keywords",
// unitBytes, or "" for items): a bar when stderr is a terminal, otherwise
// a structured log line at most every 5 seconds. Call finish when the
// stage ends.
func (m *Main) progress(label, unit string) (update func(done, total int64), finish func()) {
	if t := m.term; t != nil {
		update = func(done, total int64) {
			t.mu.Lock()
			defer t.mu.Unlock()
			if t.bar == nil {
				opts := []progressbar.Option{progressbar.OptionSetWriter(t.out),
					progressbar.OptionSetDescription(label), progressbar.OptionShowCount(),
					progressbar.OptionSetPredictTime(true),
					progressbar.OptionThrottle(t.every), progressbar.OptionClearOnFinish()}
				switch unit {
				case unitBytes:
					// MB/s; the bar would add a count of "iterations"
					// a second, each a byte, beside it with ShowIts.
					opts = append(opts, progressbar.OptionShowBytes(true), progressbar.OptionShowTotalBytes(true))
				case "":
					opts = append(opts, progressbar.OptionShowIts())
				default:
					opts = append(opts, progressbar.OptionShowIts(), progressbar.OptionSetItsString(unit))
				}
				t.bar = progressbar.NewOptions64(total, opts...)
			}
			if total != t.bar.GetMax64() {
				t.bar.ChangeMax64(total)
			}
			_ = t.bar.Set64(done)
		}
		finish = func() {
			t.mu.Lock()
			defer t.mu.Unlock()
			if t.bar != nil {
				_ = t.bar.Finish()
				_ = t.bar.Clear()
				t.bar = nil
			}
		}
		return update, finish
	}
	var (
		mu   sync.Mutex
		last time.Time
	)
	start := m.now()
	update = func(done, total int64) {
		mu.Lock()
		defer mu.Unlock()
		now := m.now()
		if now.Sub(last) < 5*time.Second {
			return
		}
		last = now
		attrs := []any{slog.String("stage", label), slog.Int64("done", done),
			slog.Int64("total", total), slog.Duration("elapsed", now.Sub(start).Round(time.Second))}
		if unit != "" {
			attrs = append(attrs, slog.String("unit", unit))
		}
		m.Logger.Info("progress", attrs...)
	}
	return update, func() {}
}

// stageProgress is progress for a pipeline stage, which counts items.
func (m *Main) stageProgress(stage string) (update func(done, total int64), finish func()) {
	return m.progress(stage, "")
}
