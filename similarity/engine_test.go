package similarity

import (
	"math"
	"slices"
	"sort"
	"testing"
)

// The engine's arrays are built on several goroutines; they must not
// depend on how many.
func TestEngineSameOnEveryCore(t *testing.T) {
	kws, serps := realisticCorpus(7, 20000)
	build := func(workers int) *engine {
		c, err := newCorpus(kws, serps)
		if err != nil {
			t.Fatal(err)
		}
		e, err := newEngine(c, Options{Workers: workers}.withDefaults())
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	one := build(1)
	if one.hubs == 0 || len(one.gOff) < 3 || len(one.pKw) == 0 {
		t.Fatalf("corpus too plain to test: %d hubs, %d groups, %d postings", one.hubs, len(one.gOff)-1, len(one.pKw))
	}
	checkEngine(t, one)
	for _, workers := range []int{2, 3, 8} {
		e := build(workers)
		for _, a := range []struct {
			name string
			a, b []uint32
		}{
			{"idx", one.idx, e.idx}, {"byText", one.byText, e.byText},
			{"lOff", one.lOff, e.lOff}, {"lURL", one.lURL, e.lURL},
			{"pOff", one.pOff, e.pOff}, {"pKw", one.pKw, e.pKw},
			{"gOff", one.gOff, e.gOff}, {"gKw", one.gKw, e.gKw},
			{"hOff", one.hOff, e.hOff}, {"hGrp", one.hGrp, e.hGrp},
			{"hkOff", one.hkOff, e.hkOff},
		} {
			if !slices.Equal(a.a, a.b) {
				t.Errorf("%d workers: %s differs from one worker's", workers, a.name)
			}
		}
		if !slices.Equal(one.mask, e.mask) || !slices.Equal(one.gMask, e.gMask) || !slices.Equal(one.meta, e.meta) || !slices.Equal(one.hk, e.hk) ||
			!slices.Equal(one.gVol, e.gVol) || !slices.Equal(one.hGMask, e.hGMask) || !slices.Equal(one.hGFold, e.hGFold) {
			t.Errorf("%d workers: masks, kmeta or hub lists differ from one worker's", workers)
		}
	}
}

// checkEngine checks what the engine's arrays promise of each other.
func checkEngine(t *testing.T, e *engine) {
	t.Helper()
	w := e.w
	withHubs := 0
	for r := range e.n {
		if !zero(e.mask[r*w : r*w+w]) {
			withHubs++
		}
		// The fold has bit b%16 for each hub b, and no other.
		fold := uint16(0)
		forBits(e.mask[r*w:r*w+w], func(b int) { fold |= 1 << (b % 16) })
		if e.meta[r].fold != fold {
			t.Fatalf("rank %d: folded mask %016b, want %016b", r, e.meta[r].fold, fold)
		}
		lk := e.lURL[e.lOff[r]:e.lOff[r+1]]
		if !slices.IsSorted(lk) {
			t.Fatalf("rank %d: light URLs not sorted", r)
		}
		for _, l := range lk {
			if _, ok := slices.BinarySearch(e.pKw[e.pOff[l]:e.pOff[l+1]], uint32(r)); !ok {
				t.Fatalf("rank %d holds light URL %d but is not in its postings", r, l)
			}
		}
	}
	for l := 0; l+1 < len(e.pOff); l++ {
		p := e.pKw[e.pOff[l]:e.pOff[l+1]]
		if !slices.IsSorted(p) || l > 0 && e.pOff[l+1]-e.pOff[l] < e.pOff[l]-e.pOff[l-1] {
			t.Fatalf("light URL %d: postings not sorted, or ids not by df", l)
		}
	}
	if int(e.pOff[len(e.pOff)-1]) != len(e.lURL) {
		t.Fatalf("%d postings for %d light URLs held", e.pOff[len(e.pOff)-1], len(e.lURL))
	}
	if len(e.gKw) != withHubs {
		t.Fatalf("groups hold %d keywords; %d have hubs", len(e.gKw), withHubs)
	}
	for g := 0; g+1 < len(e.gOff); g++ {
		gm := e.gMask[g*w : g*w+w]
		if g > 0 && slices.Compare(e.gMask[(g-1)*w:g*w], gm) >= 0 {
			t.Fatalf("group %d: masks not in strictly increasing order", g)
		}
		m := e.gKw[e.gOff[g]:e.gOff[g+1]]
		if len(m) == 0 || !slices.IsSorted(m) {
			t.Fatalf("group %d: members empty or not by rank", g)
		}
		for j, r := range m {
			if !slices.Equal(e.mask[int(r)*w:int(r)*w+w], gm) {
				t.Fatalf("group %d: member %d has another mask", g, r)
			}
			if v := e.gVol[int(e.gOff[g])+j]; v != e.vol[r] {
				t.Fatalf("group %d: member %d listed with volume %d, has %d", g, r, v, e.vol[r])
			}
		}
	}
	// Each hub's groups, with their masks beside them.
	for b := 0; b < e.hubs; b++ {
		for j := e.hOff[b]; j < e.hOff[b+1]; j++ {
			g := int(e.hGrp[j])
			gm := e.gMask[g*w : g*w+w]
			if gm[b/64]&(1<<(b%64)) == 0 || !slices.Equal(e.hGMask[int(j)*w:int(j)*w+w], gm) || e.hGFold[j] != foldMask(gm) {
				t.Fatalf("hub %d: group %d does not hold it, or is listed with another mask or fold", b, g)
			}
		}
	}
	// Each hub's list: its keywords by rank, each one's volume, and which
	// other hubs it holds.
	for b := 0; b < e.hubs; b++ {
		es := e.hk[e.hkOff[b]:e.hkOff[b+1]]
		var want []uint32
		for r := range e.n {
			if e.mask[r*w+b/64]&(1<<(b%64)) != 0 {
				want = append(want, uint32(r))
			}
		}
		if len(es) != len(want) {
			t.Fatalf("hub %d: list of %d keywords; %d hold it", b, len(es), len(want))
		}
		for j, x := range es {
			m := e.mask[int(x.kw)*w : int(x.kw)*w+w]
			var others []int
			forBits(m, func(o int) {
				if o != b {
					others = append(others, o)
				}
			})
			other := uint16(manyHubs)
			switch len(others) {
			case 0:
				other = onlyHub
			case 1:
				other = uint16(others[0])
			}
			if x.kw != want[j] || x.vol != e.vol[x.kw] || x.other != other {
				t.Fatalf("hub %d, entry %d: %+v, want keyword %d, volume %d, other %d", b, j, x, want[j], e.vol[want[j]], other)
			}
		}
		for _, x := range es {
			for _, v := range []uint64{x.vol - 1, x.vol, x.vol + 1, 0, 1, math.MaxUint64} {
				want := sort.Search(len(es), func(i int) bool { return es[i].vol <= v })
				if got := e.hubFirst(b, es, v); got != want {
					t.Fatalf("hub %d: first member of volume at most %d at %d, want %d", b, v, got, want)
				}
			}
		}
	}
}

// The count table must count like a map whatever its keys' home slots:
// here many keys share the last slots, so probes run past the end of the
// table and wrap around.
func TestCountTable(t *testing.T) {
	var tab countTable
	for round, n := range []uint64{40, 5, 300, 40} {
		tab.reset(n)
		size := uint32(len(tab.slot))
		if uint64(size) < 2*n {
			t.Fatalf("round %d: %d slots for %d keys", round, size, n)
		}
		// Keys whose home is one of the last two slots, and a few others.
		var keys []uint32
		for c := uint32(0); len(keys) < int(n); c++ {
			if h := home(c, tab.shift) & (size - 1); h >= size-2 || c%97 == 0 {
				keys = append(keys, c)
			}
		}
		want := map[uint32]int32{}
		var ps []uint32
		for i, c := range keys {
			for range 1 + i%3 {
				ps = append(ps, c)
				want[c]++
			}
		}
		reach := make([]int32, 5)
		touched := tab.add(ps[:len(ps)/2], reach, nil, false)
		touched = tab.add(ps[len(ps)/2:], reach, touched, false)
		if more := tab.add([]uint32{keys[0], 1<<31 + 7}, reach, touched, true); len(more) != len(touched) {
			t.Fatalf("round %d: a seen-only add took a new key", round)
		}
		want[keys[0]]++
		if len(touched) != len(want) {
			t.Fatalf("round %d: %d slots touched for %d keys", round, len(touched), len(want))
		}
		for c, x := range want {
			if got := tab.count(c); got != x {
				t.Errorf("round %d: key %d counted %d, want %d", round, c, got, x)
			}
		}
		if got := tab.count(1<<31 + 7); got != 0 {
			t.Errorf("round %d: a key never added counted %d", round, got)
		}
		atLeast := make([]int32, 5)
		for _, x := range want {
			for v := int32(2); v <= x; v++ {
				atLeast[v]++
			}
		}
		if !slices.Equal(reach[2:], atLeast[2:]) {
			t.Errorf("round %d: reach %v, want %v", round, reach[2:], atLeast[2:])
		}
		for _, h := range touched {
			if c := entryKeyword(tab.slot[h]); want[c] != entryCount(tab.slot[h]) {
				t.Errorf("round %d: touched slot %d holds key %d with %d", round, h, c, entryCount(tab.slot[h]))
			}
			tab.slot[h] = 0
		}
		if slices.ContainsFunc(tab.slot[:cap(tab.slot)], func(s uint64) bool { return s != 0 }) {
			t.Fatalf("round %d: the table is not empty after its touched slots are cleared", round)
		}
	}
}

// volKey must never decrease as the volume grows, over every bit length.
func TestVolKey(t *testing.T) {
	last := -1
	for n := 0; n <= 64; n++ {
		for _, v := range []uint64{1<<n - 1, 1 << n, 1<<n + 1, 3 << n >> 1, 7 << n >> 2} {
			if n == 64 && v == 0 {
				continue
			}
			if k := volKey(v); k < 0 || k >= volKeys {
				t.Fatalf("volKey(%d) = %d, outside [0, %d)", v, k, volKeys)
			}
		}
	}
	vs := []uint64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 20, 21, 30, 31, 1000, 1001, 1 << 40, 1<<40 + 1<<39, math.MaxUint64 - 1, math.MaxUint64}
	for _, v := range vs {
		k := volKey(v)
		if k < last {
			t.Fatalf("volKey(%d) = %d, below the key of a smaller volume (%d)", v, k, last)
		}
		last = k
	}
}

// A keyword's folded mask has bit b%16 for each of its hubs b, whichever
// word of the mask holds b: two keywords that share a hub have folds that
// meet.
func TestFoldMask(t *testing.T) {
	const w = 4
	for b := range 64 * w {
		m := make([]uint64, w)
		m[b/64] |= 1 << (b % 64)
		if got, want := foldMask(m), uint16(1)<<(b%16); got != want {
			t.Fatalf("hub %d alone folds to %016b, want %016b", b, got, want)
		}
		m[(b+17)%(64*w)/64] |= 1 << ((b + 17) % 64)
		if got, want := foldMask(m), uint16(1)<<(b%16)|uint16(1)<<((b+17)%16); got != want {
			t.Fatalf("hubs %d and %d fold to %016b, want %016b", b, (b+17)%(64*w), got, want)
		}
	}
	if foldMask(make([]uint64, w)) != 0 {
		t.Fatal("no hubs fold to a non-zero fold")
	}
}
