package sample

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	xunicode "golang.org/x/text/encoding/unicode"
	"golang.org/x/text/unicode/norm"
)

// Shares of the awkward cases (per keyword or per SERP).
const (
	shareShortSERP   = 0.05
	shareDupURL      = 0.01
	shareURLVariant  = 0.10
	shareRange       = 0.01
	shareNoBid       = 0.08
	shareNoComp      = 0.02
	shareBlankMonths = 0.02 // keywords whose oldest months are blank
)

// Disjoint path sections for the three kinds of content URL, so that a
// topic, a group and a member URL never spell the same page by accident.
var (
	topicSections  = []string{"category", "topics", "collections", "hub", "c", "wiki"}
	groupSections  = []string{"reviews", "guide", "best", "compare", "lists", "buying-guide"}
	memberSections = []string{"blog", "article", "p", "products", "news", "forum", "how-to", "shop", "deals", "learn"}
)

type stats struct {
	keywords, plannerRows, groups, serps, serpRows int
}

// renderer turns a plan into file bytes. It is shared read-only by the
// workers; every random draw comes from a stream keyed by the group or
// keyword it belongs to, so the bytes do not depend on how work is split.
type renderer struct {
	p      *plan
	hubs   *hubs
	sites  *sitePool
	cc     string
	months []time.Time // first day of each monthly column, oldest first
	// urlTail is Options.URLTail: 0 keeps the default core of 12–18
	// shared results.
	urlTail float64
	// pool is the web shape's mid-frequency URLs; nil in the default shape.
	pool *pool
	// topicSize is each topic's number of keywords, in the web shape.
	topicSize []int32
	free      chan *chunkOut // written chunks, for reuse
}

// worker holds one goroutine's scratch space.
type worker struct {
	r       *renderer
	pcg     *rand.PCG
	rng     *rand.Rand
	enc     *encoding.Encoder
	core    []entry
	links   []link // member links of the current SERP
	serp    []entry
	monthly []int64
	slug    []byte
	oddBuf  []byte
	cat     int32 // category of the current group
	// looseEnd is, in the web shape, the length of the core's prefix that
	// a loose member keeps: the topic's URLs, the hubs and a few of the
	// group's own pages.
	looseEnd int
	topicEnd int     // the topic's URLs are core[:topicEnd]
	pooled   []int32 // pool URLs of the current SERP
	// In the web shape: the current group's number and slug, where its own
	// pages start in the core, how many of its members kept the whole
	// core so far (their clique is tight/webClique), and the pages of the
	// current member's clique.
	gi       int32
	gslug    string
	tslug    string
	topic    int32
	local    []int32 // topic-local pages of the current SERP
	ownStart int
	tight    int
	clique   []link
}

// entry is one result of a SERP; hub is the hub index or -1.
type entry struct {
	l   *link
	hub int32
}

func newWorker(r *renderer) *worker {
	pcg := rand.NewPCG(0, 0)
	return &worker{
		r: r, pcg: pcg, rng: rand.New(pcg),
		enc:     xunicode.UTF16(xunicode.LittleEndian, xunicode.IgnoreBOM).NewEncoder(),
		links:   make([]link, 0, 20),
		monthly: make([]int64, len(r.months)),
	}
}

func (w *worker) seed(salt, id uint64) {
	w.pcg.Seed(streamSeed(w.r.p.seed, salt, id))
}

// chunkOut is the rendered bytes of a run of groups. Its buffers are
// recycled through renderer.free.
type chunkOut struct {
	utf8    []byte // planner rows before encoding
	planner []byte // planner rows, UTF-16LE
	serps   []byte
	st      stats
}

// render renders groups [g0, g1).
func (w *worker) render(g0, g1 int32) *chunkOut {
	var out *chunkOut
	select {
	case out = <-w.r.free:
	default:
		// A chunk holds about 2 KB of SERPs and 200 bytes of planner rows
		// a keyword; sizing the buffers up front saves regrowing them.
		out = &chunkOut{
			utf8:  make([]byte, 0, keywordsPerChunk*256),
			serps: make([]byte, 0, keywordsPerChunk*2304),
		}
	}
	rows, serps := out.utf8[:0], out.serps[:0]
	out.st = stats{}
	p := w.r.p
	for gi := g0; gi < g1; gi++ {
		g := &p.groups[gi]
		w.buildCore(gi, g)
		out.st.groups++
		for ki := g.first; ki < g.end; ki++ {
			k := &p.keywords[ki]
			w.seed(saltKeyword, uint64(ki))
			raw := k.text
			if k.flags&flagOdd != 0 {
				raw = w.oddSpelling(k.text, w.rng.IntN(oddKinds))
			}
			if k.flags&flagOrphan == 0 {
				if k.flags&flagDup != 0 {
					// A second spelling of the same keyword with another
					// volume, before or after the first.
					dupRaw := w.oddSpelling(k.text, w.rng.IntN(oddKinds))
					dupVol := otherBucket(int64(k.vol), w.rng)
					if w.rng.IntN(2) == 0 {
						rows = w.plannerRow(rows, dupRaw, dupVol, g)
						rows = w.plannerRow(rows, raw, int64(k.vol), g)
					} else {
						rows = w.plannerRow(rows, raw, int64(k.vol), g)
						rows = w.plannerRow(rows, dupRaw, dupVol, g)
					}
					out.st.plannerRows++
				} else {
					rows = w.plannerRow(rows, raw, int64(k.vol), g)
				}
				out.st.keywords++
				out.st.plannerRows++
			}
			if k.flags&flagNoSERP == 0 {
				var n int
				serps, n = w.serpLine(serps, raw, k.text)
				out.st.serps++
				out.st.serpRows += n
			}
		}
	}
	// Encode in the worker, so that the UTF-16 transform runs in parallel.
	// UTF-16 never takes more than twice the bytes of UTF-8.
	dst := out.planner[:cap(out.planner)]
	if len(dst) < 2*len(rows) {
		dst = make([]byte, 2*len(rows)+len(rows)/4)
	}
	w.enc.Reset()
	nDst, _, err := w.enc.Transform(dst, rows, true)
	if err != nil {
		// Every row is valid UTF-8 built from the vocabulary; a failure here
		// is a bug in this package.
		panic(fmt.Sprintf("sample: cannot encode planner rows as UTF-16: %v", err))
	}
	out.utf8, out.planner, out.serps = rows, dst[:nDst], serps
	return out
}

// buildCore makes the results that every member of group gi shares: the
// topic's URLs (shared with the topic's other groups), a few hubs and the
// group's own pages, in the group's order.
func (w *worker) buildCore(gi int32, g *group) {
	r := w.r
	t := &r.p.topics[g.topic]
	w.cat = t.cat
	cat := r.sites.byCat[t.cat]
	w.core = w.core[:0]

	// The topic's URLs come from the topic's own stream.
	w.seed(saltTopic, uint64(g.topic))
	nt := 3 + w.rng.IntN(6)
	h0, s0 := w.rng.IntN(len(cat)), w.rng.IntN(len(topicSections))
	if r.pool != nil {
		nt = 2 + nt%2 // the web's topics share fewer pages
		w.topicEnd = nt
	}
	w.slug = appendSlug(w.slug[:0], t.plural)
	tslug := string(w.slug)
	for j := 0; j < nt; j++ {
		host := cat[(h0+7*j)%len(cat)]
		w.core = append(w.core, entry{hub: -1, l: &link{
			host: r.sites.hosts[host], www: r.sites.www[host],
			path: "/" + topicSections[(s0+j)%len(topicSections)] + "/" + tslug + "/",
		}})
	}

	w.seed(saltGroup, uint64(gi))
	size := 12 + w.rng.IntN(7) // results shared by all members
	if r.urlTail > 0 {
		// A longer tail: the core leaves about urlTail results to each
		// member's own pages, give or take three, and keeps at least the
		// topic's URLs and one of the group's own.
		size = min(20, max(nt+1, 17-int(math.Round(r.urlTail))+w.rng.IntN(7)))
	}
	if r.pool != nil {
		size = 11 + w.rng.IntN(3)
		kept := w.core[:0]
		for _, e := range w.core {
			if w.rng.Float64() < webGroupTopic {
				kept = append(kept, e)
			}
		}
		w.core, w.topicEnd = kept, len(kept)
	}
	nh := poisson(w.rng, 0.6*r.hubs.draws)
	for j := 0; j < nh && len(w.core) < size-1; j++ {
		if h := r.hubs.draw(w.rng); !hasHub(w.core, h) {
			w.core = append(w.core, entry{hub: h, l: &r.hubs.links[h]})
		}
	}
	w.slug = appendSlug(w.slug[:0], r.p.keywords[g.first].text)
	w.slug = append(w.slug, '-')
	w.slug = strconv.AppendUint(w.slug, uint64(gi), 36)
	gslug := string(w.slug)
	h0 = w.rng.IntN(len(cat))
	w.ownStart = len(w.core)
	w.looseEnd = len(w.core) + webLooseGroup
	for j := 0; len(w.core) < size; j++ {
		pool := cat
		if w.rng.IntN(4) == 0 {
			pool = r.sites.common
		}
		host := pool[(h0+7*j)%len(pool)]
		path := "/" + groupSections[w.rng.IntN(len(groupSections))] + "/" + gslug
		if w.rng.IntN(2) == 0 {
			path += "/"
		}
		w.core = append(w.core, entry{hub: -1, l: &link{host: r.sites.hosts[host], www: r.sites.www[host], path: path}})
	}
	if r.pool != nil {
		// Kept in the order built, topic, hubs, group: serpLine takes a
		// prefix of it and shuffles that.
		w.looseEnd = min(w.looseEnd, len(w.core))
		w.gi, w.gslug, w.tight = gi, gslug, 0
		w.tslug, w.topic = tslug, g.topic
		return
	}
	w.rng.Shuffle(len(w.core), func(i, j int) { w.core[i], w.core[j] = w.core[j], w.core[i] })
}

// cliquePages replaces, for the members of clique j > 0 of the current
// group, the last webCliquePages of the core's own pages in w.serp with
// the clique's own: the members of a clique share the whole core of 11 to
// 13 results, and two cliques at most 7 of them, below the same-intent
// overlap of 8. The pages depend on the group and the clique only.
func (w *worker) cliquePages(j int) {
	if j == 0 {
		return
	}
	r := w.r
	nrep := min(webCliquePages, len(w.serp)-w.ownStart)
	if cap(w.clique) < webCliquePages {
		w.clique = make([]link, 0, webCliquePages)
	}
	w.clique = w.clique[:0]
	cat := r.sites.byCat[w.cat]
	for p := range nrep {
		h := mix(r.p.seed ^ saltWeb ^ uint64(w.gi)<<24 ^ uint64(j)<<8 ^ uint64(p))
		host := cat[h%uint64(len(cat))]
		w.clique = append(w.clique, link{
			host: r.sites.hosts[host], www: r.sites.www[host],
			path: "/" + groupSections[(h>>32)%uint64(len(groupSections))] + "/" + w.gslug + "/" + strconv.Itoa(j) + "-" + strconv.Itoa(p),
		})
		w.serp[len(w.serp)-nrep+p] = entry{hub: -1, l: &w.clique[p]}
	}
}

func hasPooled(ids []int32, i int32) bool {
	for _, x := range ids {
		if x == i {
			return true
		}
	}
	return false
}

func hasHub(es []entry, h int32) bool {
	for _, e := range es {
		if e.hub == h {
			return true
		}
	}
	return false
}

// poisson draws from a Poisson distribution with a small mean.
func poisson(rng *rand.Rand, mean float64) int {
	l, k, p := math.Exp(-mean), 0, 1.0
	for {
		p *= rng.Float64()
		if p <= l {
			return k
		}
		k++
	}
}

// serpLine writes one keyword's SERP: the group's core in nearly the group's
// order, with the keyword's own results (its pages and hub draws) mixed in.
func (w *worker) serpLine(b []byte, raw, text string) ([]byte, int) {
	r := w.r
	rng := w.rng
	w.serp = append(w.serp[:0], w.core...)
	pPool := 0.0
	if r.pool != nil {
		// Most members of a web group keep only part of its core and draw
		// from the pool; the tight ones keep all of it.
		if rng.Float64() >= webTight {
			w.serp = w.serp[:0]
			for i, e := range w.core[:w.looseEnd] {
				if i >= w.topicEnd || rng.Float64() < webLooseTopic {
					w.serp = append(w.serp, e)
				}
			}
			pPool = webPoolDraw
		} else {
			w.cliquePages(w.tight / webClique)
			w.tight++
		}
		rng.Shuffle(len(w.serp), func(i, j int) { w.serp[i], w.serp[j] = w.serp[j], w.serp[i] })
		w.pooled = w.pooled[:0]
	}
	for i := 1; i < len(w.serp); i++ {
		if rng.IntN(6) == 0 {
			w.serp[i-1], w.serp[i] = w.serp[i], w.serp[i-1]
		}
	}
	own := 20 - len(w.serp)
	pHub := 0.4 * r.hubs.draws / 5
	nLocal := 0
	if r.pool != nil {
		pHub *= webOwnHub
		nLocal = max(4, int(webLocalPer*float64(r.topicSize[w.topic])))
		w.local = w.local[:0]
	}
	w.links = w.links[:0]
	var kslug string
	s0 := rng.IntN(len(memberSections))
	for j := 0; j < own; j++ {
		e := entry{hub: -1}
		if pPool > 0 && rng.Float64() < pPool {
			if i := r.pool.draw(rng); !hasPooled(w.pooled, i) {
				w.pooled = append(w.pooled, i)
				w.links = append(w.links, r.pool.link(i, r.sites))
				e.l = &w.links[len(w.links)-1]
			}
		} else if rng.Float64() < pHub {
			if h := r.hubs.draw(rng); !hasHub(w.serp, h) {
				e = entry{hub: h, l: &r.hubs.links[h]}
			}
		} else if nLocal > 0 && rng.Float64() < webLocal {
			if i := int32(rng.IntN(nLocal)); !hasPooled(w.local, i) {
				w.local = append(w.local, i)
				w.links = append(w.links, r.localLink(w.topic, w.tslug, int(i), r.sites.byCat[w.cat]))
				e.l = &w.links[len(w.links)-1]
			}
		}
		if e.l == nil {
			if kslug == "" {
				w.slug = appendSlug(w.slug[:0], text)
				kslug = string(w.slug)
			}
			pool := r.sites.byCat[w.cat]
			if rng.IntN(3) == 0 {
				pool = r.sites.common
			}
			host := pool[rng.IntN(len(pool))]
			w.links = append(w.links, link{
				host: r.sites.hosts[host], www: r.sites.www[host],
				path: "/" + memberSections[(s0+j)%len(memberSections)] + "/" + kslug,
			})
			e.l = &w.links[len(w.links)-1]
		}
		pos := rng.IntN(len(w.serp) + 1)
		w.serp = append(w.serp, entry{})
		copy(w.serp[pos+1:], w.serp[pos:])
		w.serp[pos] = e
	}
	n := len(w.serp)
	if rng.Float64() < shareShortSERP {
		n = 8 + rng.IntN(12)
	}
	if rng.Float64() < shareDupURL {
		i := rng.IntN(n - 1)
		j := i + 1 + rng.IntN(n-1-i)
		w.serp[j] = w.serp[i]
	}

	b = append(b, `{"keyword": `...)
	b = appendJSONString(b, raw)
	b = append(b, `, "country": "`...)
	b = append(b, r.cc...)
	b = append(b, `", "results": [`...)
	for i, e := range w.serp[:n] {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, `{"rank": `...)
		b = strconv.AppendInt(b, int64(i+1), 10)
		b = append(b, `, "url": "`...)
		v := 0
		if rng.Float64() < shareURLVariant {
			v = randomVariant(rng)
		}
		b = appendURL(b, e.l, v, rng.Uint32())
		b = append(b, `"}`...)
	}
	b = append(b, "]}\n"...)
	return b, n
}

// appendJSONString writes s as a JSON string.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// Odd spellings: each normalizes back to the keyword (kw.NormalizeKeyword).
const (
	oddTitle = iota
	oddUpper
	oddDoubleSpace
	oddPadded
	oddFullWidth
	oddDecomposed
	oddKinds
)

func (w *worker) oddSpelling(text string, kind int) string {
	b := w.oddBuf[:0]
	switch kind {
	case oddTitle:
		up := true
		for _, r := range text {
			if up {
				b = utf8.AppendRune(b, toUpper(r))
			} else {
				b = utf8.AppendRune(b, r)
			}
			up = r == ' '
		}
	case oddUpper:
		for _, r := range text {
			b = utf8.AppendRune(b, toUpper(r))
		}
	case oddDoubleSpace:
		i := strings.IndexByte(text, ' ')
		if i < 0 {
			b = append(append(append(b, "  "...), text...), ' ')
			break
		}
		b = append(append(append(b, text[:i]...), "  "...), text[i+1:]...)
	case oddPadded:
		b = append(append(append(b, ' '), text...), "  "...)
	case oddFullWidth:
		// The first word in full-width forms, which NFKC folds back.
		word := true
		for _, r := range text {
			if r == ' ' {
				word = false
			}
			if word && r >= 'a' && r <= 'z' {
				r = r - 'a' + 'ａ'
			}
			b = utf8.AppendRune(b, r)
		}
	case oddDecomposed:
		if isASCII(text) {
			b = append(append(b, text...), "\u00a0"...) // a trailing no-break space
			break
		}
		b = norm.NFD.AppendString(b, text)
	}
	w.oddBuf = b
	return string(b)
}

// toUpper upper-cases letters whose lower case maps back to them, so the
// spelling normalizes to the original keyword.
func toUpper(r rune) rune {
	u := unicode.ToUpper(r)
	if unicode.ToLower(u) != r {
		return r
	}
	return u
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// otherBucket returns a volume a few buckets away from v.
func otherBucket(v int64, rng *rand.Rand) int64 {
	i := bucketIndex(float64(v))
	d := 1 + rng.IntN(3)
	if rng.IntN(2) == 0 && i-d >= 0 {
		return volumeBuckets[i-d]
	}
	return volumeBuckets[min(i+d, len(volumeBuckets)-1)]
}
