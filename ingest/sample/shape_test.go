package sample

import (
	"path/filepath"
	"testing"

	"github.com/kwdata/kwdata/kw"
)

// shapeOf measures what the similarity stage feels of a sample: distinct
// URL keys a SERP, and the share of SERPs that hold the most frequent URL
// key (the head hub).
func shapeOf(tb testing.TB, opt Options) (newPerSERP, headShare float64) {
	tb.Helper()
	dir, _ := generate(tb, opt)
	df := map[string]int{}
	serps := 0
	for _, s := range readSERPs(tb, filepath.Join(dir, opt.Countries[0], SERPFile)) {
		serps++
		for _, r := range s.Results {
			k, err := kw.URLKey(r.URL)
			if err != nil {
				tb.Fatalf("url %q: %v", r.URL, err)
			}
			df[k]++
		}
	}
	head := 0
	for _, c := range df {
		head = max(head, c)
	}
	return float64(len(df)) / float64(serps), float64(head) / float64(serps)
}

// TestShapeOptions checks that URLTail and HubSkew change the shape they
// name, and only in the direction they say.
func TestShapeOptions(t *testing.T) {
	base := Options{Keywords: 20000, Countries: []string{"us"}, Seed: 5}
	defNew, defTop := shapeOf(t, base)
	tail := base
	tail.URLTail = 9
	tailNew, tailTop := shapeOf(t, tail)
	skew := base
	skew.HubSkew = 0.9
	skewNew, skewTop := shapeOf(t, skew)
	t.Logf("default: %.2f new URLs a SERP, the head hub is in %.3f of SERPs", defNew, defTop)
	t.Logf("url tail 9: %.2f, %.3f; hub skew 0.9: %.2f, %.3f", tailNew, tailTop, skewNew, skewTop)
	if defNew < 4 || defNew > 7.5 {
		t.Errorf("default shape has %.2f new URLs a SERP, want about 5", defNew)
	}
	if tailNew < 8 || tailNew > 11 {
		t.Errorf("URLTail 9 gives %.2f new URLs a SERP, want about 9", tailNew)
	}
	if skewTop <= defTop*1.2 {
		t.Errorf("HubSkew 0.9 leaves the head hub in %.3f of SERPs (default %.3f); want a larger share", skewTop, defTop)
	}
	if tailTop > defTop*1.5 || tailTop < defTop/1.5 {
		t.Errorf("URLTail 9 moves the head hub to %.3f of SERPs (default %.3f); want about the same (own slots draw a few more hubs)", tailTop, defTop)
	}
}

func TestShapeOptionsRejected(t *testing.T) {
	for _, o := range []Options{
		{Out: "x", URLTail: -1},
		{Out: "x", URLTail: MaxURLTail + 1},
		{Out: "x", HubSkew: 0.1},
		{Out: "x", HubSkew: 3},
	} {
		if _, err := o.withDefaults(); err == nil {
			t.Errorf("withDefaults(%+v) accepted a shape out of range", o)
		}
	}
}
