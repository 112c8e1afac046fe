package similarity

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kwdata/kwdata/kw"
)

// diff reports the first difference between two results.
func diff(tb testing.TB, wantRel, gotRel []kw.RelatedRow, wantInt, gotInt []kw.IntentRow) {
	tb.Helper()
	for i := 0; i < max(len(wantRel), len(gotRel)); i++ {
		var w, g kw.RelatedRow
		if i < len(wantRel) {
			w = wantRel[i]
		}
		if i < len(gotRel) {
			g = gotRel[i]
		}
		if !sameRow(w, g) {
			tb.Fatalf("related row %d (of %d, got %d) = %s, want %s", i, len(wantRel), len(gotRel), showRow(g), showRow(w))
		}
	}
	for i := 0; i < max(len(wantInt), len(gotInt)); i++ {
		var w, g kw.IntentRow
		if i < len(wantInt) {
			w = wantInt[i]
		}
		if i < len(gotInt) {
			g = gotInt[i]
		}
		if w != g {
			tb.Fatalf("intent row %d (of %d, got %d) = %+v, want %+v", i, len(wantInt), len(gotInt), g, w)
		}
	}
}

// sameRow compares two related rows by value: the nullable numbers point
// into different keyword lists.
func sameRow(a, b kw.RelatedRow) bool {
	sameNum := func(x, y *int64) bool { return x == nil && y == nil || x != nil && y != nil && *x == *y }
	return sameNum(a.Volume, b.Volume) && sameNum(a.CPCMicros, b.CPCMicros) &&
		a.Keyword == b.Keyword && a.Rank == b.Rank && a.Related == b.Related &&
		a.Overlap == b.Overlap && a.SameIntent == b.SameIntent
}

func showRow(r kw.RelatedRow) string {
	num := func(x *int64) string {
		if x == nil {
			return "null"
		}
		return fmt.Sprint(*x)
	}
	return fmt.Sprintf("{%s #%d %s overlap %d volume %s cpc %s same_intent %v}",
		r.Keyword, r.Rank, r.Related, r.Overlap, num(r.Volume), num(r.CPCMicros), r.SameIntent)
}

// TestComputeMatchesBrute is the differential test: random corpora with
// heavy hubs, ties in overlap and in closeness, tiny, empty and duplicated
// SERPs, under hub cut-offs from "no hubs" to "almost every URL a hub".
func TestComputeMatchesBrute(t *testing.T) {
	hubSettings := []struct{ minDF, maxHubs int }{
		{0, -1},  // no hubs: light counting only
		{2, 1},   // one hub
		{3, 7},   // a few hubs
		{2, 70},  // a two-word mask
		{2, 256}, // nearly every URL is a hub: the H walk does most work
		{0, 0},   // the production cut-off
	}
	seeds := 40
	if testing.Short() {
		seeds = 10
	}
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		n := 1 + rng.IntN(300)
		if seed%10 == 0 {
			n = 600
		}
		nURL := 5 + rng.IntN(150)
		kws, serps := randomCorpus(rng, n, nURL)
		opt := Options{TopK: []int{10, 10, 1, 3, 12}[seed%5]}
		switch seed % 4 {
		case 1:
			opt.MinOverlap = 2 + rng.IntN(4) // many same-intent pairs, some hub-only
		case 2:
			opt.MinOverlap, opt.MaxRatio = 1, 1+rng.Int64N(4)
		}
		wantRel, wantInt := Brute(kws, serps, opt)
		for _, hs := range hubSettings {
			t.Run(fmt.Sprintf("seed%d/n%d/hubs%d-%d", seed, n, hs.minDF, hs.maxHubs), func(t *testing.T) {
				o := opt
				o.hubMinDF, o.maxHubs = hs.minDF, hs.maxHubs
				o.Workers, o.BatchSize = 1+seed%3, 1+rng.IntN(50)
				// The corpora's volumes take a few dozen values: every
				// other seed reads them by rank instead of from runs.
				o.noVolRuns = seed%2 == 1
				gotRel, gotInt, err := Compute(context.Background(), kws, serps, o)
				if err != nil {
					t.Fatal(err)
				}
				diff(t, wantRel, gotRel, wantInt, gotInt)
			})
		}
	}
}

// TestComputeHubOnlyNeighbours builds keywords that share nothing but hubs,
// so that every candidate comes from the volume walk, including hub-only
// same-intent pairs.
func TestComputeHubOnlyNeighbours(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	const n, hubs = 400, 24
	kws := make([]Keyword, n)
	serps := make([][]string, n)
	for i := range kws {
		kws[i] = Keyword{Text: fmt.Sprintf("h%03d", i), Volume: tieVolumes[rng.IntN(len(tieVolumes))] + rng.Int64N(3)}
		for h := range hubs {
			if rng.IntN(3) != 0 {
				serps[i] = append(serps[i], fmt.Sprintf("hub%d/", h))
			}
		}
		serps[i] = append(serps[i], fmt.Sprintf("own%d/", i))
	}
	for _, topK := range []int{1, 10, 30} {
		opt := Options{TopK: topK, MinOverlap: 12, hubMinDF: 2, maxHubs: 64, Workers: 2, BatchSize: 7}
		wantRel, wantInt := Brute(kws, serps, opt)
		gotRel, gotInt, err := Compute(context.Background(), kws, serps, opt)
		if err != nil {
			t.Fatal(err)
		}
		diff(t, wantRel, gotRel, wantInt, gotInt)
		leaders := map[string]bool{}
		for _, r := range gotInt {
			leaders[r.Intent] = true
		}
		if len(leaders) == n {
			t.Fatalf("TopK %d: no keyword joined a leader; the corpus does not exercise hub-only intents", topK)
		}
	}
}

// TestComputeOneHubNeighbours builds the web's hub shape: keywords with
// one to three of many hubs and few light URLs in common, so that most
// related keywords share a single hub and come from the level-1 walk
// through each hub's keywords (with members that hold other hubs of k,
// which that walk must pass over, and ties in volume).
func TestComputeOneHubNeighbours(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	const n, hubs = 3000, 40
	kws := make([]Keyword, n)
	serps := make([][]string, n)
	for i := range kws {
		kws[i] = Keyword{Text: fmt.Sprintf("o%04d", i), Volume: tieVolumes[rng.IntN(len(tieVolumes))] + rng.Int64N(2)}
		for range 1 + rng.IntN(3) {
			if u := fmt.Sprintf("hub%d/", rng.IntN(hubs)); !slices.Contains(serps[i], u) {
				serps[i] = append(serps[i], u)
			}
		}
		for j := range 8 {
			serps[i] = append(serps[i], fmt.Sprintf("own%d/%d", i, j))
		}
		if rng.IntN(4) == 0 {
			serps[i] = append(serps[i], fmt.Sprintf("pair%d/", i/2))
		}
	}
	for _, topK := range []int{1, 10} {
		for _, minO := range []int{0, 1} {
			opt := Options{TopK: topK, MinOverlap: minO, hubMinDF: 20, Workers: 2, BatchSize: 64}
			wantRel, wantInt := Brute(kws, serps, opt)
			gotRel, gotInt, err := Compute(context.Background(), kws, serps, opt)
			if err != nil {
				t.Fatal(err)
			}
			diff(t, wantRel, gotRel, wantInt, gotInt)
			one := 0
			for _, r := range gotRel {
				if r.Overlap == 1 {
					one++
				}
			}
			if one < len(gotRel)/4 {
				t.Fatalf("TopK %d: %d of %d related rows share one URL; the corpus does not exercise the level-1 walk", topK, one, len(gotRel))
			}
		}
	}
}

// TestComputeDeterministic is the metamorphic test: the output is the same
// for any number of workers and any batch size, and does not depend on the
// input order.
func TestComputeDeterministic(t *testing.T) {
	kws, serps := realisticCorpus(11, 20_000)
	base := Options{hubMinDF: 50}
	ctx := context.Background()
	wantRel, wantInt, err := Compute(ctx, kws, serps, Options{Workers: 1, BatchSize: 1 << 20, hubMinDF: 50})
	if err != nil {
		t.Fatal(err)
	}
	if len(wantRel) < len(kws) {
		t.Fatalf("only %d related rows for %d keywords; the corpus is too sparse to test anything", len(wantRel), len(kws))
	}
	// Shuffled input order.
	perm := rand.New(rand.NewPCG(1, 1)).Perm(len(kws))
	sk, ss := make([]Keyword, len(kws)), make([][]string, len(kws))
	for i, p := range perm {
		sk[i], ss[i] = kws[p], serps[p]
	}
	for _, tc := range []struct {
		workers, batch int
		shuffled       bool
	}{{2, 1, false}, {3, 17, false}, {8, 1000, true}, {2, 256, true}} {
		t.Run(fmt.Sprintf("w%d-b%d-shuffled%v", tc.workers, tc.batch, tc.shuffled), func(t *testing.T) {
			o := base
			o.Workers, o.BatchSize = tc.workers, tc.batch
			k, s := kws, serps
			if tc.shuffled {
				k, s = sk, ss
			}
			gotRel, gotInt, err := Compute(ctx, k, s, o)
			if err != nil {
				t.Fatal(err)
			}
			diff(t, wantRel, gotRel, wantInt, gotInt)
		})
	}
}

// TestComputeMatchesBruteRealistic runs the oracle on the benchmark corpus
// shape with the production hub cut-off.
func TestComputeMatchesBruteRealistic(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 1500
	}
	kws, serps := realisticCorpus(5, n)
	for _, minDF := range []int{0, 8} {
		opt := Options{hubMinDF: minDF}
		wantRel, wantInt := Brute(kws, serps, opt)
		gotRel, gotInt, err := Compute(context.Background(), kws, serps, opt)
		if err != nil {
			t.Fatal(err)
		}
		diff(t, wantRel, gotRel, wantInt, gotInt)
	}
}

// TestComputeMatchesBruteShapes runs the oracle on the benchmark shapes
// (the default, the long URL tail with heavier hubs, and the web's small
// groups with mid-frequency URLs shared across topics) under hub
// cut-offs from none to most shared URLs.
func TestComputeMatchesBruteShapes(t *testing.T) {
	n := 2500
	if testing.Short() {
		n = 1200
	}
	shapes := []struct {
		name string
		gen  func(uint64, int) ([]Keyword, [][]string)
	}{{"default", realisticCorpus}, {"tail", tailCorpus}, {"web", webCorpus}}
	for _, sh := range shapes {
		kws, serps := sh.gen(9, n)
		wantRel, wantInt := Brute(kws, serps, Options{})
		for _, cut := range []struct{ hubMinDF, maxHubs int }{
			{0, 0},   // production
			{30, 0},  // heavy hubs only
			{6, 40},  // small hubs
			{2, 256}, // most shared URLs hubs: the H walk does most work
			{0, -1},  // no hubs: light counting only
		} {
			t.Run(fmt.Sprintf("%s/hubs%d-%d", sh.name, cut.hubMinDF, cut.maxHubs), func(t *testing.T) {
				opt := Options{hubMinDF: cut.hubMinDF, maxHubs: cut.maxHubs, Workers: 2, BatchSize: 97}
				gotRel, gotInt, err := Compute(context.Background(), kws, serps, opt)
				if err != nil {
					t.Fatal(err)
				}
				diff(t, wantRel, gotRel, wantInt, gotInt)
			})
		}
	}
}

func TestComputeProgressAndCancel(t *testing.T) {
	kws, serps := realisticCorpus(2, 3000)
	var calls, last int
	_, _, err := Compute(context.Background(), kws, serps, Options{BatchSize: 100, Progress: func(done, total int) {
		if total != len(kws) || done < last {
			t.Errorf("Progress(%d, %d) after %d", done, total, last)
		}
		calls, last = calls+1, done
	}})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 30 || last != len(kws) {
		t.Errorf("Progress called %d times, last done %d; want 30 calls ending at %d", calls, last, len(kws))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := Compute(ctx, kws, serps, Options{}); err == nil {
		t.Error("Compute with a cancelled context returned no error")
	}
	if _, _, err := Compute(context.Background(), nil, nil, Options{}); err != nil {
		t.Errorf("Compute of nothing: %v", err)
	}
	_ = slices.Equal[[]int]
}

// TestComputeLongSERPs covers keywords with more light URLs than a byte
// counts (a SERP keeps at most 20 results, but Compute takes any
// set), and so the largest count tables, mixed with ordinary ones, against
// the oracle.
func TestComputeLongSERPs(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 4))
	const n, pool = 120, 900
	kws := make([]Keyword, n)
	serps := make([][]string, n)
	for i := range kws {
		kws[i] = Keyword{Text: fmt.Sprintf("long%03d", i), Volume: tieVolumes[rng.IntN(len(tieVolumes))]}
		size := 3 + rng.IntN(20)
		if i%4 == 0 {
			size = 260 + rng.IntN(400)
		}
		for range size {
			serps[i] = append(serps[i], fmt.Sprintf("p%d.example/", rng.IntN(pool)))
		}
	}
	wide := 0
	for _, s := range serps {
		if len(slices.Compact(slices.Sorted(slices.Values(s)))) > 255 {
			wide++
		}
	}
	if wide == 0 {
		t.Fatal("no SERP has more than 255 distinct URLs; counts past a byte are not exercised")
	}
	for _, hs := range []struct{ minDF, maxHubs int }{{0, -1}, {2, 8}, {0, 0}} {
		opt := Options{MinOverlap: 40, hubMinDF: hs.minDF, maxHubs: hs.maxHubs, Workers: 2, BatchSize: 9}
		wantRel, wantInt := Brute(kws, serps, opt)
		gotRel, gotInt, err := Compute(context.Background(), kws, serps, opt)
		if err != nil {
			t.Fatal(err)
		}
		diff(t, wantRel, gotRel, wantInt, gotInt)
	}
}
