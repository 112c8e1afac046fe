package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/pipelines"
)

// TestManualStagesTakeTheRunLock: build-index and similarity by hand are
// refused, with a one-line reason naming the holder, while a run holds the
// pipeline lock, and publish nothing; once the lock is free they run.
func TestManualStagesTakeTheRunLock(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := newSampleCorpus(t, dir, 50, 3)
	cfg, _ := fileConfig(t, dir, c, "")
	data := filepath.Join(dir, "data")
	const date = "2026-11-21"
	run(t, "ingest", "--config", cfg, "--date", date)

	release, err := pipelines.Lock(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"similarity", "--data", data, "--date", date},
		{"build-index", "--data", data, "--date", date},
	} {
		m, out, _ := testMain(t)
		err := m.Run(context.Background(), args)
		if !errors.Is(err, pipelines.ErrLocked) {
			t.Fatalf("%s while a run holds the lock: err = %v, want the lock refusal", args[0], err)
		}
		msg := oneLine(err)
		if !strings.HasPrefix(msg, "cannot ") || !strings.Contains(msg, "pid ") || !strings.Contains(msg, "run.lock") {
			t.Errorf("%s refusal %q does not name the lock and its holder", args[0], msg)
		}
		if out.Len() != 0 {
			t.Errorf("%s printed %q while refused", args[0], out)
		}
	}
	if _, err := os.Stat(filepath.Join(kw.IndexDir(data), "CURRENT")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused build-index published an index: %v", err)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}

	run(t, "similarity", "--data", data, "--date", date)
	if out := run(t, "build-index", "--data", data, "--date", date); !strings.Contains(out, "published index") {
		t.Errorf("build-index after the lock was released printed %q", out)
	}
}
