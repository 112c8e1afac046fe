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
		{Out: "x", Shape: "webby"},
		{Out: "x", Shape: ShapeWeb, URLTail: 9},
	} {
		if _, err := o.withDefaults(); err == nil {
			t.Errorf("withDefaults(%+v) accepted a shape out of range", o)
		}
	}
}

// overlapShape measures what makes the web shape heavy for the similarity
// stage: the share of keywords with another keyword that shares at least
// minOverlap of its URL keys (a same-intent neighbour), the share with ten
// keywords that share at least four (those the light pass can cut early),
// and the share of result rows whose URL key is in between 10 and 5,000
// SERPs.
func overlapShape(tb testing.TB, opt Options, minOverlap int) (withNeighbour, crowded, midRows float64) {
	tb.Helper()
	dir, _ := generate(tb, opt)
	serps := readSERPs(tb, filepath.Join(dir, opt.Countries[0], SERPFile))
	ids := map[string]int32{}
	keys := make([][]int32, len(serps))
	var df []int
	for i, s := range serps {
		seen := map[int32]bool{}
		for _, r := range s.Results {
			k, err := kw.URLKey(r.URL)
			if err != nil {
				tb.Fatalf("url %q: %v", r.URL, err)
			}
			id, ok := ids[k]
			if !ok {
				id = int32(len(df))
				ids[k] = id
				df = append(df, 0)
			}
			if !seen[id] {
				seen[id] = true
				keys[i] = append(keys[i], id)
				df[id]++
			}
		}
	}
	post := make([][]int32, len(df))
	rows, mid := 0, 0
	for i, ks := range keys {
		for _, u := range ks {
			post[u] = append(post[u], int32(i))
			rows++
			if df[u] >= 10 && df[u] <= 5000 {
				mid++
			}
		}
	}
	count := make([]int, len(serps))
	with, crowd := 0, 0
	for i, ks := range keys {
		var touched []int32
		for _, u := range ks {
			for _, j := range post[u] {
				if int(j) != i {
					if count[j] == 0 {
						touched = append(touched, j)
					}
					count[j]++
				}
			}
		}
		found, near := false, 0
		for _, j := range touched {
			found = found || count[j] >= minOverlap
			if count[j] >= 4 {
				near++
			}
			count[j] = 0
		}
		if found {
			with++
		}
		if near >= 10 {
			crowd++
		}
	}
	n := float64(len(serps))
	return float64(with) / n, float64(crowd) / n, float64(mid) / float64(rows)
}

// TestWebShape checks that the web shape is what it says: a long tail of
// URLs, most keywords without a same-intent neighbour, hardly any with ten
// keywords sharing several URLs (so the light pass's early cut rarely
// applies), and still a share of the results on mid-frequency URLs.
func TestWebShape(t *testing.T) {
	base := Options{Keywords: 20000, Countries: []string{"us"}, Seed: 5}
	web := base
	web.Shape = ShapeWeb
	webNew, _ := shapeOf(t, web)
	defNb, defCrowd, defMid := overlapShape(t, base, 8)
	webNb, webCrowd, webMid := overlapShape(t, web, 8)
	t.Logf("default: %.2f of keywords have a same-intent neighbour, %.3f ten sharing 4 URLs, %.2f of rows on mid-frequency URLs", defNb, defCrowd, defMid)
	t.Logf("web: %.2f new URLs a SERP, %.2f with a neighbour, %.3f ten sharing 4, %.2f on mid-frequency URLs", webNew, webNb, webCrowd, webMid)
	if webNew < 8 || webNew > 12 {
		t.Errorf("web shape gives %.2f new URLs a SERP, want about 9", webNew)
	}
	if defNb < 0.8 {
		t.Errorf("default shape: only %.2f of keywords have a same-intent neighbour, want most", defNb)
	}
	if webNb > 0.6 || webNb < 0.2 {
		t.Errorf("web shape: %.2f of keywords have a same-intent neighbour, want a minority (about 0.45)", webNb)
	}
	if webCrowd > 0.05 || webCrowd > defCrowd/4 {
		t.Errorf("web shape: %.3f of keywords have ten keywords sharing 4 URLs (default %.3f); want few", webCrowd, defCrowd)
	}
	// The pool, the topics' local pages and the hubs keep a share of the
	// rows on URLs shared by tens to thousands of SERPs, though groups
	// share little; most of what is shared is shared by a few SERPs.
	if webMid < 0.05 || webMid > defMid/2 {
		t.Errorf("web shape puts %.2f of rows on mid-frequency URLs (default %.2f); want about a tenth", webMid, defMid)
	}
}
