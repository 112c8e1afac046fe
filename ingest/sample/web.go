package sample

import (
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
)

// Shapes of Options.Shape.
const (
	// ShapeSample is the default: intent groups whose members share most
	// of their SERP, so most keywords sit in a group of several.
	ShapeSample = "sample"
	// ShapeWeb is the shape of a real country's long tail: most keywords
	// share only a few URLs with their group, the rest of their SERP is
	// their own pages, hubs and pages from a pool of mid-frequency URLs
	// (found in tens to thousands of SERPs across topics), so intent
	// groups are small and few SERPs overlap a hub group by much.
	ShapeWeb = "web"
)

// The web shape's parameters, chosen so that `kwdata similarity` logs, at
// 1M keywords, counters near those of a corpus of that shape generated
// independently of this package: about 9 distinct URLs a keyword, 0.7
// intent-group leaders a keyword, 0.45 same-intent pairs a keyword and a
// light work (the sum of df² over non-hub URLs) of about 1e8.
const (
	// webTight is the share of a group's members that share its whole
	// core (11 to 13 results) and so are same-intent with each other.
	webTight = 0.43
	// webLooseGroup is the number of the group's own pages that the other
	// members keep, beside the topic's URLs and the core's hubs.
	webLooseGroup = 2
	// webLooseTopic is the chance that a loose member keeps each of its
	// topic's URLs.
	webLooseTopic = 0.5
	// webPoolDraw is the share of a loose member's free slots filled from
	// the mid-frequency pool; the rest are its own pages and hubs.
	webPoolDraw = 0.3
	// webPoolPer is the number of keywords per URL of the pool, and
	// webPoolExp the Zipf exponent of its popularity: a flat one, so that
	// most pool URLs are in a few SERPs and the head in a few thousand.
	webPoolPer = 2
	webPoolExp = 0.5
	minPool    = 1000
)

// pool is the web shape's mid-frequency URLs: pages of the synthetic
// sites about the vocabulary's words, drawn by every topic.
type pool struct {
	cdf   []float64
	words []string
	seed  uint64
}

func newPool(seed uint64, n int) *pool {
	k := max(minPool, n/webPoolPer)
	p := &pool{cdf: make([]float64, k), words: hubWords(), seed: mix(seed ^ saltWeb)}
	total := 0.0
	for i := range p.cdf {
		total += math.Pow(float64(i+1), -webPoolExp)
		p.cdf[i] = total
	}
	return p
}

// draw returns a pool index.
func (p *pool) draw(rng *rand.Rand) int32 {
	u := rng.Float64() * p.cdf[len(p.cdf)-1]
	return int32(sort.SearchFloat64s(p.cdf, u))
}

// link makes pool URL i on one of the sites; its path section appears in
// no other kind of URL, so it never spells a topic, group or member page.
func (p *pool) link(i int32, sites *sitePool) link {
	h := mix(uint64(i) ^ p.seed)
	host := int(h % uint64(len(sites.hosts)))
	w := p.words[(h>>20)%uint64(len(p.words))]
	var b strings.Builder
	b.WriteString("/resources/")
	b.WriteString(slugString(w, '-'))
	b.WriteString("-")
	b.WriteString(strconv.FormatUint(uint64(i), 36))
	return link{host: sites.hosts[host], www: sites.www[host], path: b.String()}
}
