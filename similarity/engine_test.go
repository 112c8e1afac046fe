package similarity

import (
	"slices"
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
		} {
			if !slices.Equal(a.a, a.b) {
				t.Errorf("%d workers: %s differs from one worker's", workers, a.name)
			}
		}
		if !slices.Equal(one.mask, e.mask) || !slices.Equal(one.gMask, e.gMask) || !slices.Equal(one.meta, e.meta) {
			t.Errorf("%d workers: masks or kmeta differ from one worker's", workers)
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
		for _, r := range m {
			if !slices.Equal(e.mask[int(r)*w:int(r)*w+w], gm) {
				t.Fatalf("group %d: member %d has another mask", g, r)
			}
		}
	}
}
