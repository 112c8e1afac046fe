package index

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/kw/lake"
)

// lakeCountry is what a test writes to the lake for one country and date.
// A nil slice writes no partition; an empty non-nil one writes an empty one.
type lakeCountry struct {
	keywords []kw.KeywordRecord
	related  []kw.RelatedRow
	intents  []kw.IntentRow
}

func writeLake(tb testing.TB, data, date string, countries map[string]lakeCountry) {
	tb.Helper()
	for cc, c := range countries {
		if c.keywords != nil {
			if err := lake.WritePartition(data, kw.DatasetKeywords, cc, date, c.keywords); err != nil {
				tb.Fatal(err)
			}
		}
		if c.related != nil {
			if err := lake.WritePartition(data, kw.DatasetRelated, cc, date, c.related); err != nil {
				tb.Fatal(err)
			}
		}
		if c.intents != nil {
			if err := lake.WritePartition(data, kw.DatasetIntents, cc, date, c.intents); err != nil {
				tb.Fatal(err)
			}
		}
	}
}

// testLogger writes to the test log, so failures show what the index said.
func testLogger(tb testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tbWriter{tb}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type tbWriter struct{ tb testing.TB }

func (w tbWriter) Write(p []byte) (int, error) {
	w.tb.Helper()
	w.tb.Log(string(p))
	return len(p), nil
}

var fixedNow = time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)

func buildIndex(tb testing.TB, data, date string) Manifest {
	tb.Helper()
	m, err := Build(context.Background(), BuildOptions{Data: data, Date: date, Logger: testLogger(tb), Now: func() time.Time { return fixedNow }})
	if err != nil {
		tb.Fatalf("Build(%s): %v", date, err)
	}
	return m
}

func openStore(tb testing.TB, data string) *Store {
	tb.Helper()
	s, err := OpenStore(context.Background(), data, StoreOptions{Logger: testLogger(tb), PollInterval: time.Hour})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// simpleLake writes n keywords "kw 000000".. with the given volume for
// one country, each with two related keywords and an intent.
func simpleLake(tb testing.TB, data, date, cc string, n int, volume int64) {
	tb.Helper()
	c := lakeCountry{}
	for i := 0; i < n; i++ {
		k := fmt.Sprintf("kw %06d", i)
		c.keywords = append(c.keywords, kw.KeywordRecord{Keyword: k, Volume: i64(volume), CPCMicros: i64(1_500_000), Competition: f64(0.5),
			Monthly: []kw.MonthlySearches{{Month: "2026-10", Searches: i64(volume)}}})
		c.related = append(c.related,
			kw.RelatedRow{Keyword: k, Rank: 1, Related: fmt.Sprintf("kw %06d", (i+1)%n), Overlap: 9, Volume: i64(volume)},
			kw.RelatedRow{Keyword: k, Rank: 2, Related: fmt.Sprintf("kw %06d", (i+2)%n), Overlap: 3, Volume: i64(volume)})
		c.intents = append(c.intents, kw.IntentRow{Keyword: k, Intent: "kw 000000"})
	}
	writeLake(tb, data, date, map[string]lakeCountry{cc: c})
}

func readCurrent(tb testing.TB, data string) string {
	tb.Helper()
	id, err := Published(data)
	if err != nil {
		tb.Fatal(err)
	}
	return id
}

// indexEntries lists the names in <data>/index/.
func indexEntries(tb testing.TB, data string) []string {
	tb.Helper()
	ents, err := os.ReadDir(filepath.Join(data, "index"))
	if err != nil {
		tb.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// simpleKeywords are the keyword records simpleLake writes.
func simpleKeywords(n int, volume int64) []kw.KeywordRecord {
	var out []kw.KeywordRecord
	for i := 0; i < n; i++ {
		out = append(out, kw.KeywordRecord{Keyword: fmt.Sprintf("kw %06d", i), Volume: i64(volume)})
	}
	return out
}

// i64 and f64 are the nullable numbers of records and entries.
func i64(v int64) *int64     { return &v }
func f64(v float64) *float64 { return &v }
