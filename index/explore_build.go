package index

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/kwdata/kwdata/internal/prefetch"
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
//	'p' pair    postings of two common words adjacent in this order,
//	            "first second" (not for a language written without spaces)
//	'w' word    postings of a word, for the other languages
//
// A keyword's rank is its place in the default order (volume descending,
// missing volumes last, then text ascending), so postings, lists of
// ranks ascending, stream in the default order. Its id is its place in
// text order (key order): ties of every other sort fall back to it.
const exploreSep = 0x04

// exploreVersion is the version of the explorer's values, first in every
// one. A store refuses another with kw.ErrExploreUnavailable.
const exploreVersion = 1

// The manifest's Explore: 0 (or absent) for a build without the
// explorer's tables; explorePairsVersion for one that also holds the
// postings of pairs of adjacent common words ('p'), which a store uses
// for phrases where it finds them and does without in a build of the
// first version.
const explorePairsVersion = 2

// exploreCommonShare: a word in at least 1/exploreCommonShare of a
// country's keywords is common, and every pair of adjacent common words
// has postings of its own ('p'), so that a phrase of two common words,
// which would otherwise check the text of millions of keywords, reads
// one list.
const exploreCommonShare = 32

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
	return explorePairsVersion
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

// exploreBuilder collects what the explorer's tables and the intent
// groups (writeGroups) need of one country's keywords, which arrive in
// text order. Each keyword's words
// (grams, for a language written without spaces) are looked up as it
// arrives, while the rest of the build streams, and kept as word ids: the
// postings are then filled in rank order by id, without a map, once the
// ranks are known.
type exploreBuilder struct {
	noSpace bool
	// Each keyword's text, as its place in blocks (textRef): 8 bytes a
	// keyword and no pointer for the collector to mark, where a string
	// header was 16 bytes and a pointer.
	refs   []uint64
	blocks []string          // the texts the keywords lie in
	long   map[uint32]string // the texts of refs equal to longRef
	// Each keyword's intent leader: 0 when it leads its own group, else
	// 1 + the leader's place in leaders, named by the merge.
	leader  []uint32
	leaders *intentLeaders
	// leaderIDs is findLeaders, worked out once for the explorer's
	// tables and the intent groups, which are written side by side.
	leaderIDs func() []uint32
	vol       []int64
	cpc       []int64
	comp      []float64
	has       []uint8
	overlap   []int32
	// tables: whether the explorer's tables are wanted (exploreTables),
	// else only what the intent groups need is collected.
	tables bool
	// wordRecords: whether write also writes the suggestion tables' word
	// records, from the words' postings (writeWordRecords), in place of
	// the suggestion builder: with the tables, for a language written
	// with spaces.
	wordRecords bool
	// What write wrote of the word records.
	nWordRecords int

	wordID map[string]uint32
	words  []string // by id
	wcount []uint32 // keywords holding the word, by id
	// The word ids of each keyword, uvarints back to back: ids are given
	// in order of first appearance, so the common words, most of a
	// keyword's, take one or two bytes rather than four (a 10M-keyword
	// build held 346 MB of them as uint32s).
	kwWords []byte
	kwOff   []uint32 // keyword i's are kwWords[kwOff[i]:kwOff[i+1]]
	// tooMany is set once kwWords outgrows kwOff's offsets.
	tooMany bool
	seen    []string
	repeats bitSet // ids of keywords holding a word twice
	expect  int    // the keywords expected, 0 if not known
	cache   *[wordCacheLen]wordSlot
	// The first word of the last keyword, which the next one (in text
	// order) most often shares.
	firstWord string
	firstID   uint32
}

// newExploreBuilder returns the builder of country cc's tables, sized
// for about n keywords (0 if not known).
func newExploreBuilder(cc string, n int) *exploreBuilder {
	n = max(n, 0)
	eb := &exploreBuilder{
		refs: make([]uint64, 0, n), leader: make([]uint32, 0, n), leaders: newIntentLeaders(n),
		vol: make([]int64, 0, n), cpc: make([]int64, 0, n), comp: make([]float64, 0, n), has: make([]uint8, 0, n),
		overlap: make([]int32, 0, n), tables: exploreTables,
		wordID: map[string]uint32{}, kwWords: make([]byte, 0, 8*min(n, wordsSample)), kwOff: make([]uint32, 1, n+1),
		expect: n,
	}
	if c, ok := kw.LookupCountry(cc); ok {
		eb.noSpace = kw.NoSpaceLanguage(c.LanguageCode)
	}
	eb.wordRecords = eb.tables && !eb.noSpace
	eb.leaderIDs = sync.OnceValue(eb.findLeaders)
	return eb
}

// textIn is where a keyword's text lies: block[start:start+len(keyword)],
// a block being one text the keywords of a chunk were read into.
type textIn struct {
	block string
	start uint32
}

// longRef is the textRef of a keyword whose place does not fit one: its
// text is in exploreBuilder.long.
const longRef = math.MaxUint64

// textRef packs a keyword's place: its block (24 bits), its start in the
// block (24 bits) and its length (16 bits).
func textRef(block, start, n int) (uint64, bool) {
	if block >= 1<<24 || start >= 1<<24 || n >= 1<<16-1 {
		return 0, false
	}
	return uint64(block)<<40 | uint64(start)<<16 | uint64(n), true
}

// addText notes keyword k's text, which lies where in says.
func (eb *exploreBuilder) addText(k string, in textIn) {
	// Comparing the block with the last one costs nothing when they are
	// the same text; another block of the same bytes would do as well.
	if len(eb.blocks) == 0 || in.block != eb.blocks[len(eb.blocks)-1] {
		eb.blocks = append(eb.blocks, in.block)
	}
	r, ok := textRef(len(eb.blocks)-1, int(in.start), len(k))
	if !ok {
		if eb.long == nil {
			eb.long = map[uint32]string{}
		}
		eb.long[uint32(len(eb.refs))] = k
		r = longRef
	}
	eb.refs = append(eb.refs, r)
}

// text is keyword id's text.
func (eb *exploreBuilder) text(id uint32) string {
	r := eb.refs[id]
	if r == longRef {
		return eb.long[id]
	}
	start := r >> 16 & (1<<24 - 1)
	return eb.blocks[r>>40][start : start+r&0xffff]
}

// add adds the next keyword, in text order, of intent leader leader
// (eb.leaders.of).
func (eb *exploreBuilder) add(leader uint32, m member, in textIn, comp float64, hasComp bool) {
	eb.addText(m.keyword, in)
	eb.leader = append(eb.leader, leader)
	eb.vol = append(eb.vol, m.volume)
	eb.cpc = append(eb.cpc, m.cpc)
	h := m.has & (hasVolume | hasCPC)
	if hasComp {
		h |= hasCompetition
	}
	eb.has = append(eb.has, h)
	eb.comp = append(eb.comp, comp)
	eb.overlap = append(eb.overlap, m.overlap)
	if !eb.tables || eb.tooMany {
		return
	}
	first := true
	word := func(w string) {
		var id uint32
		if first && w == eb.firstWord && len(eb.words) > 0 {
			id = eb.firstID
		} else {
			id = eb.wordOf(w)
			if first {
				eb.firstWord, eb.firstID = w, id
			}
		}
		first = false
		eb.wcount[id]++
		eb.kwWords = binary.AppendUvarint(eb.kwWords, uint64(id))
	}
	if eb.noSpace {
		eb.seen = keywordGrams(m.keyword, eb.seen, word)
	} else {
		var repeated bool
		if eb.seen, repeated = keywordWords(m.keyword, eb.seen, word); repeated {
			// Its words in order are not its distinct words in order.
			eb.repeats.set(uint32(len(eb.refs) - 1))
		}
	}
	if len(eb.kwWords) > math.MaxUint32 {
		// write fails the build.
		eb.tooMany = true
		return
	}
	eb.kwOff = append(eb.kwOff, uint32(len(eb.kwWords)))
	if len(eb.refs) == wordsSample && eb.expect > wordsSample {
		// Size the word ids from the first keywords' count of words, so
		// that hundreds of MiB are not copied as they grow: at three
		// bytes an id (a vocabulary of up to 2M words), not at the first
		// keywords' bytes an id, which are the fewest (their words are
		// the commonest, with the smallest ids): sized that way, the 10M
		// sample's ids were copied twice as they grew. The room never
		// written is never touched (withRoom).
		ids := 0
		for _, c := range eb.wcount {
			ids += int(c)
		}
		eb.kwWords = withRoom(eb.kwWords, 3*ids*(eb.expect-wordsSample)/wordsSample*11/10)
	}
}

// withRoom returns b, copied into a new array with room for n more bytes
// that the copy leaves as the allocator gave it: fresh pages are zero
// already, untouched until written, so room never written costs address
// space only. slices.Grow clears the room past the length instead: for
// the 10M sample's word ids, 300 MiB touched in one call that a
// collection starting meanwhile waited for, spinning (3 s of CPU).
func withRoom(b []byte, n int) []byte {
	nb := make([]byte, len(b), len(b)+n)
	copy(nb, b)
	return nb
}

// wordIDs returns keyword id's word ids, uvarints back to back.
func (eb *exploreBuilder) wordIDs(id uint32) []byte {
	return eb.kwWords[eb.kwOff[id]:eb.kwOff[id+1]]
}

// nextWordID returns the first word id of b, a keyword's ids in kwWords,
// and the rest of b.
func nextWordID(b []byte) (uint32, []byte) {
	if b[0] < 0x80 {
		return uint32(b[0]), b[1:]
	}
	v, n := binary.Uvarint(b)
	return uint32(v), b[n:]
}

// appendWordIDs appends keyword id's word ids to dst.
func (eb *exploreBuilder) appendWordIDs(dst []uint32, id uint32) []uint32 {
	for b := eb.wordIDs(id); len(b) > 0; {
		var w uint32
		w, b = nextWordID(b)
		dst = append(dst, w)
	}
	return dst
}

// wordsSample is the number of keywords after which the builder sizes
// its word ids from theirs.
const wordsSample = 1 << 16

// wordCacheLen is the number of slots of exploreBuilder's word cache.
const wordCacheLen = 1 << 14

// wordSlot is a slot of the word cache: a word of up to 23 bytes, held in
// the slot itself, and its id.
type wordSlot struct {
	n  uint8
	b  [23]byte
	id uint32
}

// wordOf returns the id of word w, giving it one if it has none. A
// keyword's words are mostly a few common ones: a direct-mapped cache
// holding short words in its slots answers most lookups from half a MiB,
// before the map is hashed.
func (eb *exploreBuilder) wordOf(w string) uint32 {
	if eb.cache == nil {
		eb.cache = new([wordCacheLen]wordSlot)
	}
	// FNV-1a.
	h := uint32(2166136261)
	for i := 0; i < len(w); i++ {
		h = (h ^ uint32(w[i])) * 16777619
	}
	slot := &eb.cache[h%wordCacheLen]
	if int(slot.n) == len(w) && string(slot.b[:slot.n]) == w && len(w) > 0 {
		return slot.id
	}
	id, ok := eb.wordID[w]
	if !ok {
		// A copy of its own, so that the map's keys sit together and a
		// lookup compares with memory at hand, not with the keyword that
		// first held the word, wherever it is.
		w = strings.Clone(w)
		id = uint32(len(eb.words))
		eb.wordID[w] = id
		eb.words = append(eb.words, w)
		eb.wcount = append(eb.wcount, 0)
	}
	if len(w) <= len(slot.b) {
		slot.n = uint8(copy(slot.b[:], w))
		slot.id = id
	}
	return id
}

// findLeaders returns the id of each leader in leaders, or
// math.MaxUint32 for a leader that is no keyword of the country, found by
// one walk of both in text order. It runs once, through leaderIDs, when
// every keyword is added; its answer is only read.
func (eb *exploreBuilder) findLeaders() []uint32 {
	ls := eb.leaders
	// Sorted by their first 16 bytes, held beside their place, before
	// their texts are compared: comparing the texts of 2.4M leaders
	// scattered over the heap took 1.3 s at 10M keywords.
	byText := make([]textKey, ls.len())
	for i := range byText {
		byText[i] = newTextKey(ls.name(i), uint32(i))
	}
	slices.SortFunc(byText, func(a, b textKey) int {
		if c := a.compare(b); c != 0 {
			return c
		}
		return strings.Compare(ls.name(int(a.i)), ls.name(int(b.i)))
	})
	found := make([]uint32, ls.len())
	j := 0
	for _, k := range byText {
		t := ls.name(int(k.i))
		for j < len(eb.refs) && eb.text(uint32(j)) < t {
			j++
		}
		if j < len(eb.refs) && eb.text(uint32(j)) == t {
			found[k.i] = uint32(j)
		} else {
			found[k.i] = math.MaxUint32
		}
	}
	return found
}

// textKey is a text's first 16 bytes, big-endian and padded with zeros,
// and a number: texts whose keys differ are in the keys' order.
type textKey struct {
	hi, lo uint64
	i      uint32
}

func newTextKey(t string, i uint32) textKey {
	var b [16]byte
	copy(b[:], t)
	return textKey{binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:]), i}
}

// compare orders keys by their bytes; 0 means the texts may still differ.
func (a textKey) compare(b textKey) int {
	if c := cmp.Compare(a.hi, b.hi); c != 0 {
		return c
	}
	return cmp.Compare(a.lo, b.lo)
}

// rankOrder returns the ids in the default order: volume descending,
// missing volumes last, then id (text order).
func (eb *exploreBuilder) rankOrder() []uint32 {
	n := len(eb.refs)
	order := make([]uint32, n)
	// Most volumes fit 32 bits: then (volume inverted, id) packed in one
	// integer sorts without a comparison function.
	packed := make([]uint64, n)
	for id := range n {
		v := int64(math.MaxUint32)
		if eb.has[id]&hasVolume != 0 {
			if eb.vol[id] < 0 || eb.vol[id] >= math.MaxUint32 {
				packed = nil
				break
			}
			v = math.MaxUint32 - 1 - eb.vol[id]
		}
		packed[id] = uint64(v)<<32 | uint64(id)
	}
	if packed != nil {
		// The ids are in order already: a stable sort by the volume half
		// alone, two passes of a radix sort, orders the rest.
		radixHigh32(packed)
		for r, p := range packed {
			order[r] = uint32(p)
		}
		return order
	}
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
	return order
}

// radixHigh32 sorts keys by their upper 32 bits, stably: two passes of a
// least-significant-digit radix sort, 16 bits each, through a buffer.
func radixHigh32(keys []uint64) {
	buf := make([]uint64, len(keys))
	src, dst := keys, buf
	for _, shift := range []uint{32, 48} {
		var count [1<<16 + 1]int
		for _, k := range src {
			count[(k>>shift)&0xffff+1]++
		}
		for i := 1; i < len(count); i++ {
			count[i] += count[i-1]
		}
		for _, k := range src {
			d := (k >> shift) & 0xffff
			dst[count[d]] = k
			count[d]++
		}
		src, dst = dst, src
	}
	// Two passes: the result is back in keys.
}

// keywordWords calls fn for each distinct word of a normalized keyword,
// and reports whether a word came twice.
func keywordWords(text string, seen []string, fn func(w string)) (distinct []string, repeated bool) {
	seen = seen[:0]
	for len(text) > 0 {
		w := text
		if i := strings.IndexByte(text, ' '); i >= 0 {
			w, text = text[:i], text[i+1:]
		} else {
			text = ""
		}
		switch {
		case w == "":
		case slices.Contains(seen, w):
			repeated = true
		default:
			seen = append(seen, w)
			fn(w)
		}
	}
	return seen, repeated
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

// write writes the country's explorer tables into tables of set and
// returns the number of postings lists. The column blocks and the lists
// have key ranges of their own ('c'; 'g' to 'w'), so they are written on
// two goroutines, into tables of their own: at the end of a country's
// keywords, when the rest of the build is mostly done. It only reads the
// builder, so it may run beside writeGroups.
func (eb *exploreBuilder) write(ctx context.Context, set *tableSet, cc string) (int, error) {
	if eb.tooMany {
		return 0, fmt.Errorf("cannot build the explorer's tables of %s: its keywords' word ids outgrow 4 GiB, beyond what one build holds (some hundred million keywords a country)", cc)
	}
	order := eb.rankOrder()
	group, extras := eb.groups(order)
	var colErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		_, colErr = writeTables(ctx, set, func(tw *tableWriter) (int, error) {
			return 0, eb.writeColumns(ctx, tw, cc, order, group)
		})
	})
	n, err := writeTables(ctx, set, func(tw *tableWriter) (int, error) {
		return eb.writeLists(ctx, set, tw, cc, order, extras)
	})
	wg.Wait()
	return n, errors.Join(colErr, err)
}

// groups returns each rank's intent group: a leader that is a keyword of
// the country is its id; any other is n plus its place in extras, in the
// order the ranks first meet it.
func (eb *exploreBuilder) groups(order []uint32) (group []uint32, extras []string) {
	n := len(eb.refs)
	found := eb.leaderIDs()
	extra := make([]uint32, eb.leaders.len()) // 1 + a leader's place in extras
	group = make([]uint32, n)
	for r, id := range order {
		l := eb.leader[id]
		if l == 0 {
			group[r] = id
			continue
		}
		g := found[l-1]
		if g == math.MaxUint32 {
			if extra[l-1] == 0 {
				extras = append(extras, eb.leaders.name(int(l-1)))
				extra[l-1] = uint32(len(extras))
			}
			g = uint32(n) + extra[l-1] - 1
		}
		group[r] = g
	}
	return group, extras
}

// writeColumns writes the column blocks ('c').
func (eb *exploreBuilder) writeColumns(ctx context.Context, tw *tableWriter, cc string, order, group []uint32) error {
	n := len(eb.refs)
	var key, val []byte
	for start := 0; start < n; start += exploreBlockLen {
		if err := ctx.Err(); err != nil {
			return err
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
			val = binary.AppendUvarint(val, uint64(group[r]))
			val = appendString(val, eb.text(uint32(id)))
		}
		var blk [4]byte
		binary.BigEndian.PutUint32(blk[:], uint32(start/exploreBlockLen))
		key, _ = appendExploreKey(key[:0], cc, 'c', string(blk[:]))
		if err := tw.add(key, val); err != nil {
			return err
		}
	}
	return nil
}

// writeLists writes the grams' postings ('g', for a language written
// without spaces), the meta record ('m'), the pairs' postings ('p') and
// the words' ('w'), and returns the number of postings lists; with
// wordRecords, it writes the word records beside them, into tables of
// set.
func (eb *exploreBuilder) writeLists(ctx context.Context, set *tableSet, tw *tableWriter, cc string, order []uint32, extras []string) (_ int, err error) {
	n := len(eb.refs)
	noSpace := eb.noSpace
	postings := eb.postings(order)
	if eb.wordRecords {
		var wg sync.WaitGroup
		var wordsErr error
		wg.Go(func() {
			eb.nWordRecords, wordsErr = writeTables(ctx, set, func(tw *tableWriter) (int, error) {
				return eb.writeWordRecords(ctx, tw, cc, order, postings)
			})
		})
		defer func() {
			wg.Wait()
			if wordsErr != nil {
				err = fmt.Errorf("cannot write word records: %w", wordsErr)
			}
		}()
	}
	var pairs []pairPostings
	if !noSpace {
		pairs = eb.pairPostings(order)
	}
	kind := byte('w')
	if noSpace {
		kind = 'g'
		if err := eb.writePostings(ctx, tw, cc, kind, postings); err != nil {
			return 0, err
		}
	}
	var key, val []byte
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
		for _, p := range pairs {
			key, _ = appendExploreKey(key[:0], cc, 'p', p.text)
			val = appendPostings(val[:0], p.ranks)
			if err := tw.add(key, val); err != nil {
				return 0, err
			}
		}
		if err := eb.writePostings(ctx, tw, cc, kind, postings); err != nil {
			return 0, err
		}
	}
	return len(eb.words) + len(pairs), nil
}

// bitSet is a set of ids.
type bitSet []uint64

func (b *bitSet) set(id uint32) {
	for int(id/64) >= len(*b) {
		*b = append(*b, 0)
	}
	(*b)[id/64] |= 1 << (id % 64)
}

func (b bitSet) has(id uint32) bool {
	return int(id/64) < len(b) && b[id/64]&(1<<(id%64)) != 0
}

// pairPostings are the ranks holding two common words adjacent, "a b".
type pairPostings struct {
	text  string
	ranks []uint32
}

// pairPostings returns the postings of every pair of adjacent common
// words, sorted by their text.
func (eb *exploreBuilder) pairPostings(order []uint32) []pairPostings {
	n := len(eb.refs)
	common := make([]bool, len(eb.words))
	nCommon := 0
	for id, c := range eb.wcount {
		if int(c)*exploreCommonShare >= n {
			common[id] = true
			nCommon++
		}
	}
	if nCommon == 0 {
		return nil
	}
	// The keywords that may hold two common words, marked in id order,
	// where their words lie one after another in memory; the walk in rank
	// order below, which reads them at random, skips the rest.
	var maybe bitSet
	for id := range uint32(n) {
		k := 0
		for b := eb.wordIDs(id); len(b) > 0; {
			var w uint32
			w, b = nextWordID(b)
			if common[w] {
				k++
			}
		}
		if k >= 2 || k == 1 && eb.repeats.has(id) {
			maybe.set(id)
		}
	}
	lists := map[uint64][]uint32{}
	add := func(a, b uint32, r int) {
		k := uint64(a)<<32 | uint64(b)
		l := lists[k]
		if len(l) == 0 || l[len(l)-1] != uint32(r) {
			lists[k] = append(l, uint32(r))
		}
	}
	var ids []uint32
	for r, id := range order {
		if !maybe.has(id) {
			continue
		}
		ids = ids[:0]
		if eb.repeats.has(id) {
			// The words in order, repeats and all: a common word
			// repeated is a pair too.
			for w := range strings.SplitSeq(eb.text(id), " ") {
				ids = append(ids, eb.wordID[w])
			}
		} else {
			ids = eb.appendWordIDs(ids, id)
		}
		k := 0
		for _, w := range ids {
			if common[w] {
				k++
			}
		}
		if k < 2 {
			continue
		}
		for i := 1; i < len(ids); i++ {
			if common[ids[i-1]] && common[ids[i]] {
				add(ids[i-1], ids[i], r)
			}
		}
	}
	out := make([]pairPostings, 0, len(lists))
	for k, l := range lists {
		out = append(out, pairPostings{text: eb.words[k>>32] + " " + eb.words[uint32(k)], ranks: l})
	}
	slices.SortFunc(out, func(a, b pairPostings) int { return strings.Compare(a.text, b.text) })
	return out
}

// writeWordRecords writes the suggestion tables' word records (wordSep,
// by word) from the words' postings, and returns their number.
func (eb *exploreBuilder) writeWordRecords(ctx context.Context, tw *tableWriter, cc string, order []uint32, p wordPostings) (int, error) {
	var key, val []byte
	n := 0
	err := eb.eachWordRecord(ctx, order, p, func(word string, list []scored) error {
		key, _ = appendTableKey(key[:0], cc, wordSep, word)
		val = encodeKeywords(val[:0], list)
		n++
		return tw.add(key, val)
	})
	return n, err
}

// eachWordRecord calls fn with each word record, by word, as the
// suggestion builder would keep them: for each word that some keyword
// holds after its first word, the wordCandidates best of those keywords,
// by volume descending (a missing or negative one as 0), then text. A
// postings list is in rank order (volume descending, missing ones last,
// then text), which is that order for the keywords of a positive volume;
// the rest, of score 0 alike, are ranked by text (id), the smallest kept.
// fn must not keep list.
func (eb *exploreBuilder) eachWordRecord(ctx context.Context, order []uint32, p wordPostings, fn func(word string, list []scored) error) error {
	var (
		best, zero []uint32
		list       []scored
	)
	for i, w := range p.byText {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		best, zero = best[:0], zero[:0]
		for _, r := range p.ranks[p.start[w]:p.start[w+1]] {
			id := order[r]
			if !eb.afterFirst(id, w) {
				continue
			}
			if eb.has[id]&hasVolume != 0 && eb.vol[id] > 0 {
				// Only keywords of a positive volume come before the
				// first of score 0, so zero is still empty.
				if best = append(best, id); len(best) == wordCandidates {
					break
				}
				continue
			}
			zero = keepSmallest(zero, id, wordCandidates-len(best))
		}
		if len(best)+len(zero) == 0 {
			continue
		}
		list = list[:0]
		for _, id := range best {
			list = append(list, scored{eb.text(id), eb.vol[id]})
		}
		for _, id := range zero {
			list = append(list, scored{eb.text(id), 0})
		}
		if err := fn(eb.words[w], list); err != nil {
			return err
		}
	}
	return nil
}

// keepSmallest adds id to ids, the smallest ids offered, ascending, if
// it is among the m smallest.
func keepSmallest(ids []uint32, id uint32, m int) []uint32 {
	if len(ids) == m {
		if m == 0 || id >= ids[m-1] {
			return ids
		}
		ids = ids[:m-1]
	}
	i, _ := slices.BinarySearch(ids, id)
	ids = append(ids, 0)
	copy(ids[i+1:], ids[i:])
	ids[i] = id
	return ids
}

// afterFirst reports whether keyword id holds word w after its first
// word, where the suggestion tables count a word.
func (eb *exploreBuilder) afterFirst(id, w uint32) bool {
	text := eb.text(id)
	if first, _ := nextWordID(eb.wordIDs(id)); first != w || strings.HasPrefix(text, " ") {
		return true
	}
	// w is the keyword's first word: it counts if it comes again.
	if !eb.repeats.has(id) {
		return false
	}
	_, rest, _ := strings.Cut(text, " ")
	for t := range strings.SplitSeq(rest, " ") {
		if t == eb.words[w] {
			return true
		}
	}
	return false
}

// wordsAhead is how many keywords ahead a walk in rank order asks for a
// keyword's word ids (fetchWords): a walk reads them at random, two cache
// misses a keyword (its offset, then its ids).
const wordsAhead = 8

// fetchWords asks for what a walk of order at r reads of the keywords
// ahead: the offset of the keyword 2*wordsAhead on, the ids of the one
// wordsAhead on, whose offset was asked for before.
func (eb *exploreBuilder) fetchWords(order []uint32, r int) {
	if r+2*wordsAhead < len(order) {
		prefetch.At(eb.kwOff, int(order[r+2*wordsAhead]))
	}
	if r+wordsAhead < len(order) {
		prefetch.At(eb.kwWords, int(eb.kwOff[order[r+wordsAhead]]))
	}
}

// wordPostings is every word's ranks, ascending, back to back.
type wordPostings struct {
	ranks  []uint32
	start  []uint32 // word id's ranks are ranks[start[id]:start[id+1]]
	byText []uint32 // the word ids in the order of their texts (key order)
}

// postings fills each word's ranks by walking the keywords in rank order.
func (eb *exploreBuilder) postings(order []uint32) wordPostings {
	p := wordPostings{start: make([]uint32, len(eb.words)+1)}
	for id, c := range eb.wcount {
		p.start[id+1] = p.start[id] + c
	}
	p.ranks = make([]uint32, p.start[len(eb.words)])
	next := slices.Clone(p.start[:len(eb.words)])
	for r, id := range order {
		eb.fetchWords(order, r)
		for b := eb.wordIDs(id); len(b) > 0; {
			var w uint32
			w, b = nextWordID(b)
			p.ranks[next[w]] = uint32(r)
			next[w]++
		}
	}
	p.byText = make([]uint32, len(eb.words))
	for i := range p.byText {
		p.byText[i] = uint32(i)
	}
	slices.SortFunc(p.byText, func(a, b uint32) int { return strings.Compare(eb.words[a], eb.words[b]) })
	return p
}

func (eb *exploreBuilder) writePostings(ctx context.Context, tw *tableWriter, cc string, kind byte, p wordPostings) error {
	var key, val []byte
	for i, id := range p.byText {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		key, _ = appendExploreKey(key[:0], cc, kind, eb.words[id])
		val = appendPostings(val[:0], p.ranks[p.start[id]:p.start[id+1]])
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
