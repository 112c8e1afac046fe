package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kwdata/kwdata/ingest"
	"github.com/kwdata/kwdata/ingest/sample"
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

// TestIngestBarMovesWhileWriting runs an ingest on a fake terminal: the
// files read show in MB, then a second bar counts the rows sorted and
// written and moves while it does, and every log line starts on a line
// of its own, never after a bar's text.
func TestIngestBarMovesWhileWriting(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := sample.Generate(context.Background(), sample.Options{Out: dir, Keywords: 6000, Countries: []string{"us"}}); err != nil {
		t.Fatal(err)
	}
	var screen bytes.Buffer
	tty := &barTerminal{out: &screen}
	m := &Main{Logger: slog.New(slog.NewTextHandler(tty, nil)), term: tty, Stdout: io.Discard, Stderr: io.Discard}
	err := m.ingestFiles(context.Background(), ingest.Options{Data: filepath.Join(dir, "data"), Date: "2026-03-01", Country: "us",
		PlannerCSV: []string{filepath.Join(dir, "us", sample.PlannerFile)}, SERPJSONL: []string{filepath.Join(dir, "us", sample.SERPFile)}})
	if err != nil {
		t.Fatal(err)
	}
	out := screen.String()

	if !regexp.MustCompile(`ingest us: read[^\r]* MB`).MatchString(out) {
		t.Errorf("no bar of the files read in MB:\n%q", out)
	}
	// The sort-and-write bar: its counts of rows, as drawn one after the
	// other.
	var counts []int
	for _, m := range regexp.MustCompile(`ingest us: sort and write[^\r]*\((\d+)/(\d+), [\d.]+ rows/s\)`).FindAllStringSubmatch(out, -1) {
		n, _ := strconv.Atoi(m[1])
		counts = append(counts, n)
	}
	if len(counts) < 2 || !slices.IsSorted(counts) || counts[0] == counts[len(counts)-1] {
		t.Errorf("the sort-and-write bar drew the counts %v, want it to move forward while the rows are written:\n%q", counts, out)
	}
	if strings.Contains(out, "it/s") {
		t.Errorf("a bar counts iterations, not bytes or rows:\n%q", out)
	}

	lines := 0
	for i := 0; ; {
		j := strings.Index(out[i:], "time=")
		if j < 0 {
			break
		}
		at := i + j
		if at > 0 && out[at-1] != '\n' && out[at-1] != '\r' {
			t.Errorf("a log line starts after %q on the same line", out[max(0, at-40):at])
		}
		end := strings.IndexByte(out[at:], '\n')
		if end < 0 {
			t.Fatalf("a log line does not end: %q", out[at:])
		}
		if strings.Contains(out[at:at+end], "\r") {
			t.Errorf("a bar is drawn inside the log line %q", out[at:at+end])
		}
		lines++
		i = at + end
	}
	if lines < 3 {
		t.Errorf("%d log lines on the terminal, want those of the files read and the run's summary:\n%q", lines, out)
	}
}
