package lake_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/lake"
)

// benchData is a data folder holding the lake the scan benchmarks read
// (country us, date benchDate), such as one `kwdata ingest` made from
// `kwdata sample`; empty, they write a small synthetic one.
var benchData = flag.String("lake.bench-data", "", "data folder with a us "+benchDate+" lake for the scan benchmarks (default: a small generated one)")

const benchDate = "2026-11-01"

// benchLake returns the data folder the scan benchmarks read.
func benchLake(b *testing.B) string {
	b.Helper()
	if *benchData != "" {
		return *benchData
	}
	data := b.TempDir()
	rnd := rand.New(rand.NewPCG(1, 2))
	const keywords = 50_000
	recs := make([]kw.KeywordRecord, keywords)
	for i := range recs {
		v, c := int64(rnd.IntN(100_000)), int64(rnd.IntN(5_000_000))
		months := make([]kw.MonthlySearches, 12)
		for m := range months {
			s := int64(rnd.IntN(100_000))
			months[m] = kw.MonthlySearches{Month: fmt.Sprintf("2026-%02d", m+1), Searches: &s}
		}
		recs[i] = kw.KeywordRecord{Keyword: fmt.Sprintf("keyword %07d", i), Volume: &v, CPCMicros: &c,
			VolumeRange: "1K-10K", CompetitionLevel: "LOW", Monthly: months, Source: "planner"}
	}
	if err := lake.WritePartition(data, kw.DatasetKeywords, "us", benchDate, recs); err != nil {
		b.Fatal(err)
	}
	sw, err := lake.CreateSERPs(data, "us", benchDate)
	if err != nil {
		b.Fatal(err)
	}
	for i := range keywords {
		for r := range int32(20) {
			u := fmt.Sprintf("https://site%d.example/page/%d", rnd.IntN(20_000), rnd.IntN(50))
			if err := sw.Add(fmt.Appendf(nil, "keyword %07d", i), r+1, []byte(u), []byte(u[8:])); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := sw.Commit(); err != nil {
		b.Fatal(err)
	}
	return data
}

// BenchmarkScan reads a partition the way its two big readers do: the
// similarity stage's SERP read (three flat columns, row groups decoded
// and matched on every core) and the index build's keyword read (every
// column, list leaves included, on one goroutine). Each value is touched
// so that nothing is skipped. docs/perf/lake.md compares it with the
// readers before Scan was the one API.
func BenchmarkScan(b *testing.B) {
	data := benchLake(b)
	ctx := context.Background()
	b.Run("similarity-serps", func(b *testing.B) {
		rows, err := lake.Rows(data, kw.DatasetSERPs, "us", benchDate)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			var n int64
			err := lake.Scan(ctx, data, kw.DatasetSERPs, "us", benchDate, []string{"keyword", "url_key", "rank"},
				lake.ScanOptions{Workers: runtime.GOMAXPROCS(0), Decode: func(cb *lake.Batch) error {
					var s int
					for r := range cb.Rows {
						s += len(cb.Bytes(0, r)) + len(cb.Bytes(1, r)) + int(cb.Int32(2, r))
					}
					cb.Aux = s
					return nil
				}},
				func(cb *lake.Batch) error { n += int64(cb.Rows); return nil })
			if err != nil {
				b.Fatal(err)
			}
			if n != rows {
				b.Fatalf("read %d rows, want %d", n, rows)
			}
		}
		b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	})
	b.Run("index-keywords", func(b *testing.B) {
		rows, err := lake.Rows(data, kw.DatasetKeywords, "us", benchDate)
		if err != nil {
			b.Fatal(err)
		}
		cols := []string{"keyword", "volume?", "volume_range?", "cpc_micros?", "competition?", "competition_level?",
			"bid_low_micros?", "bid_high_micros?", "yoy_change?", "three_month_change?",
			"monthly.list.element.month?", "monthly.list.element.searches?"}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			var n, sum int64
			err := lake.Scan(ctx, data, kw.DatasetKeywords, "us", benchDate, cols, lake.ScanOptions{}, func(cb *lake.Batch) error {
				for r := range cb.Rows {
					sum += int64(len(cb.Bytes(0, r)) + len(cb.Bytes(2, r)) + len(cb.Bytes(5, r)))
					for _, c := range []int{1, 3, 6, 7} {
						v, _ := cb.Int64(c, r)
						sum += v
					}
					for _, c := range []int{4, 8, 9} {
						f, _ := cb.Float64(c, r)
						sum += int64(f)
					}
					lo, hi := cb.Span(10, r)
					for i := lo; i < hi; i++ {
						sum += int64(len(cb.Bytes(10, i)))
						v, _ := cb.Int64(11, i)
						sum += v
					}
				}
				n += int64(cb.Rows)
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			if n != rows {
				b.Fatalf("read %d rows, want %d", n, rows)
			}
		}
		b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	})
}
