package similarity

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// tieVolumes are volumes whose smoothed ratios tie often: 5 and 11 are as
// close to 23 as 47 is (ratio 2 both ways), and equal volumes tie outright;
// 1023, 2047, 4095 and 2⁶²-1 smooth to powers of two, where a logarithm
// rounds right at a step. NoValue (no volume from the source) ranks as 0,
// so it ties with 0 and is then ordered by text.
var tieVolumes = []int64{NoValue, NoValue, 0, 0, 1, 2, 5, 5, 11, 11, 23, 47, 47, 95, 100, 191, 1000, 1023, 2047, 4095, 9_999_999_999, 4_999_999_999, 1<<62 - 1}

// randomCorpus is a small corpus for differential tests: few URLs so that
// overlaps are large and tie often, Zipf-popular URLs that become hubs,
// empty and tiny SERPs, duplicates within a SERP, volumes from tieVolumes.
func randomCorpus(rng *rand.Rand, n, nURL int) ([]Keyword, [][]string) {
	kws := make([]Keyword, n)
	serps := make([][]string, n)
	zipf := rand.NewZipf(rng, 1.1, 1, uint64(nURL-1))
	perm := rng.Perm(n)
	for i := range kws {
		v := tieVolumes[rng.IntN(len(tieVolumes))]
		if rng.IntN(4) == 0 {
			v = rng.Int64N(300)
		}
		cpc := rng.Int64N(5_000_000)
		if rng.IntN(8) == 0 {
			cpc = NoValue
		}
		kws[i] = Keyword{Text: fmt.Sprintf("k%04d", perm[i]), Volume: v, CPCMicros: cpc}
		size := rng.IntN(24)
		switch rng.IntN(8) {
		case 0:
			size = 0
		case 1:
			size = 1
		}
		if size == 0 && rng.IntN(2) == 0 {
			continue // nil SERP
		}
		s := make([]string, 0, size)
		for len(s) < size {
			var u int
			if rng.IntN(3) == 0 {
				u = int(zipf.Uint64())
			} else {
				u = rng.IntN(nURL)
			}
			s = append(s, fmt.Sprintf("site%d.example/p", u))
			if rng.IntN(10) == 0 { // a duplicate within the SERP
				s = append(s, s[rng.IntN(len(s))])
			}
		}
		serps[i] = s
	}
	// Intent groups: copy most of one SERP into a few others.
	for g := 0; g < n/10; g++ {
		src := rng.IntN(n)
		for range 1 + rng.IntN(4) {
			dst := rng.IntN(n)
			var s []string
			for _, u := range serps[src] {
				if rng.IntN(6) != 0 {
					s = append(s, u)
				}
			}
			serps[dst] = append(s, fmt.Sprintf("own%d.example/", dst))
			if rng.IntN(2) == 0 {
				kws[dst].Volume = kws[src].Volume + rng.Int64N(kws[src].Volume/2+2) - 1
			}
		}
	}
	return kws, serps
}

// realisticCorpus is the benchmark corpus: topics of about 60 keywords
// sharing a URL pool, intent groups of about 5 near-duplicate SERPs with
// close volumes, Zipf-popular hub URLs (the most popular in about 4% of
// SERPs), and unique long-tail URLs filling each SERP to 20.
func realisticCorpus(seed uint64, n int) ([]Keyword, [][]string) {
	return shapedCorpus(seed, n, corpusShape{groupURLs: 16, hubDraws: 3, hubSkew: 1.0001})
}

// corpusShape is what differs between the data shapes: how many URLs an
// intent group shares (the rest of a SERP is the keyword's own, the URL
// tail), and how many hub draws out of 10 a SERP makes from a Zipf of
// which exponent.
type corpusShape struct {
	groupURLs, hubDraws int
	hubSkew             float64
	// The web shape: tightOf10 members out of 10 share the group's URLs
	// (0: three out of four, as before); the others keep looseGroupURLs
	// of them and make poolDraws draws from a Zipf pool of mid-frequency
	// URLs shared by every topic, one per 10 keywords.
	tightOf10, looseGroupURLs, poolDraws int
}

// webCorpus is the heavy shape, small: most keywords share only a few
// URLs with their group and a few mid-frequency URLs with keywords of
// other topics, so intent groups are small and few keywords are cut early.
func webCorpus(seed uint64, n int) ([]Keyword, [][]string) {
	return shapedCorpus(seed, n, corpusShape{groupURLs: 11, hubDraws: 15, hubSkew: 1.3, tightOf10: 4, looseGroupURLs: 2, poolDraws: 6})
}

// tailCorpus is the second shape of the benchmark, small: a long URL tail
// (about 9 own URLs a SERP) and heavier hubs, the shape of real corpora.
func tailCorpus(seed uint64, n int) ([]Keyword, [][]string) {
	return shapedCorpus(seed, n, corpusShape{groupURLs: 8, hubDraws: 15, hubSkew: 1.3})
}

func shapedCorpus(seed uint64, n int, sh corpusShape) ([]Keyword, [][]string) {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	const topicSize, groupSize, hubPool = 60, 5, 2000
	zipf := rand.NewZipf(rng, sh.hubSkew, 1, hubPool-1)
	var pool *rand.Zipf
	if sh.poolDraws > 0 {
		pool = rand.NewZipf(rng, 1.05, 1, uint64(max(50, n/10)-1))
	}
	kws := make([]Keyword, n)
	serps := make([][]string, n)
	perm := rng.Perm(n)
	var groupBase []string
	var groupVol int64
	for i := 0; i < n; i++ {
		topic := i / topicSize
		if i%groupSize == 0 {
			groupBase = groupBase[:0]
			for j := range sh.groupURLs {
				groupBase = append(groupBase, fmt.Sprintf("g%d.example/%d", i, j))
			}
			groupVol = int64(math.Pow(10, rng.Float64()*6))
		}
		vol := groupVol + rng.Int64N(groupVol/2+1)
		if rng.IntN(3) == 0 {
			vol = int64(math.Pow(10, rng.Float64()*6))
		}
		kws[i] = Keyword{Text: fmt.Sprintf("kw %08d", perm[i]), Volume: vol, CPCMicros: rng.Int64N(3_000_000)}
		s := make([]string, 0, 20)
		var inGroup bool
		if sh.tightOf10 > 0 {
			inGroup = rng.IntN(10) < sh.tightOf10
		} else {
			inGroup = rng.IntN(4) != 0
		}
		if inGroup {
			for _, u := range groupBase {
				if rng.IntN(5) != 0 {
					s = append(s, u)
				}
			}
		} else {
			s = append(s, groupBase[:sh.looseGroupURLs]...)
			for range sh.poolDraws {
				if u := fmt.Sprintf("pool.example/%d", pool.Uint64()); !slices.Contains(s, u) {
					s = append(s, u)
				}
			}
		}
		for range 3 + rng.IntN(4) {
			s = append(s, fmt.Sprintf("t%d.example/%d", topic, rng.IntN(80)))
		}
		for d := sh.hubDraws; d > 0; d -= 10 {
			if rng.IntN(10) < min(d, 10) {
				s = append(s, fmt.Sprintf("hub%d.example/", zipf.Uint64()))
			}
		}
		for j := 0; len(s) < 20; j++ {
			s = append(s, fmt.Sprintf("u%d.example/%d", i, j))
		}
		serps[i] = s[:20]
	}
	return kws, serps
}
