package pipelines

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// Kinds of history records.
const (
	KindRun   = "run"
	KindStage = "stage"
)

// Statuses of runs and stages in the history.
const (
	// StatusOK: the stage finished; for a run, every stage finished or was
	// skipped and at least one ran.
	StatusOK = "ok"
	// StatusFailed: the stage returned an error; the run stopped there.
	StatusFailed = "failed"
	// StatusCanceled: the run was stopped (SIGTERM, or the scheduler's
	// context ended) before every stage ran.
	StatusCanceled = "canceled"
	// StatusSkipped: the stage had finished for the date before; for a run,
	// nothing needed to run, or the run lock was held by another run.
	StatusSkipped = "skipped"
	// StatusUnfinished: the history holds stages of a run but not the run
	// itself: the run is still going, or its process died.
	StatusUnfinished = "unfinished"
)

// Record is one line of the run history: a finished stage or a finished run.
type Record struct {
	Kind    string           `json:"kind"` // KindRun or KindStage
	RunID   string           `json:"run_id"`
	Date    string           `json:"date"`              // the data date, YYYY-MM-DD
	Stage   string           `json:"stage,omitempty"`   // stage records only
	Trigger string           `json:"trigger,omitempty"` // run records only: "manual" or "schedule"
	Status  string           `json:"status"`
	Start   time.Time        `json:"start"`
	End     time.Time        `json:"end"`
	Counts  map[string]int64 `json:"counts,omitempty"`
	Error   string           `json:"error,omitempty"`
}

// RunRecord is one run with its stages, in the order they ran.
type RunRecord struct {
	Record
	Stages []Record `json:"stages"`
}

// HistoryPath is the run history file: JSON Lines, one Record a line,
// appended and synced as each stage and run finishes.
func HistoryPath(data string) string { return filepath.Join(StateDir(data), "history.jsonl") }

// maxHistoryLine bounds one history line; an error message is the only
// thing of unbounded length in a record, so longer lines are damage.
const maxHistoryLine = 1 << 20

// AppendHistory appends r to the history and syncs it. If the last line is
// torn (a crash in the middle of a write), the record starts on a new line
// so that it stays readable.
func AppendHistory(data string, r Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("cannot encode history record: %w", err)
	}
	name := HistoryPath(data)
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return fmt.Errorf("cannot create state folder: %w", err)
	}
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("cannot open history: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, st.Size()-1); err == nil && last[0] != '\n' {
			b = append([]byte{'\n'}, b...)
		}
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("cannot append to history %s: %w", name, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("cannot sync history %s: %w", name, err)
	}
	return nil
}

// ReadHistory returns the last runs of the history (all of them when last is
// 0 or less), oldest first, each with its stages. Lines that do not parse (a
// torn last line after a crash) are skipped. A missing history is empty.
func ReadHistory(data string, last int) ([]RunRecord, error) {
	f, err := os.Open(HistoryPath(data))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("cannot open history: %w", err)
	}
	defer f.Close()
	runs, err := parseHistory(f)
	if err != nil {
		return nil, fmt.Errorf("cannot read history %s: %w", HistoryPath(data), err)
	}
	if last > 0 && len(runs) > last {
		runs = runs[len(runs)-last:]
	}
	return runs, nil
}

// parseHistory groups the records of r by run, in order of first appearance.
func parseHistory(r io.Reader) ([]RunRecord, error) {
	var (
		runs  []*RunRecord
		byID  = map[string]*RunRecord{}
		br    = bufio.NewReaderSize(r, 64<<10)
		line  []byte
		large bool
	)
	for {
		chunk, isPrefix, err := br.ReadLine()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if !large {
			line = append(line, chunk...)
			if len(line) > maxHistoryLine {
				large, line = true, line[:0]
			}
		}
		if isPrefix {
			continue
		}
		if large {
			large = false
			continue
		}
		var rec Record
		if err := json.Unmarshal(bytes.TrimSpace(line), &rec); err == nil && rec.RunID != "" &&
			(rec.Kind == KindRun || rec.Kind == KindStage) {
			rr := byID[rec.RunID]
			if rr == nil {
				rr = &RunRecord{}
				byID[rec.RunID] = rr
				runs = append(runs, rr)
			}
			switch rec.Kind {
			case KindRun:
				rr.Record = rec
			case KindStage:
				rr.Stages = append(rr.Stages, rec)
			}
		}
		line = line[:0]
	}
	out := make([]RunRecord, 0, len(runs))
	for _, rr := range runs {
		if rr.Kind == "" {
			// Stages without their run: the run is going on, or died.
			first, last := rr.Stages[0], rr.Stages[len(rr.Stages)-1]
			rr.Record = Record{Kind: KindRun, RunID: first.RunID, Date: first.Date,
				Status: StatusUnfinished, Start: first.Start, End: last.End}
		}
		out = append(out, *rr)
	}
	return out, nil
}

// LastSuccess returns when the newest successful run ended and its data
// date; zero values when no run succeeded yet. `kwdata serve` exports the
// time on /metrics as kwdata_pipeline_last_success_timestamp_seconds, so
// that a pipeline that stops succeeding shows there.
func LastSuccess(data string) (time.Time, string, error) {
	runs, err := ReadHistory(data, 0)
	if err != nil {
		return time.Time{}, "", err
	}
	for i := len(runs) - 1; i >= 0; i-- {
		if runs[i].Status == StatusOK {
			return runs[i].End, runs[i].Date, nil
		}
	}
	return time.Time{}, "", nil
}

// WriteTable prints runs as a table for people, one row per run followed by
// one row per stage, times in UTC.
func WriteTable(w io.Writer, runs []RunRecord) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tDATE\tSTAGE\tSTATUS\tSTARTED\tTOOK\tCOUNTS\tERROR")
	row := func(id, stage string, r Record) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", id, r.Date, stage, r.Status,
			r.Start.UTC().Format("2006-01-02 15:04:05Z"), took(r), formatCounts(r.Counts), trimError(r.Error, 100))
	}
	for _, run := range runs {
		trigger := run.Trigger
		if trigger == "" {
			trigger = "-"
		}
		row(run.RunID, "("+trigger+")", run.Record)
		for _, st := range run.Stages {
			row("", st.Stage, st)
		}
	}
	return tw.Flush()
}

// WriteJSON prints runs as an indented JSON array, for programs.
func WriteJSON(w io.Writer, runs []RunRecord) error {
	if runs == nil {
		runs = []RunRecord{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(runs)
}

func took(r Record) string {
	if r.End.IsZero() || r.Start.IsZero() || r.End.Before(r.Start) {
		return "-"
	}
	d := r.End.Sub(r.Start)
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	default:
		return d.Round(time.Second).String()
	}
}

func formatCounts(c map[string]int64) string {
	if len(c) == 0 {
		return "-"
	}
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, c[k])
	}
	return strings.Join(parts, " ")
}
