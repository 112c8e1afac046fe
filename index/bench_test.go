package index

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/lake"
)

// genKeyword is the i-th synthetic keyword; the zero padding keeps the
// order of i and of the text the same, as the lake requires.
func genKeyword(i int) string {
	topics := [...]string{"running shoes", "coffee grinder", "garden hose", "laptop stand", "yoga mat", "rain jacket"}
	return fmt.Sprintf("k%07d %s", i, topics[i%len(topics)])
}

// genLake writes n synthetic keywords for one country, each with 12 trend
// months, 10 related keywords and an intent, streaming the rows so that
// millions never sit in memory.
func genLake(tb testing.TB, data, date, cc string, n int) {
	tb.Helper()
	kws, err := lake.Create[kw.KeywordRecord](data, kw.DatasetKeywords, cc, date)
	if err != nil {
		tb.Fatal(err)
	}
	rel, err := lake.Create[kw.RelatedRow](data, kw.DatasetRelated, cc, date)
	if err != nil {
		tb.Fatal(err)
	}
	ints, err := lake.Create[kw.IntentRow](data, kw.DatasetIntents, cc, date)
	if err != nil {
		tb.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	const chunk = 8192
	kb := make([]kw.KeywordRecord, 0, chunk)
	rb := make([]kw.RelatedRow, 0, chunk*10)
	ib := make([]kw.IntentRow, 0, chunk)
	flush := func() {
		if err := kws.Write(kb...); err != nil {
			tb.Fatal(err)
		}
		if err := rel.Write(rb...); err != nil {
			tb.Fatal(err)
		}
		if err := ints.Write(ib...); err != nil {
			tb.Fatal(err)
		}
		kb, rb, ib = kb[:0], rb[:0], ib[:0]
	}
	for i := 0; i < n; i++ {
		k := genKeyword(i)
		vol := int64(r.IntN(100000))
		monthly := make([]kw.MonthlySearches, 12)
		for m := range monthly {
			monthly[m] = kw.MonthlySearches{Month: fmt.Sprintf("2025-%02d", m+1), Searches: i64(vol + int64(r.IntN(1000)))}
		}
		kb = append(kb, kw.KeywordRecord{Keyword: k, Volume: i64(vol), CPCMicros: i64(int64(r.IntN(5_000_000))), Competition: f64(float64(r.IntN(101)) / 100),
			CompetitionLevel: "MEDIUM", Monthly: monthly, Source: "planner-csv"})
		for j := 1; j <= 10; j++ {
			rb = append(rb, kw.RelatedRow{Keyword: k, Rank: int32(j), Related: genKeyword(r.IntN(n)), Overlap: int32(21 - 2*j),
				Volume: i64(int64(r.IntN(100000))), CPCMicros: i64(int64(r.IntN(5_000_000))), SameIntent: j <= 2})
		}
		ib = append(ib, kw.IntentRow{Keyword: k, Intent: genKeyword(i - i%5)})
		if len(kb) == chunk {
			flush()
		}
	}
	flush()
	for _, c := range []interface{ Commit() error }{kws, rel, ints} {
		if err := c.Commit(); err != nil {
			tb.Fatal(err)
		}
	}
}

const benchKeywords = 200_000

// benchLake is one 200k-keyword lake and build shared by the benchmarks
// of a run; making it takes a while.
var benchLake struct {
	once sync.Once
	dir  string
	m    Manifest
	keys []string
	err  error
}

func sharedBenchIndex(b *testing.B) (string, Manifest) {
	b.Helper()
	benchLake.once.Do(func() {
		dir, err := os.MkdirTemp("", "kwdata-index-bench-")
		if err != nil {
			benchLake.err = err
			return
		}
		benchLake.dir = dir
		genLake(b, dir, "2026-11-21", "us", benchKeywords)
		benchLake.m, benchLake.err = Build(context.Background(), BuildOptions{Data: dir, Date: "2026-11-21"})
		for i := 0; i < benchKeywords; i++ {
			benchLake.keys = append(benchLake.keys, genKeyword(i))
		}
	})
	if benchLake.err != nil {
		b.Fatal(benchLake.err)
	}
	return benchLake.dir, benchLake.m
}

func TestMain(m *testing.M) {
	code := m.Run()
	if benchLake.dir != "" {
		os.RemoveAll(benchLake.dir)
	}
	os.Exit(code)
}

func BenchmarkLookup(b *testing.B) {
	data, m := sharedBenchIndex(b)
	keys := benchLake.keys
	b.ReportMetric(float64(m.Bytes)/float64(m.Keys), "index-bytes/keyword")
	for _, cache := range []int64{256 << 20, 64 << 20, 8 << 20} {
		b.Run(fmt.Sprintf("cache=%dMiB", cache>>20), func(b *testing.B) {
			s, err := OpenStore(context.Background(), data, StoreOptions{CacheBytes: cache})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				r := rand.New(rand.NewPCG(rand.Uint64(), 0))
				ctx := context.Background()
				for pb.Next() {
					if _, err := s.Lookup(ctx, "US", keys[r.IntN(len(keys))]); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
	b.Run("missing", func(b *testing.B) {
		s, err := OpenStore(context.Background(), data, StoreOptions{})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		missing := make([]string, 1024)
		for i := range missing {
			missing[i] = fmt.Sprintf("no such keyword %d", i)
		}
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				if _, err := s.Lookup(context.Background(), "US", missing[i%len(missing)]); err != kw.ErrNotFound {
					b.Error(err)
					return
				}
				i++
			}
		})
	})
}

var buildData = flag.String("build-data", "", "data folder whose lake of -build-date BenchmarkBuild compiles, instead of the synthetic one (its published build is left as it was)")
var buildDate = flag.String("build-date", "2026-11-21", "lake date BenchmarkBuild compiles with -build-data")

// BenchmarkBuild compiles a lake: the synthetic 200k-keyword one, or the
// one -build-data names (a 1M-keyword sample, say, to profile with
// -cpuprofile).
func BenchmarkBuild(b *testing.B) {
	data, date, published := *buildData, *buildDate, ""
	if data == "" {
		data, _ = sharedBenchIndex(b)
		date, published = "2026-11-21", benchLake.m.BuildID
	} else {
		id, err := Published(data)
		if err != nil {
			b.Fatal(err)
		}
		published = id
	}
	for b.Loop() {
		m, err := Build(context.Background(), BuildOptions{Data: data, Date: date, AllowShrink: true})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		b.ReportMetric(float64(m.Keys), "keywords")
		// Keep the folder from filling with builds.
		os.RemoveAll(filepath.Join(data, "index", m.BuildID))
		if published != "" {
			publish(b, data, published)
		} else {
			os.Remove(filepath.Join(data, "index", pointerName))
		}
		b.StartTimer()
	}
}

var verifyData = flag.String("verify-data", "", "data folder whose published build BenchmarkVerify checks, instead of the synthetic one")

// BenchmarkVerify measures what a store does before it serves a build:
// "tables" reads every block of every table and checks its checksum
// (MB/s is table bytes), "open" the whole of it (manifest, Pebble's
// open, the tables, the probes). Repeated runs read from the page cache;
// a build read from disk for the first time costs at least its size over
// the disk's read rate. -verify-data points it at a real data folder
// (a 1M-keyword sample, say).
func BenchmarkVerify(b *testing.B) {
	data := *verifyData
	if data == "" {
		data, _ = sharedBenchIndex(b)
	}
	id, err := Published(data)
	if err != nil || id == "" {
		b.Fatalf("no build published in %s: %v", data, err)
	}
	b.Logf("build %s of %s", id, data)
	ssts, err := filepath.Glob(filepath.Join(kw.IndexDir(data), id, dbDirName, "*.sst"))
	if err != nil {
		b.Fatal(err)
	}
	var tables []tableFile
	var size int64
	for _, name := range ssts {
		st, err := os.Stat(name)
		if err != nil {
			b.Fatal(err)
		}
		tables = append(tables, tableFile{path: name, size: uint64(st.Size())})
		size += st.Size()
	}
	// A store over an empty folder, pointed at the build's: openBuild
	// without a served build holding the database's lock (and a poller
	// that never looks).
	s, err := OpenStore(context.Background(), b.TempDir(), StoreOptions{PollInterval: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	s.dir = kw.IndexDir(data)
	b.Run("tables", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			if _, err := checkTables(context.Background(), vfs.Default, tables, s.dbo.MakeReaderOptions()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("open", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			h, err := s.openBuild(id)
			if err != nil {
				b.Fatal(err)
			}
			if err := h.close(); err != nil {
				b.Fatal(err)
			}
			s.open.Done()
		}
	})
}
