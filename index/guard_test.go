package index

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/lake"
)

// TestBuildGuards: a build that would publish a country without related
// keywords, or leave a country of the published build with no keywords or
// fewer than half of them, is refused before it writes anything, with a
// one-line message naming the country and both counts; CURRENT and the
// index folder stay as they were. The override publishes it.
func TestBuildGuards(t *testing.T) {
	const published, next = "2026-11-20", "2026-11-21"
	tests := []struct {
		name     string
		lake     func(tb testing.TB, data string) // the lake of next
		allow    BuildOptions                     // the override that publishes it
		wantErrs []error
		want     []string // in the refusal
	}{
		{"a country without related", func(tb testing.TB, data string) {
			simpleLake(tb, data, next, "de", 100, 2)
			writeLake(tb, data, next, map[string]lakeCountry{"us": {keywords: simpleKeywords(100, 2), intents: []kw.IntentRow{}}})
		}, BuildOptions{AllowMissingRelated: true}, []error{ErrMissingRelated},
			[]string{"US has 100 keywords but no related partition on " + next, "--allow-missing-related"}},
		{"a related partition without rows beside SERPs", func(tb testing.TB, data string) {
			// The SERPs of the date matched none of its keywords, so
			// similarity wrote an empty related partition.
			simpleLake(tb, data, next, "de", 100, 2)
			writeLake(tb, data, next, map[string]lakeCountry{"us": {keywords: simpleKeywords(100, 2), related: []kw.RelatedRow{}, intents: []kw.IntentRow{}}})
			writeSERPs(tb, data, next, "us", 30)
		}, BuildOptions{AllowMissingRelated: true}, []error{ErrMissingRelated},
			[]string{"US has 100 keywords and 30 SERP rows on " + next + " but no related keywords (its related partition has no rows)",
				"--allow-missing-related"}},
		{"a country gone", func(tb testing.TB, data string) {
			simpleLake(tb, data, next, "us", 100, 2)
		}, BuildOptions{AllowShrink: true}, []error{ErrShrink},
			[]string{"DE would have no keywords, the published build has 100", "--allow-shrink"}},
		{"a country with no keywords left", func(tb testing.TB, data string) {
			simpleLake(tb, data, next, "us", 100, 2)
			writeLake(tb, data, next, map[string]lakeCountry{"de": {keywords: []kw.KeywordRecord{}, related: []kw.RelatedRow{}}})
		}, BuildOptions{AllowShrink: true}, []error{ErrShrink},
			[]string{"DE would have no keywords, the published build has 100"}},
		{"a country below half", func(tb testing.TB, data string) {
			simpleLake(tb, data, next, "us", 100, 2)
			simpleLake(tb, data, next, "de", 49, 2)
		}, BuildOptions{AllowShrink: true}, []error{ErrShrink},
			[]string{"DE would have 49 keywords, fewer than half of the 100 in the published build", "--allow-shrink"}},
		{"both", func(tb testing.TB, data string) {
			writeLake(tb, data, next, map[string]lakeCountry{"us": {keywords: simpleKeywords(100, 2)}})
		}, BuildOptions{AllowMissingRelated: true, AllowShrink: true}, []error{ErrMissingRelated, ErrShrink},
			[]string{"US has 100 keywords but no related partition", "DE would have no keywords, the published build has 100"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := t.TempDir()
			simpleLake(t, data, published, "us", 100, 1)
			simpleLake(t, data, published, "de", 100, 1)
			good := buildIndex(t, data, published).BuildID
			tt.lake(t, data)
			before := indexEntries(t, data)

			_, err := Build(context.Background(), BuildOptions{Data: data, Date: next, Logger: testLogger(t)})
			if err == nil {
				t.Fatal("the build was published")
			}
			for _, kind := range tt.wantErrs {
				if !errors.Is(err, kind) {
					t.Errorf("refusal %q does not wrap %v", err, kind)
				}
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("refusal %q lacks %q", err, want)
				}
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("refusal %q is more than one line", err)
			}
			if got := readCurrent(t, data); got != good {
				t.Errorf("CURRENT names %s after a refusal, want %s", got, good)
			}
			if got := indexEntries(t, data); !slices.Equal(got, before) {
				t.Errorf("the refused build left the index folder %v, was %v", got, before)
			}

			allow := tt.allow
			allow.Data, allow.Date, allow.Logger = data, next, testLogger(t)
			m, err := Build(context.Background(), allow)
			if err != nil {
				t.Fatalf("with the override: %v", err)
			}
			if got := readCurrent(t, data); got != m.BuildID {
				t.Errorf("CURRENT names %s after the override, want %s", got, m.BuildID)
			}
		})
	}
}

// TestBuildGuardsPass: what the guards let through without an override.
func TestBuildGuardsPass(t *testing.T) {
	tests := []struct {
		name string
		lake func(tb testing.TB, data string)
	}{
		{"exactly half", func(tb testing.TB, data string) {
			simpleLake(tb, data, "2026-11-21", "us", 100, 2)
			simpleLake(tb, data, "2026-11-21", "de", 50, 2)
		}},
		{"growth and a new country", func(tb testing.TB, data string) {
			simpleLake(tb, data, "2026-11-21", "us", 300, 2)
			simpleLake(tb, data, "2026-11-21", "de", 100, 2)
			simpleLake(tb, data, "2026-11-21", "fr", 10, 2)
		}},
		{"an empty related partition without SERPs on the date", func(tb testing.TB, data string) {
			simpleLake(tb, data, "2026-11-21", "us", 100, 2)
			writeLake(tb, data, "2026-11-21", map[string]lakeCountry{"de": {keywords: simpleKeywords(100, 2), related: []kw.RelatedRow{}}})
			writeSERPs(tb, data, "2026-11-21", "de", 0)
		}},
		{"a country without keywords needs no related partition", func(tb testing.TB, data string) {
			simpleLake(tb, data, "2026-11-21", "us", 100, 2)
			simpleLake(tb, data, "2026-11-21", "de", 100, 2)
			writeLake(tb, data, "2026-11-21", map[string]lakeCountry{"fr": {keywords: []kw.KeywordRecord{}}})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := t.TempDir()
			simpleLake(t, data, "2026-11-20", "us", 100, 1)
			simpleLake(t, data, "2026-11-20", "de", 100, 1)
			buildIndex(t, data, "2026-11-20")
			tt.lake(t, data)
			m := buildIndex(t, data, "2026-11-21")
			if got := readCurrent(t, data); got != m.BuildID {
				t.Errorf("CURRENT names %s, want %s", got, m.BuildID)
			}
		})
	}

	// A published build whose manifest cannot be read is no measure: the
	// new build replaces it.
	t.Run("unreadable published build", func(t *testing.T) {
		data := t.TempDir()
		simpleLake(t, data, "2026-11-20", "us", 100, 1)
		old := buildIndex(t, data, "2026-11-20").BuildID
		if err := os.Remove(filepath.Join(data, "index", old, manifestName)); err != nil {
			t.Fatal(err)
		}
		simpleLake(t, data, "2026-11-21", "de", 10, 2)
		m := buildIndex(t, data, "2026-11-21")
		if got := readCurrent(t, data); got != m.BuildID {
			t.Errorf("CURRENT names %s, want %s", got, m.BuildID)
		}
	})
}

// writeSERPs writes a serps partition of n rows for cc on date.
func writeSERPs(tb testing.TB, data, date, cc string, n int) {
	tb.Helper()
	rows := []kw.SERPRow{}
	for i := range n {
		rows = append(rows, kw.SERPRow{Keyword: fmt.Sprintf("elsewhere %d", i), Rank: 1, URL: "https://example.com/", URLKey: "example.com/"})
	}
	if err := lake.WritePartition(data, kw.DatasetSERPs, cc, date, rows); err != nil {
		tb.Fatal(err)
	}
}
