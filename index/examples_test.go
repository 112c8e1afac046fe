package index

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestBuildRecordsExamples: a build records, per country, its most searched
// keywords with related keywords first, and the store hands them to the
// server with the rest of the index's description.
func TestBuildRecordsExamples(t *testing.T) {
	data := t.TempDir()
	testLake(t, data)
	m := buildIndex(t, data, "2026-11-21")
	want := map[string][]string{
		// running shoes and best running shoes have related keywords;
		// then by volume: zzz no trend (10) before trail shoes (0).
		"US": {"running shoes", "best running shoes", "zzz no trend"},
		"GB": {"football boots"},
	}
	for cc, w := range want {
		if !slices.Equal(m.Examples[cc], w) {
			t.Errorf("manifest examples of %s = %q, want %q", cc, m.Examples[cc], w)
		}
	}
	if _, ok := m.Examples["DE"]; ok {
		t.Errorf("a country without keywords has examples %q", m.Examples["DE"])
	}
	s := openStore(t, data)
	info, ok := s.Info()
	if !ok {
		t.Fatal("no index loaded")
	}
	for cc, w := range want {
		if !slices.Equal(info.Examples[cc], w) {
			t.Errorf("served examples of %s = %q, want %q", cc, info.Examples[cc], w)
		}
		for _, k := range w {
			if _, err := s.Lookup(context.Background(), cc, k); err != nil {
				t.Errorf("example %q of %s: %v", k, cc, err)
			}
		}
	}
}

func TestTopKeywords(t *testing.T) {
	for _, tc := range []struct {
		name   string
		offers []example
		want   []string
	}{
		{"empty", nil, []string{}},
		{"related first", []example{{"a", 900, false}, {"b", 10, true}, {"c", 5, true}, {"d", 800, false}}, []string{"b", "c", "a"}},
		{"volume then text", []example{{"b", 5, true}, {"a", 5, true}, {"c", 7, true}, {"d", 1, true}}, []string{"c", "a", "b"}},
		{"late better one", []example{{"a", 1, false}, {"b", 2, false}, {"c", 3, false}, {"d", 4, false}, {"e", 1, true}}, []string{"e", "d", "c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var top topKeywords
			for _, o := range tc.offers {
				top.offer(o.keyword, o.volume, o.related)
			}
			if got := top.keywords(); !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestPebbleInfoLinesAtDebug: Pebble's own informational lines ("Found 0
// WALs", WAL replays) are debug lines; at the default level a build and a
// store log only kwdata's own lines.
func TestPebbleInfoLinesAtDebug(t *testing.T) {
	data := t.TempDir()
	simpleLake(t, data, "2026-11-21", "us", 20, 100)
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if _, err := Build(context.Background(), BuildOptions{Data: data, Date: "2026-11-21", Logger: log, Now: func() time.Time { return fixedNow }}); err != nil {
		t.Fatal(err)
	}
	s, err := OpenStore(context.Background(), data, StoreOptions{Logger: log, PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if strings.Contains(buf.String(), "component=pebble") || strings.Contains(buf.String(), "WAL") {
		t.Errorf("Pebble lines at info:\n%s", buf.String())
	}
	if !strings.Contains(buf.String(), "published index") {
		t.Errorf("kwdata's own lines are missing:\n%s", buf.String())
	}

	buf.Reset()
	pebbleLogger{log: log.With("component", "pebble")}.Infof("[JOB %d] WAL %s replayed", 1, "000002")
	if buf.Len() != 0 {
		t.Errorf("Infof wrote at info: %s", buf.String())
	}
}
