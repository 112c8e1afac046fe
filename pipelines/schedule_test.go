package pipelines

import (
	"context"
	"errors"
	"github.com/kwdata/kwdata/internal/testservers"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
)

// waitFor polls cond until it holds, for at most a bounded time.
func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	testservers.WaitFor(tb, 30*time.Second, what, cond)
}

func okRuns(tb testing.TB, data string) []RunRecord {
	tb.Helper()
	runs, err := ReadHistory(data, 0)
	if err != nil {
		tb.Fatal(err)
	}
	var ok []RunRecord
	for _, r := range runs {
		if r.Status == StatusOK {
			ok = append(ok, r)
		}
	}
	return ok
}

func TestSchedulerRunsThePipelineTwice(t *testing.T) {
	data := t.TempDir()
	clock := newClock("2026-11-21T03:00:00Z")
	p := newFakePipeline(t, data, clock)
	// Every published build moves the clock to the next day, so each
	// scheduled run has a date of its own.
	p.afterBuild = func() { clock.Advance(24 * time.Hour) }
	logger, logs := newLogger()
	s, err := NewScheduler("@every 1s", "UTC", Options{Data: data, Stages: p.Stages(), Now: clock.Now, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()

	waitFor(t, "two successful runs", func() bool { return len(okRuns(t, data)) >= 2 })

	// A second scheduler on the same data folder is refused.
	s2, err := NewScheduler("@every 1s", "", Options{Data: data, Stages: p.Stages()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Run(context.Background()); !errors.Is(err, ErrLocked) {
		t.Errorf("second scheduler: %v, want ErrLocked", err)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("scheduler did not stop")
	}

	runs := okRuns(t, data)
	if runs[0].Date != "2026-11-21" || runs[1].Date != "2026-11-22" {
		t.Errorf("run dates = %s, %s; want 2026-11-21, 2026-11-22", runs[0].Date, runs[1].Date)
	}
	for _, r := range runs[:2] {
		if r.Trigger != TriggerSchedule || len(r.Stages) != 4 {
			t.Errorf("run %s = %s, trigger %s; want 4 stages, trigger schedule", r.RunID, statuses(r), r.Trigger)
		}
	}
	builds := buildIDs(t, data)
	if len(builds) < 2 || !strings.Contains(builds[0], "2026-11-21") || !strings.Contains(builds[1], "2026-11-22") {
		t.Errorf("builds = %v, want one of 2026-11-21 and one of 2026-11-22", builds)
	}
	if cur := current(t, data); cur != builds[len(builds)-1] {
		t.Errorf("CURRENT = %s, want the newest build %s", cur, builds[len(builds)-1])
	}
	// Once Run returned, no run is left half done.
	all, _ := ReadHistory(data, 0)
	for _, r := range all {
		if r.Status == StatusUnfinished {
			t.Errorf("run %s unfinished after the scheduler stopped", r.RunID)
		}
	}
	// The scheduler lock is free again.
	release, err := lockScheduler(data, nil)
	if err != nil {
		t.Fatalf("scheduler lock after Run returned: %v", err)
	}
	release()
	if !strings.Contains(logs.String(), "scheduler started") {
		t.Errorf("no start line in %q", logs.String())
	}
}

func TestSchedulerStopFinishesTheRunningStage(t *testing.T) {
	data := t.TempDir()
	clock := newClock("2026-11-21T03:00:00Z")
	p := newFakePipeline(t, data, clock)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		once    sync.Once
		seenErr error
	)
	p.during[StageSimilarity] = func(sctx context.Context) {
		once.Do(func() {
			cancel() // SIGTERM while similarity writes
			seenErr = sctx.Err()
		})
	}
	s, err := NewScheduler("@every 1s", "UTC", Options{Data: data, Stages: p.Stages(), Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if seenErr != nil {
		t.Errorf("the running stage saw %v; it should finish its write", seenErr)
	}
	runs, _ := ReadHistory(data, 0)
	if len(runs) != 1 || statuses(runs[0]) != "canceled [ingest:ok similarity:ok]" {
		t.Fatalf("history = %+v, want one run canceled after similarity", runs)
	}
	if !exists(t, markerPath(data, "2026-11-21", StageSimilarity)) {
		t.Error("the stage that finished during the stop has no marker")
	}
}

func TestSchedulerSkipsAFireWhileAManualRunHoldsTheLock(t *testing.T) {
	data := t.TempDir()
	release, err := Lock(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	p := newFakePipeline(t, data, newClock("2026-11-21T03:00:00Z"))
	logger, logs := newLogger()
	s, err := NewScheduler("@every 1s", "UTC", Options{Data: data, Stages: p.Stages(), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	waitFor(t, "a skipped run", func() bool {
		runs, _ := ReadHistory(data, 0)
		return len(runs) > 0
	})
	cancel()
	<-done
	runs, _ := ReadHistory(data, 0)
	if runs[0].Status != StatusSkipped || runs[0].Trigger != TriggerSchedule {
		t.Errorf("run = %+v, want a skipped scheduled run", runs[0].Record)
	}
	if len(p.Calls()) != 0 {
		t.Errorf("stages ran during a manual run: %v", p.Calls())
	}
	if !strings.Contains(logs.String(), "another run holds the lock") {
		t.Errorf("no skip line in %q", logs.String())
	}
}

func TestParseSchedule(t *testing.T) {
	tests := []struct {
		spec string
		ok   bool
		want string // a substring of the error
	}{
		{"0 3 * * *", true, ""},
		{"30 2 * * 1-5", true, ""},
		{"*/10 * * * * *", true, ""},
		{"@daily", true, ""},
		{"@every 1s", true, ""},
		{"@every 6h", true, ""},
		{"", false, "not a cron spec"},
		{"0 3 * *", false, "5 fields"},
		{"61 3 * * *", false, "not a cron spec"},
		{"@fortnightly", false, "descriptor"},
		{"@every 10ms", false, "shorter than a second"},
		{"CRON_TZ=Europe/Berlin 0 3 * * *", false, "timezone key"},
	}
	for _, tt := range tests {
		_, err := ParseSchedule(tt.spec)
		if (err == nil) != tt.ok || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("ParseSchedule(%q) = %v, want ok=%v with %q", tt.spec, err, tt.ok, tt.want)
		}
	}
}

func TestSchedulerNextHonoursTheTimezone(t *testing.T) {
	if _, err := time.LoadLocation("Europe/Berlin"); err != nil {
		t.Skip("no tz database:", err)
	}
	noop := []Stage{{Name: "a", Run: func(context.Context, string, func(int64, int64)) (map[string]int64, error) { return nil, nil }}}
	tests := []struct {
		tz   string
		want time.Time
	}{
		{"", time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)},
		{"UTC", time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)},
		{"Europe/Berlin", time.Date(2026, 11, 22, 2, 0, 0, 0, time.UTC)}, // 03:00 CET
	}
	for _, tt := range tests {
		s, err := NewScheduler("0 3 * * *", tt.tz, Options{Data: "x", Stages: noop})
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Next(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)); !got.Equal(tt.want) {
			t.Errorf("tz %q: next = %v, want %v", tt.tz, got.UTC(), tt.want)
		}
	}
	if _, err := NewScheduler("0 3 * * *", "Mars/Olympus", Options{Data: "x", Stages: noop}); err == nil {
		t.Error("NewScheduler accepted an unknown time zone")
	}
	if _, err := NewScheduler("", "UTC", Options{Data: "x", Stages: noop}); err == nil || !strings.Contains(err.Error(), "schedule:") {
		t.Errorf("NewScheduler without a spec = %v, want a hint at the schedule key", err)
	}
}

func TestCronLoggerRoutesIntoSlog(t *testing.T) {
	logger, logs := newLogger()
	clog := cronLogger{logger}
	job := cron.NewChain(cron.Recover(clog)).Then(cron.FuncJob(func() { panic("outside any stage") }))
	job.Run() // must not panic
	clog.Info("skip")
	clog.Info("wake", "now", time.Unix(0, 0))
	out := logs.String()
	for _, want := range []string{"level=ERROR msg=\"cron panic\"", "err=\"outside any stage\"", "level=WARN", "previous run is still going", "level=DEBUG msg=\"cron wake\""} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}
