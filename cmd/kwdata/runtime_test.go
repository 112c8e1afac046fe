package main

import (
	"context"
	"path/filepath"
	"runtime/debug"
	"runtime/metrics"
	"testing"
)

// gcSettings reads the garbage collector's GOGC and soft memory limit
// without changing them.
func gcSettings(tb testing.TB) (gogc, limit uint64) {
	tb.Helper()
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}}
	metrics.Read(s)
	for _, x := range s {
		if x.Value.Kind() != metrics.KindUint64 {
			tb.Fatalf("runtime/metrics has no %s", x.Name)
		}
	}
	return s[0].Value.Uint64(), s[1].Value.Uint64()
}

// restoreGC puts GOGC and the memory limit back as they are now when the
// test ends.
func restoreGC(tb testing.TB) {
	gogc, limit := gcSettings(tb)
	tb.Cleanup(func() {
		debug.SetGCPercent(int(gogc))
		debug.SetMemoryLimit(int64(limit))
	})
}

// TestTuneRuntime: main gives serve and demo a higher GOGC and an ingest a
// soft memory limit, unless the environment sets its own. Not parallel: it
// changes the whole process, and puts everything back.
func TestTuneRuntime(t *testing.T) {
	restoreGC(t)
	for _, tt := range []struct {
		name, command string
		env           map[string]string
		gogc, limit   uint64 // 0: as before
	}{
		{"serve", "serve", nil, serveGCPercent, 0},
		{"demo", "demo", nil, serveGCPercent, 0},
		{"serve with GOGC", "serve", map[string]string{"GOGC": "100"}, 0, 0},
		{"ingest", "ingest", nil, 0, ingestMemoryLimit},
		{"ingest with GOMEMLIMIT", "ingest", map[string]string{"GOMEMLIMIT": "2GiB"}, 0, 0},
		{"similarity", "similarity", nil, 0, 0},
		{"no command", "", nil, 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			const gogc0, limit0 = 150, 1 << 40
			debug.SetGCPercent(gogc0)
			debug.SetMemoryLimit(limit0)
			tuneRuntime(tt.command, func(k string) string { return tt.env[k] })
			wantGOGC, wantLimit := tt.gogc, tt.limit
			if wantGOGC == 0 {
				wantGOGC = gogc0
			}
			if wantLimit == 0 {
				wantLimit = limit0
			}
			if gogc, limit := gcSettings(t); gogc != wantGOGC || limit != wantLimit {
				t.Errorf("GOGC %d, memory limit %d; want %d and %d", gogc, limit, wantGOGC, wantLimit)
			}
		})
	}
}

func TestCommandName(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, ""},
		{[]string{"serve", "--data", "d"}, "serve"},
		{[]string{"--log-level", "debug", "ingest"}, "ingest"},
		{[]string{"-log-level=debug", "demo"}, "demo"},
		{[]string{"--", "serve"}, "serve"},
		{[]string{"-h"}, ""},
	} {
		if got := commandName(tt.args); got != tt.want {
			t.Errorf("commandName(%q) = %q, want %q", tt.args, got, tt.want)
		}
	}
}

// TestMainLeavesRuntimeAlone: Main.Run, which the tests of this package
// run many of at once, never changes the garbage collector of the process;
// only main does, once, for the command it runs. Not parallel, so that
// nothing else may change the settings while it reads them.
func TestMainLeavesRuntimeAlone(t *testing.T) {
	restoreGC(t)
	gogc0, limit0 := gcSettings(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	run(t, "sample", "--out", in, "--keywords", "50", "--countries", "us")
	for _, args := range [][]string{
		{"ingest", "--data", filepath.Join(dir, "data"), "--date", "2026-11-21", "--country", "us",
			"--planner-csv", filepath.Join(in, "us", "keyword-planner.csv")},
		// Canceled at once: serve stops after it would have tuned the
		// collector.
		{"serve", "--data", filepath.Join(dir, "data"), "--addr", "127.0.0.1:0"},
	} {
		m, _, _ := testMain(t)
		ctx := context.Background()
		if args[0] == "serve" {
			c, cancel := context.WithCancel(ctx)
			cancel()
			ctx = c
		}
		_ = m.Run(ctx, args)
		if gogc, limit := gcSettings(t); gogc != gogc0 || limit != limit0 {
			t.Errorf("after kwdata %s: GOGC %d, memory limit %d; want them as before, %d and %d", args[0], gogc, limit, gogc0, limit0)
		}
	}
}
