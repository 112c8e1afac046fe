package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRunRefusesShrink: a nightly run whose planner export lost most of
// its keywords fails at build-index with a message naming the country and
// both counts, the published index stays, and `kwdata run --allow-shrink`
// of the same date resumes at build-index and publishes.
func TestRunRefusesShrink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	full := newSampleCorpus(t, filepath.Join(dir, "full"), 300, 7)
	small := newSampleCorpus(t, filepath.Join(dir, "small"), 100, 7)
	cfg, planner := fileConfig(t, dir, full, "")
	data := filepath.Join(dir, "data")
	run(t, "run", "--config", cfg, "--date", "2026-11-20")
	published := currentBuild(t, data)

	b, err := os.ReadFile(small.planner)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(planner, b, 0o644); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("US would have %d keywords, fewer than half of the %d in the published build", len(small.keywords), len(full.keywords))
	m, _, _ := testMain(t)
	err = m.Run(context.Background(), []string{"run", "--config", cfg, "--date", "2026-11-21"})
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "--allow-shrink") {
		t.Fatalf("run of a shrunk export: %v, want a refusal containing %q", err, want)
	}
	if got := currentBuild(t, data); got != published {
		t.Fatalf("the refused run changed CURRENT from %s to %s", published, got)
	}
	runs := readRuns(t, cfg)
	last := runs[len(runs)-1]
	if got, wantStages := stagesOf(last), []string{"ingest=ok", "similarity=ok", "build-index=failed"}; !slices.Equal(got, wantStages) {
		t.Fatalf("refused run: stages %v, want %v", got, wantStages)
	}
	if e := last.Stages[2].Error; !strings.Contains(e, want) {
		t.Errorf("the history's build-index error %q lacks %q", e, want)
	}

	run(t, "run", "--config", cfg, "--date", "2026-11-21", "--allow-shrink")
	if got := currentBuild(t, data); got == published {
		t.Fatal("run --allow-shrink did not publish")
	}
	runs = readRuns(t, cfg)
	if got, wantStages := stagesOf(runs[len(runs)-1]), []string{"ingest=skipped", "similarity=skipped", "build-index=ok", "retention=ok"}; !slices.Equal(got, wantStages) {
		t.Errorf("run --allow-shrink: stages %v, want %v", got, wantStages)
	}
}

// TestBuildIndexRefusesMissingRelated: build-index of a date that ingest
// reached but similarity did not is refused, naming the country and its
// keyword count; --allow-missing-related publishes it.
func TestBuildIndexRefusesMissingRelated(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := newSampleCorpus(t, dir, 200, 3)
	data := filepath.Join(dir, "data")
	run(t, "ingest", "--data", data, "--date", "2026-11-21", "--country", "us",
		"--planner-csv", c.planner, "--serp-jsonl", c.serpFile)

	m, _, _ := testMain(t)
	err := m.Run(context.Background(), []string{"build-index", "--data", data, "--date", "2026-11-21"})
	want := fmt.Sprintf("US has %d keywords but no related partition on 2026-11-21", len(c.keywords))
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "--allow-missing-related") {
		t.Fatalf("build-index without related: %v, want a refusal containing %q", err, want)
	}
	if _, err := os.Stat(filepath.Join(data, "index", "CURRENT")); !os.IsNotExist(err) {
		t.Errorf("a refused build-index published something: %v", err)
	}
	if out := run(t, "build-index", "--data", data, "--date", "2026-11-21", "--allow-missing-related"); !strings.Contains(out, "keywords in 1 country,") {
		t.Errorf("build-index --allow-missing-related printed %q", out)
	}
}
