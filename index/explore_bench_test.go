package index

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/lake"
)

// make bench-explore runs TestExploreBench with -explore.keywords; without
// it the test is skipped.
var exploreBenchKeywords = flag.Int("explore.keywords", 0, "run the explorer benchmark on this many keywords (make bench-explore)")

// exploreBenchBuilds is how many times each build is made.
var exploreBenchBuilds = flag.Int("explore.builds", 3, "builds with and without the explorer tables in the explorer benchmark")

// exploreBenchRuns is how many times each query of the set runs.
var exploreBenchRuns = flag.Int("explore.runs", 200, "runs of each query in the explorer benchmark")

// exploreBenchLake writes n keywords of a Zipf-distributed vocabulary
// (so a few words are in a large share of the keywords and most in a
// handful), 1 to 6 words each, one in twenty beginning with a question
// word, with heavy-tailed volumes, a few numbers missing, and intent
// groups of up to 8. It returns each word's number of keywords.
func exploreBenchLake(tb testing.TB, data string, n int) map[string]int {
	tb.Helper()
	rng := rand.New(rand.NewPCG(11, 12))
	const vocabLen = 200_000
	vocab := make([]string, vocabLen)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("%s%d", []string{"run", "shoe", "red", "best", "buy", "cheap", "near", "me"}[i%8], i)
	}
	questions := []string{"how", "what", "why", "where", "can"}
	zipf := rand.NewZipf(rng, 1.07, 1, vocabLen-1)
	seen := make(map[string]struct{}, n)
	keys := make([]string, 0, n)
	var b strings.Builder
	for len(keys) < n {
		b.Reset()
		words := 1 + rng.IntN(6)
		if rng.IntN(20) == 0 {
			b.WriteString(questions[rng.IntN(len(questions))])
			b.WriteByte(' ')
		}
		for w := range words {
			if w > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(vocab[zipf.Uint64()])
		}
		k := b.String()
		if _, ok := seen[k]; ok {
			continue
		}
		seen[k] = struct{}{}
		keys = append(keys, k)
	}
	seen = nil
	slices.Sort(keys)
	counts := map[string]int{}
	var words []string
	for _, k := range keys {
		words, _ = keywordWords(k, words, func(w string) { counts[w]++ })
	}
	kws, err := lake.Create[kw.KeywordRecord](data, kw.DatasetKeywords, "us", "2026-11-21")
	if err != nil {
		tb.Fatal(err)
	}
	ints, err := lake.Create[kw.IntentRow](data, kw.DatasetIntents, "us", "2026-11-21")
	if err != nil {
		tb.Fatal(err)
	}
	rel, err := lake.Create[kw.RelatedRow](data, kw.DatasetRelated, "us", "2026-11-21")
	if err != nil {
		tb.Fatal(err)
	}
	const chunk = 8192
	kb := make([]kw.KeywordRecord, 0, chunk)
	ib := make([]kw.IntentRow, 0, chunk)
	rb := make([]kw.RelatedRow, 0, 10*chunk)
	leader := ""
	for i, k := range keys {
		r := kw.KeywordRecord{Keyword: k, Source: "planner-csv", CompetitionLevel: "MEDIUM", Monthly: make([]kw.MonthlySearches, 12)}
		for m := range r.Monthly {
			r.Monthly[m] = kw.MonthlySearches{Month: fmt.Sprintf("2025-%02d", m+1), Searches: i64(int64(rng.IntN(5000)))}
		}
		if rng.IntN(20) != 0 {
			r.Volume = i64(int64(10 / math.Pow(1-rng.Float64(), 0.9)))
		}
		if rng.IntN(10) != 0 {
			r.CPCMicros = i64(int64(rng.IntN(8_000_000)))
		}
		if rng.IntN(10) != 0 {
			r.Competition = f64(float64(rng.IntN(101)) / 100)
		}
		kb = append(kb, r)
		if i%8 == 0 || rng.IntN(3) == 0 {
			leader = k
		}
		ib = append(ib, kw.IntentRow{Keyword: k, Intent: leader, Overlap: 9})
		// Ten related keywords, as similarity gives most keywords.
		for j := 1; j <= 10; j++ {
			rb = append(rb, kw.RelatedRow{Keyword: k, Rank: int32(j), Related: keys[rng.IntN(len(keys))], Overlap: int32(21 - 2*j),
				Volume: i64(int64(rng.IntN(100000))), CPCMicros: i64(int64(rng.IntN(5_000_000))), SameIntent: j <= 2})
		}
		if len(kb) == chunk || i == len(keys)-1 {
			if err := kws.Write(kb...); err != nil {
				tb.Fatal(err)
			}
			if err := ints.Write(ib...); err != nil {
				tb.Fatal(err)
			}
			if err := rel.Write(rb...); err != nil {
				tb.Fatal(err)
			}
			kb, ib, rb = kb[:0], ib[:0], rb[:0]
		}
	}
	for _, c := range []interface{ Commit() error }{kws, ints, rel} {
		if err := c.Commit(); err != nil {
			tb.Fatal(err)
		}
	}
	return counts
}

// TestExploreBench is make bench-explore: it builds the same lake with
// and without the explorer's tables (time and size), then times each
// query of the set beside a /v1/keyword lookup of the same build, and
// prints p50 and p99 of each. The figures depend on the machine and its
// load, which it prints too.
func TestExploreBench(t *testing.T) {
	n := *exploreBenchKeywords
	if n == 0 {
		t.Skip("the explorer benchmark runs with -explore.keywords=N (make bench-explore)")
	}
	ctx := context.Background()
	base := os.Getenv("KW_BENCH_DIR")
	if base == "" {
		base = t.TempDir()
	}
	lakeDir := fmt.Sprintf("%s/explore-%d", base, n)
	start := time.Now()
	// With KW_BENCH_DIR, a lake left by an earlier run (the same, since
	// it is made from fixed seeds) is used again; with -explore.builds=0
	// its build too, which is then neither made nor timed.
	countsFile := lakeDir + "/words.json"
	var counts map[string]int
	if b, err := os.ReadFile(countsFile); err == nil {
		if err := json.Unmarshal(b, &counts); err != nil {
			t.Fatal(err)
		}
		fmt.Printf("lake: %d keywords, %d distinct words, kept from an earlier run\n", n, len(counts))
	} else {
		os.RemoveAll(lakeDir)
		counts = exploreBenchLake(t, lakeDir, n)
		fmt.Printf("lake: %d keywords, %d distinct words, made in %s\n", n, len(counts), time.Since(start).Round(time.Millisecond))
		b, err := json.Marshal(counts)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(countsFile, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	build := func(tables bool) (Manifest, time.Duration) {
		exploreTables = tables
		defer func() { exploreTables = true }()
		os.RemoveAll(kw.IndexDir(lakeDir))
		runtime.GC()
		start := time.Now()
		m, err := Build(ctx, BuildOptions{Data: lakeDir, Date: "2026-11-21"})
		if err != nil {
			t.Fatal(err)
		}
		return m, time.Since(start)
	}
	// Alternate the two builds, so that the load of the machine weighs
	// on both alike, and take the medians.
	var offs, ons []time.Duration
	var mOff, mOn Manifest
	builds := *exploreBenchBuilds
	if builds == 0 {
		if _, err := os.Stat(kw.IndexDir(lakeDir)); err != nil {
			builds = 1
		}
	}
	for range builds {
		var d time.Duration
		mOff, d = build(false)
		offs = append(offs, d)
		mOn, d = build(true)
		ons = append(ons, d)
	}
	if len(offs) > 0 {
		slices.Sort(offs)
		slices.Sort(ons)
		tOff, tOn := offs[len(offs)/2], ons[len(ons)/2]
		fmt.Printf("build-index, median of %d (all: without %v, with %v)\n", len(offs), offs, ons)
		fmt.Printf("build-index without explorer tables: %6.2f s %8.1f MiB\n", tOff.Seconds(), float64(mOff.Bytes)/(1<<20))
		fmt.Printf("build-index with explorer tables:    %6.2f s %8.1f MiB  (+%.0f%% time, +%.0f%% size)\n", tOn.Seconds(), float64(mOn.Bytes)/(1<<20),
			100*(tOn.Seconds()/tOff.Seconds()-1), 100*(float64(mOn.Bytes)/float64(mOff.Bytes)-1))
	}

	s, err := OpenStore(ctx, lakeDir, StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	// Words by number of keywords.
	byCount := make([]string, 0, len(counts))
	for w := range counts {
		byCount = append(byCount, w)
	}
	slices.SortFunc(byCount, func(a, b string) int {
		if counts[a] != counts[b] {
			return counts[b] - counts[a]
		}
		return strings.Compare(a, b)
	})
	common, second := byCount[0], byCount[1]
	rare := byCount[len(byCount)/50] // a word of the long tail that still has keywords
	for _, w := range byCount {
		if counts[w] <= 20 {
			rare = w
			break
		}
	}
	fmt.Printf("words: rare %q (%d keywords), most common %q (%d), second %q (%d)\n",
		rare, counts[rare], common, counts[common], second, counts[second])

	// Load the columns once, as the first query of a build does.
	start = time.Now()
	q0, _ := kw.ParseExploreQuery(url.Values{"country": {"us"}, "q": {rare}})
	if _, err := s.Explore(ctx, q0); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("first query (loads the columns of US): %s; heap in use %d MiB\n", time.Since(start).Round(time.Millisecond), heapMiB())

	// The lookup baseline.
	rng := rand.New(rand.NewPCG(5, 6))
	keys := make([]string, 0, 1000)
	for _, w := range byCount[:2000] {
		q, _ := kw.ParseExploreQuery(url.Values{"country": {"us"}, "q": {w}, "limit": {"1"}})
		res, err := s.Explore(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res.Rows {
			keys = append(keys, r.Keyword)
		}
	}
	lookup := timeRuns(*exploreBenchRuns*5, func(i int) {
		if _, err := s.Lookup(ctx, "US", keys[rng.IntN(len(keys))]); err != nil {
			t.Fatal(err)
		}
	})
	fmt.Printf("\nload average %s", loadAverage())
	fmt.Printf("%-44s %10s %10s %8s %10s\n", "query", "p50", "p99", "p50/lkp", "total")
	fmt.Printf("%-44s %10s %10s %8s %10s\n", "GET /v1/keyword lookup (baseline)", lookup.p50, lookup.p99, "1.0", "")
	filters := url.Values{"min_volume": {"20"}, "max_cpc": {"4"}, "min_competition": {"0.2"}}
	sorted := url.Values{"sort": {"cpc"}, "order": {"asc"}}
	kinds := []struct {
		name string
		v    url.Values
	}{
		{"rare word", url.Values{"q": {rare}}},
		{"most common word", url.Values{"q": {common}}},
		{"two common words", url.Values{"q": {common + " " + second}}},
		{"phrase", url.Values{"q": {common + " " + second}, "mode": {"phrase"}}},
		{"questions", url.Values{"q": {common}, "mode": {"questions"}}},
	}
	worst, worstGroups := time.Duration(0), time.Duration(0)
	for _, k := range kinds {
		for _, variant := range []struct {
			name string
			add  url.Values
		}{{"", nil}, {" +filters", filters}, {" sort=cpc asc", sorted}, {" group=intent", url.Values{"group": {"intent"}}}} {
			v := url.Values{"country": {"us"}}
			for name, vals := range k.v {
				v[name] = vals
			}
			for name, vals := range variant.add {
				v[name] = vals
			}
			q, err := kw.ParseExploreQuery(v)
			if err != nil {
				t.Fatal(err)
			}
			var total int64
			st := timeRuns(*exploreBenchRuns, func(int) {
				res, err := s.Explore(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				total = res.Total
			})
			if variant.name == " group=intent" {
				worstGroups = max(worstGroups, st.p99)
			} else {
				worst = max(worst, st.p99)
			}
			fmt.Printf("%-44s %10s %10s %8.1f %10d\n", k.name+variant.name, st.p50, st.p99, float64(st.p50)/float64(lookup.p50), total)
		}
	}
	fmt.Printf("worst p99 of the set (each kind plain, with filters, sorted; goal at 10M: under 50ms): %s\n", worst)
	fmt.Printf("worst p99 of group=intent (beside the set): %s\n", worstGroups)
}

type runStats struct{ p50, p99 time.Duration }

func timeRuns(n int, fn func(i int)) runStats {
	d := make([]time.Duration, n)
	for i := range d {
		start := time.Now()
		fn(i)
		d[i] = time.Since(start)
	}
	slices.Sort(d)
	round := func(x time.Duration) time.Duration {
		if x > time.Millisecond {
			return x.Round(10 * time.Microsecond)
		}
		return x.Round(100 * time.Nanosecond)
	}
	return runStats{round(d[n/2]), round(d[min(n-1, n*99/100)])}
}

func heapMiB() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse >> 20
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown\n"
	}
	return string(b)
}

// BenchmarkExploreBuilder is the explorer builder's own cost for 200k
// keywords of the benchmark's vocabulary: collecting them, then writing
// the tables (with snappy, as a build does).
func BenchmarkExploreBuilder(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	zipf := rand.NewZipf(rng, 1.07, 1, 50_000)
	seen := map[string]bool{}
	var keys []string
	for len(keys) < 200_000 {
		var ws []string
		for range 1 + rng.IntN(6) {
			ws = append(ws, fmt.Sprintf("w%d", zipf.Uint64()))
		}
		k := strings.Join(ws, " ")
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	fs := vfs.NewMem()
	dbo := dbOptions(fs, pebbleLogger{log: testLogger(b), fatal: panicFatal})
	set := &tableSet{fs: fs, dir: "", opts: dbo.MakeWriterOptions(6, sstable.TableFormatPebblev4), target: 64 << 20}
	b.ResetTimer()
	for range b.N {
		eb := newExploreBuilder("US", len(keys))
		leader := ""
		for i, k := range keys {
			if i%5 == 0 {
				leader = k
			}
			eb.add(eb.leaders.of(leader, k), newMember(k, i64(int64(rng.IntN(10000))), i64(1), 0), alone(k), 0.5, true)
		}
		if _, err := eb.write(context.Background(), set, "US"); err != nil {
			b.Fatal(err)
		}
	}
}
