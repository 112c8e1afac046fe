package index

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// TestBuildBeforePublish: the hook sees the complete build in place while
// CURRENT still names the old one; its error fails the build, which
// leaves nothing behind, and without an error the build is published.
func TestBuildBeforePublish(t *testing.T) {
	data := t.TempDir()
	simpleLake(t, data, "2026-11-21", "us", 10, 100)
	m1 := buildIndex(t, data, "2026-11-21")
	before := indexEntries(t, data)

	upload := errors.New("the store is down")
	calls := 0
	opt := BuildOptions{Data: data, Date: "2026-11-21", Logger: testLogger(t),
		Now: func() time.Time { return fixedNow.Add(time.Hour) },
		BeforePublish: func(_ context.Context, m Manifest) error {
			calls++
			if got, err := ReadManifest(data, m.BuildID); err != nil || got.BuildID != m.BuildID {
				t.Errorf("in BeforePublish: ReadManifest(%s) = %v, %v; want the complete build", m.BuildID, got.BuildID, err)
			}
			if cur := readCurrent(t, data); cur != m1.BuildID {
				t.Errorf("in BeforePublish: CURRENT = %s, want the old build %s", cur, m1.BuildID)
			}
			return upload
		}}
	for range 3 {
		if _, err := Build(context.Background(), opt); !errors.Is(err, upload) {
			t.Fatalf("Build with a failing BeforePublish = %v, want its error", err)
		}
	}
	if calls != 3 {
		t.Errorf("BeforePublish called %d times, want 3", calls)
	}
	if cur := readCurrent(t, data); cur != m1.BuildID {
		t.Errorf("CURRENT = %s after the failures, want %s", cur, m1.BuildID)
	}
	if after := indexEntries(t, data); !slices.Equal(after, before) {
		t.Errorf("index folder holds %v after the failures, want %v as before", after, before)
	}

	opt.BeforePublish = func(context.Context, Manifest) error { return nil }
	m2, err := Build(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	if cur := readCurrent(t, data); cur != m2.BuildID {
		t.Errorf("CURRENT = %s, want the new build %s", cur, m2.BuildID)
	}
}
