package index

import (
	"context"
	"flag"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/kwdata/kwdata/kw"
)

var faultSweep = flag.Bool("faultsweep", false, "inject a fault at every file system operation of a build, not a sample")

// TestBuildFaultsNeverPublish fails one file system operation of a build
// at a time, at every position (or a sample of them): a build that fails
// must leave CURRENT naming the old build, which still serves, and must
// leave nothing behind; a build that succeeds despite the fault (Pebble
// shrugs off some, like removing an ingested table's original) must be
// complete and servable.
func TestBuildFaultsNeverPublish(t *testing.T) {
	data := t.TempDir()
	simpleLake(t, data, "2026-11-20", "us", 20, 1)
	base := buildIndex(t, data, "2026-11-20").BuildID
	writeLake(t, data, "2026-11-21", map[string]lakeCountry{"us": {keywords: simpleKeywords(20, 2), related: []kw.RelatedRow{}}})
	s := openStore(t, data)

	var ops atomic.Int32
	counting := errorfs.Wrap(vfs.Default, errorfs.InjectorFunc(func(errorfs.Op) error { ops.Add(1); return nil }))
	if _, err := Build(context.Background(), BuildOptions{Data: data, Date: "2026-11-21", FS: counting, Logger: testLogger(t), Now: time.Now}); err != nil {
		t.Fatalf("build without faults: %v", err)
	}
	publish(t, data, base)
	total := int(ops.Load())
	stride := 1
	if !*faultSweep {
		stride = max(1, total/24)
	}
	t.Logf("a build makes %d file system operations; injecting every %d", total, stride)

	failed := 0
	for i := 0; i < total+5; i += stride {
		cur := readCurrent(t, data)
		before := indexEntries(t, data)
		var n atomic.Int32
		inj := errorfs.InjectorFunc(func(op errorfs.Op) error {
			if int(n.Add(1)-1) == i {
				return errorfs.ErrInjected
			}
			return nil
		})
		m, err := Build(context.Background(), BuildOptions{Data: data, Date: "2026-11-21", FS: errorfs.Wrap(vfs.Default, inj), Logger: testLogger(t)})
		if err != nil {
			failed++
			if got := readCurrent(t, data); got != cur {
				t.Fatalf("fault at op %d: build failed (%v) but CURRENT changed from %s to %s", i, err, cur, got)
			}
			if got := indexEntries(t, data); !slices.Equal(got, before) {
				t.Errorf("fault at op %d: failed build left the index folder %v, was %v", i, got, before)
			}
			if err := s.Reload(); err != nil {
				t.Fatalf("fault at op %d: Reload after a failed build: %v", i, err)
			}
			if info, _ := s.Info(); info.Version != cur {
				t.Fatalf("fault at op %d: serving %s, want %s", i, info.Version, cur)
			}
		} else {
			if got := readCurrent(t, data); got != m.BuildID {
				t.Fatalf("fault at op %d: build succeeded but CURRENT names %s, not %s", i, got, m.BuildID)
			}
			if err := s.Reload(); err != nil {
				t.Fatalf("fault at op %d: build succeeded but is refused: %v", i, err)
			}
		}
		if _, err := s.Lookup(context.Background(), "US", "kw 000003"); err != nil {
			t.Fatalf("fault at op %d: Lookup: %v", i, err)
		}
	}
	if failed == 0 {
		t.Fatal("no injected fault failed a build; the injection is not reaching the build")
	}
}
