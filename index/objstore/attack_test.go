package objstore

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

	"github.com/kwdata/kwdata/internal/testservers"
	"github.com/kwdata/kwdata/kw"
	"github.com/prometheus/client_golang/prometheus"
)

// TestSyncRefusesPointerNames: a CURRENT object naming CURRENT or
// CURRENT.tmp, with a build uploaded under that name, is refused before
// anything of the data folder is touched: the local pointer stays a file
// naming the served build, no folder takes a pointer's name, and the next
// good build is taken as usual.
func TestSyncRefusesPointerNames(t *testing.T) {
	for _, name := range []string{"CURRENT", "CURRENT.tmp"} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			c, _ := startStore(t, "p")
			pipe, srv := t.TempDir(), t.TempDir()
			m1 := buildDate(t, pipe, "2026-11-01", 20, 100, 0)
			publish(t, c, pipe, m1.BuildID)
			s := newSyncer(t, c, srv, nil)
			if _, err := s.Sync(ctx); err != nil {
				t.Fatal(err)
			}
			st := openStore(t, srv)
			s.opt.Reload = st.Reload

			// A complete build under the pointer's name, its files.json
			// consistent with its files.
			if _, err := c.upload(ctx, filepath.Join(kw.IndexDir(pipe), m1.BuildID), name); err != nil {
				t.Fatal(err)
			}
			if err := c.putPointer(ctx, name); err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if _, err := s.Sync(ctx); err == nil || !strings.Contains(err.Error(), "not a build id") {
					t.Fatalf("Sync of CURRENT naming %s = %v, want a refusal of the id", name, err)
				}
			}
			checkPointerFiles(t, srv, m1.BuildID)
			if d := servedDate(t, st); d != "2026-11-01" {
				t.Fatalf("served date %s after the refusal, want 2026-11-01", d)
			}

			m2 := buildDate(t, pipe, "2026-11-02", 20, 100, 1)
			publish(t, c, pipe, m2.BuildID)
			if got, err := s.Sync(ctx); err != nil || got != m2.BuildID {
				t.Fatalf("Sync of a good build after the refusal = %q, %v; want %s", got, err, m2.BuildID)
			}
			if d := servedDate(t, st); d != "2026-11-02" {
				t.Fatalf("served date %s, want 2026-11-02", d)
			}
			checkPointerFiles(t, srv, m2.BuildID)
		})
	}
}

// checkPointerFiles fails unless <data>/index/CURRENT is a file naming id
// and nothing is named CURRENT.tmp.
func checkPointerFiles(tb testing.TB, data, id string) {
	tb.Helper()
	dir := kw.IndexDir(data)
	if fi, err := os.Stat(filepath.Join(dir, "CURRENT")); err != nil || !fi.Mode().IsRegular() {
		tb.Fatalf("local CURRENT: %v, %v; want a file", fi, err)
	}
	if p := published(tb, data); p != id {
		tb.Fatalf("local CURRENT = %q, want %s", p, id)
	}
	if _, err := os.Lstat(filepath.Join(dir, "CURRENT.tmp")); !os.IsNotExist(err) {
		tb.Fatalf("CURRENT.tmp exists (%v); want nothing by that name", err)
	}
}

// TestSyncRefusesBuildLargerThanDisk: a files.json that declares more
// bytes than the data folder's disk has free is refused before any file
// is downloaded, with a log line and kwdata_index_sync_failing, and the
// served build stays.
func TestSyncRefusesBuildLargerThanDisk(t *testing.T) {
	const id = "20261105T030000Z-0badf0"
	sum := strings.Repeat("0f", 32)
	for _, tc := range []struct {
		name  string
		sizes []int64
	}{
		{"one huge file", []int64{3, 1 << 62}},
		{"sizes that overflow", []int64{1 << 62, 1 << 62, 1 << 62}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			c, _ := startStore(t, "big")
			pipe, srv := t.TempDir(), t.TempDir()
			m1 := buildDate(t, pipe, "2026-11-01", 20, 100, 0)
			publish(t, c, pipe, m1.BuildID)
			if _, err := newSyncer(t, c, srv, nil).Sync(ctx); err != nil {
				t.Fatal(err)
			}

			list := FileList{BuildID: id}
			for i, size := range tc.sizes {
				name := "manifest.json"
				if i > 0 {
					name = fmt.Sprintf("db/%06d.sst", i)
				}
				list.Files = append(list.Files, File{Name: name, Size: size, SHA256: sum})
				b := []byte("abc")
				if err := c.put(ctx, c.loc.key(buildsDir, id, name), bytes.NewReader(b), int64(len(b))); err != nil {
					t.Fatal(err)
				}
			}
			b, err := json.Marshal(list)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.put(ctx, c.loc.key(buildsDir, id, filesObject), bytes.NewReader(b), int64(len(b))); err != nil {
				t.Fatal(err)
			}
			if err := c.putPointer(ctx, id); err != nil {
				t.Fatal(err)
			}

			var logs lockedBuffer
			reg := prometheus.NewRegistry()
			s, err := NewSyncer(c, SyncOptions{Data: srv, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
				PollInterval: time.Hour, Metrics: NewMetrics(reg)})
			if err != nil {
				t.Fatal(err)
			}
			runCtx, cancel := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() { s.Run(runCtx); close(done) }()
			defer func() { cancel(); <-done }()
			testservers.WaitFor(t, 10*time.Second, "a log line about free space", func() bool {
				return strings.Contains(logs.String(), "free")
			})
			cancel()
			<-done
			if got := metricValue(t, reg, "kwdata_index_sync_failing", ""); got != 1 {
				t.Errorf("kwdata_index_sync_failing = %v, want 1", got)
			}
			if got := metricValue(t, reg, "kwdata_index_sync_bytes_total", ""); got != 0 {
				t.Errorf("%v bytes downloaded, want none", got)
			}
			t.Log(strings.TrimSpace(logs.String()))
			if p := published(t, srv); p != m1.BuildID {
				t.Errorf("local CURRENT = %q, want %s", p, m1.BuildID)
			}
			if left := incoming(t, srv); len(left) > 0 {
				t.Errorf("download folders left: %v", left)
			}
			if _, err := os.Stat(filepath.Join(kw.IndexDir(srv), id)); !os.IsNotExist(err) {
				t.Errorf("build folder %s: %v; want none", id, err)
			}
		})
	}
}

// lockedBuffer is a log destination the test reads while a syncer writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
