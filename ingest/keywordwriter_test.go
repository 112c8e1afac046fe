package ingest

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/kwdata/kwdata/kw"
)

// randomKeywordRecords makes n records over fewer keywords, with every
// kind of missing value: nil numbers beside real zeros, +Inf changes, nil
// and empty series, months without searches.
func randomKeywordRecords(rng *rand.Rand, n int) []kw.KeywordRecord {
	optInt := func() *int64 {
		switch rng.IntN(4) {
		case 0:
			return nil
		case 1:
			return kw.Ptr(int64(0))
		}
		return kw.Ptr(rng.Int64N(1e9) - 1e3)
	}
	optFloat := func() *float64 {
		switch rng.IntN(5) {
		case 0:
			return nil
		case 1:
			return kw.Ptr(math.Inf(1))
		case 2:
			return kw.Ptr(0.0)
		}
		return kw.Ptr(rng.NormFloat64() * 100)
	}
	text := func(opts ...string) string { return opts[rng.IntN(len(opts))] }
	out := make([]kw.KeywordRecord, n)
	for i := range out {
		r := kw.KeywordRecord{
			Keyword: fmt.Sprintf("kw %d", rng.IntN(max(n/2, 1))), Volume: optInt(), VolumeRange: text("", "1K – 10K"),
			CPCMicros: optInt(), Competition: optFloat(), CompetitionLevel: text("", "LOW", "HIGH"),
			BidLowMicros: optInt(), BidHighMicros: optInt(), YoYChange: optFloat(), ThreeMonthChange: optFloat(),
			Source: text(SourcePlanner, "googleads", strings.Repeat("long source ", 4)),
		}
		switch rng.IntN(3) {
		case 0:
		case 1:
			r.Monthly = []kw.MonthlySearches{}
		default:
			for m := 1; m <= 1+rng.IntN(12); m++ {
				r.Monthly = append(r.Monthly, kw.MonthlySearches{Month: fmt.Sprintf("2026-%02d", m), Searches: optInt()})
			}
		}
		out[i] = r
	}
	return out
}

func TestKeywordRecordRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	var d keywordDecoder
	for i, want := range randomKeywordRecords(rng, 2000) {
		p := appendKeywordRecord(nil, &want, i)
		got, src, err := d.decode(want.Keyword, p)
		if err != nil || src != i || !reflect.DeepEqual(got, want) {
			t.Fatalf("record %d came back as %+v (source %d, %v), want %+v", i, got, src, err, want)
		}
		for cut := range len(p) {
			if _, _, err := d.decode(want.Keyword, p[:cut]); err == nil {
				t.Fatalf("record %d cut to %d of %d bytes decoded", i, cut, len(p))
			}
		}
	}
}

// expectKeywords is what the keywords partition must hold, computed the
// plain way: the months of each record's source dropped, one record a
// keyword (the largest volume, the first on ties), changes computed for
// sources without them, sorted by keyword.
func expectKeywords(recs []kw.KeywordRecord, srcs []int, drops map[int]map[string]bool) []kw.KeywordRecord {
	type rec struct {
		r   kw.KeywordRecord
		src int
	}
	all := make([]rec, len(recs))
	for i, r := range recs {
		r.Monthly = slices.Clone(r.Monthly)
		all[i] = rec{r, srcs[i]}
	}
	slices.SortStableFunc(all, func(a, b rec) int { return strings.Compare(a.r.Keyword, b.r.Keyword) })
	var out []kw.KeywordRecord
	for i := 0; i < len(all); {
		best, j := i, i+1
		for ; j < len(all) && all[j].r.Keyword == all[i].r.Keyword; j++ {
			if kw.MoreVolume(all[j].r.Volume, all[best].r.Volume) {
				best = j
			}
		}
		r := all[best].r
		r.Monthly = dropMonths(r.Monthly, drops[all[best].src])
		if r.Source != SourcePlanner && r.YoYChange == nil && r.ThreeMonthChange == nil {
			r.YoYChange, r.ThreeMonthChange = kw.Changes(r.Monthly)
		}
		out = append(out, r)
		i = j
	}
	return out
}

func TestKeywordWriterSpillsAndMerges(t *testing.T) {
	for _, tc := range []struct{ n, budget int }{{0, 1}, {1, 1}, {300, 1}, {3000, 20_000}, {3000, math.MaxInt}} {
		t.Run(fmt.Sprintf("n%d/budget%d", tc.n, tc.budget), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(tc.n), 9))
			recs := randomKeywordRecords(rng, tc.n)
			srcs := make([]int, len(recs))
			for i := range srcs {
				srcs[i] = i * 3 / max(len(recs), 1) // three sources, in order
			}
			drops := map[int]map[string]bool{1: {"2026-02": true, "2026-05": true}}
			want := expectKeywords(recs, srcs, drops)
			data := t.TempDir()
			w := newKeywordWriter(data, "us", "2026-03-01", tc.budget)
			for i := range recs {
				if err := w.add(&recs[i], srcs[i]); err != nil {
					t.Fatal(err)
				}
			}
			for src, m := range drops {
				w.dropMonths(src, m)
			}
			spilled := len(w.sorter.runs)
			res, err := w.commit(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if tc.budget < 1000 && tc.n > 1 && spilled < 2 {
				t.Errorf("budget %d spilled %d runs; want several", tc.budget, spilled)
			}
			if res.Keywords != len(want) || res.Duplicates != len(recs)-len(want) {
				t.Errorf("result = %+v, want %d keywords, %d duplicates", res, len(want), len(recs)-len(want))
			}
			got := readPartition[kw.KeywordRecord](t, data, kw.DatasetKeywords, "us", "2026-03-01")
			if len(got) != len(want) {
				t.Fatalf("partition has %d records, want %d", len(got), len(want))
			}
			for i := range want {
				// Parquet reads an empty series back as nil.
				if len(want[i].Monthly) == 0 {
					want[i].Monthly = got[i].Monthly
				}
				if !reflect.DeepEqual(got[i], want[i]) {
					t.Fatalf("record %d = %+v, want %+v", i, got[i], want[i])
				}
			}
			assertStagingEmpty(t, data)
		})
	}
}

// Run writes the same keywords partition whether the planner's records fit
// in memory or are spilled, from several exports that repeat keywords.
func TestRunSpillsKeywords(t *testing.T) {
	planner, _ := sampleFiles(t, 1500)
	dir := t.TempDir()
	a := writeFile(t, dir, "a.csv", planner)
	b := writeFile(t, dir, "b.csv", planner)
	var parts [2][]kw.KeywordRecord
	var reps [2]Report
	for i, budget := range []int{0, 20_000} {
		data := filepath.Join(t.TempDir(), "data")
		rep, err := Run(context.Background(), Options{Data: data, Date: "2026-03-01", Country: "us",
			PlannerCSV: []string{a, b}, spillBytes: budget})
		if err != nil {
			t.Fatal(err)
		}
		reps[i] = rep
		parts[i] = readPartition[kw.KeywordRecord](t, data, kw.DatasetKeywords, "us", "2026-03-01")
		assertStagingEmpty(t, data)
	}
	if reps[0].Duplicates == 0 || reps[0].Keywords == 0 {
		t.Fatalf("report %+v: the input proves nothing", reps[0])
	}
	if reps[0].Keywords != reps[1].Keywords || reps[0].Duplicates != reps[1].Duplicates {
		t.Errorf("reports differ: in memory %+v, spilled %+v", reps[0], reps[1])
	}
	if !reflect.DeepEqual(parts[0], parts[1]) {
		t.Errorf("partitions differ: %d records in memory, %d spilled", len(parts[0]), len(parts[1]))
	}
}
