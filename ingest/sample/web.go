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
// independently of this package (docs/perf/similarity.md, "The web
// shape"): about 9 distinct URLs a keyword, 0.7 intent-group leaders a
// keyword, 0.45 same-intent pairs a keyword, a light work (the sum of df²
// over non-hub URLs) of about 1e8, and almost no keyword sharing most of
// its SERP with ten others.
const (
	// webTight is the share of a group's members that keep its whole core
	// (11 to 13 results); they are same-intent with each other in cliques
	// of at most webClique, since each clique after the first replaces
	// webCliquePages of the core's own pages with pages of its own.
	webTight       = 0.6
	webClique      = 3
	webCliquePages = 10
	// webLooseGroup is the number of the group's own pages that the other
	// members keep, beside the topic's URLs and the core's hubs.
	webLooseGroup = 1
	// webGroupTopic is the chance that a group's core holds each of its
	// topic's URLs, and webLooseTopic the chance that a loose member keeps
	// each of those: a topic's URLs are in a few of its SERPs, not most.
	webGroupTopic = 0.35
	webLooseTopic = 0.5
	// webPoolDraw is the share of a loose member's free slots filled from
	// the mid-frequency pool; the rest are its own pages and hubs.
	webPoolDraw = 0.2
	// webLocal is the chance that a member's own slot holds instead a page
	// of its topic's local pages (forum threads, answers), of which a
	// topic of T keywords has webLocalPer·T: each is in about four SERPs,
	// and two keywords of a topic share one or none.
	webLocal    = 0.45
	webLocalPer = 1.1
	// webPoolPer is the number of keywords per URL of the pool, and
	// webPoolExp the Zipf exponent of its popularity: a flat one, so that
	// most pool URLs are in a few SERPs and the head in a few thousand.
	webPoolPer = 2
	webPoolExp = 0.5
	minPool    = 1000
	// webHubs is the number of hub URLs, and webHubHead the share of SERPs
	// holding the most popular one: a few more than the similarity stage's
	// 256 hubs, all above its cut-off (about 650 SERPs for the 256th at 1M
	// keywords, √N/2 = 500), so that no long tail of hub-like URLs falls
	// below the cut-off into the light URLs, where it would be most of the
	// light work (the default shape's Zipf tail was 45% of it).
	webHubs    = 272
	webHubHead = 0.09
	// webOwnHub is the share of the default shape's hub draws that a web
	// SERP makes in its own slots: most of a web SERP's hubs are its
	// group's, so hub masks repeat within groups (about 35,000 distinct
	// masks at 1M keywords).
	webOwnHub = 1.0 / 8
)

// localSections are the path sections of topic-local pages, which no
// other kind of URL uses.
var localSections = []string{"answers", "threads", "questions", "forums"}

// topicSizes returns the number of keywords of each topic of p.
func topicSizes(p *plan) []int32 {
	size := make([]int32, len(p.topics))
	for _, g := range p.groups {
		size[g.topic] += g.end - g.first
	}
	return size
}

// localLink makes page i of topic t's local pages, which depends on the
// topic and i only.
func (r *renderer) localLink(t int32, tslug string, i int, cat []int32) link {
	h := mix(r.p.seed ^ saltWeb ^ uint64(t)<<28 ^ uint64(i)<<4 ^ 0xa)
	host := cat[h%uint64(len(cat))]
	return link{
		host: r.sites.hosts[host], www: r.sites.www[host],
		path: "/" + localSections[(h>>32)%uint64(len(localSections))] + "/" + tslug + "-" + strconv.FormatUint(uint64(i), 36),
	}
}

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
