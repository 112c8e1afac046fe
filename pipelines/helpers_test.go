package pipelines

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kwdata/kwdata/index"
	"github.com/kwdata/kwdata/kw"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock(s string) *fakeClock {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return &fakeClock{t: t}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// fakePipeline is ingest → similarity → build-index with stages that write
// small files where the real ones write the lake and the index, and that
// record every call.
type fakePipeline struct {
	tb    testing.TB
	data  string
	clock *fakeClock

	mu    sync.Mutex
	calls []string // "stage@date"
	// fail makes the named stage fail while set.
	fail map[string]error
	// during runs inside the named stage before it returns.
	during map[string]func(ctx context.Context)
	// afterBuild runs after a build is published.
	afterBuild func()
}

func newFakePipeline(tb testing.TB, data string, clock *fakeClock) *fakePipeline {
	tb.Helper()
	return &fakePipeline{tb: tb, data: data, clock: clock, fail: map[string]error{}, during: map[string]func(context.Context){}}
}

func (p *fakePipeline) setFail(stage string, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err == nil {
		delete(p.fail, stage)
		return
	}
	p.fail[stage] = err
}

func (p *fakePipeline) Calls() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.calls...)
}

func (p *fakePipeline) stage(name string, work func(ctx context.Context, date string) (map[string]int64, error)) Stage {
	return Stage{Name: name, Run: func(ctx context.Context, date string, progress func(done, total int64)) (map[string]int64, error) {
		p.mu.Lock()
		p.calls = append(p.calls, name+"@"+date)
		fail, during := p.fail[name], p.during[name]
		p.mu.Unlock()
		progress(0, 2)
		if during != nil {
			during(ctx)
		}
		progress(1, 2)
		if fail != nil {
			return nil, fail
		}
		counts, err := work(ctx, date)
		progress(2, 2)
		return counts, err
	}}
}

// Stages returns the three stages; retention is appended by RunOnce.
func (p *fakePipeline) Stages() []Stage {
	return []Stage{
		p.stage(StageIngest, func(ctx context.Context, date string) (map[string]int64, error) {
			for _, ds := range []string{kw.DatasetKeywords, kw.DatasetSERPs} {
				writePartition(p.tb, p.data, ds, "us", date)
			}
			return map[string]int64{"keywords": 3, "serps": 60}, nil
		}),
		p.stage(StageSimilarity, func(ctx context.Context, date string) (map[string]int64, error) {
			for _, ds := range []string{kw.DatasetRelated, kw.DatasetIntents} {
				writePartition(p.tb, p.data, ds, "us", date)
			}
			return map[string]int64{"related": 30}, nil
		}),
		p.stage(StageBuildIndex, func(ctx context.Context, date string) (map[string]int64, error) {
			id := "b-" + date + "-" + p.clock.Now().Format("150405")
			writeBuild(p.tb, p.data, id, date, p.clock.Now())
			publish(p.tb, p.data, id)
			p.mu.Lock()
			after := p.afterBuild
			p.mu.Unlock()
			if after != nil {
				after()
			}
			return map[string]int64{"keys": 3}, nil
		}),
	}
}

// writePartition makes a lake partition with one file in it.
func writePartition(tb testing.TB, data, dataset, country, date string) {
	tb.Helper()
	dir := kw.PartitionDir(data, dataset, country, date)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "part-00000.parquet"), []byte("PAR1"), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// writeBuild makes an index build with a manifest like the index package's,
// including fields retention does not read.
func writeBuild(tb testing.TB, data, id, date string, builtAt time.Time) {
	tb.Helper()
	dir := filepath.Join(kw.IndexDir(data), id)
	if err := os.MkdirAll(filepath.Join(dir, "db"), 0o755); err != nil {
		tb.Fatal(err)
	}
	m, _ := json.Marshal(map[string]any{"format_version": 1, "data_date": date, "built_at": builtAt.UTC(),
		"build_id": id, "countries": map[string]int{"US": 3}, "probes": []any{}})
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), m, 0o644); err != nil {
		tb.Fatal(err)
	}
}

// publish points CURRENT at a build, atomically like the index package.
func publish(tb testing.TB, data, id string) {
	tb.Helper()
	if err := kw.WriteFileAtomic(filepath.Join(kw.IndexDir(data), "CURRENT"), []byte(id+"\n")); err != nil {
		tb.Fatal(err)
	}
}

func current(tb testing.TB, data string) string {
	tb.Helper()
	id, err := index.Published(data)
	if err != nil {
		tb.Fatal(err)
	}
	return id
}

func buildIDs(tb testing.TB, data string) []string {
	tb.Helper()
	bs, err := listBuilds(data)
	if err != nil {
		tb.Fatal(err)
	}
	var ids []string
	for _, b := range bs {
		ids = append(ids, b.id)
	}
	return ids
}

// logBuffer is a logger whose output the test can read.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(b)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func newLogger() (*slog.Logger, *logBuffer) {
	lb := &logBuffer{}
	return slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug})), lb
}

func exists(tb testing.TB, path string) bool {
	tb.Helper()
	_, err := os.Stat(path)
	if err != nil && !os.IsNotExist(err) {
		tb.Fatal(err)
	}
	return err == nil
}

// statuses renders a run's stages as "stage:status" for comparisons.
func statuses(run RunRecord) string {
	var parts []string
	for _, s := range run.Stages {
		parts = append(parts, s.Stage+":"+s.Status)
	}
	return fmt.Sprintf("%s [%s]", run.Status, strings.Join(parts, " "))
}
