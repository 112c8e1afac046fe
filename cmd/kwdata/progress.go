package main

import (
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress returns a callback for a long stage: a progress bar when stderr
// is a terminal, otherwise a structured log line at most every 5 seconds.
// done returns nothing; call finish when the stage ends.
func (m *Main) progress(label string) (update func(done, total int64), finish func()) {
	if f, ok := m.Stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		var (
			mu  sync.Mutex
			bar *progressbar.ProgressBar
		)
		update = func(done, total int64) {
			mu.Lock()
			defer mu.Unlock()
			if bar == nil {
				bar = progressbar.NewOptions64(total, progressbar.OptionSetWriter(io.Writer(f)),
					progressbar.OptionSetDescription(label), progressbar.OptionShowCount(),
					progressbar.OptionShowIts(), progressbar.OptionSetPredictTime(true),
					progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
			}
			_ = bar.Set64(done)
		}
		finish = func() {
			mu.Lock()
			defer mu.Unlock()
			if bar != nil {
				_ = bar.Finish()
			}
		}
		return update, finish
	}
	var (
		mu   sync.Mutex
		last time.Time
	)
	start := time.Now()
	update = func(done, total int64) {
		mu.Lock()
		defer mu.Unlock()
		if time.Since(last) < 5*time.Second {
			return
		}
		last = time.Now()
		m.Logger.Info("progress", slog.String("stage", label), slog.Int64("done", done),
			slog.Int64("total", total), slog.Duration("elapsed", time.Since(start).Round(time.Second)))
	}
	return update, func() {}
}
