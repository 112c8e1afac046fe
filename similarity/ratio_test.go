package similarity

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/kwdata/kwdata/kw"
)

// extremeVolumes meet the ratio helpers' edges: 0 and negative volumes
// (smoothed to 1), equal and adjacent volumes, 2⁶³-1 (smoothed to 2⁶³, the
// largest smoothed volume), 2⁶²-1 (exactly half of it), 2⁶² and 2⁶²+1
// (just under half), and ⌊(2⁶³-1)/3⌋ (a ratio just under 3 with 2⁶³-1).
var extremeVolumes = []int64{
	0, 0, 1, 2, 3, -7,
	math.MaxInt64, math.MaxInt64, math.MaxInt64 - 1,
	1<<62 - 1, 1 << 62, 1<<62 + 1, math.MaxInt64 / 3,
	4_999_999_999, 9_999_999_999,
}

// ratioMaxes are the MaxRatio values the oracle tests use: 1 (equal
// smoothed volumes only), the default 2, 3, and 2⁶³-1, where maxRatio·lo
// overflows 64 bits.
var ratioMaxes = []int64{1, 2, 3, math.MaxInt64}

// bigSmooth is v+1 (negative volumes count as 0), without overflow.
func bigSmooth(v int64) *big.Int {
	if v < 0 {
		v = 0
	}
	return new(big.Int).Add(big.NewInt(v), big.NewInt(1))
}

// bigRatio is the smoothed ratio max(a+1, b+1)/min(a+1, b+1), exactly.
func bigRatio(a, b int64) *big.Rat {
	x, y := bigSmooth(a), bigSmooth(b)
	if x.Cmp(y) < 0 {
		x, y = y, x
	}
	return new(big.Rat).SetFrac(x, y)
}

// bigSameIntent is same_intent of the package doc: overlap at least MinOverlap and
// smoothed ratio at most MaxRatio.
func bigSameIntent(a, b int64, overlap int, opt Options) bool {
	return overlap >= opt.MinOverlap && bigRatio(a, b).Cmp(new(big.Rat).SetInt64(opt.MaxRatio)) <= 0
}

// ratioOracle is an independent O(N²) reference of Brute that shares none
// of the fast path's helpers: overlaps from string sets, ratios as exact
// rationals. opt must have its defaults filled in.
func ratioOracle(keywords []Keyword, serps [][]string, opt Options) ([]kw.RelatedRow, []kw.IntentRow) {
	n := len(keywords)
	sets := make([]map[string]bool, n)
	for i := range sets {
		sets[i] = map[string]bool{}
		if i < len(serps) {
			for _, u := range serps[i] {
				sets[i][u] = true
			}
		}
	}
	overlap := func(a, b int) int {
		o := 0
		for u := range sets[a] {
			if sets[b][u] {
				o++
			}
		}
		return o
	}
	type cand struct {
		c, ov int
		ratio *big.Rat
	}
	var related []kw.RelatedRow
	for k := 0; k < n; k++ {
		var cands []cand
		for c := 0; c < n; c++ {
			if ov := overlap(k, c); c != k && ov > 0 {
				cands = append(cands, cand{c, ov, bigRatio(keywords[k].Volume, keywords[c].Volume)})
			}
		}
		sort.Slice(cands, func(i, j int) bool {
			a, b := cands[i], cands[j]
			if a.ov != b.ov {
				return a.ov > b.ov
			}
			if x := a.ratio.Cmp(b.ratio); x != 0 {
				return x < 0
			}
			if va, vb := max(keywords[a.c].Volume, 0), max(keywords[b.c].Volume, 0); va != vb {
				return va > vb
			}
			return keywords[a.c].Text < keywords[b.c].Text
		})
		for r, x := range cands[:min(len(cands), opt.TopK)] {
			c := keywords[x.c]
			related = append(related, kw.RelatedRow{
				Keyword: keywords[k].Text, Rank: int32(r + 1), Related: c.Text, Overlap: int32(x.ov),
				Volume: valueOf(&c.Volume), CPCMicros: valueOf(&c.CPCMicros),
				SameIntent: bigSameIntent(keywords[k].Volume, c.Volume, x.ov, opt),
			})
		}
	}
	sort.SliceStable(related, func(i, j int) bool { return related[i].Keyword < related[j].Keyword })
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(i, j int) bool {
		a, b := keywords[order[i]], keywords[order[j]]
		if va, vb := max(a.Volume, 0), max(b.Volume, 0); va != vb {
			return va > vb
		}
		return a.Text < b.Text
	})
	leader := make([]int, n)
	for i := range leader {
		leader[i] = -1
	}
	for _, l := range order {
		if leader[l] >= 0 {
			continue
		}
		leader[l] = l
		for c := 0; c < n; c++ {
			if leader[c] < 0 && bigSameIntent(keywords[l].Volume, keywords[c].Volume, overlap(l, c), opt) {
				leader[c] = l
			}
		}
	}
	intents := make([]kw.IntentRow, n)
	for i, k := range keywords {
		intents[i] = kw.IntentRow{Keyword: k.Text, Intent: keywords[leader[i]].Text, Overlap: int32(overlap(i, leader[i]))}
	}
	sort.Slice(intents, func(i, j int) bool { return intents[i].Keyword < intents[j].Keyword })
	return related, intents
}

// TestRatioHelpersMatchBig checks smooth, hiLo, cmpRatio and ratioWithin
// against exact rationals on every pair and quadruple of extreme volumes.
func TestRatioHelpersMatchBig(t *testing.T) {
	vols := extremeVolumes
	for _, a := range vols {
		for _, b := range vols {
			hi, lo := hiLo(smooth(a), smooth(b))
			r := bigRatio(a, b)
			if got := new(big.Rat).SetFrac(new(big.Int).SetUint64(hi), new(big.Int).SetUint64(lo)); got.Cmp(r) != 0 {
				t.Fatalf("hiLo(smooth(%d), smooth(%d)) = %d/%d, want %v", a, b, hi, lo, r)
			}
			for _, m := range ratioMaxes {
				want := r.Cmp(new(big.Rat).SetInt64(m)) <= 0
				if got := ratioWithin(hi, lo, m); got != want {
					t.Errorf("ratioWithin for volumes %d, %d and max %d = %v, want %v", a, b, m, got, want)
				}
			}
			for _, c := range vols {
				for _, d := range vols {
					hi2, lo2 := hiLo(smooth(c), smooth(d))
					if got, want := cmpRatio(hi, lo, hi2, lo2), r.Cmp(bigRatio(c, d)); got != want {
						t.Fatalf("cmpRatio of volumes %d, %d against %d, %d = %d, want %d", a, b, c, d, got, want)
					}
				}
			}
		}
	}
}

// TestBruteAndComputeMatchRatioOracle runs Brute and Compute against
// ratioOracle on random corpora whose volumes sit at the ratio helpers'
// edges, so that a bug in those helpers, which Brute shares with Compute,
// cannot hide.
func TestBruteAndComputeMatchRatioOracle(t *testing.T) {
	boundary := 0 // same-intent pairs whose ratio is exactly MaxRatio
	for seed := range 24 {
		rng := rand.New(rand.NewPCG(uint64(seed), 63))
		kws, serps := randomCorpus(rng, 60+rng.IntN(100), 10+rng.IntN(30))
		for i := range kws {
			if rng.IntN(5) != 0 {
				kws[i].Volume = extremeVolumes[rng.IntN(len(extremeVolumes))]
			}
		}
		opt := Options{MinOverlap: 1 + rng.IntN(4), MaxRatio: ratioMaxes[seed%len(ratioMaxes)], TopK: []int{10, 3}[seed%2]}
		t.Run(fmt.Sprintf("seed%d/n%d/ratio%d", seed, len(kws), opt.MaxRatio), func(t *testing.T) {
			wantRel, wantInt := ratioOracle(kws, serps, opt.withDefaults())
			for _, r := range wantRel {
				var v int64
				for _, k := range kws {
					if k.Text == r.Keyword {
						v = k.Volume
					}
				}
				if r.SameIntent && bigRatio(v, kw.Deref(r.Volume)).Cmp(new(big.Rat).SetInt64(opt.MaxRatio)) == 0 {
					boundary++
				}
			}
			gotRel, gotInt := Brute(kws, serps, opt)
			diff(t, wantRel, gotRel, wantInt, gotInt)
			o := opt
			o.Workers, o.BatchSize, o.hubMinDF = 2, 7, 3
			gotRel, gotInt, err := Compute(context.Background(), kws, serps, o)
			if err != nil {
				t.Fatal(err)
			}
			diff(t, wantRel, gotRel, wantInt, gotInt)
		})
	}
	if boundary == 0 {
		t.Error("no same-intent pair has a ratio of exactly MaxRatio; the corpora miss the edge")
	}
}
