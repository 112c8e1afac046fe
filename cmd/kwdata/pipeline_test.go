package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kwdata/kwdata/internal/testservers"
	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/pipelines"
)

// fileConfig writes a configuration whose sources are export files copied
// into dir/exports, and returns its path and the copied planner export.
func fileConfig(tb testing.TB, dir string, c *sampleCorpus, extra string) (cfg, planner string) {
	tb.Helper()
	b, err := os.ReadFile(c.planner)
	if err != nil {
		tb.Fatal(err)
	}
	planner = writeTestFile(tb, dir, "exports/us.csv", string(b))
	cfg = writeTestFile(tb, dir, "kwdata.yaml", `data: ./data
countries: [us]
files:
  us:
    planner_csv: [exports/us.csv]
    serp_jsonl: [`+c.serpFile+`]
`+extra)
	return cfg, planner
}

// currentBuild returns the build id <data>/index/CURRENT names.
func currentBuild(tb testing.TB, data string) string {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(kw.IndexDir(data), "CURRENT"))
	if err != nil {
		tb.Fatalf("cannot read the index pointer: %v", err)
	}
	return strings.TrimSpace(string(b))
}

// readRuns is `kwdata runs --json`.
func readRuns(tb testing.TB, cfg string) []pipelines.RunRecord {
	tb.Helper()
	var runs []pipelines.RunRecord
	if err := json.Unmarshal([]byte(run(tb, "runs", "--config", cfg, "--json")), &runs); err != nil {
		tb.Fatalf("runs --json: %v", err)
	}
	return runs
}

// paidKey creates an API key of the unlimited tier, so that a test may
// ask the server more often than the anonymous allowance permits.
func paidKey(tb testing.TB, data string) string {
	tb.Helper()
	key := strings.TrimSpace(run(tb, "keys", "create", "--data", data, "--tier", "paid"))
	if key == "" {
		tb.Fatal("keys create printed no key")
	}
	return key
}

// updatedOf asks the server for keyword with key and returns the data date
// it answers with.
func updatedOf(tb testing.TB, base, key, keyword string) string {
	tb.Helper()
	req, err := http.NewRequest(http.MethodGet, base+"/v1/keyword?"+url.Values{"q": {keyword}, "country": {"us"}}.Encode(), nil)
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	var e apiEntry
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || resp.StatusCode != http.StatusOK {
		tb.Fatalf("GET %q: status %d, %v", keyword, resp.StatusCode, err)
	}
	return e.Updated
}

// waitUpdated polls the server until it answers from the build of date.
func waitUpdated(tb testing.TB, base, key, keyword, date string) {
	tb.Helper()
	testservers.WaitFor(tb, 30*time.Second, "the server to answer from "+date, func() bool {
		return updatedOf(tb, base, key, keyword) == date
	})
}

// TestRunConfigPublishesAndSurvivesFailure runs the whole pipeline from
// files on two dates while a server answers from what it publishes. On the
// third date build-index fails half way through the run (ingest and
// similarity done): the failure is in the history, the published index
// stays and the server keeps answering from it; the next run of that date
// resumes at build-index and the server switches. On the fourth date ingest
// refuses a damaged export, with the same guarantees.
func TestRunConfigPublishesAndSurvivesFailure(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := newSampleCorpus(t, dir, 300, 7)
	cfg, planner := fileConfig(t, dir, c, "")
	data := filepath.Join(dir, "data")
	good, err := os.ReadFile(planner)
	if err != nil {
		t.Fatal(err)
	}
	probe := c.keywords[len(c.keywords)/2]
	days := []string{"2026-11-19", "2026-11-20", "2026-11-21", "2026-11-22"}

	if out := run(t, "run", "--config", cfg, "--date", days[0]); !strings.Contains(out, "ok") {
		t.Errorf("run printed %q", out)
	}
	build1 := currentBuild(t, data)
	key := paidKey(t, data)
	base := startServer(t, data)
	if got := updatedOf(t, base, key, probe); got != days[0] {
		t.Fatalf("server answers from %s, want %s", got, days[0])
	}

	run(t, "run", "--config", cfg, "--date", days[1])
	build2 := currentBuild(t, data)
	if build2 == build1 {
		t.Fatalf("the second run did not publish a new index (CURRENT is still %s)", build1)
	}
	waitUpdated(t, base, key, probe, days[1])

	// failedRun runs date, wants it to fail in stage naming want in its
	// error, and checks that CURRENT still names build and the server
	// still answers from its date, served.
	failedRun := func(date, stage, want, build, served string) {
		t.Helper()
		m, out, _ := testMain(t)
		err := m.Run(context.Background(), []string{"run", "--config", cfg, "--date", date})
		if err == nil || !strings.Contains(err.Error(), stage) || !strings.Contains(err.Error(), want) {
			t.Fatalf("run of %s: err = %v, want the %s stage to fail naming %q", date, err, stage, want)
		}
		if !strings.Contains(out.String(), "failed") {
			t.Errorf("run printed %q, want the failed stage in its table", out)
		}
		if got := currentBuild(t, data); got != build {
			t.Errorf("a failed run changed CURRENT from %s to %s", build, got)
		}
		// Two checks of CURRENT finished after the run: the second began
		// after it, so a publish would have been seen.
		waitChecks(t, base, checksOf(t, base)+2)
		if got := updatedOf(t, base, key, probe); got != served {
			t.Fatalf("after the failed run the server answers from %s, want %s", got, served)
		}
	}

	// The third date's build-index finds a keywords partition it cannot
	// read (a country nobody configured, damaged) after ingest and
	// similarity have finished.
	damaged := writeTestFile(t, data, "lake/keywords/country=de/date="+days[2]+"/part-00000.parquet", "not parquet")
	failedRun(days[2], "build-index", "country=de", build2, days[1])
	runs := readRuns(t, cfg)
	if len(runs) != 3 {
		t.Fatalf("runs --json lists %d runs, want 3", len(runs))
	}
	if got, want := stagesOf(runs[2]), []string{"ingest=ok", "similarity=ok", "build-index=failed"}; !slices.Equal(got, want) {
		t.Errorf("run failing at build-index: stages %v, want %v", got, want)
	}
	if r := runs[2]; r.Status != pipelines.StatusFailed || r.Stages[2].Error == "" {
		t.Errorf("run failing at build-index: %s, stage error %q; want failed with its error", r.Status, r.Stages[2].Error)
	}

	// Repaired, the same date resumes at build-index and publishes.
	if err := os.RemoveAll(filepath.Dir(damaged)); err != nil {
		t.Fatal(err)
	}
	run(t, "run", "--config", cfg, "--date", days[2])
	build3 := currentBuild(t, data)
	if build3 == build2 {
		t.Fatal("the resumed run did not publish")
	}
	waitUpdated(t, base, key, probe, days[2])
	runs = readRuns(t, cfg)
	if got, want := stagesOf(runs[3]), []string{"ingest=skipped", "similarity=skipped", "build-index=ok", "retention=ok"}; runs[3].Status != pipelines.StatusOK || !slices.Equal(got, want) {
		t.Errorf("resumed run: %s, stages %v; want ok, %v", runs[3].Status, got, want)
	}

	// The fourth date's planner export is damaged: ingest refuses it.
	writeTestFile(t, dir, "exports/us.csv", "this is not a planner export\n")
	failedRun(days[3], "ingest", "Keyword Planner export", build3, days[2])

	runs = readRuns(t, cfg)
	if len(runs) != 5 {
		t.Fatalf("runs --json lists %d runs, want 5", len(runs))
	}
	for i, want := range []string{pipelines.StatusOK, pipelines.StatusOK, pipelines.StatusFailed, pipelines.StatusOK, pipelines.StatusFailed} {
		r := runs[i]
		if r.Status != want || r.Trigger != pipelines.TriggerManual {
			t.Errorf("run %d of %s: %s %s, want %s manual", i, r.Date, r.Status, r.Trigger, want)
		}
	}
	if got, want := stagesOf(runs[0]), []string{"ingest=ok", "similarity=ok", "build-index=ok", "retention=ok"}; !slices.Equal(got, want) {
		t.Errorf("first run: stages %v, want %v", got, want)
	}
	if st := runs[4].Stages; len(st) != 1 || st[0].Stage != pipelines.StageIngest || st[0].Status != pipelines.StatusFailed || st[0].Error == "" {
		t.Errorf("failed run's stages = %+v, want only ingest, failed with its error", st)
	}

	// With the export repaired, the same date runs from its first stage
	// and publishes.
	writeTestFile(t, dir, "exports/us.csv", string(good))
	run(t, "run", "--config", cfg, "--date", days[3])
	if got := currentBuild(t, data); got == build3 {
		t.Error("the repaired run did not publish")
	}
	waitUpdated(t, base, key, probe, days[3])
	runs = readRuns(t, cfg)
	if len(runs) != 6 || runs[5].Status != pipelines.StatusOK || runs[5].Stages[0].Status != pipelines.StatusOK {
		t.Fatalf("repaired run not recorded as ok: %+v", runs[len(runs)-1].Record)
	}

	// The server's /metrics shows when the last good run ended, read from
	// the history of the data folder it serves, read again at most every
	// 30 seconds of scrapes (the waits above scraped it).
	want := float64(runs[5].End.UnixNano()) / 1e9
	testservers.WaitFor(t, 45*time.Second, fmt.Sprintf("kwdata_pipeline_last_success_timestamp_seconds to be the end of the last ok run, %f", want), func() bool {
		got := lastSuccessMetric(t, base)
		return got >= want-0.001 && got <= want+0.001
	})
}

// lastSuccessMetric scrapes the server's kwdata_pipeline_last_success_timestamp_seconds.
func lastSuccessMetric(tb testing.TB, base string) float64 {
	tb.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	const name = "kwdata_pipeline_last_success_timestamp_seconds "
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				tb.Fatalf("%s%s: %v", name, v, err)
			}
			return f
		}
	}
	tb.Fatalf("/metrics lacks %s", name)
	return 0
}

// stagesOf lists a run's stages as "stage=status".
func stagesOf(r pipelines.RunRecord) []string {
	var out []string
	for _, st := range r.Stages {
		out = append(out, st.Stage+"="+st.Status)
	}
	return out
}

// TestScheduleConfig lets `kwdata schedule` fire every second. Every fire
// runs the date of its day, so the first run does the work and the next
// ones find every stage finished; canceling the context stops it cleanly.
func TestScheduleConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := newSampleCorpus(t, dir, 200, 9)
	cfg, _ := fileConfig(t, dir, c, "schedule: \"@every 1s\"\n")
	data := filepath.Join(dir, "data")

	m, _, errb := testMain(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx, []string{"schedule", "--config", cfg}) }()

	// runs are the scheduled runs that ended.
	var runs []pipelines.RunRecord
	testservers.WaitFor(t, 60*time.Second, "two scheduled runs to finish", func() bool {
		select {
		case err := <-done:
			t.Fatalf("schedule returned early: %v\nstderr: %s", err, errb)
		default:
		}
		all, err := pipelines.ReadHistory(data, 0)
		if err != nil {
			t.Fatal(err)
		}
		runs = runs[:0]
		for _, r := range all {
			if r.Status != pipelines.StatusUnfinished {
				runs = append(runs, r)
			}
		}
		return len(runs) >= 2
	})
	cancel()
	stopped := time.Now()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("schedule returned %v after cancel, want nil", err)
		}
		t.Logf("%d scheduled runs; schedule returned %s after cancel", len(runs), time.Since(stopped).Round(time.Millisecond))
	case <-time.After(30 * time.Second):
		t.Fatal("schedule did not return within 30s of cancel")
	}

	first := runs[0]
	if first.Status != pipelines.StatusOK || first.Trigger != pipelines.TriggerSchedule {
		t.Errorf("first scheduled run: %s %s (%s), want ok schedule", first.Status, first.Trigger, first.Error)
	}
	today := pipelines.DateAt(first.Start, time.UTC)
	if first.Date != today {
		t.Errorf("first scheduled run has date %s, want the day it started, %s", first.Date, today)
	}
	currentBuild(t, data) // the first run published an index
	for _, r := range runs[1:] {
		if r.Date != first.Date {
			continue // the clock passed midnight between runs
		}
		if r.Status != pipelines.StatusSkipped || r.Trigger != pipelines.TriggerSchedule {
			t.Errorf("later scheduled run of %s: %s %s, want skipped: every stage finished before", r.Date, r.Status, r.Trigger)
		}
		for _, st := range r.Stages {
			if st.Status != pipelines.StatusSkipped {
				t.Errorf("later scheduled run: stage %s is %s, want skipped", st.Stage, st.Status)
			}
		}
		if len(r.Stages) != len(first.Stages) {
			t.Errorf("later scheduled run lists %d stages, the first %d", len(r.Stages), len(first.Stages))
		}
	}
}

// TestScheduleDayByDay runs `kwdata schedule` with a clock that the test
// moves one day forward after each complete run: two nights publish two
// builds of two data dates, and on the third a build-index failure leaves
// the second build published and is recorded in the history.
func TestScheduleDayByDay(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := newSampleCorpus(t, dir, 200, 13)
	cfg, _ := fileConfig(t, dir, c, "schedule: \"@every 1s\"\n")
	data := filepath.Join(dir, "data")

	// The clock runs at wall-clock speed from 03:00 on the first night,
	// plus the days the test has moved it.
	first := time.Date(2026, 11, 19, 3, 0, 0, 0, time.UTC)
	start := time.Now()
	var day atomic.Int64
	m, _, errb := testMain(t)
	m.Now = func() time.Time { return first.AddDate(0, 0, int(day.Load())).Add(time.Since(start)) }
	days := []string{"2026-11-19", "2026-11-20", "2026-11-21"}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx, []string{"schedule", "--config", cfg}) }()

	// waitRun waits for a finished scheduled run of date and returns it.
	waitRun := func(date string) pipelines.RunRecord {
		t.Helper()
		var run pipelines.RunRecord
		testservers.WaitFor(t, 20*time.Second, "a scheduled run of "+date+" to finish", func() bool {
			select {
			case err := <-done:
				t.Fatalf("schedule returned early: %v\nstderr: %s", err, errb)
			default:
			}
			runs, err := pipelines.ReadHistory(data, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range runs {
				if r.Date == date && (r.Status == pipelines.StatusOK || r.Status == pipelines.StatusFailed) {
					run = r
					return true
				}
			}
			return false
		})
		return run
	}
	// dataDate reads the data date of a build from its manifest.
	dataDate := func(build string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(kw.IndexDir(data), build, "manifest.json"))
		if err != nil {
			t.Fatal(err)
		}
		var man struct {
			DataDate string `json:"data_date"`
		}
		if err := json.Unmarshal(b, &man); err != nil {
			t.Fatal(err)
		}
		return man.DataDate
	}

	var builds []string
	for i, d := range days[:2] {
		r := waitRun(d)
		if r.Status != pipelines.StatusOK || r.Trigger != pipelines.TriggerSchedule {
			t.Fatalf("night %d: run of %s is %s %s (%s), want ok schedule", i+1, d, r.Status, r.Trigger, r.Error)
		}
		b := currentBuild(t, data)
		if got := dataDate(b); got != d {
			t.Errorf("night %d: published build %s has data date %s, want %s", i+1, b, got, d)
		}
		builds = append(builds, b)
		if i == 1 {
			// The third night's build-index finds a keywords partition it
			// cannot read: a country nobody configured, damaged.
			writeTestFile(t, data, "lake/keywords/country=de/date="+days[2]+"/part-00000.parquet", "not parquet")
		}
		day.Add(1)
	}
	if builds[0] == builds[1] {
		t.Fatalf("both nights published build %s", builds[0])
	}

	r := waitRun(days[2])
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("schedule returned %v after cancel, want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("schedule did not return within 30s of cancel")
	}
	if r.Status != pipelines.StatusFailed || !strings.Contains(r.Error, "build-index") {
		t.Errorf("third night: run is %s (%q), want failed with its error", r.Status, r.Error)
	}
	var stages []string
	for _, st := range r.Stages {
		stages = append(stages, st.Stage+"="+st.Status)
	}
	want := []string{"ingest=ok", "similarity=ok", "build-index=failed"}
	if !slices.Equal(stages, want) {
		t.Errorf("third night's stages = %v, want %v", stages, want)
	}
	if got := currentBuild(t, data); got != builds[1] {
		t.Errorf("after the failed night CURRENT is %s, want the second night's %s", got, builds[1])
	}
	if _, err := os.Stat(filepath.Join(kw.IndexDir(data), builds[1], "manifest.json")); err != nil {
		t.Errorf("the published build %s is gone: %v", builds[1], err)
	}
}

// checksOf reads kwdata_index_checks_total from the server at base.
func checksOf(tb testing.TB, base string) int64 {
	tb.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^kwdata_index_checks_total (\d+)`).FindSubmatch(body)
	if m == nil {
		tb.Fatalf("no kwdata_index_checks_total in /metrics:\n%s", body)
	}
	n, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return n
}

// waitChecks waits until the server at base has finished n checks of
// CURRENT.
func waitChecks(tb testing.TB, base string, n int64) {
	tb.Helper()
	testservers.WaitFor(tb, time.Minute, fmt.Sprintf("%d checks of the server's index poller", n), func() bool {
		return checksOf(tb, base) >= n
	})
}
