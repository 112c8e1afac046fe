package pipelines

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kwdata/kwdata/kw"
)

func TestApplyRetention(t *testing.T) {
	t0 := time.Date(2026, 10, 1, 4, 0, 0, 0, time.UTC)
	type build struct {
		id, date string
		builtAt  time.Time
	}
	tests := []struct {
		name       string
		r          Retention
		builds     []build
		current    string
		dates      []string // partition dates of every dataset
		today      string
		wantBuilds []string // kept, oldest first
		wantDates  []string // kept partition dates
	}{
		{
			name: "defaults keep 3 builds and 35 days",
			builds: []build{
				{"b1", "2026-10-01", t0}, {"b2", "2026-10-02", t0.Add(24 * time.Hour)},
				{"b3", "2026-10-03", t0.Add(48 * time.Hour)}, {"b4", "2026-10-04", t0.Add(72 * time.Hour)},
				{"b5", "2026-10-05", t0.Add(96 * time.Hour)},
			},
			current:    "b5",
			dates:      []string{"2026-09-01", "2026-10-01", "2026-10-05", "2026-11-08", "2026-11-09"},
			today:      "2026-11-09",
			wantBuilds: []string{"b3", "b4", "b5"},
			// cutoff 2026-10-05: a partition exactly KeepDays old stays.
			wantDates: []string{"2026-10-05", "2026-11-08", "2026-11-09"},
		},
		{
			name: "published build and its partitions survive",
			r:    Retention{KeepBuilds: 2, KeepDays: 2},
			builds: []build{
				{"b1", "2026-10-01", t0}, {"b2", "2026-10-02", t0.Add(24 * time.Hour)},
				{"b3", "2026-10-03", t0.Add(48 * time.Hour)}, {"b4", "2026-10-03", t0.Add(72 * time.Hour)},
			},
			current:    "b1", // rolled back by hand
			dates:      []string{"2026-09-30", "2026-10-01", "2026-10-02", "2026-10-03"},
			today:      "2026-10-04",
			wantBuilds: []string{"b1", "b3", "b4"},
			wantDates:  []string{"2026-10-01", "2026-10-02", "2026-10-03"},
		},
		{
			name: "order is built_at, then id, not the name alone",
			r:    Retention{KeepBuilds: 2},
			builds: []build{
				{"zzz-old", "2026-10-01", t0}, {"aaa-new", "2026-10-02", t0.Add(time.Hour)},
				{"bbb-same", "2026-10-02", t0.Add(2 * time.Hour)}, {"ccc-same", "2026-10-02", t0.Add(2 * time.Hour)},
			},
			current:    "ccc-same",
			today:      "2026-10-02",
			wantBuilds: []string{"bbb-same", "ccc-same"},
		},
		{
			name: "nothing published yet; one build means two",
			r:    Retention{KeepBuilds: 1, KeepDays: 1},
			builds: []build{{"b1", "2026-10-01", t0}, {"b2", "2026-10-02", t0.Add(time.Hour)},
				{"b3", "2026-10-02", t0.Add(2 * time.Hour)}},
			dates:      []string{"2026-10-01", "2026-10-02", "2026-10-03"},
			today:      "2026-10-03",
			wantBuilds: []string{"b2", "b3"},
			wantDates:  []string{"2026-10-02", "2026-10-03"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := t.TempDir()
			for _, b := range tt.builds {
				writeBuild(t, data, b.id, b.date, b.builtAt)
			}
			if tt.current != "" {
				publish(t, data, tt.current)
			}
			for _, d := range tt.dates {
				for _, ds := range []string{kw.DatasetKeywords, kw.DatasetRelated} {
					for _, cc := range []string{"us", "de"} {
						writePartition(t, data, ds, cc, d)
					}
				}
			}
			rep, err := ApplyRetention(context.Background(), data, tt.r, tt.today, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := buildIDs(t, data); !slices.Equal(got, tt.wantBuilds) {
				t.Errorf("builds on disk = %v, want %v", got, tt.wantBuilds)
			}
			if !slices.Equal(rep.KeptBuilds, tt.wantBuilds) {
				t.Errorf("report kept %v, want %v", rep.KeptBuilds, tt.wantBuilds)
			}
			if tt.current != "" && current(t, data) != tt.current {
				t.Errorf("CURRENT changed to %q", current(t, data))
			}
			for _, ds := range []string{kw.DatasetKeywords, kw.DatasetRelated} {
				for _, cc := range []string{"us", "de"} {
					var got []string
					for _, d := range tt.dates {
						if exists(t, kw.PartitionDir(data, ds, cc, d)) {
							got = append(got, d)
						}
					}
					if !slices.Equal(got, tt.wantDates) {
						t.Errorf("%s/%s dates = %v, want %v", ds, cc, got, tt.wantDates)
					}
				}
			}
			if want := 4 * (len(tt.dates) - len(tt.wantDates)); len(rep.DeletedPartitions) != want {
				t.Errorf("report deleted %d partitions, want %d: %v", len(rep.DeletedPartitions), want, rep.DeletedPartitions)
			}
			for _, p := range rep.DeletedPartitions {
				if !strings.HasPrefix(p, "lake/") || strings.Contains(p, `\`) {
					t.Errorf("deleted partition %q is not relative to the data folder", p)
				}
			}
		})
	}
}

func TestRetentionRemovesOldLeftoversAndMarkersOnly(t *testing.T) {
	data := t.TempDir()
	old := time.Now().Add(-48 * time.Hour)
	mk := func(path string, mtime time.Time) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		for p := path; p != data; p = filepath.Dir(p) {
			if err := os.Chtimes(p, mtime, mtime); err != nil {
				t.Fatal(err)
			}
		}
	}
	staleStage := filepath.Join(data, ".staging", "keywords-us-2026-10-01-123", "part-00000.parquet")
	liveStage := filepath.Join(data, ".staging", "serps-us-2026-10-02-456", "part-00000.parquet")
	staleBuild := filepath.Join(kw.IndexDir(data), ".building-x", "db", "000001.sst")
	foreign := filepath.Join(kw.IndexDir(data), "notes", "readme.txt")
	mk(staleStage, old)
	mk(liveStage, old)
	mk(staleBuild, old)
	mk(foreign, old)
	// One file of the live staging folder is still being written.
	if err := os.WriteFile(filepath.Join(filepath.Dir(liveStage), "part-00001.parquet"), []byte("y"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"2026-09-01", "2026-11-20", "not-a-date"} {
		if err := writeMarker(data, d, StageIngest, marker{Finished: time.Now()}); err != nil && d != "not-a-date" {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(StateDir(data), "not-a-date"), 0o755); err != nil {
		t.Fatal(err)
	}

	rep, err := ApplyRetention(context.Background(), data, Retention{}, "2026-11-21", nil)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]bool{
		filepath.Dir(staleStage):                        false,
		filepath.Dir(liveStage):                         true,
		filepath.Join(kw.IndexDir(data), ".building-x"): false,
		foreign: true,
		filepath.Join(StateDir(data), "2026-09-01"): false,
		filepath.Join(StateDir(data), "2026-11-20"): true,
		filepath.Join(StateDir(data), "not-a-date"): true,
	} {
		if got := exists(t, path); got != want {
			t.Errorf("%s exists = %v, want %v", path, got, want)
		}
	}
	if len(rep.DeletedLeftovers) != 2 || len(rep.DeletedState) != 1 {
		t.Errorf("report = %+v, want 2 leftovers and 1 state folder", rep)
	}
}

func TestRetentionRefusesWithoutAReadablePointer(t *testing.T) {
	data := t.TempDir()
	writeBuild(t, data, "b1", "2026-10-01", time.Now())
	writePartition(t, data, kw.DatasetKeywords, "us", "2020-01-01")
	if err := os.WriteFile(filepath.Join(kw.IndexDir(data), "CURRENT"), []byte("../../etc"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ApplyRetention(context.Background(), data, Retention{}, "2026-11-21", nil); err == nil || !strings.Contains(err.Error(), "not a build id") {
		t.Fatalf("err = %v, want a refusal naming the pointer", err)
	}
	if !exists(t, kw.PartitionDir(data, kw.DatasetKeywords, "us", "2020-01-01")) {
		t.Error("a partition was deleted although the published build is unknown")
	}

	// A published build without a manifest: builds may go, partitions stay.
	publish(t, data, "b0")
	if _, err := ApplyRetention(context.Background(), data, Retention{}, "2026-11-21", nil); err != nil {
		t.Fatal(err)
	}
	if !exists(t, kw.PartitionDir(data, kw.DatasetKeywords, "us", "2020-01-01")) {
		t.Error("a partition was deleted although the published build's date is unknown")
	}
}

func TestRetentionRejectsABadDate(t *testing.T) {
	if _, err := ApplyRetention(context.Background(), t.TempDir(), Retention{}, "yesterday", nil); err == nil {
		t.Error("ApplyRetention accepted date \"yesterday\"")
	}
}

// TestRetentionKeepsThePublishedSERPWindow keeps every SERP partition the
// published build's similarity stage may have read (its date and MaxAgeDays
// before), even past KeepDays, while other datasets of those dates go.
func TestRetentionKeepsThePublishedSERPWindow(t *testing.T) {
	data := t.TempDir()
	writeBuild(t, data, "b1", "2026-10-10", time.Date(2026, 10, 10, 4, 0, 0, 0, time.UTC))
	publish(t, data, "b1")
	dates := []string{"2026-09-29", "2026-09-30", "2026-10-05", "2026-10-10", "2026-10-20"}
	for _, d := range dates {
		writePartition(t, data, kw.DatasetSERPs, "us", d)
		writePartition(t, data, kw.DatasetKeywords, "us", d)
	}
	r := Retention{KeepDays: 5, MaxAgeDays: 10}
	rep, err := ApplyRetention(context.Background(), data, r, "2026-10-20", nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.SERPsFrom != "2026-09-30" {
		t.Errorf("SERPsFrom = %s, want 2026-09-30", rep.SERPsFrom)
	}
	for _, tc := range []struct {
		dataset string
		want    []string
	}{
		{kw.DatasetSERPs, []string{"2026-09-30", "2026-10-05", "2026-10-10", "2026-10-20"}},
		{kw.DatasetKeywords, []string{"2026-10-10", "2026-10-20"}},
	} {
		var got []string
		for _, d := range dates {
			if exists(t, kw.PartitionDir(data, tc.dataset, "us", d)) {
				got = append(got, d)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s dates kept = %v, want %v", tc.dataset, got, tc.want)
		}
	}
}

// TestRetentionRemovesOldAPICheckpoints deletes the API checkpoints
// (<data>/state/<source>/<cc>/<date>) dated before the cutoff, but not the
// published date's nor anything not named by a date.
func TestRetentionRemovesOldAPICheckpoints(t *testing.T) {
	data := t.TempDir()
	writeBuild(t, data, "b1", "2026-09-01", time.Date(2026, 9, 1, 4, 0, 0, 0, time.UTC))
	publish(t, data, "b1")
	var paths []string
	for _, source := range []string{"googleads", "dataforseo"} {
		for _, d := range []string{"2026-08-01", "2026-09-01", "2026-11-20", "notes"} {
			p := filepath.Join(StateDir(data), source, "us", d)
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(p, "checkpoint.json"), []byte("{}"), 0o644); err != nil {
				t.Fatal(err)
			}
			paths = append(paths, p)
		}
	}
	rep, err := ApplyRetention(context.Background(), data, Retention{}, "2026-11-21", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		want := !strings.HasSuffix(p, "2026-08-01")
		if got := exists(t, p); got != want {
			t.Errorf("%s exists = %v, want %v", p, got, want)
		}
	}
	if len(rep.DeletedState) != 2 {
		t.Errorf("report deleted state %v, want the two old checkpoints", rep.DeletedState)
	}
}

// TestRetentionLeavesForeignBuilds: a folder under <data>/index/ whose
// manifest the index package does not read (a format from a newer
// version, a manifest naming another build) is not a build retention may
// count or delete, however old.
func TestRetentionLeavesForeignBuilds(t *testing.T) {
	data := t.TempDir()
	t0 := time.Date(2026, 10, 1, 4, 0, 0, 0, time.UTC)
	for i, id := range []string{"b1", "b2", "b3", "b4"} {
		writeBuild(t, data, id, "2026-10-0"+string(rune('1'+i)), t0.Add(time.Duration(i)*24*time.Hour))
	}
	publish(t, data, "b4")
	foreign := map[string]string{
		"newer":   `{"format_version": 99, "data_date": "2026-09-01", "built_at": "2026-09-01T00:00:00Z", "build_id": "newer"}`,
		"renamed": `{"format_version": 1, "data_date": "2026-09-01", "built_at": "2026-09-01T00:00:00Z", "build_id": "other"}`,
	}
	for id, m := range foreign {
		dir := filepath.Join(kw.IndexDir(data), id)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(m), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := ApplyRetention(context.Background(), data, Retention{KeepBuilds: 2}, "2026-10-05", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.KeptBuilds, []string{"b3", "b4"}) || !slices.Equal(rep.DeletedBuilds, []string{"index/b1", "index/b2"}) {
		t.Errorf("kept %v, deleted %v; want b3, b4 kept and b1, b2 deleted", rep.KeptBuilds, rep.DeletedBuilds)
	}
	for id := range foreign {
		if !exists(t, filepath.Join(kw.IndexDir(data), id)) {
			t.Errorf("retention deleted %s, which is not a build it reads", id)
		}
	}
}
