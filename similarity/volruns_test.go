package similarity

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestVolRuns holds the runs' volumes to the volumes they stand for, over
// more ranks than the bucket table has buckets, and checks which volumes
// they refuse.
func TestVolRuns(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	// descending draws n volumes from values of the planner's rounding
	// (10, 20, … then a sixth more each step), the smallest the commonest.
	descending := func(n, values int) []uint64 {
		buckets := []uint64{1}
		for v := uint64(11); len(buckets) < values; v = v + v/6 + 10 {
			buckets = append(buckets, v)
		}
		vs := make([]uint64, n)
		for i := range vs {
			vs[i] = buckets[min(rng.IntN(values), rng.IntN(values))]
		}
		slices.Sort(vs)
		slices.Reverse(vs)
		return vs
	}
	for _, tc := range []struct {
		name string
		vol  []uint64
	}{
		{"one rank", []uint64{7}},
		{"one run", []uint64{5, 5, 5, 5}},
		{"runs of one rank", []uint64{9, 8, 7, 6, 5, 4, 3, 2, 1}},
		{"few values, 300k ranks", descending(300_000, 40)},
		{"long runs and short ones", append(append(slices.Repeat([]uint64{1 << 62}, 200_000), 100, 99, 98), slices.Repeat([]uint64{1}, 70_000)...)},
		{"every volume ends a bucket", func() []uint64 {
			var vs []uint64
			for v := uint64(255); v >= 1; v-- {
				vs = append(vs, slices.Repeat([]uint64{v}, 4)...)
			}
			return vs
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newVolRuns(tc.vol)
			if !v.ok() {
				t.Fatalf("no runs for %d ranks of %d volumes", len(tc.vol), len(slices.Compact(slices.Clone(tc.vol))))
			}
			for r, want := range tc.vol {
				if got := v.of(uint32(r)); got != want {
					t.Fatalf("rank %d: volume %d, want %d", r, got, want)
				}
			}
		})
	}
	tooMany := make([]uint64, 256)
	for i := range tooMany {
		tooMany[i] = uint64(1000 - i)
	}
	for name, vol := range map[string][]uint64{
		"no ranks":         nil,
		"256 values":       tooMany,
		"a volume goes up": {9, 9, 3, 4, 1},
	} {
		if v := newVolRuns(vol); v.ok() {
			t.Errorf("%s: runs held", name)
		}
	}
	if v := newVolRuns(tooMany[:255]); !v.ok() || v.of(254) != 746 {
		t.Errorf("255 values: runs not held")
	}
	if v := newVolRuns([]uint64{math.MaxUint64, 1}); !v.ok() || v.of(0) != math.MaxUint64 || v.of(1) != 1 {
		t.Errorf("the largest volume: runs wrong")
	}
}

// TestEngineVolRuns checks which corpora the engine looks volumes up in
// runs for: the differential tests' random corpora (a few dozen
// volumes), not the realistic ones (volumes drawn from a continuum).
func TestEngineVolRuns(t *testing.T) {
	kws, serps := randomCorpus(rand.New(rand.NewPCG(1, 7)), 600, 100)
	if e := testEngine(t, kws, serps, Options{}); !e.runs.ok() {
		t.Error("random corpus: no runs")
	} else {
		for r := range e.n {
			if e.volOf(uint32(r)) != e.vol[r] {
				t.Fatalf("rank %d: volume %d, want %d", r, e.volOf(uint32(r)), e.vol[r])
			}
		}
	}
	if e := testEngine(t, kws, serps, Options{noVolRuns: true}); e.runs.ok() {
		t.Error("noVolRuns: runs held")
	}
	kws, serps = realisticCorpus(5, 3000)
	if e := testEngine(t, kws, serps, Options{}); e.runs.ok() {
		t.Error("realistic corpus: runs held")
	}
}
