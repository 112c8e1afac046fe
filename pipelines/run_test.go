package pipelines

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestRunOnceRunsEveryStageAndRecordsIt(t *testing.T) {
	data := t.TempDir()
	clock := newClock("2026-11-21T03:00:00Z")
	p := newFakePipeline(t, data, clock)
	var progressed []string
	opt := Options{Data: data, Stages: p.Stages(), Now: clock.Now,
		Progress: func(stage string) (func(int64, int64), func()) {
			return func(done, total int64) {
				if done == total {
					progressed = append(progressed, stage)
				}
			}, func() {}
		}}

	run, err := RunOnce(context.Background(), opt, "2026-11-21")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := statuses(run), "ok [ingest:ok similarity:ok build-index:ok retention:ok]"; got != want {
		t.Errorf("run = %s, want %s", got, want)
	}
	if got, want := p.Calls(), []string{"ingest@2026-11-21", "similarity@2026-11-21", "build-index@2026-11-21"}; !slices.Equal(got, want) {
		t.Errorf("calls = %v, want %v", got, want)
	}
	if got, want := progressed, []string{"ingest", "similarity", "build-index"}; !slices.Equal(got, want) {
		t.Errorf("progress finished for %v, want %v", got, want)
	}
	if run.Stages[0].Counts["keywords"] != 3 {
		t.Errorf("ingest counts = %v, want keywords=3", run.Stages[0].Counts)
	}
	for _, st := range []string{StageIngest, StageSimilarity, StageBuildIndex, StageRetention} {
		if !exists(t, markerPath(data, "2026-11-21", st)) {
			t.Errorf("no completion marker for %s", st)
		}
	}
	hist, err := ReadHistory(data, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 1 || statuses(hist[0]) != statuses(run) || hist[0].Trigger != TriggerManual {
		t.Fatalf("history = %+v, want the run just made", hist)
	}
	end, date, err := LastSuccess(data)
	if err != nil || date != "2026-11-21" || !end.Equal(clock.Now()) {
		t.Errorf("LastSuccess = %v, %q, %v; want %v, 2026-11-21", end, date, err, clock.Now())
	}
}

func TestRunOnceSkipsFinishedStagesUnlessForced(t *testing.T) {
	data := t.TempDir()
	clock := newClock("2026-11-21T03:00:00Z")
	p := newFakePipeline(t, data, clock)
	opt := Options{Data: data, Stages: p.Stages(), Now: clock.Now}
	ctx := context.Background()
	if _, err := RunOnce(ctx, opt, "2026-11-21"); err != nil {
		t.Fatal(err)
	}
	run, err := RunOnce(ctx, opt, "2026-11-21")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := statuses(run), "skipped [ingest:skipped similarity:skipped build-index:skipped retention:skipped]"; got != want {
		t.Errorf("re-run = %s, want %s", got, want)
	}
	if n := len(p.Calls()); n != 3 {
		t.Errorf("a re-run called stages again: %v", p.Calls())
	}
	// A no-op run is not a success: the data is as old as before.
	clock.Advance(time.Hour)
	if end, _, _ := LastSuccess(data); !end.Equal(clock.Now().Add(-time.Hour)) {
		t.Errorf("LastSuccess moved to %v on a run that did nothing", end)
	}

	opt.Force = true
	run, err = RunOnce(ctx, opt, "2026-11-21")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := statuses(run), "ok [ingest:ok similarity:ok build-index:ok retention:ok]"; got != want {
		t.Errorf("forced run = %s, want %s", got, want)
	}
}

func TestFailedStageKeepsPublishedIndexAndNextRunResumes(t *testing.T) {
	data := t.TempDir()
	clock := newClock("2026-11-21T03:00:00Z")
	p := newFakePipeline(t, data, clock)
	opt := Options{Data: data, Stages: p.Stages(), Now: clock.Now}
	ctx := context.Background()
	if _, err := RunOnce(ctx, opt, "2026-11-21"); err != nil {
		t.Fatal(err)
	}
	published := current(t, data)

	clock.Advance(24 * time.Hour)
	boom := errors.New("similarity exploded")
	p.setFail(StageSimilarity, boom)
	run, err := RunOnce(ctx, opt, "2026-11-22")
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the stage's error", err)
	}
	if got, want := statuses(run), "failed [ingest:ok similarity:failed]"; got != want {
		t.Errorf("run = %s, want %s", got, want)
	}
	if got := current(t, data); got != published {
		t.Errorf("CURRENT = %q after a failed run, want %q", got, published)
	}
	if exists(t, markerPath(data, "2026-11-22", StageSimilarity)) {
		t.Error("a failed stage has a completion marker")
	}
	hist, err := ReadHistory(data, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 1 || hist[0].Status != StatusFailed || !strings.Contains(hist[0].Stages[1].Error, "similarity exploded") {
		t.Errorf("history = %+v, want the failure with its error", hist)
	}
	if _, date, _ := LastSuccess(data); date != "2026-11-21" {
		t.Errorf("LastSuccess date = %q, want the last good run's 2026-11-21", date)
	}

	p.setFail(StageSimilarity, nil)
	clock.Advance(time.Hour)
	run, err = RunOnce(ctx, opt, "2026-11-22")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := statuses(run), "ok [ingest:skipped similarity:ok build-index:ok retention:ok]"; got != want {
		t.Errorf("retry = %s, want %s", got, want)
	}
	want := []string{"ingest@2026-11-21", "similarity@2026-11-21", "build-index@2026-11-21",
		"ingest@2026-11-22", "similarity@2026-11-22", "similarity@2026-11-22", "build-index@2026-11-22"}
	if got := p.Calls(); !slices.Equal(got, want) {
		t.Errorf("calls = %v, want %v", got, want)
	}
	if got := current(t, data); got == published || !strings.Contains(got, "2026-11-22") {
		t.Errorf("CURRENT = %q, want the new build of 2026-11-22", got)
	}
}

func TestCancelStopsAfterTheCurrentStage(t *testing.T) {
	tests := []struct {
		name      string
		grace     time.Duration
		wantStage error // what the canceled stage sees on its own context
		want      string
	}{
		{"stage finishes its write", 0, nil, "canceled [ingest:ok similarity:ok]"},
		{"no grace", -1, context.Canceled, "canceled [ingest:ok similarity:canceled]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := t.TempDir()
			clock := newClock("2026-11-21T03:00:00Z")
			p := newFakePipeline(t, data, clock)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var seen error
			p.during[StageSimilarity] = func(sctx context.Context) {
				cancel() // SIGTERM arrives while similarity writes
				seen = sctx.Err()
			}
			if tt.wantStage != nil {
				p.setFail(StageSimilarity, context.Canceled)
			}
			opt := Options{Data: data, Stages: p.Stages(), Now: clock.Now, StopGrace: tt.grace}
			run, err := RunOnce(ctx, opt, "2026-11-21")
			if !errors.Is(err, context.Canceled) {
				t.Errorf("err = %v, want context.Canceled", err)
			}
			if !errors.Is(seen, tt.wantStage) || (tt.wantStage == nil && seen != nil) {
				t.Errorf("stage context error = %v, want %v", seen, tt.wantStage)
			}
			if got := statuses(run); got != tt.want {
				t.Errorf("run = %s, want %s", got, tt.want)
			}
			if slices.Contains(p.Calls(), "build-index@2026-11-21") {
				t.Error("build-index ran after the cancel")
			}
			if current(t, data) != "" {
				t.Error("something was published after the cancel")
			}
			hist, _ := ReadHistory(data, 0)
			if len(hist) != 1 || hist[0].Status != StatusCanceled {
				t.Errorf("history = %+v, want one canceled run", hist)
			}
			// The next run picks up where this one stopped.
			p.setFail(StageSimilarity, nil)
			run, err = RunOnce(context.Background(), opt, "2026-11-21")
			if err != nil || run.Stages[0].Status != StatusSkipped || run.Status != StatusOK {
				t.Errorf("resumed run = %s, %v", statuses(run), err)
			}
		})
	}
}

func TestStagePanicIsRecordedAsFailure(t *testing.T) {
	data := t.TempDir()
	stages := []Stage{{Name: "boom", Run: func(context.Context, string, func(int64, int64)) (map[string]int64, error) {
		panic("index out of range")
	}}}
	run, err := RunOnce(context.Background(), Options{Data: data, Stages: stages}, "2026-11-21")
	if err == nil || !strings.Contains(err.Error(), "panic: index out of range") {
		t.Fatalf("err = %v, want the panic as an error", err)
	}
	if got, want := statuses(run), "failed [boom:failed]"; got != want {
		t.Errorf("run = %s, want %s", got, want)
	}
	// The lock is released after a panic.
	release, err := Lock(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	release()
}

func TestRunOnceIsRefusedWhileLockedAndSaysSo(t *testing.T) {
	data := t.TempDir()
	release, err := Lock(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	p := newFakePipeline(t, data, newClock("2026-11-21T03:00:00Z"))
	run, err := RunOnce(context.Background(), Options{Data: data, Stages: p.Stages()}, "2026-11-21")
	var le *LockedError
	if !errors.Is(err, ErrLocked) || !errors.As(err, &le) || le.Holder.PID != os.Getpid() {
		t.Fatalf("err = %v, want a LockedError naming this process", err)
	}
	if len(p.Calls()) != 0 {
		t.Errorf("stages ran without the lock: %v", p.Calls())
	}
	hist, _ := ReadHistory(data, 0)
	if len(hist) != 1 || hist[0].Status != StatusSkipped || hist[0].RunID != run.RunID || !strings.Contains(hist[0].Error, "lock") {
		t.Errorf("history = %+v, want the refused run recorded as skipped", hist)
	}
}

func TestOptionsAreChecked(t *testing.T) {
	noop := func(context.Context, string, func(int64, int64)) (map[string]int64, error) { return nil, nil }
	tests := []struct {
		name string
		opt  Options
		date string
		want string
	}{
		{"no data", Options{Stages: []Stage{{Name: "a", Run: noop}}}, "2026-11-21", "no data folder"},
		{"no stages", Options{Data: "x"}, "2026-11-21", "no stages"},
		{"bad name", Options{Data: "x", Stages: []Stage{{Name: "../a", Run: noop}}}, "2026-11-21", "lower-case"},
		{"twice", Options{Data: "x", Stages: []Stage{{Name: "a", Run: noop}, {Name: "a", Run: noop}}}, "2026-11-21", "twice"},
		{"no func", Options{Data: "x", Stages: []Stage{{Name: "a"}}}, "2026-11-21", "no Run"},
		{"bad date", Options{Data: "x", Stages: []Stage{{Name: "a", Run: noop}}}, "21.11.2026", "YYYY-MM-DD"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := RunOnce(context.Background(), tt.opt, tt.date)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestOwnRetentionStageIsNotDoubled(t *testing.T) {
	calls := 0
	own := Stage{Name: StageRetention, Run: func(context.Context, string, func(int64, int64)) (map[string]int64, error) {
		calls++
		return nil, nil
	}}
	run, err := RunOnce(context.Background(), Options{Data: t.TempDir(), Stages: []Stage{own}}, "2026-11-21")
	if err != nil || calls != 1 || len(run.Stages) != 1 {
		t.Errorf("run = %s, calls = %d, err = %v; want only the given retention stage", statuses(run), calls, err)
	}
}

func TestDamagedMarkerRunsTheStage(t *testing.T) {
	data := t.TempDir()
	clock := newClock("2026-11-21T03:00:00Z")
	p := newFakePipeline(t, data, clock)
	opt := Options{Data: data, Stages: p.Stages(), Now: clock.Now}
	if _, err := RunOnce(context.Background(), opt, "2026-11-21"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(markerPath(data, "2026-11-21", StageBuildIndex), []byte("{\"fin"), 0o644); err != nil {
		t.Fatal(err)
	}
	run, err := RunOnce(context.Background(), opt, "2026-11-21")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := statuses(run), "ok [ingest:skipped similarity:skipped build-index:ok retention:ok]"; got != want {
		t.Errorf("run = %s, want %s", got, want)
	}
	if matches, _ := filepath.Glob(filepath.Join(StateDir(data), "2026-11-21", ".*tmp*")); len(matches) != 0 {
		t.Errorf("temporary marker files left: %v", matches)
	}
}

func TestDateAt(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip("no tz database:", err)
	}
	at := time.Date(2026, 11, 21, 23, 30, 0, 0, time.UTC)
	if got := DateAt(at, nil); got != "2026-11-21" {
		t.Errorf("DateAt UTC = %s", got)
	}
	if got := DateAt(at, berlin); got != "2026-11-22" {
		t.Errorf("DateAt Berlin = %s, want 2026-11-22", got)
	}
}

func TestDefaultProgressLogsPeriodically(t *testing.T) {
	clock := newClock("2026-11-21T03:00:00Z")
	logger, logs := newLogger()
	update, finish := logProgress(logger, clock.Now)("ingest")
	for _, step := range []time.Duration{0, 10 * time.Second, 21 * time.Second, 5 * time.Second, 30 * time.Second} {
		clock.Advance(step)
		update(1, 10)
	}
	finish()
	// Calls at 0s (starts the clock), 10s, 31s (line), 36s, 66s (line).
	if n := strings.Count(logs.String(), "msg=progress"); n != 2 {
		t.Errorf("%d progress lines, want 2:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "stage=ingest done=1 total=10 elapsed=1m6s") {
		t.Errorf("progress line lacks stage, counts or elapsed time:\n%s", logs.String())
	}
}
