package sample

import (
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"

	"github.com/kwdata/kwdata/kw"
)

// link is a result URL in its canonical spelling:
// "https://" + ["www."] + host + path + ["?" + query].
type link struct {
	host  string
	path  string // starts with "/"
	query string
	www   bool
}

// Hub popularity: hub i is drawn with probability proportional to
// 1/(i+1)^hubExponent (Options.HubSkew overrides the exponent). With hubTarget the expected share of SERPs that hold
// the most popular hub, the number of hub draws per SERP follows from the
// normalizing sum, so the head share stays put while the tail grows with n.
const (
	hubExponent = 0.8
	hubTarget   = 0.045
	hubsPerKW   = 8 // one distinct hub URL per this many keywords
	minHubs     = 200
)

// hubs is the Zipf-popular set of URLs of one country.
type hubs struct {
	links []link
	cdf   []float64 // cumulative weights, cdf[len-1] is the total
	draws float64   // expected hub draws per SERP
}

// newHubs makes the hubs of n keywords: count of them, or with count 0
// one per hubsPerKW keywords (at least minHubs); head is the expected share
// of SERPs that hold the most popular one (0: hubTarget).
func newHubs(cc string, seed uint64, n int, skew float64, count int, head float64) *hubs {
	k := max(minHubs, n/hubsPerKW)
	if count > 0 {
		k = count
	}
	if head == 0 {
		head = hubTarget
	}
	h := &hubs{links: make([]link, k), cdf: make([]float64, k)}
	c, _ := kw.LookupCountry(cc)
	lang := strings.SplitN(c.LanguageCode, "-", 2)[0]
	tld := countryTLD(cc)
	words := hubWords()
	total, base := 0.0, 0.0
	for i := range h.links {
		total += math.Pow(float64(i+1), -skew)
		base += math.Pow(float64(i+1), -hubExponent)
		h.cdf[i] = total
		h.links[i] = hubLink(i, lang, tld, words, seed)
	}
	// The draws a SERP are those of the default exponent whatever the
	// skew, so a larger skew moves the same hub results onto fewer, more
	// frequent hubs (the head's share grows past hubTarget).
	h.draws = head * base
	return h
}

// draw returns a hub index.
func (h *hubs) draw(rng *rand.Rand) int32 {
	u := rng.Float64() * h.cdf[len(h.cdf)-1]
	return int32(sort.SearchFloat64s(h.cdf, u))
}

func countryTLD(cc string) string {
	switch cc {
	case "us":
		return "com"
	case "gb":
		return "co.uk"
	case "au", "br", "mx", "ar", "tr", "sg", "my", "pk", "ph", "eg", "sa", "co", "pe", "ec", "ng", "bd", "hk", "tw", "vn":
		return "com." + cc
	case "jp", "nz", "za", "kr", "in", "id", "th", "il", "ke":
		return "co." + cc
	}
	return cc
}

// hubWords are the words hub paths are made of: every head term and
// qualifier of the vocabulary.
func hubWords() []string {
	var ws []string
	for _, c := range enCategories {
		for _, n := range c.nouns {
			ws = append(ws, n.plural)
		}
		ws = append(ws, c.quals...)
	}
	return ws
}

// hubLink makes hub i. The first hubs are the sites' home pages; the rest
// are pages of those sites about the vocabulary's words.
func hubLink(i int, lang, tld string, words []string, seed uint64) link {
	site := hubSites[i%len(hubSites)]
	if i >= len(hubSites) {
		site = hubSites[mix(uint64(i)^seed)%uint64(len(hubSites))]
	}
	l := link{host: site.name + ".com", www: site.www, path: "/"}
	if site.local && tld != "com" {
		l.host = site.name + "." + tld
	}
	if site.kind == hubWiki {
		l.host = lang + ".wikipedia.org"
		l.path = "/wiki/Main_Page"
	}
	if i < len(hubSites) {
		return l
	}
	h := mix(uint64(i) ^ mix(seed^saltHub))
	w := words[h%uint64(len(words))]
	id := strconv.FormatUint(uint64(i), 36)
	var b strings.Builder
	switch site.kind {
	case hubWiki:
		b.WriteString("/wiki/")
		b.WriteString(strings.ToUpper(w[:1]))
		b.WriteString(slugString(w[1:], '_'))
		b.WriteString("_(")
		b.WriteString(id)
		b.WriteString(")")
	case hubProduct:
		b.WriteString("/")
		b.WriteString(slugString(w, '-'))
		b.WriteString("/dp/B0")
		b.WriteString(strings.ToUpper(strconv.FormatUint(h>>24%(36*36*36*36), 36)))
		b.WriteString(strings.ToUpper(id))
	case hubVideo:
		b.WriteString("/watch")
		l.query = "v=" + strconv.FormatUint(h>>8, 36)[:6] + id
	case hubForum:
		b.WriteString("/r/")
		b.WriteString(slugString(strings.ReplaceAll(w, " ", ""), '-'))
		b.WriteString("/comments/")
		b.WriteString(id)
		b.WriteString("/")
	case hubPin:
		b.WriteString("/pin/")
		b.WriteString(strconv.FormatUint(h>>20, 10))
		b.WriteString(id)
		b.WriteString("/")
	case hubQuestion:
		b.WriteString("/What-are-the-best-")
		b.WriteString(slugString(w, '-'))
		b.WriteString("-")
		b.WriteString(id)
	case hubArticle:
		b.WriteString("/")
		b.WriteString(strconv.Itoa(2015 + int(h%12)))
		b.WriteString("/")
		b.WriteString(slugString(w, '-'))
		b.WriteString("-")
		b.WriteString(id)
		b.WriteString("/")
	default:
		b.WriteString("/")
		b.WriteString(slugString(w, '-'))
		b.WriteString("-")
		b.WriteString(id)
	}
	l.path = b.String()
	return l
}

// sitePool is the synthetic domains of one country; each category ranks a
// subset of it.
type sitePool struct {
	hosts  []string
	www    []bool
	byCat  [][]int32 // indices into hosts, per category
	common []int32   // sites of any category (news, forums)
}

func newSitePool(cc string, seed uint64, ncat int) *sitePool {
	tld := countryTLD(cc)
	s1, s2 := streamSeed(seed, saltSites, 0)
	rng := rand.New(rand.NewPCG(s1, s2))
	sp := &sitePool{}
	for _, a := range siteStems {
		for _, b := range siteSuffixes {
			host := a + b + ".com"
			if rng.IntN(10) < 3 {
				host = a + b + "." + tld
			}
			sp.hosts = append(sp.hosts, host)
			sp.www = append(sp.www, rng.IntN(10) < 6)
		}
	}
	all := make([]int32, len(sp.hosts))
	for i := range all {
		all[i] = int32(i)
	}
	sp.byCat = make([][]int32, ncat)
	for c := range sp.byCat {
		rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
		sp.byCat[c] = append([]int32(nil), all[:60]...)
	}
	rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	sp.common = append([]int32(nil), all[:200]...)
	return sp
}

// slugString is appendSlug with a chosen word separator.
func slugString(text string, sep byte) string {
	b := appendSlug(nil, text)
	for i, c := range b {
		if c == '-' {
			b[i] = sep
		}
	}
	return string(b)
}

// appendSlug writes a keyword as a URL path segment: spaces become hyphens,
// apostrophes go, and non-ASCII bytes are percent-encoded.
func appendSlug(b []byte, text string) []byte {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case c == ' ':
			b = append(b, '-')
		case c == '\'':
		case c >= 0x80:
			b = append(b, '%', hex[c>>4], hex[c&15])
		default:
			b = append(b, c)
		}
	}
	return b
}

// Spelling variants of a URL; each keeps its kw.URLKey.
const (
	varHTTP      = 1 << iota
	varWWW           // toggle the "www." prefix
	varUpperHost     // upper-case host
	varPort          // explicit :443 (or :80 with http)
	varSlash         // toggle the trailing slash
	varUTM           // tracking parameters
	varFragment      // "#..." fragment
	varCount     = 7 // number of variant kinds
)

var utmTails = []string{
	"utm_source=google&utm_medium=organic",
	"utm_source=newsletter&utm_medium=email&utm_campaign=spring",
	"utm_campaign=brand&utm_source=bing",
	"gclid=EAIaIQobChMI",
	"fbclid=IwAR2x",
}

var fragments = []string{"#reviews", "#top", "#section-2", "#comments", "#faq", "#price"}

// appendURL writes l, spelled as variant v (0 is the canonical spelling).
// pick chooses among the tracking tails and fragments.
func appendURL(b []byte, l *link, v int, pick uint32) []byte {
	if v&varHTTP != 0 {
		b = append(b, "http://"...)
	} else {
		b = append(b, "https://"...)
	}
	start := len(b)
	if l.www != (v&varWWW != 0) {
		b = append(b, "www."...)
	}
	b = append(b, l.host...)
	if v&varUpperHost != 0 {
		for i := start; i < len(b); i++ {
			if c := b[i]; c >= 'a' && c <= 'z' {
				b[i] = c - 'a' + 'A'
			}
		}
	}
	if v&varPort != 0 {
		if v&varHTTP != 0 {
			b = append(b, ":80"...)
		} else {
			b = append(b, ":443"...)
		}
	}
	path := l.path
	if v&varSlash != 0 {
		if strings.HasSuffix(path, "/") {
			path = path[:len(path)-1]
		} else {
			b = append(b, path...)
			path = "/"
		}
	}
	b = append(b, path...)
	q := l.query
	if q != "" {
		b = append(append(b, '?'), q...)
	}
	if v&varUTM != 0 {
		if q != "" {
			b = append(b, '&')
		} else {
			b = append(b, '?')
		}
		b = append(b, utmTails[pick%uint32(len(utmTails))]...)
	}
	if v&varFragment != 0 {
		b = append(b, fragments[(pick>>8)%uint32(len(fragments))]...)
	}
	return b
}

// randomVariant returns a non-zero variant: one kind, sometimes two.
func randomVariant(rng *rand.Rand) int {
	v := 1 << rng.IntN(varCount)
	if rng.IntN(4) == 0 {
		v |= 1 << rng.IntN(varCount)
	}
	return v
}
