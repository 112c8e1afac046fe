package sample

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/kwdata/kwdata/kw"
)

// Salts keep the random streams of different purposes apart, so that adding
// a draw to one never shifts another.
const (
	saltPlan uint64 = iota + 1
	saltTopic
	saltGroup
	saltKeyword
	saltHub
	saltSites
	saltCompound
	saltWeb
)

// mix is SplitMix64's finalizer: it spreads consecutive seeds over the whole
// state space before they seed a PCG.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// streamSeed derives the PCG seed of stream id of one purpose.
func streamSeed(country, salt, id uint64) (uint64, uint64) {
	return mix(country ^ mix(salt)), mix(id ^ mix(salt<<32^country))
}

// countrySeed is the base of every stream of one country, so that countries
// of one run differ and a country's data does not depend on the others.
func countrySeed(seed int64, cc string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(cc); i++ {
		h ^= uint64(cc[i])
		h *= 1099511628211
	}
	return mix(uint64(seed) ^ mix(h))
}

// Keyword flags.
const (
	flagNoSERP = 1 << iota // in the planner file only
	flagOrphan             // in the SERP file only
	flagOdd                // written with odd case, spacing or Unicode form
	flagDup                // a second planner row normalizes to the same keyword
)

// keyword is one generated keyword. text is already normalized.
type keyword struct {
	text  string
	vol   int32 // bucketed average monthly searches
	flags uint8
}

// group is an intent group: members are keywords[first:end].
type group struct {
	topic      int32
	first, end int32
}

// topic is a head term, optionally qualified ("waterproof hiking boots").
type topic struct {
	cat      int32
	plural   string
	singular string
	pop      float32 // log-scale popularity
	next     int32   // next group index to use
	space    int32   // number of group keys
	stride   int32   // permutation step over group keys, coprime to space
}

// vocab is the vocabulary of one country.
type vocab struct {
	cats          []category
	mods          []modifier
	shopPrefixes  []string
	shopSuffixes  []string
	questPrefixes []string
	questSuffixes []string
	lang          string
}

func vocabFor(cc string) vocab {
	c, _ := kw.LookupCountry(cc)
	v := vocab{
		cats: enCategories, mods: enModifiers,
		shopPrefixes: enShopPrefixes, shopSuffixes: enShopSuffixes,
		questPrefixes: enQuestionPrefixes, questSuffixes: enQuestionSuffixes,
		lang: strings.SplitN(c.LanguageCode, "-", 2)[0],
	}
	if v.lang == "de" {
		v.cats = append(append([]category(nil), enCategories...), deCategory)
		v.mods = append(append([]modifier(nil), enModifiers...), deModifiers...)
		v.shopPrefixes = append(append([]string(nil), enShopPrefixes...), deShopPrefixes[1:]...)
		v.shopSuffixes = append(append([]string(nil), enShopSuffixes...), deShopSuffixes[1:]...)
	}
	return v
}

// serviceCategories sell no object, so physicalModifiers do not apply.
var (
	serviceCategories = map[string]bool{"food": true, "finance": true, "education": true, "jobs": true, "travel": true}
	physicalModifiers = map[string]bool{
		"how to clean %": true, "how to store %": true, "% repair": true, "% replacement": true,
		"% size guide": true, "% accessories": true, "how long do % last": true, "used %": true,
		"% set": true, "% outlet": true, "% clearance": true, "% rental": true, "when to replace %": true,
		"% warranty": true, "% for travel": true, "wie reinigt man %": true, "% größentabelle": true,
	}
)

// preAttrs are attributes that read before the head term ("black sneakers");
// the others follow it ("sneakers for kids").
var preAttrs = map[string]bool{
	"black": true, "white": true, "red": true, "blue": true, "pink": true, "grey": true, "green": true,
	"small": true, "large": true, "lightweight": true, "quiet": true, "16gb": true, "32gb": true, "1tb": true,
	"bulk": true, "10kg": true, "20 kg": true, "50 lb": true, "8 quart": true, "5 litre": true,
}

// plan is the keyword side of one country's data: every keyword, grouped.
type plan struct {
	cc       string
	seed     uint64
	voc      vocab
	topics   []topic
	groups   []group
	keywords []keyword
	planned  int // keywords in the planner file
}

// Volume distribution: log-normal around volMedian, spread over topics,
// groups and members; members of a group stay close to each other.
const (
	volMedian   = 60
	sigmaTopic  = 1.1
	sigmaGroup  = 1.0
	sigmaMember = 0.3
)

// buildPlan generates n distinct planner keywords (plus the SERP-only ones)
// in intent groups. It runs serially: uniqueness is checked against every
// keyword made so far.
func buildPlan(cc string, seed uint64, n int) (*plan, error) {
	p := &plan{cc: cc, seed: seed, voc: vocabFor(cc)}
	s1, s2 := streamSeed(seed, saltPlan, 0)
	rng := rand.New(rand.NewPCG(s1, s2))

	for ci, c := range p.voc.cats {
		space := int32(len(p.voc.mods) * (1 + len(c.attrs)))
		for _, nn := range c.nouns {
			quals := make([]string, 0, 1+len(c.quals)+len(c.brands))
			quals = append(append(append(quals, ""), c.quals...), c.brands...)
			for _, q := range quals {
				t := topic{cat: int32(ci), plural: nn.plural, singular: nn.singular, space: space}
				if q != "" {
					t.plural = q + " " + nn.plural
					if nn.singular != "" {
						t.singular = q + " " + nn.singular
					}
				}
				p.topics = append(p.topics, t)
			}
		}
	}
	// Different qualifiers and nouns may spell the same topic; keep one.
	p.topics = uniqueTopics(p.topics)
	rng.Shuffle(len(p.topics), func(i, j int) { p.topics[i], p.topics[j] = p.topics[j], p.topics[i] })
	for i := range p.topics {
		t := &p.topics[i]
		t.pop = float32(rng.NormFloat64())
		t.stride = coprimeStride(t.space, rng)
	}

	// Larger runs spread over more topics, so that the number of distinct
	// URLs grows with n, as it does in a real country: each topic holds
	// about 80 keywords. Small topics keep the URLs every group of a topic
	// shares from crowding the hubs at the top, and keep a topic URL's
	// frequency from growing with n. Past the simple topics, compound ones
	// ("nike waterproof running shoes") come after them, so a smaller run
	// is unchanged by their existence.
	use := max(n/80, 30)
	if use > len(p.topics) {
		p.topics = append(p.topics, compoundTopics(p.voc, seed)...)
	}
	use = min(use, len(p.topics))
	perTopic := float64(n) / float64(use)
	const meanGroup = 6.0

	p.keywords = make([]keyword, 0, n+n/100+16)
	seen := make(map[string]struct{}, n+n/100+16)
	var buf []byte
	perm := make([]int32, 0, 512)

	for pass := 0; p.planned < n; pass++ {
		before := p.planned
		for ti := 0; ti < use && p.planned < n; ti++ {
			t := &p.topics[ti]
			want := perTopic / meanGroup * math.Exp(0.5*rng.NormFloat64()-0.125)
			if pass > 0 {
				want = max(want/2, 1)
			}
			for ng := max(int(want+rng.Float64()), 1); ng > 0 && t.next < t.space && p.planned < n; ng-- {
				buf, perm = p.addGroup(int32(ti), rng, seen, buf, perm, n)
			}
		}
		if p.planned == before {
			if use == len(p.topics) {
				return nil, fmt.Errorf("vocabulary exhausted after %d keywords", p.planned)
			}
			use = min(use*2, len(p.topics))
		}
	}
	return p, nil
}

// addGroup makes the next intent group of topic ti: a base keyword from the
// topic, a modifier and maybe an attribute, and members that decorate it.
func (p *plan) addGroup(ti int32, rng *rand.Rand, seen map[string]struct{}, buf []byte, perm []int32, n int) ([]byte, []int32) {
	t := &p.topics[ti]
	c := &p.voc.cats[t.cat]
	g := t.next
	t.next++
	if g > 0 && serviceCategories[c.name] && physicalModifiers[p.voc.mods[int(int64(g)*int64(t.stride)%int64(t.space))%len(p.voc.mods)].format] {
		return buf, perm // "how to clean mortgages" is no query
	}
	key := int32(int64(g) * int64(t.stride) % int64(t.space))
	mod := p.voc.mods[int(key)%len(p.voc.mods)]
	attr := ""
	if a := int(key) / len(p.voc.mods); a > 0 {
		attr = c.attrs[a-1]
	}
	forms := []string{t.plural}
	if t.singular != "" {
		forms = append(forms, t.singular)
	}
	prefixes, suffixes := p.voc.shopPrefixes, p.voc.shopSuffixes
	if mod.question {
		prefixes, suffixes = p.voc.questPrefixes, p.voc.questSuffixes
	}
	nv := int32(len(forms) * len(prefixes) * len(suffixes))

	// Group size: 2 to 30, most groups small.
	size := min(2+int(rng.ExpFloat64()*4), 30)
	perm = perm[:0]
	for i := int32(1); i < nv; i++ {
		perm = append(perm, i)
	}

	center := math.Log(volMedian) + sigmaTopic*float64(t.pop) + sigmaGroup*rng.NormFloat64()
	if g == 0 {
		center += 1.2 // the bare head term is the topic's biggest query
	}
	if mod.question {
		center -= 0.7
	}
	grp := group{topic: ti, first: int32(len(p.keywords))}
	made := 0
	try := func(v int32) {
		f := int(v) % len(forms)
		pr := prefixes[int(v)/len(forms)%len(prefixes)]
		su := suffixes[int(v)/len(forms)/len(prefixes)]
		buf = appendKeyword(buf[:0], mod.format, forms[f], attr, pr, su)
		if !validKeyword(buf) {
			return
		}
		if _, dup := seen[string(buf)]; dup {
			return
		}
		text := string(buf)
		seen[text] = struct{}{}
		k := keyword{text: text}
		k.vol = int32(bucket(math.Exp(center + sigmaMember*rng.NormFloat64())))
		switch r := rng.Float64(); {
		case r < 0.005:
			k.flags |= flagOrphan
		case r < 0.035:
			k.flags |= flagNoSERP
		}
		if k.flags&flagOrphan == 0 {
			p.planned++
			switch r := rng.Float64(); {
			case r < 0.001:
				k.flags |= flagDup | flagOdd
			case r < 0.006:
				k.flags |= flagOdd
			}
		}
		p.keywords = append(p.keywords, k)
		made++
	}
	// Variant 0 is the plain base; the others come in random order.
	try(0)
	for made < size && len(perm) > 0 && p.planned < n {
		j := rng.IntN(len(perm))
		v := perm[j]
		perm[j] = perm[len(perm)-1]
		perm = perm[:len(perm)-1]
		try(v)
	}
	grp.end = int32(len(p.keywords))
	if grp.end > grp.first {
		p.groups = append(p.groups, grp)
	}
	return buf, perm
}

// appendKeyword assembles prefix + modifier(attr + form) + suffix.
func appendKeyword(b []byte, format, form, attr, prefix, suffix string) []byte {
	if prefix != "" {
		b = append(append(b, prefix...), ' ')
	}
	before, after, _ := strings.Cut(format, "%")
	b = append(b, before...)
	if attr != "" && preAttrs[attr] {
		b = append(append(b, attr...), ' ')
	}
	b = append(b, form...)
	if attr != "" && !preAttrs[attr] {
		b = append(append(b, ' '), attr...)
	}
	b = append(b, after...)
	if suffix != "" {
		b = append(append(b, ' '), suffix...)
	}
	return b
}

// maxSampleWords bounds the generated keywords' words: longer ones exist
// in real exports, but a generator that combined more parts would mostly
// make nonsense.
const maxSampleWords = 10

// validKeyword keeps keywords within the length limit and maxSampleWords
// and drops the ones that repeat a word ("cheap cheap dumbbells"), which
// read as garbage.
func validKeyword(b []byte) bool {
	if len(b) > kw.MaxKeywordChars {
		return false
	}
	var words [maxSampleWords + 1]string
	nw, start := 0, 0
	for i := 0; i <= len(b); i++ {
		if i < len(b) && b[i] != ' ' {
			continue
		}
		if nw == len(words) {
			return false
		}
		w := string(b[start:i]) // does not escape; compared only
		for _, o := range words[:nw] {
			if o == w {
				return false
			}
		}
		words[nw] = w
		nw++
		start = i + 1
	}
	return nw <= maxSampleWords
}

// compoundTopics makes the topics that follow the simple ones of voc: a brand before a qualified head term, or two qualifiers
// ("nike waterproof running shoes", "waterproof leather hiking boots"),
// none spelling a simple topic, shuffled and with their own popularity,
// lower than a simple topic's. They come from their own random stream.
func compoundTopics(voc vocab, seed uint64) []topic {
	s1, s2 := streamSeed(seed, saltCompound, 0)
	rng := rand.New(rand.NewPCG(s1, s2))
	var ts []topic
	for ci, c := range voc.cats {
		space := int32(len(voc.mods) * (1 + len(c.attrs)))
		for _, nn := range c.nouns {
			add := func(pre string) {
				t := topic{cat: int32(ci), plural: pre + " " + nn.plural, space: space}
				if nn.singular != "" {
					t.singular = pre + " " + nn.singular
				}
				ts = append(ts, t)
			}
			for qi, q := range c.quals {
				for _, b := range c.brands {
					add(b + " " + q)
				}
				for _, q2 := range c.quals[qi+1:] {
					add(q + " " + q2)
				}
			}
		}
	}
	ts = uniqueTopics(ts)
	rng.Shuffle(len(ts), func(i, j int) { ts[i], ts[j] = ts[j], ts[i] })
	for i := range ts {
		t := &ts[i]
		t.pop = float32(rng.NormFloat64() - 1)
		t.stride = coprimeStride(t.space, rng)
	}
	return ts
}

func uniqueTopics(ts []topic) []topic {
	seen := make(map[string]bool, len(ts))
	out := ts[:0]
	for _, t := range ts {
		if !seen[t.plural] {
			seen[t.plural] = true
			out = append(out, t)
		}
	}
	return out
}

// coprimeStride picks a step whose multiples visit every group key once, in
// an order that differs between topics.
func coprimeStride(space int32, rng *rand.Rand) int32 {
	for {
		s := 1 + rng.Int32N(space)
		if gcd(s, space) == 1 {
			return s
		}
	}
}

func gcd(a, b int32) int32 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// volumeBuckets are the values the Keyword Planner rounds average monthly
// searches to.
var volumeBuckets = []int64{
	10, 20, 30, 40, 50, 70, 90, 110, 140, 170, 210, 260, 320, 390, 480, 590, 720, 880,
	1000, 1300, 1600, 1900, 2400, 2900, 3600, 4400, 5400, 6600, 8100, 9900,
	12100, 14800, 18100, 22200, 27100, 33100, 40500, 49500, 60500, 74000, 90500,
	110000, 135000, 165000, 201000, 246000, 301000, 368000, 450000, 550000, 673000, 823000,
	1000000, 1220000, 1500000, 1830000, 2240000, 2740000, 3350000, 4090000, 5000000,
	6120000, 7480000, 9140000, 11100000,
}

// bucketMids are the geometric midpoints between neighbouring buckets.
var bucketMids = func() []float64 {
	m := make([]float64, len(volumeBuckets)-1)
	for i := range m {
		m[i] = math.Sqrt(float64(volumeBuckets[i]) * float64(volumeBuckets[i+1]))
	}
	return m
}()

// bucket rounds v to the nearest planner bucket on a log scale.
func bucket(v float64) int64 {
	return volumeBuckets[bucketIndex(v)]
}

func bucketIndex(v float64) int {
	return sort.SearchFloat64s(bucketMids, v)
}
