package pipelines

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kwdata/kwdata/kw"
)

// Names of the stages cmd/kwdata wires, in pipeline order. Publishing is
// part of build-index (it swaps <data>/index/CURRENT atomically), so there
// is no separate publish stage.
const (
	StageIngest     = "ingest"
	StageSimilarity = "similarity"
	StageBuildIndex = "build-index"
	StageRetention  = "retention"
)

// Stage is one step of the pipeline.
type Stage struct {
	// Name names the stage in logs, history and its completion marker:
	// lower-case letters, digits, '-' and '_'.
	Name string
	// Run does the work for a data date. It must be idempotent for the
	// date (re-running replaces its output) and must publish its output
	// atomically, so that a canceled or failed run leaves no half of it.
	// progress may be called from any goroutine with the units done so far
	// and the total (0 when unknown). counts (rows, keywords, ...) go into
	// the run history; nil is fine.
	Run func(ctx context.Context, date string, progress func(done, total int64)) (counts map[string]int64, err error)
}

// Options configure a run. RunOnce and NewScheduler fill the defaults in one
// place (withDefaults); the zero value of every optional field means its
// default.
type Options struct {
	// Data is the data folder. Required.
	Data string
	// Stages run in order. Required. A retention stage (RetentionStage) is
	// appended unless one named StageRetention is already in the list.
	Stages []Stage
	// Force re-runs stages that already finished for the date.
	Force bool
	// Logger receives one line when a stage starts and one when it ends,
	// and the lock, scheduler and retention lines. Default: discard.
	Logger *slog.Logger
	// Now is the clock of the history records and of scheduled run dates.
	// Default time.Now.
	Now func() time.Time
	// Retention is what the appended retention stage keeps. Default 3
	// builds and 35 days of partitions.
	Retention Retention
	// Progress returns the progress callback of a stage and a function to
	// call when the stage ends; cmd/kwdata draws a bar on a terminal.
	// Default: a log line at most every 30 seconds.
	Progress func(stage string) (update func(done, total int64), finish func())
	// StopGrace is how long the running stage may go on after ctx is
	// canceled (SIGTERM) before its own context is canceled too; no later
	// stage starts either way. Default 5 minutes; negative cancels the
	// stage at once.
	StopGrace time.Duration
	// Trigger is recorded in the history: "manual" (default) or "schedule".
	Trigger string
}

// Defaults of Options.
const (
	DefaultStopGrace  = 5 * time.Minute
	progressLogPeriod = 30 * time.Second
)

// Triggers of a run, as recorded in the history.
const (
	TriggerManual   = "manual"
	TriggerSchedule = "schedule"
)

// withDefaults checks opt and fills in its defaults. The returned Stages is
// a new slice that ends with the retention stage.
func (opt Options) withDefaults() (Options, error) {
	if opt.Data == "" {
		return opt, errors.New("no data folder given")
	}
	if len(opt.Stages) == 0 {
		return opt, errors.New("no stages given")
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	opt.Retention = opt.Retention.withDefaults()
	if opt.StopGrace == 0 {
		opt.StopGrace = DefaultStopGrace
	}
	if opt.Trigger == "" {
		opt.Trigger = TriggerManual
	}
	if opt.Progress == nil {
		opt.Progress = logProgress(opt.Logger, opt.Now)
	}
	seen := map[string]bool{}
	hasRetention := false
	stages := make([]Stage, 0, len(opt.Stages)+1)
	for i, s := range opt.Stages {
		if !validStageName(s.Name) {
			return opt, fmt.Errorf("stage %d has name %q; use lower-case letters, digits, '-' and '_'", i, s.Name)
		}
		if s.Run == nil {
			return opt, fmt.Errorf("stage %s has no Run function", s.Name)
		}
		if seen[s.Name] {
			return opt, fmt.Errorf("stage %s is listed twice", s.Name)
		}
		seen[s.Name] = true
		hasRetention = hasRetention || s.Name == StageRetention
		stages = append(stages, s)
	}
	if !hasRetention {
		stages = append(stages, RetentionStage(opt.Data, opt.Retention, opt.Logger))
	}
	opt.Stages = stages
	return opt, nil
}

func validStageName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// logProgress is the default progress display: a structured line at most
// every progressLogPeriod per stage, for logs that are not a terminal.
func logProgress(logger *slog.Logger, now func() time.Time) func(string) (func(int64, int64), func()) {
	return func(stage string) (func(int64, int64), func()) {
		var (
			mu   sync.Mutex
			last time.Time
		)
		start := now()
		return func(done, total int64) {
			mu.Lock()
			defer mu.Unlock()
			t := now()
			if t.Sub(last) < progressLogPeriod {
				return
			}
			if last.IsZero() {
				// The first call only starts the clock: a stage that ends
				// within the period logs no progress at all.
				last = t
				return
			}
			last = t
			logger.Info("progress", slog.String("stage", stage), slog.Int64("done", done),
				slog.Int64("total", total), slog.Duration("elapsed", t.Sub(start).Round(time.Second)))
		}, func() {}
	}
}

// DateAt returns the data date of a run at t in loc (nil is UTC): the
// calendar date there, YYYY-MM-DD.
func DateAt(t time.Time, loc *time.Location) string {
	if loc == nil {
		loc = time.UTC
	}
	return t.In(loc).Format(kw.DateLayout)
}

// RunOnce runs the pipeline once for date (YYYY-MM-DD) and returns what it
// recorded in the history. It takes the run lock (Lock) for the whole run
// and refuses with an error matching ErrLocked while another run holds it.
//
// Stages that finished for the date before are skipped unless opt.Force;
// from the first stage that runs, every later stage runs too. A stage that
// fails stops the run. When ctx is canceled, the running stage may finish
// (see Options.StopGrace) and no later stage starts; the returned error then
// matches context.Canceled. The error is nil only when every stage finished
// or was skipped.
func RunOnce(ctx context.Context, opt Options, date string) (RunRecord, error) {
	opt, err := opt.withDefaults()
	if err != nil {
		return RunRecord{}, fmt.Errorf("cannot run the pipeline: %w", err)
	}
	if _, err := time.Parse(kw.DateLayout, date); err != nil {
		return RunRecord{}, fmt.Errorf("cannot run the pipeline: date %q is not YYYY-MM-DD", date)
	}
	logger := opt.Logger.With(slog.String("date", date))
	run := RunRecord{Record: Record{
		Kind: KindRun, RunID: newRunID(opt.Now()), Date: date, Trigger: opt.Trigger, Start: opt.Now(),
	}}
	release, err := Lock(opt.Data, logger)
	if err != nil {
		// A refused run is still worth a line in the history: an operator
		// looking for last night's run learns why there is none.
		run.Status, run.End, run.Error = StatusSkipped, opt.Now(), err.Error()
		if herr := AppendHistory(opt.Data, run.Record); herr != nil {
			logger.Error("cannot record the run", slog.Any("err", herr))
		}
		return run, err
	}
	defer func() {
		if err := release(); err != nil {
			logger.Error("cannot release the run lock", slog.Any("err", err))
		}
	}()

	logger.Info("run started", slog.String("run", run.RunID), slog.String("trigger", opt.Trigger), slog.Bool("force", opt.Force))
	var (
		runErr  error
		histErr error
		rerun   = opt.Force
		ran     = false
	)
	record := func(r Record) {
		if err := AppendHistory(opt.Data, r); err != nil {
			logger.Error("cannot record in the history", slog.Any("err", err))
			histErr = errors.Join(histErr, err)
		}
	}
	for _, st := range opt.Stages {
		if err := ctx.Err(); err != nil {
			runErr = fmt.Errorf("run stopped before stage %s: %w", st.Name, err)
			run.Status = StatusCanceled
			break
		}
		rec := Record{Kind: KindStage, RunID: run.RunID, Date: date, Stage: st.Name, Start: opt.Now()}
		if !rerun {
			if m, ok := readMarker(opt.Data, date, st.Name, logger); ok {
				rec.Status, rec.End, rec.Counts = StatusSkipped, opt.Now(), m.Counts
				logger.Info("stage skipped: finished before", slog.String("stage", st.Name),
					slog.Time("finished", m.Finished), slog.String("hint", "pass --force to run it again"))
				record(rec)
				run.Stages = append(run.Stages, rec)
				continue
			}
		}
		// Every later stage consumes this one's output, so their markers
		// no longer describe what is on disk.
		rerun, ran = true, true
		counts, err := runStage(ctx, opt, st, date, logger)
		rec.End, rec.Counts = opt.Now(), counts
		if err == nil {
			err = writeMarker(opt.Data, date, st.Name, marker{RunID: run.RunID, Finished: rec.End, Counts: counts})
		}
		switch {
		case err == nil:
			rec.Status = StatusOK
			logger.Info("stage finished", slog.String("stage", st.Name),
				slog.Duration("took", rec.End.Sub(rec.Start).Round(time.Millisecond)), countsAttr(counts))
		case ctx.Err() != nil:
			rec.Status, rec.Error = StatusCanceled, err.Error()
			run.Status = StatusCanceled
			runErr = fmt.Errorf("stage %s stopped: %w", st.Name, errors.Join(err, ctx.Err()))
			logger.Warn("stage stopped", slog.String("stage", st.Name), slog.Any("err", err))
		default:
			rec.Status, rec.Error = StatusFailed, err.Error()
			run.Status = StatusFailed
			runErr = fmt.Errorf("stage %s failed: %w", st.Name, err)
			logger.Error("stage failed", slog.String("stage", st.Name), slog.Any("err", err),
				slog.String("hint", "no later stage ran; running this date again starts at this stage"))
		}
		record(rec)
		run.Stages = append(run.Stages, rec)
		if runErr != nil {
			break
		}
	}
	switch {
	case runErr != nil:
		run.Error = runErr.Error()
	case !ran:
		run.Status = StatusSkipped
	default:
		run.Status = StatusOK
	}
	run.End = opt.Now()
	record(run.Record)
	logger.Info("run finished", slog.String("run", run.RunID), slog.String("status", run.Status),
		slog.Duration("took", run.End.Sub(run.Start).Round(time.Millisecond)))
	if runErr != nil {
		return run, runErr
	}
	if histErr != nil {
		return run, fmt.Errorf("run finished but cannot be recorded: %w", histErr)
	}
	return run, nil
}

// runStage runs one stage with its progress display, under a context that
// outlives a cancel of ctx by opt.StopGrace, turning a panic into an error
// so that it is recorded like any failure.
func runStage(ctx context.Context, opt Options, st Stage, date string, logger *slog.Logger) (counts map[string]int64, err error) {
	sctx, cancel := stageContext(ctx, opt.StopGrace)
	defer cancel()
	update, finish := opt.Progress(st.Name)
	defer finish()
	logger.Info("stage started", slog.String("stage", st.Name))
	defer func() {
		if p := recover(); p != nil {
			logger.Error("stage panicked", slog.String("stage", st.Name), slog.Any("panic", p),
				slog.String("stack", string(debug.Stack())))
			counts, err = nil, fmt.Errorf("panic: %v", p)
		}
	}()
	return st.Run(sctx, date, update)
}

// stageContext returns the context of a running stage: values from ctx, but
// canceled only grace after ctx is, so that a SIGTERM lets the stage finish
// its write instead of throwing it away.
func stageContext(ctx context.Context, grace time.Duration) (context.Context, context.CancelFunc) {
	if grace < 0 {
		return context.WithCancel(ctx)
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var (
		mu    sync.Mutex
		timer *time.Timer
	)
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		timer = time.AfterFunc(grace, cancel)
	})
	return sctx, func() {
		stop()
		mu.Lock()
		if timer != nil {
			timer.Stop()
		}
		mu.Unlock()
		cancel()
	}
}

func countsAttr(counts map[string]int64) slog.Attr {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	attrs := make([]any, 0, len(keys))
	for _, k := range keys {
		attrs = append(attrs, slog.Int64(k, counts[k]))
	}
	return slog.Group("counts", attrs...)
}

// newRunID names a run by its start time and a random suffix: sortable,
// and unique even for runs started in the same second.
func newRunID(start time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return start.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// StateDir is the folder of the pipeline's own files under the data folder.
func StateDir(data string) string { return filepath.Join(data, "state") }

// markerPath is <data>/state/<date>/<stage>.done.
func markerPath(data, date, stage string) string {
	return filepath.Join(StateDir(data), date, stage+".done")
}

// marker is the content of a completion marker.
type marker struct {
	RunID    string           `json:"run_id"`
	Finished time.Time        `json:"finished"`
	Counts   map[string]int64 `json:"counts,omitempty"`
}

// readMarker reports whether stage finished for date. A damaged marker
// counts as absent: running a stage again is always safe.
func readMarker(data, date, stage string, logger *slog.Logger) (marker, bool) {
	var m marker
	b, err := os.ReadFile(markerPath(data, date, stage))
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			logger.Warn("cannot read stage marker; running the stage", slog.String("stage", stage), slog.Any("err", err))
		}
		return m, false
	}
	if err := json.Unmarshal(b, &m); err != nil || m.Finished.IsZero() {
		logger.Warn("damaged stage marker; running the stage", slog.String("stage", stage),
			slog.String("file", markerPath(data, date, stage)))
		return m, false
	}
	return m, true
}

func writeMarker(data, date, stage string, m marker) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("cannot encode stage marker: %w", err)
	}
	name := markerPath(data, date, stage)
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return fmt.Errorf("cannot create state folder: %w", err)
	}
	if err := kw.WriteFileAtomic(name, append(b, '\n')); err != nil {
		return fmt.Errorf("cannot record that stage %s finished: %w", stage, err)
	}
	return nil
}

// trimError shortens an error message to one line for the table view.
func trimError(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > max {
		return string(r[:max-1]) + "…"
	}
	return s
}
