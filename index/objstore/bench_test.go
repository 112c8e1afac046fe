package objstore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/kwdata/kwdata/index"
	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/lake"
)

// BenchmarkTransfer measures moving one build through the object store
// (Versity Gateway on loopback, its POSIX backend on the same disk):
// upload is Publish, download is a server's fetch with every SHA-256
// checked; copy, the baseline, is a plain copy of the build folder on the
// same disk, which is all the old rsync did on one host. Each reports
// MB/s of build bytes; with -count N the three alternate.
//
// KWDATA_BENCH_KEYWORDS sets the build's size (default 20000; the figure
// in docs/OPERATIONS.md is of 1000000), and KWDATA_BENCH_DIR keeps the
// lake and build between runs (default: a temporary folder).
func BenchmarkTransfer(b *testing.B) {
	n := 20000
	if v := os.Getenv("KWDATA_BENCH_KEYWORDS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 10 {
			b.Fatalf("KWDATA_BENCH_KEYWORDS=%q; write a number of at least 10", v)
		}
	}
	data := os.Getenv("KWDATA_BENCH_DIR")
	if data == "" {
		data = b.TempDir()
	}
	data = filepath.Join(data, fmt.Sprintf("lake-%d", n))
	id := benchBuild(b, data, n)
	c, _ := startStore(b, "bench")
	ctx := context.Background()
	var size int64
	b.Run("upload", func(b *testing.B) {
		for b.Loop() {
			p, err := c.Publish(ctx, data, id)
			if err != nil {
				b.Fatal(err)
			}
			size = p.Bytes
		}
		b.SetBytes(size)
	})
	b.Run("download", func(b *testing.B) {
		s, err := NewSyncer(c, SyncOptions{Data: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		dir := kw.IndexDir(s.opt.Data)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := s.fetch(ctx, dir, id); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if err := os.RemoveAll(filepath.Join(dir, id)); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		b.SetBytes(size)
	})
	b.Run("copy", func(b *testing.B) {
		to := filepath.Join(b.TempDir(), id)
		for b.Loop() {
			if err := os.CopyFS(to, os.DirFS(filepath.Join(kw.IndexDir(data), id))); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if err := os.RemoveAll(to); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		b.SetBytes(size)
	})
}

// benchBuild returns the build of n US keywords in data, each with 10
// related keywords and a year of trend, writing the lake and building the
// index the first time.
func benchBuild(b *testing.B, data string, n int) string {
	b.Helper()
	if id, err := index.Published(data); err == nil && id != "" {
		return id
	}
	const date = "2026-11-01"
	keywords := make([]kw.KeywordRecord, 0, n)
	for i := range n {
		v, cpc := int64(10+i%100000), int64(50_000+i%3_000_000)
		var monthly []kw.MonthlySearches
		for m := 1; m <= 12; m++ {
			s := v * int64(80+m) / 90
			monthly = append(monthly, kw.MonthlySearches{Month: fmt.Sprintf("2025-%02d", m), Searches: &s})
		}
		keywords = append(keywords, kw.KeywordRecord{Keyword: fmt.Sprintf("keyword %07d", i), Volume: &v, CPCMicros: &cpc, Monthly: monthly})
	}
	if err := lake.WritePartition(data, kw.DatasetKeywords, "us", date, keywords); err != nil {
		b.Fatal(err)
	}
	keywords = nil
	related := make([]kw.RelatedRow, 0, 10*n)
	intents := make([]kw.IntentRow, 0, n)
	for i := range n {
		k := fmt.Sprintf("keyword %07d", i)
		for r := 1; r <= 10; r++ {
			v := int64(10 + (i+r)%100000)
			related = append(related, kw.RelatedRow{Keyword: k, Rank: int32(r), Related: fmt.Sprintf("keyword %07d", (i+r*7919)%n), Overlap: int32(20 - r), Volume: &v})
		}
		intents = append(intents, kw.IntentRow{Keyword: k, Intent: fmt.Sprintf("keyword %07d", i-i%5)})
	}
	if err := lake.WritePartition(data, kw.DatasetRelated, "us", date, related); err != nil {
		b.Fatal(err)
	}
	if err := lake.WritePartition(data, kw.DatasetIntents, "us", date, intents); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	m, err := index.Build(context.Background(), index.BuildOptions{Data: data, Date: date})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("built %d keywords, %d bytes of tables, in %v", m.Keys, m.Bytes, time.Since(start).Round(time.Millisecond))
	return m.BuildID
}
