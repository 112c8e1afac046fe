package similarity

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kwdata/kwdata/kw"
)

// computeCut runs the fast path like Compute does and also returns how
// many keywords the light pass cut.
func computeCut(tb testing.TB, kws []Keyword, serps [][]string, opt Options) ([]kw.RelatedRow, []kw.IntentRow, uint64) {
	tb.Helper()
	opt = opt.withDefaults()
	c, err := newCorpus(kws, serps)
	if err != nil {
		tb.Fatal(err)
	}
	var rel []kw.RelatedRow
	res, err := computeCorpus(context.Background(), c, opt, func(rows []kw.RelatedRow) error {
		rel = append(rel, rows...)
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	var ints []kw.IntentRow
	if err := res.intents(len(kws), func(rows []kw.IntentRow) error {
		ints = append(ints, rows...)
		return nil
	}); err != nil {
		tb.Fatal(err)
	}
	return rel, ints, res.e.cutKeywords.Load()
}

// fillers returns n keywords named prefix0.. that hold url and a page of
// their own, with volume vol: they make url frequent, so that walking its
// postings costs more than the candidates already seen.
func fillers(prefix, url string, n int, vol int64) ([]Keyword, [][]string) {
	kws := make([]Keyword, n)
	serps := make([][]string, n)
	for i := range kws {
		kws[i] = Keyword{Text: fmt.Sprintf("%s%02d", prefix, i), Volume: vol}
		serps[i] = []string{url, fmt.Sprintf("%s%02d.example/own", prefix, i)}
	}
	return kws, serps
}

// TestComputeCutHandMade checks the cut of the light pass on cases built
// around its bound: it must fire only when no keyword sharing just the
// URLs it skips can rank or be a follower, and the seen candidates' counts
// must still include the skipped URLs.
func TestComputeCutHandMade(t *testing.T) {
	type tcase struct {
		name    string
		kws     []Keyword
		serps   [][]string
		opt     Options
		cut     bool          // whether some keyword is cut
		k       string        // the keyword whose related rows are checked
		related []relatedWant // its related rows
		intents map[string]string
	}
	// Every case: k holds rare URLs shared with a and b, and frequent URLs
	// that 40, 80, 120... fillers hold, so the walk reaches them last, in
	// that order, and they cost more than the candidates seen before.
	build := func(name string, opt Options, cut bool, related []relatedWant, intents map[string]string, kws []Keyword, serps [][]string, freq ...string) tcase {
		for j, f := range freq {
			fk, fs := fillers(fmt.Sprintf("z%d-", j), f, 40*(j+1), 1_000_000)
			kws = append(kws, fk...)
			serps = append(serps, fs...)
		}
		return tcase{name: name, kws: kws, serps: serps, opt: opt, cut: cut, k: "k", related: related, intents: intents}
	}
	base := Options{TopK: 2, maxHubs: -1, Workers: 1, BatchSize: 3}
	tests := []tcase{
		build("a tie at the bound does not cut: the unseen x is closer",
			base, false,
			[]relatedWant{{"x", 1, false}, {"a", 1, false}},
			nil,
			[]Keyword{{Text: "k", Volume: 100}, {Text: "a", Volume: 10}, {Text: "b", Volume: 5}, {Text: "x", Volume: 100}},
			[][]string{{"r1", "f1"}, {"r1"}, {"r1"}, {"f1"}},
			"f1"),
		build("counts above the bound cut; a skipped URL still counts for a",
			base, true,
			[]relatedWant{{"a", 3, false}, {"b", 2, false}},
			nil,
			[]Keyword{{Text: "k", Volume: 100}, {Text: "a", Volume: 10}, {Text: "b", Volume: 5}, {Text: "x", Volume: 100}},
			[][]string{{"r1", "r2", "f1"}, {"r1", "r2", "f1"}, {"r1", "r2"}, {"f1"}},
			"f1"),
		build("a keyword reachable only through the frequent URLs outranks the seen ones",
			base, false,
			[]relatedWant{{"x", 3, false}, {"a", 2, false}},
			nil,
			[]Keyword{{Text: "k", Volume: 100}, {Text: "a", Volume: 10}, {Text: "b", Volume: 5}, {Text: "x", Volume: 1}},
			[][]string{{"r1", "r2", "f1", "f2", "f3"}, {"r1", "r2"}, {"r1", "r2"}, {"f1", "f2", "f3"}},
			"f1", "f2", "f3"),
		// The bound 3 after r1..r4 reaches the same-intent overlap, so f1
		// is walked and x seen; the cut after it finishes x's count.
		build("a follower reachable only through the frequent URLs is seen before the cut",
			Options{TopK: 2, MinOverlap: 3, maxHubs: -1, Workers: 1, BatchSize: 3}, true,
			[]relatedWant{{"a", 4, false}, {"b", 4, false}},
			map[string]string{"k": "k", "x": "k"},
			[]Keyword{{Text: "k", Volume: 100}, {Text: "a", Volume: 10}, {Text: "b", Volume: 5}, {Text: "x", Volume: 99}},
			[][]string{{"r1", "r2", "r3", "r4", "f1", "f2", "f3"}, {"r1", "r2", "r3", "r4"}, {"r1", "r2", "r3", "r4"}, {"f1", "f2", "f3"}},
			"f1", "f2", "f3"),
		build("below the same-intent overlap the frequent URLs are cut",
			Options{TopK: 2, MinOverlap: 3, maxHubs: -1, Workers: 1, BatchSize: 3}, true,
			[]relatedWant{{"a", 4, false}, {"b", 4, false}},
			map[string]string{"k": "k", "x": "x"},
			[]Keyword{{Text: "k", Volume: 100}, {Text: "a", Volume: 10}, {Text: "b", Volume: 5}, {Text: "x", Volume: 99}},
			[][]string{{"r1", "r2", "r3", "r4", "f1", "f2"}, {"r1", "r2", "r3", "r4"}, {"r1", "r2", "r3", "r4"}, {"f1", "f2"}},
			"f1", "f2"),
		build("hubs count in the bound: x shares a hub and a frequent URL",
			Options{TopK: 2, hubMinDF: 30, maxHubs: 1, Workers: 1, BatchSize: 3}, false,
			[]relatedWant{{"x", 2, false}, {"a", 2, false}},
			nil,
			[]Keyword{{Text: "k", Volume: 100}, {Text: "a", Volume: 10}, {Text: "b", Volume: 5}, {Text: "x", Volume: 100}},
			[][]string{{"r1", "r2", "f1", "h"}, {"r1", "r2"}, {"r1", "r2"}, {"f1", "h"}},
			"f1", "h"),
	}
	for _, tt := range tests {
		for _, finish := range []int{finishIntersect, finishWalk} {
			t.Run(fmt.Sprintf("%s/finish%d", tt.name, finish), func(t *testing.T) {
				opt := tt.opt
				opt.finish = finish
				bRel, bInt := Brute(tt.kws, tt.serps, opt)
				fRel, fInt, cuts := computeCut(t, tt.kws, tt.serps, opt)
				diff(t, bRel, fRel, bInt, fInt)
				if g := relatedOf(fRel, tt.k); !slices.Equal(g, tt.related) {
					t.Errorf("related(%s) = %v, want %v", tt.k, g, tt.related)
				}
				for k, want := range tt.intents {
					if g := intentOf(fInt, k); g != want {
						t.Errorf("intent(%s) = %q, want %q", k, g, want)
					}
				}
				// Whether k itself is cut: the fillers are cut or not
				// depending on their own URLs, so compare with the run
				// where k's frequent URLs are its own only.
				if got := kCut(t, tt.kws, tt.serps, opt, tt.k); got != tt.cut {
					t.Errorf("%s cut = %v, want %v (cuts in all: %d)", tt.k, got, tt.cut, cuts)
				}
			})
		}
	}
}

// testEngine is the engine of a corpus under opt's defaults.
func testEngine(tb testing.TB, kws []Keyword, serps [][]string, opt Options) *engine {
	tb.Helper()
	c, err := newCorpus(kws, serps)
	if err != nil {
		tb.Fatal(err)
	}
	e, err := newEngine(c, opt.withDefaults())
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

// kCut reports whether the light pass cuts keyword text's walk.
func kCut(tb testing.TB, kws []Keyword, serps [][]string, opt Options, text string) bool {
	tb.Helper()
	e := testEngine(tb, kws, serps, opt)
	i := slices.IndexFunc(kws, func(k Keyword) bool { return k.Text == text })
	w := e.newWorker()
	w.one(e.rank[i])
	return w.cutKeywords > 0
}

// cutCorpus draws corpora where the cut fires often and just as often must
// not: intent groups sharing rare URLs, topics sharing mid-frequency ones,
// and a Zipf of frequent URLs (some become hubs) with volumes that tie.
func cutCorpus(rng *rand.Rand, n int) ([]Keyword, [][]string) {
	kws := make([]Keyword, n)
	serps := make([][]string, n)
	zipf := rand.NewZipf(rng, 1.05, 2, 300)
	perm := rng.Perm(n)
	var group []string
	for i := range kws {
		v := tieVolumes[rng.IntN(len(tieVolumes))]
		if rng.IntN(3) == 0 {
			v = rng.Int64N(200)
		}
		kws[i] = Keyword{Text: fmt.Sprintf("c%05d", perm[i]), Volume: v, CPCMicros: rng.Int64N(1000)}
		if i%14 == 0 {
			group = group[:0]
			for j := range 4 + rng.IntN(10) {
				group = append(group, fmt.Sprintf("g%d/%d", i, j))
			}
		}
		var s []string
		for _, u := range group {
			if rng.IntN(5) != 0 {
				s = append(s, u)
			}
		}
		for range rng.IntN(5) {
			s = append(s, fmt.Sprintf("t%d/%d", i/40, rng.IntN(12)))
		}
		for range rng.IntN(7) {
			s = append(s, fmt.Sprintf("f%d", zipf.Uint64()))
		}
		for j := 0; len(s) < 20 && rng.IntN(3) != 0; j++ {
			s = append(s, fmt.Sprintf("o%d/%d", i, j))
		}
		serps[i] = s
	}
	return kws, serps
}

// TestComputeCutMatchesBrute compares the fast path, with its cut, to the
// oracle on corpora where the cut fires, over both ways of finishing the
// counts, several top-K sizes and same-intent overlaps, with and without
// hubs, and checks that the cut did fire.
func TestComputeCutMatchesBrute(t *testing.T) {
	for seed := range uint64(4) {
		rng := rand.New(rand.NewPCG(seed, 0xc07))
		n := 600 + rng.IntN(900)
		kws, serps := cutCorpus(rng, n)
		for _, o := range []struct {
			topK, minO, minDF, maxHubs, finish int
		}{
			{10, 8, 0, -1, 0},
			{10, 8, 40, 16, finishIntersect},
			{3, 4, 0, -1, finishWalk},
			{5, 3, 25, 64, finishIntersect},
			{1, 2, 30, 8, finishWalk},
			{10, 5, 20, 256, 0},
		} {
			t.Run(fmt.Sprintf("seed%d/top%d/min%d/hubs%d-%d/finish%d", seed, o.topK, o.minO, o.minDF, o.maxHubs, o.finish), func(t *testing.T) {
				opt := Options{TopK: o.topK, MinOverlap: o.minO, hubMinDF: o.minDF, maxHubs: o.maxHubs, finish: o.finish, Workers: 2, BatchSize: 61}
				bRel, bInt := Brute(kws, serps, opt)
				fRel, fInt, cuts := computeCut(t, kws, serps, opt)
				diff(t, bRel, fRel, bInt, fInt)
				if cuts == 0 {
					t.Errorf("no keyword of %d was cut: the case does not test the cut", n)
				}
				nRel, nInt, _ := computeCut(t, kws, serps, Options{TopK: o.topK, MinOverlap: o.minO, hubMinDF: o.minDF, maxHubs: o.maxHubs, noCut: true})
				diff(t, nRel, fRel, nInt, fInt)
			})
		}
	}
}
