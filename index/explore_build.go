package index

import (
	"context"
	"encoding/binary"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/kwdata/kwdata/kw"
)

// The explorer's tables (docs/perf/explore.md). Beside its keywords a
// country gets, under country, exploreSep and one letter:
//
//	'c' block   a column block: exploreBlockLen keywords in rank order
//	            (block is 4 bytes big-endian)
//	'g' gram    postings of a character or a pair of characters, for a
//	            language written without spaces (kw.NoSpaceLanguage)
//	'm'         the country's meta record: counts, the language kind and
//	            the intent leaders that are no keyword of the country
//	'w' word    postings of a word, for the other languages
//
// A keyword's rank is its place in the default order (volume descending,
// missing volumes last, then text ascending), so postings, lists of
// ranks ascending, stream in the default order. Its id is its place in
// text order (key order): ties of every other sort fall back to it.
const exploreSep = 0x04

// exploreVersion is the version of the explorer's tables, recorded in the
// manifest (Manifest.Explore) and first in every value. A build without
// it has no tables; a store refuses another version with
// kw.ErrExploreUnavailable.
const exploreVersion = 1

// exploreTables is whether builds write the explorer's tables; the
// benchmark turns it off to measure what they cost.
var exploreTables = true

// exploreBlockLen is the number of keywords of a column block.
const exploreBlockLen = 4096

// Column flags: which numbers a keyword has.
const (
	hasVolume = 1 << iota
	hasCPC
	hasCompetition
)

// exploreManifestVersion is the Manifest.Explore of a new build.
func exploreManifestVersion() int {
	if !exploreTables {
		return 0
	}
	return exploreVersion
}

// appendExploreKey appends country, exploreSep, kind, rest.
func appendExploreKey(dst []byte, country string, kind byte, rest string) ([]byte, bool) {
	dst, ok := appendKey(dst, country, "")
	if !ok {
		return dst, false
	}
	dst[len(dst)-1] = exploreSep
	dst = append(dst, kind)
	return append(dst, rest...), true
}

// exploreBuilder collects what the explorer's tables need of one
// country's keywords, which arrive in text order.
type exploreBuilder struct {
	texts   []string
	intents []string // "" when the keyword is its own leader
	vol     []int64
	cpc     []int64
	comp    []float64
	has     []uint8
}

func (eb *exploreBuilder) add(intent string, m member, comp float64, hasComp bool) {
	eb.texts = append(eb.texts, m.keyword)
	if intent == m.keyword {
		intent = ""
	}
	eb.intents = append(eb.intents, intent)
	eb.vol = append(eb.vol, m.volume)
	eb.cpc = append(eb.cpc, m.cpc)
	h := m.has & (hasVolume | hasCPC)
	if hasComp {
		h |= hasCompetition
	}
	eb.has = append(eb.has, h)
	eb.comp = append(eb.comp, comp)
}

// keywordWords calls fn for each distinct word of a normalized keyword.
func keywordWords(text string, seen []string, fn func(w string)) []string {
	seen = seen[:0]
	for w := range strings.SplitSeq(text, " ") {
		if w != "" && !slices.Contains(seen, w) {
			seen = append(seen, w)
			fn(w)
		}
	}
	return seen
}

// keywordGrams calls fn for each distinct character and pair of adjacent
// characters of a keyword, but for those holding a space. They are
// sorted and compacted rather than looked up one by one: a keyword of 80
// characters has 159 of them.
func keywordGrams(text string, seen []string, fn func(g string)) []string {
	seen = seen[:0]
	for i := 0; i < len(text); {
		_, n1 := utf8.DecodeRuneInString(text[i:])
		if text[i] != ' ' {
			seen = append(seen, text[i:i+n1])
			if i+n1 < len(text) && text[i+n1] != ' ' {
				_, n2 := utf8.DecodeRuneInString(text[i+n1:])
				seen = append(seen, text[i:i+n1+n2])
			}
		}
		i += n1
	}
	slices.Sort(seen)
	seen = slices.Compact(seen)
	for _, g := range seen {
		fn(g)
	}
	return seen
}

// write appends the country's explorer tables to tw in key order and
// returns the number of postings lists.
func (eb *exploreBuilder) write(ctx context.Context, tw *tableWriter, cc string) (int, error) {
	n := len(eb.texts)
	lang := ""
	if c, ok := kw.LookupCountry(cc); ok {
		lang = c.LanguageCode
	}
	noSpace := kw.NoSpaceLanguage(lang)
	// Ranks: the default order.
	order := make([]uint32, n)
	for i := range order {
		order[i] = uint32(i)
	}
	slices.SortFunc(order, func(a, b uint32) int {
		ha, hb := eb.has[a]&hasVolume != 0, eb.has[b]&hasVolume != 0
		switch {
		case ha != hb:
			if ha {
				return -1
			}
			return 1
		case ha && eb.vol[a] != eb.vol[b]:
			if eb.vol[a] > eb.vol[b] {
				return -1
			}
			return 1
		}
		return int(a) - int(b)
	})
	// Groups: a leader that is a keyword of the country is its id; any
	// other is n plus its place in extras.
	// Each distinct leader is searched for once: a group's members share
	// its text.
	var extras []string
	groupIDs := map[string]uint32{}
	groupOf := func(id int) uint32 {
		in := eb.intents[id]
		if in == "" {
			return uint32(id)
		}
		if g, ok := groupIDs[in]; ok {
			return g
		}
		var g uint32
		if j, ok := slices.BinarySearch(eb.texts, in); ok {
			g = uint32(j)
		} else {
			g = uint32(n + len(extras))
			extras = append(extras, in)
		}
		groupIDs[in] = g
		return g
	}
	postings := map[string][]uint32{}
	var key, val []byte
	var seen []string
	for start := 0; start < n; start += exploreBlockLen {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		end := min(start+exploreBlockLen, n)
		val = append(val[:0], exploreVersion)
		val = binary.AppendUvarint(val, uint64(end-start))
		for r := start; r < end; r++ {
			id := int(order[r])
			val = binary.AppendUvarint(val, uint64(id))
			h := eb.has[id]
			val = append(val, h)
			if h&hasVolume != 0 {
				val = binary.AppendVarint(val, eb.vol[id])
			}
			if h&hasCPC != 0 {
				val = binary.AppendVarint(val, eb.cpc[id])
			}
			if h&hasCompetition != 0 {
				val = binary.LittleEndian.AppendUint64(val, math.Float64bits(eb.comp[id]))
			}
			val = binary.AppendUvarint(val, uint64(groupOf(id)))
			val = appendString(val, eb.texts[id])
			add := func(w string) { postings[w] = append(postings[w], uint32(r)) }
			if noSpace {
				seen = keywordGrams(eb.texts[id], seen, add)
			} else {
				seen = keywordWords(eb.texts[id], seen, add)
			}
		}
		var blk [4]byte
		binary.BigEndian.PutUint32(blk[:], uint32(start/exploreBlockLen))
		key, _ = appendExploreKey(key[:0], cc, 'c', string(blk[:]))
		if err := tw.add(key, val); err != nil {
			return 0, err
		}
	}
	keys := make([]string, 0, len(postings))
	for w := range postings {
		keys = append(keys, w)
	}
	slices.Sort(keys)
	kind := byte('w')
	if noSpace {
		kind = 'g'
		if err := eb.writePostings(ctx, tw, cc, kind, keys, postings); err != nil {
			return 0, err
		}
	}
	val = append(val[:0], exploreVersion)
	val = binary.AppendUvarint(val, uint64(n))
	if noSpace {
		val = append(val, 1)
	} else {
		val = append(val, 0)
	}
	val = binary.AppendUvarint(val, uint64(len(extras)))
	for _, e := range extras {
		val = appendString(val, e)
	}
	key, _ = appendExploreKey(key[:0], cc, 'm', "")
	if err := tw.add(key, val); err != nil {
		return 0, err
	}
	if !noSpace {
		if err := eb.writePostings(ctx, tw, cc, kind, keys, postings); err != nil {
			return 0, err
		}
	}
	*eb = exploreBuilder{}
	return len(keys), nil
}

func (eb *exploreBuilder) writePostings(ctx context.Context, tw *tableWriter, cc string, kind byte, keys []string, postings map[string][]uint32) error {
	var key, val []byte
	for i, w := range keys {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		key, _ = appendExploreKey(key[:0], cc, kind, w)
		val = appendPostings(val[:0], postings[w])
		if err := tw.add(key, val); err != nil {
			return err
		}
	}
	return nil
}

// appendPostings appends a postings list: the version, the count, then
// each rank as the uvarint of its distance from the one before (the
// first: from -1).
func appendPostings(dst []byte, ranks []uint32) []byte {
	dst = append(dst, exploreVersion)
	dst = binary.AppendUvarint(dst, uint64(len(ranks)))
	prev := int64(-1)
	for _, r := range ranks {
		dst = binary.AppendUvarint(dst, uint64(int64(r)-prev))
		prev = int64(r)
	}
	return dst
}
