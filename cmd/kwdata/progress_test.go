package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestProgressBarOnTerminal drives the bar of a stage on a fake terminal:
// bytes are shown as such (kB, MB), a count in its unit, and a log line
// printed while the bar shows clears it, prints, and redraws it below.
func TestProgressBarOnTerminal(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		unit, want, notWant string
	}{
		{unitBytes, "MB", "it/s"},
		{"keywords", "keywords/s", " MB"},
	} {
		t.Run(tt.unit, func(t *testing.T) {
			var screen bytes.Buffer
			tty := &barTerminal{out: &screen}
			m := &Main{Logger: slog.New(slog.NewTextHandler(tty, nil)), term: tty}
			update, finish := m.progress("ingest us", tt.unit)
			update(3<<20, 8<<20)
			drawn := screen.String()
			if !strings.Contains(drawn, "ingest us") || !strings.Contains(drawn, tt.want) || strings.Contains(drawn, tt.notWant) {
				t.Fatalf("bar %q: want the label and %q, not %q", drawn, tt.want, tt.notWant)
			}
			bar := tty.bar.String()
			screen.Reset()
			m.Logger.Info("wrote keywords")
			out := screen.String()
			line := strings.Index(out, "msg=\"wrote keywords\"")
			clear := strings.LastIndex(out[:max(line, 0)], "\r")
			if line < 0 || clear < 0 || !strings.HasSuffix(out, "\n\r"+bar) {
				t.Fatalf("a log line under a bar wrote %q; want the bar cleared (\\r), the line, then the bar %q again", out, bar)
			}
			finish()
			screen.Reset()
			m.Logger.Info("after")
			if out := screen.String(); strings.Contains(out, "\r") {
				t.Errorf("a log line after the stage wrote %q, want the line alone", out)
			}
		})
	}
}

// TestProgressLogLines: without a terminal, progress is a log line that
// names its unit.
func TestProgressLogLines(t *testing.T) {
	t.Parallel()
	var log bytes.Buffer
	m := &Main{Logger: slog.New(slog.NewTextHandler(&log, nil))}
	update, finish := m.progress("ingest us", unitBytes)
	update(1, 2)
	finish()
	if !strings.Contains(log.String(), "unit=bytes") || !strings.Contains(log.String(), "stage=\"ingest us\"") {
		t.Errorf("progress logged %q, want the stage and unit=bytes", log.String())
	}
}
