package index

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/bits"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
	"unsafe"

	"github.com/cockroachdb/pebble/v2"

	"github.com/kwdata/kwdata/kw"
)

// The explorer's engine. A query reads the postings of its words (and of
// include and exclude) from the build, intersects them rarest first, and
// checks each candidate against the country's columns, which a store
// loads into memory on the first query of the country in a build (about
// 120 bytes a keyword) and keeps while it serves the build. Postings are
// in the default order, so a default query takes its page as the
// matches stream by; any other sort keeps the best limit in a heap. Every
// match is counted, since the total is exact: a query costs the length of
// its postings plus the candidates it checks, and none of it depends on
// keywords that share none of its words.

var _ kw.Explorer = (*Store)(nil)

// exploreCountry is one country's columns, by rank.
type exploreCountry struct {
	n        int
	noSpace  bool
	lang     string
	id       []uint32 // the keyword's place in text order
	rankOf   []uint32 // by id
	vol, cpc []int64
	comp     []float64
	has      []uint8
	words    []uint8
	pairs    []uint16 // by rank: pairMask of the text, for phrase
	group    []uint32 // the leader's id, or n + its place in extras
	text     string   // the keywords, back to back
	off      []uint32 // keyword r is text[off[r]:off[r+1]]
	extras   []string
	slots    sync.Pool  // of *groupScratch, for group=intent
	dense    denseLists // guards keyZones too
	keyZones map[kw.ExploreSort]*keyZones
	touched  atomic.Uint32 // see touchTexts
}

func (c *exploreCountry) kw(r uint32) string { return c.text[c.off[r]:c.off[r+1]] }

func (c *exploreCountry) leader(g uint32) string {
	if int(g) < c.n {
		return c.kw(c.rankOf[g])
	}
	return c.extras[int(g)-c.n]
}

// groupID finds the group a leader's text leads; ok is false if none.
func (c *exploreCountry) groupID(leader string) (uint32, bool) {
	i, ok := slices.BinarySearchFunc(c.rankOf, leader, func(r uint32, t string) int { return strings.Compare(c.kw(r), t) })
	if ok {
		return uint32(i), true
	}
	if j := slices.Index(c.extras, leader); j >= 0 {
		return uint32(c.n + j), true
	}
	return 0, false
}

// exploreCache holds a handle's loaded countries.
type exploreCache struct {
	mu sync.Mutex
	m  map[string]*exploreLoad
}

type exploreLoad struct {
	once sync.Once
	c    *exploreCountry // nil: the country has no keywords in the build
	err  error
}

// Explore answers q exactly over the served build (kw.Explorer). A build
// made before the explorer's tables answers kw.ErrExploreUnavailable.
func (s *Store) Explore(ctx context.Context, q kw.ExploreQuery) (kw.ExploreResult, error) {
	if err := ctx.Err(); err != nil {
		return kw.ExploreResult{}, err
	}
	h := s.acquire()
	if h == nil {
		return kw.ExploreResult{}, kw.ErrNoIndex
	}
	defer s.release(h)
	if h.explorer != exploreVersion && h.explorer != explorePairsVersion {
		return kw.ExploreResult{}, kw.ErrExploreUnavailable
	}
	res, err := h.exploreQuery(ctx, q)
	if err != nil {
		var u undecodable
		switch {
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			return res, err
		case errors.As(err, &u):
			return res, fmt.Errorf("cannot decode the explorer tables of %s in index build %s: %w: %v", q.Country, h.id, kw.ErrIndexDamaged, err)
		}
		s.damaged(h, err)
		return res, fmt.Errorf("cannot read the explorer tables of %s from index build %s: %w: %s", q.Country, h.id, kw.ErrIndexDamaged, s.describe(err))
	}
	return res, nil
}

func (h *handle) exploreQuery(ctx context.Context, q kw.ExploreQuery) (kw.ExploreResult, error) {
	c, err := h.exploreCountry(q.Country)
	if err != nil || c == nil {
		return kw.ExploreResult{}, err
	}
	if kind, term, ok := c.oneList(&q, h.explorer >= explorePairsVersion); ok {
		key, ok := appendExploreKey(nil, q.Country, kind, term)
		if !ok {
			return kw.ExploreResult{}, nil
		}
		var res kw.ExploreResult
		_, err := h.getValue(key, func(v []byte) error {
			var err error
			res, err = c.headPage(&q, v)
			return err
		})
		return res, err
	}
	return c.run(ctx, q, func(kind byte, term string) (rankList, error) {
		if kind == 'p' && h.explorer < explorePairsVersion {
			return rankList{}, errNoPairs
		}
		return c.list(kind, term, func() ([]uint32, error) { return h.postings(q.Country, kind, term) })
	})
}

// exploreCountry returns the country's columns, loading them once.
func (h *handle) exploreCountry(cc string) (*exploreCountry, error) {
	h.explore.mu.Lock()
	if h.explore.m == nil {
		h.explore.m = map[string]*exploreLoad{}
	}
	l := h.explore.m[cc]
	if l == nil {
		l = &exploreLoad{}
		h.explore.m[cc] = l
	}
	h.explore.mu.Unlock()
	l.once.Do(func() { l.c, l.err = h.loadExplore(cc) })
	if l.err != nil {
		// A failed load is tried again by the next query.
		h.explore.mu.Lock()
		if h.explore.m[cc] == l {
			delete(h.explore.m, cc)
		}
		h.explore.mu.Unlock()
	}
	return l.c, l.err
}

func (h *handle) loadExplore(cc string) (*exploreCountry, error) {
	key, ok := appendExploreKey(nil, cc, 'm', "")
	if !ok {
		return nil, nil
	}
	c := &exploreCountry{}
	if lc, ok := kw.LookupCountry(cc); ok {
		c.lang = lc.LanguageCode
	}
	found, err := h.getValue(key, func(v []byte) error { return c.decodeMeta(v) })
	if err != nil || !found {
		return nil, err
	}
	n := c.n
	c.id, c.rankOf = make([]uint32, n), make([]uint32, n)
	c.vol, c.cpc, c.comp = make([]int64, n), make([]int64, n), make([]float64, n)
	c.has, c.words, c.group = make([]uint8, n), make([]uint8, n), make([]uint32, n)
	c.off = make([]uint32, 0, n+1)
	c.off = append(c.off, 0)
	var text []byte
	lower, _ := appendExploreKey(nil, cc, 'c', "")
	upper, _ := appendExploreKey(nil, cc, 'c'+1, "")
	it, err := h.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, err
	}
	r := 0
	for valid := it.First(); valid; valid = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			_ = it.Close()
			return nil, err
		}
		if r == exploreBlockLen {
			// Size the texts from the first block's, with a margin, so
			// that gigabytes are not copied as they grow; the margin
			// never written is never touched (withRoom).
			text = withRoom(text, len(text)*(n/exploreBlockLen)*5/4)
		}
		if r, text, err = c.decodeBlock(v, r, text); err != nil {
			_ = it.Close()
			return nil, undecodable{err}
		}
	}
	if err := it.Close(); err != nil {
		return nil, err
	}
	if r != n {
		return nil, undecodable{fmt.Errorf("%w: the column blocks hold %d keywords, the meta record %d", errCorrupt, r, n)}
	}
	c.text = unsafe.String(unsafe.SliceData(text), len(text)) // never written again
	if !c.noSpace {
		c.pairs = make([]uint16, n)
		for r := range c.pairs {
			c.pairs[r] = pairMask(c.kw(uint32(r)))
		}
	}
	// The blocks' least and greatest values, made here rather than by the
	// first query of each sort, which would wait for them.
	for _, s := range []kw.ExploreSort{kw.SortVolume, kw.SortCPC, kw.SortCompetition, kw.SortWords} {
		c.zones(s)
	}
	for i := range c.rankOf {
		c.rankOf[i] = math.MaxUint32
	}
	for r, id := range c.id {
		if c.rankOf[id] != math.MaxUint32 {
			return nil, undecodable{fmt.Errorf("%w: keyword id %d has two ranks", errCorrupt, id)}
		}
		c.rankOf[id] = uint32(r)
	}
	return c, nil
}

func (c *exploreCountry) decodeMeta(v []byte) error {
	if len(v) < 1 || v[0] != exploreVersion {
		return fmt.Errorf("%w: explorer meta record of an unknown version", errCorrupt)
	}
	d := decoder{s: string(v), off: 1}
	n := d.uvarint()
	if n > math.MaxInt32 {
		d.fail("keyword count out of range")
	}
	c.n = int(n)
	c.noSpace = d.byte() == 1
	k := d.count(math.MaxInt32, 1)
	for i := 0; i < k; i++ {
		c.extras = append(c.extras, d.str())
	}
	if d.err == nil && d.off != len(d.s) {
		d.fail("trailing bytes")
	}
	return d.err
}

// decodeBlock decodes a column block whose first rank is r.
func (c *exploreCountry) decodeBlock(v []byte, r int, text []byte) (int, []byte, error) {
	if len(v) < 1 || v[0] != exploreVersion {
		return r, text, fmt.Errorf("%w: explorer column block of an unknown version", errCorrupt)
	}
	d := decoder{s: string(v), off: 1}
	k := d.count(exploreBlockLen, 3)
	if r+k > c.n {
		return r, text, fmt.Errorf("%w: more keywords in the column blocks than the meta record counts", errCorrupt)
	}
	for i := 0; i < k && d.err == nil; i, r = i+1, r+1 {
		id := d.uvarint()
		if id >= uint64(c.n) {
			d.fail("keyword id out of range")
		}
		c.id[r] = uint32(id)
		h := d.byte()
		c.has[r] = h
		if h&hasVolume != 0 {
			c.vol[r] = d.varint()
		}
		if h&hasCPC != 0 {
			c.cpc[r] = d.varint()
		}
		if h&hasCompetition != 0 {
			if d.off+8 > len(d.s) {
				d.fail("truncated")
				break
			}
			c.comp[r] = math.Float64frombits(binary.LittleEndian.Uint64([]byte(d.s[d.off : d.off+8])))
			d.off += 8
		}
		g := d.uvarint()
		if g >= uint64(c.n+len(c.extras)) {
			d.fail("intent group out of range")
		}
		c.group[r] = uint32(g)
		t := d.str()
		c.words[r] = uint8(min(strings.Count(t, " ")+1, math.MaxUint8))
		text = append(text, t...)
		if len(text) > math.MaxUint32 {
			d.fail("keyword text too long")
		}
		c.off = append(c.off, uint32(len(text)))
	}
	if d.err == nil && d.off != len(d.s) {
		d.fail("trailing bytes")
	}
	return r, text, d.err
}

// postings reads the postings of a word or a gram (nil when it has none).
func (h *handle) postings(cc string, kind byte, term string) ([]uint32, error) {
	key, ok := appendExploreKey(nil, cc, kind, term)
	if !ok {
		return nil, nil
	}
	var out []uint32
	_, err := h.getValue(key, func(v []byte) error {
		var err error
		out, err = decodePostings(v)
		return err
	})
	return out, err
}

// decodePostings decodes appendPostings' list.
func decodePostings(v []byte) ([]uint32, error) {
	if len(v) < 1 || v[0] != exploreVersion {
		return nil, fmt.Errorf("%w: postings of an unknown version", errCorrupt)
	}
	v = v[1:]
	n, k := binary.Uvarint(v)
	if k <= 0 || n > uint64(len(v)) {
		return nil, fmt.Errorf("%w: postings count out of range", errCorrupt)
	}
	v = v[k:]
	out := make([]uint32, n)
	prev := int64(-1)
	for i := range out {
		var d uint64
		if len(v) > 0 && v[0] < 0x80 {
			d, v = uint64(v[0]), v[1:]
		} else {
			d, k = binary.Uvarint(v)
			if k <= 0 {
				return nil, fmt.Errorf("%w: postings truncated", errCorrupt)
			}
			v = v[k:]
		}
		if d == 0 || prev+int64(d) > math.MaxUint32 {
			return nil, fmt.Errorf("%w: postings out of order", errCorrupt)
		}
		prev += int64(d)
		out[i] = uint32(prev)
	}
	if len(v) != 0 {
		return nil, fmt.Errorf("%w: trailing bytes after postings", errCorrupt)
	}
	return out, nil
}

// intersect returns the ranks in both a and b (both ascending), into a's
// storage; a is the shorter. It gallops through b when b is much longer.
func intersect(a, b []uint32) []uint32 {
	out := a[:0]
	if len(b) > 16*len(a) {
		lo := 0
		for _, x := range a {
			// Exponential search for x in b[lo:].
			step := 1
			hi := lo
			for hi < len(b) && b[hi] < x {
				lo = hi
				hi += step
				step *= 2
			}
			hi = min(hi+1, len(b))
			i, found := slices.BinarySearch(b[lo:hi], x)
			lo += i
			if found {
				out = append(out, x)
			}
			if lo >= len(b) {
				break
			}
		}
		return out
	}
	j := 0
	for _, x := range a {
		for j < len(b) && b[j] < x {
			j++
		}
		if j == len(b) {
			break
		}
		if b[j] == x {
			out = append(out, x)
		}
	}
	return out
}

// union merges ascending lists into one without repeats.
func union(lists [][]uint32) []uint32 {
	switch len(lists) {
	case 0:
		return nil
	case 1:
		return lists[0]
	}
	out := slices.Concat(lists...)
	slices.Sort(out)
	return slices.Compact(out)
}

// termCandidates returns the ranks that may hold term, and whether each
// must still be checked: a word's postings are exact; for a language
// written without spaces, a term of one or two characters has postings of
// its own and a longer one intersects those of its pairs, which the
// keyword's text then confirms.
func (c *exploreCountry) termCandidates(term string, fetch listFetch) (rankList, bool, error) {
	if !c.noSpace {
		l, err := fetch('w', term)
		return l, false, err
	}
	runes := utf8.RuneCountInString(term)
	if runes <= 2 {
		l, err := fetch('g', term)
		return l, false, err
	}
	var lists []rankList
	for i := 0; i < len(term); {
		_, n1 := utf8.DecodeRuneInString(term[i:])
		if i+n1 >= len(term) {
			break
		}
		_, n2 := utf8.DecodeRuneInString(term[i+n1:])
		l, err := fetch('g', term[i:i+n1+n2])
		if err != nil || l.n == 0 {
			return rankList{}, false, err
		}
		lists = append(lists, l)
		i += n1
	}
	return intersectLists(lists), true, nil
}

// errNoPairs: the build has no postings of pairs of common words.
var errNoPairs = errors.New("no pair postings in this build")

// listFetch reads the postings of a word, a gram or a pair of words as a
// candidate list.
type listFetch func(kind byte, term string) (rankList, error)

// list returns the postings of kind and term from the country's dense
// lists, or reads them with read and keeps them there if they are dense.
func (c *exploreCountry) list(kind byte, term string, read func() ([]uint32, error)) (rankList, error) {
	key := string(kind) + term
	l, ok := c.dense.get(key)
	if ok {
		return *l, nil
	}
	ranks, err := read()
	if err != nil || !isDense(len(ranks), c.n) {
		return rankList{ranks: ranks, n: len(ranks)}, err
	}
	l = &rankList{bits: toBits(ranks, c.n), n: len(ranks)}
	c.dense.put(key, l)
	return *l, nil
}

// questionList is the country's questions: the keywords that begin with
// a question word of its language (kw.QuestionWords). They are found
// once a build, among the keywords holding the first word of a question
// word (for a language written without spaces, among all of them), and
// kept with the dense lists, so that a questions query reads no text to
// tell a question.
func (c *exploreCountry) questionList(fetch listFetch) (rankList, error) {
	const key = "\x00questions"
	l, ok := c.dense.get(key)
	if ok {
		return *l, nil
	}
	words := kw.QuestionWords(c.lang)
	starts := questionStarts(words, c.noSpace)
	var cands []uint32
	if starts != nil {
		var ls []rankList
		for _, w := range slices.Sorted(maps.Keys(starts)) {
			l, _, err := c.termCandidates(w, fetch)
			if err != nil {
				return rankList{}, err
			}
			ls = append(ls, l)
		}
		u := unionLists(ls, c.n)
		cands = u.appendRanks(nil)
	} else {
		cands = make([]uint32, c.n)
		for r := range cands {
			cands[r] = uint32(r)
		}
	}
	qs := cands[:0]
	for _, r := range cands {
		if isQuestion(c.kw(r), words, starts) {
			qs = append(qs, r)
		}
	}
	u := rankList{ranks: slices.Clip(qs), n: len(qs)}
	if isDense(u.n, c.n) {
		u = rankList{bits: toBits(u.ranks, c.n), n: u.n}
	}
	c.dense.put(key, &u)
	return u, nil
}

// volumeWindow returns the ranks [lo, hi) whose volume is within q's
// bounds: ranks with a volume come first, by volume descending, so the
// keywords passing both bounds are one run of ranks.
func (c *exploreCountry) volumeWindow(q *kw.ExploreQuery) (lo, hi uint32) {
	if q.MinVolume == nil && q.MaxVolume == nil {
		return 0, uint32(c.n)
	}
	missing := sort.Search(c.n, func(r int) bool { return c.has[r]&hasVolume == 0 })
	end := missing
	if q.MinVolume != nil {
		end = sort.Search(missing, func(r int) bool { return c.vol[r] < *q.MinVolume })
	}
	start := 0
	if q.MaxVolume != nil {
		start = sort.Search(missing, func(r int) bool { return c.vol[r] <= *q.MaxVolume })
	}
	return uint32(min(start, end)), uint32(end)
}

// holdsPhrase reports whether text holds phrase as whole words.
func holdsPhrase(text, phrase string) bool {
	for i := 0; ; {
		j := strings.Index(text[i:], phrase)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(phrase)
		if (j == 0 || text[j-1] == ' ') && (end == len(text) || text[end] == ' ') {
			return true
		}
		i = j + 1
	}
}

// questionStarts are a language's question words by their first word,
// so that a keyword costs one map lookup; nil for a language written
// without spaces, whose short list is tried in turn.
func questionStarts(words []string, noSpace bool) map[string][]string {
	if noSpace {
		return nil
	}
	m := map[string][]string{}
	for _, w := range words {
		first, _, _ := strings.Cut(w, " ")
		m[first] = append(m[first], w)
	}
	return m
}

// isQuestion reports whether text begins with one of the words.
func isQuestion(text string, words []string, starts map[string][]string) bool {
	if starts != nil {
		first, _, _ := strings.Cut(text, " ")
		words = starts[first]
	}
	for _, w := range words {
		if strings.HasPrefix(text, w) && (starts == nil || len(text) == len(w) || text[len(w)] == ' ') {
			return true
		}
	}
	return false
}

// sortKey is the value rank r sorts by; missing when it has none.
func (c *exploreCountry) sortKey(r uint32, s kw.ExploreSort) (missing bool, v int64) {
	switch s {
	case kw.SortVolume:
		return c.has[r]&hasVolume == 0, c.vol[r]
	case kw.SortCPC:
		return c.has[r]&hasCPC == 0, c.cpc[r]
	case kw.SortCompetition:
		return c.has[r]&hasCompetition == 0, kw.OrderedFloat(c.comp[r])
	case kw.SortWords:
		return false, int64(c.words[r])
	}
	return false, 0
}

// cmpKeys orders two sort values: present before missing, then by value
// in the order asked.
func cmpKeys(ma bool, va int64, mb bool, vb int64, desc bool) int {
	switch {
	case ma != mb:
		if ma {
			return 1
		}
		return -1
	case ma || va == vb:
		return 0
	case (va > vb) == desc:
		return -1
	}
	return 1
}

// candidates are what a query's lists leave: the keywords that may match,
// and what only their texts can tell.
type candidates struct {
	ranks rankList
	// verify: terms of q the text must hold; checkInclude: include
	// terms one of which it must hold; checkExclude: terms it must not
	// hold (languages written without spaces).
	verify, checkInclude, checkExclude []string
	// phraseDone: the lists alone hold the phrase; no text is read for it.
	phraseDone bool
}

// candidates reads and combines q's lists; ok is false when one of them
// leaves nothing.
func (c *exploreCountry) candidates(q *kw.ExploreQuery, fetch listFetch) (cs candidates, ok bool, err error) {
	var lists []rankList
	common := map[string]bool{}
	for _, w := range slices.Compact(slices.Sorted(slices.Values(q.Words))) {
		l, check, err := c.termCandidates(w, fetch)
		if err != nil || l.n == 0 {
			return cs, false, err
		}
		lists = append(lists, l)
		if check {
			cs.verify = append(cs.verify, w)
		}
		common[w] = l.n*exploreCommonShare >= c.n
	}
	if q.Mode == kw.ModePhrase && !c.noSpace && len(q.Words) > 1 {
		// Each pair of adjacent common words of the phrase has postings
		// of its own: exactly the keywords holding the pair.
		pairs := 0
		for i := 1; i < len(q.Words); i++ {
			a, b := q.Words[i-1], q.Words[i]
			if !common[a] || !common[b] {
				continue
			}
			l, err := fetch('p', a+" "+b)
			if errors.Is(err, errNoPairs) {
				break
			}
			if err != nil || l.n == 0 {
				return cs, false, err
			}
			lists = append(lists, l)
			pairs++
		}
		// A phrase of two words is then exactly its pair's postings.
		cs.phraseDone = len(q.Words) == 2 && pairs == 1
	}
	if len(q.Include) > 0 {
		var ls []rankList
		for _, w := range q.Include {
			l, check, err := c.termCandidates(w, fetch)
			if err != nil {
				return cs, false, err
			}
			ls = append(ls, l)
			if check || c.noSpace {
				cs.checkInclude = q.Include
			}
		}
		include := unionLists(ls, c.n)
		if include.n == 0 {
			return cs, false, nil
		}
		lists = append(lists, include)
	}
	var exclude rankList
	if len(q.Exclude) > 0 {
		if c.noSpace {
			cs.checkExclude = q.Exclude
		} else {
			var ls []rankList
			for _, w := range q.Exclude {
				l, _, err := c.termCandidates(w, fetch)
				if err != nil {
					return cs, false, err
				}
				ls = append(ls, l)
			}
			exclude = unionLists(ls, c.n)
		}
	}
	if q.Mode == kw.ModeQuestions {
		qs, err := c.questionList(fetch)
		if err != nil || qs.n == 0 {
			return cs, false, err
		}
		lists = append(lists, qs)
	}
	cs.ranks = intersectLists(lists)
	// The volume bounds are a window of ranks; exclude leaves the rest.
	if lo, hi := c.volumeWindow(q); lo > 0 || hi < uint32(c.n) {
		cs.ranks = cs.ranks.window(lo, hi)
	}
	if exclude.n > 0 {
		cs.ranks = cs.ranks.without(exclude)
	}
	return cs, true, nil
}

func (c *exploreCountry) run(ctx context.Context, q kw.ExploreQuery, fetch listFetch) (kw.ExploreResult, error) {
	var res kw.ExploreResult
	cs, ok, err := c.candidates(&q, fetch)
	if err != nil || !ok {
		return res, err
	}
	cands, verify, checkInclude, checkExclude := cs.ranks, cs.verify, cs.checkInclude, cs.checkExclude
	phrase := q.Mode == kw.ModePhrase && (len(q.Words) > 1 || c.noSpace && len(verify) > 0) && !cs.phraseDone
	intent := uint32(math.MaxUint32)
	if q.Intent != "" {
		g, ok := c.groupID(q.Intent)
		if !ok {
			return res, nil
		}
		intent = g
	}
	nf := newNumFilter(&q, intent)
	// A phrase's adjacent pairs of words must all be among the keyword's:
	// their bits turn most candidates away before their text is read.
	var pairs uint16
	if phrase && c.pairs != nil {
		pairs = pairMask(q.Q)
	}
	texts := len(verify) > 0 || phrase || checkInclude != nil || checkExclude != nil
	// keepText reports whether rank r's text passes what only the text
	// can tell.
	keepText := func(r uint32) bool {
		t := c.kw(r)
		for _, w := range verify {
			if !strings.Contains(t, w) {
				return false
			}
		}
		if phrase {
			if c.noSpace {
				if !strings.Contains(t, q.Q) {
					return false
				}
			} else if !holdsPhrase(t, q.Q) {
				return false
			}
		}
		if checkInclude != nil && !slices.ContainsFunc(checkInclude, func(w string) bool { return strings.Contains(t, w) }) {
			return false
		}
		if slices.ContainsFunc(checkExclude, func(w string) bool { return strings.Contains(t, w) }) {
			return false
		}
		return true
	}
	stream := q.Sort == kw.SortVolume && q.Desc
	// In the default order a cursor is a rank: the first one after it.
	from := uint32(0)
	if stream && q.After != nil {
		from = uint32(sort.Search(c.n, func(r int) bool { return c.cmpAfter(&q, uint32(r)) > 0 }))
	}
	if stream && !q.GroupIntent && !texts && !nf.any {
		// Every candidate matches: the total is their count, the page
		// the first after the cursor.
		page := cands.firstFrom(nil, from, q.Limit)
		return c.answer(q, int64(cands.n), page, int64(cands.countFrom(from))), nil
	}
	// The matches, a chunk at a time: candidates taken out of the list
	// into a buffer that stays in the cache, then kept if they pass the
	// numbers, then the text.
	var buf [matchChunk]uint32
	var at int
	next := func() ([]uint32, error) {
		for {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			var chunk []uint32
			chunk, at = cands.chunk(buf[:0], at)
			if len(chunk) == 0 {
				return nil, nil
			}
			if nf.any {
				chunk = nf.keep(c, chunk)
			}
			if pairs != 0 {
				chunk = c.keepPairs(chunk, pairs)
			}
			if texts {
				chunk = c.keepTexts(chunk, keepText)
			}
			if len(chunk) > 0 {
				return chunk, nil
			}
		}
	}
	if q.GroupIntent {
		return c.groups(q, next)
	}
	top := newSortedTop(c, &q)
	if !stream && !nf.any && !texts && q.Sort != kw.SortKeyword {
		// Every candidate matches: the total is their count, and a
		// block of ranks whose best value cannot enter the full heap is
		// passed over whole.
		if err := top.offerAll(ctx, &cands, c.zones(q.Sort)); err != nil {
			return res, err
		}
		return c.answer(q, int64(cands.n), top.sorted(), top.after), nil
	}
	var page []uint32
	var total int64
	err = eachChunk(next, func(chunk []uint32) {
		total += int64(len(chunk))
		if !stream {
			for _, r := range chunk {
				top.offer(r)
			}
			return
		}
		for _, r := range chunk {
			if r >= from {
				top.after++
				if len(page) < q.Limit {
					page = append(page, r)
				}
			}
		}
	})
	if err != nil {
		return res, err
	}
	if !stream {
		page = top.sorted()
	}
	return c.answer(q, total, page, top.after), nil
}

// sortedTop keeps the first limit matches of a query in its order, and
// counts the matches after its cursor.
type sortedTop struct {
	c     *exploreCountry
	q     *kw.ExploreQuery
	heap  topRanks
	after int64
	// The last of a full heap, to turn most candidates away without it.
	full   bool
	worstM bool
	worstV int64
	worst  uint32
}

func newSortedTop(c *exploreCountry, q *kw.ExploreQuery) *sortedTop {
	t := &sortedTop{c: c, q: q}
	t.heap = topRanks{limit: q.Limit, cmp: func(a, b uint32) int {
		ma, va := c.sortKey(a, q.Sort)
		mb, vb := c.sortKey(b, q.Sort)
		if x := cmpKeys(ma, va, mb, vb, q.Desc); x != 0 {
			return x
		}
		return t.cmpIDs(a, b)
	}}
	return t
}

// cmpIDs breaks a tie of the sort value: by text (id) ascending, but for
// sort=keyword, whose key is the text itself, in the order asked.
func (t *sortedTop) cmpIDs(a, b uint32) int {
	if t.q.Sort == kw.SortKeyword && t.q.Desc {
		return int(t.c.id[b]) - int(t.c.id[a])
	}
	return int(t.c.id[a]) - int(t.c.id[b])
}

// offer offers match r.
func (t *sortedTop) offer(r uint32) {
	c, q := t.c, t.q
	if q.After != nil && c.cmpAfter(q, r) <= 0 {
		return
	}
	t.after++
	if t.full {
		m, v := c.sortKey(r, q.Sort)
		if x := cmpKeys(m, v, t.worstM, t.worstV, q.Desc); x > 0 || x == 0 && t.cmpIDs(r, t.worst) > 0 {
			return
		}
	}
	t.heap.offer(r)
	if len(t.heap.heap) == q.Limit {
		t.full = q.Limit > 0
		t.worst = t.heap.heap[0]
		t.worstM, t.worstV = c.sortKey(t.worst, q.Sort)
	}
}

// offerAll offers every rank of l, passing over a block of 64 ranks
// whose best value comes after the last of the full heap: every rank of
// it comes after the cursor too, so it only counts.
func (t *sortedTop) offerAll(ctx context.Context, l *rankList, z *keyZones) error {
	skip := func(b int) bool { return t.full && z.after(b, t.worstM, t.worstV, t.q.Desc) }
	if l.bits == nil {
		for i, r := range l.ranks {
			if i%65536 == 65535 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			if skip(int(r >> 6)) {
				t.after++
				continue
			}
			t.offer(r)
		}
		return nil
	}
	for i := range l.bits {
		w := l.word(i)
		if w == 0 {
			continue
		}
		if i%4096 == 4095 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if skip(i) {
			t.after += int64(bits.OnesCount64(w))
			continue
		}
		for ; w != 0; w &= w - 1 {
			t.offer(uint32(i<<6 + bits.TrailingZeros64(w)))
		}
	}
	return nil
}

func (t *sortedTop) sorted() []uint32 { return t.heap.sorted() }

// keyZones are, for each block of 64 ranks, the least and the greatest
// value of a sort key among the block's keywords that have it, and
// whether some have it and some do not.
type keyZones struct {
	lo, hi          []int64
	present, absent []bool
}

// zones returns the country's zones of sort key s, made on first use
// (the load makes those of every sort key).
func (c *exploreCountry) zones(s kw.ExploreSort) *keyZones {
	c.dense.mu.Lock()
	defer c.dense.mu.Unlock()
	if z := c.keyZones[s]; z != nil {
		return z
	}
	blocks := (c.n + 63) / 64
	z := &keyZones{lo: make([]int64, blocks), hi: make([]int64, blocks), present: make([]bool, blocks), absent: make([]bool, blocks)}
	for b := range blocks {
		lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
		for r := b * 64; r < min(c.n, b*64+64); r++ {
			m, v := c.sortKey(uint32(r), s)
			if m {
				z.absent[b] = true
				continue
			}
			z.present[b] = true
			lo, hi = min(lo, v), max(hi, v)
		}
		z.lo[b], z.hi[b] = lo, hi
	}
	if c.keyZones == nil {
		c.keyZones = map[kw.ExploreSort]*keyZones{}
	}
	c.keyZones[s] = z
	return z
}

// after reports whether every keyword of block b comes after a heap's
// last entry (worstM, worstV) in the order asked, whatever its text.
func (z *keyZones) after(b int, worstM bool, worstV int64, desc bool) bool {
	if z.absent[b] && worstM {
		return false // a tie of missing values, decided by the text
	}
	if !z.present[b] {
		return true // all missing, after a present value
	}
	best := z.lo[b]
	if desc {
		best = z.hi[b]
	}
	return cmpKeys(false, best, worstM, worstV, desc) > 0
}

// eachChunk calls fn with each chunk of matches next returns, until it
// returns none or an error.
func eachChunk(next func() ([]uint32, error), fn func([]uint32)) error {
	for {
		chunk, err := next()
		if err != nil || chunk == nil {
			return err
		}
		fn(chunk)
	}
}

// matchChunk is how many candidates a query takes out of its list at a
// time.
const matchChunk = 1024

// touchAhead is how many candidates ahead their texts are loaded.
const touchAhead = 16

// keepTexts keeps the ranks whose text passes keep, in place. The
// candidates' texts are far apart in memory: the first byte of each of
// the next touchAhead is loaded together, so that they wait for memory
// together instead of one after the other.
func (c *exploreCountry) keepTexts(ranks []uint32, keep func(uint32) bool) []uint32 {
	out := ranks[:0]
	for i, r := range ranks {
		if i%touchAhead == 0 {
			var x byte
			for _, r := range ranks[min(i+touchAhead, len(ranks)):min(i+2*touchAhead, len(ranks))] {
				if o := c.off[r]; o < uint32(len(c.text)) {
					x += c.text[o]
				}
			}
			c.touched.Store(uint32(x)) // so that the loads are not left out
		}
		if keep(r) {
			out = append(out, r)
		}
	}
	return out
}

// pairMask is a set of 16 bits, one for each pair of adjacent words of
// a text (chosen by a hash of the two words and the space between them).
// A text holding a phrase holds the phrase's pairs, so it has every bit
// of the phrase's mask.
func pairMask(text string) uint16 {
	var m uint16
	prev := -1 // where the word before the current one begins
	start := 0 // where the current word begins
	for i := 0; i <= len(text); i++ {
		if i < len(text) && text[i] != ' ' {
			continue
		}
		if prev >= 0 && i > start {
			h := uint32(2166136261) // FNV-1a of text[prev:i]
			for _, b := range []byte(text[prev:i]) {
				h = (h ^ uint32(b)) * 16777619
			}
			m |= 1 << (h % 16)
		}
		if i > start {
			prev = start
		}
		start = i + 1
	}
	return m
}

// keepPairs keeps the ranks whose pairMask holds every bit of need, in
// place.
func (c *exploreCountry) keepPairs(ranks []uint32, need uint16) []uint32 {
	out := ranks[:0]
	for _, r := range ranks {
		if c.pairs[r]&need == need {
			out = append(out, r)
		}
	}
	return out
}

// numFilter is a query's conditions on the numbers of a keyword, but the
// volume (a window of ranks).
type numFilter struct {
	any            bool
	intent         uint32 // math.MaxUint32: none
	cpc, comp, wds bool
	cpcLo, cpcHi   int64
	compLo, compHi float64
	wdsLo, wdsHi   int64
}

func newNumFilter(q *kw.ExploreQuery, intent uint32) numFilter {
	f := numFilter{intent: intent, cpcLo: math.MinInt64, cpcHi: math.MaxInt64, compLo: math.Inf(-1), compHi: math.Inf(1), wdsLo: math.MinInt64, wdsHi: math.MaxInt64}
	setBound(q.MinCPCMicros, &f.cpc, &f.cpcLo)
	setBound(q.MaxCPCMicros, &f.cpc, &f.cpcHi)
	setBound(q.MinCompetition, &f.comp, &f.compLo)
	setBound(q.MaxCompetition, &f.comp, &f.compHi)
	setBound(q.MinWords, &f.wds, &f.wdsLo)
	setBound(q.MaxWords, &f.wds, &f.wdsHi)
	f.any = f.cpc || f.comp || f.wds || intent != math.MaxUint32
	return f
}

// setBound copies a bound that is set into dst and marks its metric as
// bounded.
func setBound[T int64 | float64](p *T, on *bool, dst *T) {
	if p != nil {
		*on, *dst = true, *p
	}
}

// keep keeps the ranks that pass f, in place. A keyword without a number
// passes no bound on it.
func (f *numFilter) keep(c *exploreCountry, ranks []uint32) []uint32 {
	out := ranks[:0]
	for _, r := range ranks {
		h := c.has[r]
		if f.intent != math.MaxUint32 && c.group[r] != f.intent ||
			f.cpc && (h&hasCPC == 0 || c.cpc[r] < f.cpcLo || c.cpc[r] > f.cpcHi) ||
			f.comp && (h&hasCompetition == 0 || c.comp[r] < f.compLo || c.comp[r] > f.compHi) ||
			f.wds && (int64(c.words[r]) < f.wdsLo || int64(c.words[r]) > f.wdsHi) {
			continue
		}
		out = append(out, r)
	}
	return out
}

// answer makes the rows of a page and the cursor of the next, if more
// than the page come after the cursor.
func (c *exploreCountry) answer(q kw.ExploreQuery, total int64, page []uint32, afterCount int64) kw.ExploreResult {
	res := kw.ExploreResult{Total: total, Rows: make([]kw.ExploreRow, len(page))}
	for i, r := range page {
		row := &res.Rows[i]
		row.Keyword = c.kw(r)
		h := c.has[r]
		if h&hasVolume != 0 {
			row.Volume = copyOpt(&c.vol[r])
		}
		if h&hasCPC != 0 {
			row.CPCMicros = copyOpt(&c.cpc[r])
		}
		if h&hasCompetition != 0 {
			row.Competition = copyOpt(&c.comp[r])
		}
		row.Intent = c.leader(c.group[r])
	}
	if afterCount > int64(len(page)) && len(page) > 0 {
		last := page[len(page)-1]
		m, v := c.sortKey(last, q.Sort)
		res.NextCursor = q.EncodeCursor(kw.ExplorePosition{Missing: m, Value: v, Keyword: c.kw(last)})
	}
	return res
}

// cmpAfter orders rank r against a cursor's position in q's order: > 0
// when r comes after it.
func (c *exploreCountry) cmpAfter(q *kw.ExploreQuery, r uint32) int {
	m, v := c.sortKey(r, q.Sort)
	if x := cmpKeys(m, v, q.After.Missing, q.After.Value, q.Desc); x != 0 {
		return x
	}
	x := strings.Compare(c.kw(r), q.After.Keyword)
	if q.Sort == kw.SortKeyword && q.Desc {
		return -x // the text is the sort key itself
	}
	return x
}

// oneList returns the postings key of a query answered by one postings
// list as it stands: one word with an exact list, no other condition, the
// default order. Its total is the list's count and its page the first
// entries after the cursor, so it reads only as far as its page.
//
// A phrase of two common words is one list too, its pair's, in a build
// that has them (pairs), once both words' lists are kept: whether a word
// is common is known from its kept list without reading it again.
func (c *exploreCountry) oneList(q *kw.ExploreQuery, pairs bool) (kind byte, term string, ok bool) {
	if q.GroupIntent || q.Sort != kw.SortVolume || !q.Desc || q.Mode == kw.ModeQuestions ||
		len(q.Include) > 0 || len(q.Exclude) > 0 || q.Intent != "" ||
		q.MinVolume != nil || q.MaxVolume != nil || q.MinCPCMicros != nil || q.MaxCPCMicros != nil ||
		q.MinCompetition != nil || q.MaxCompetition != nil || q.MinWords != nil || q.MaxWords != nil {
		return 0, "", false
	}
	if len(q.Words) == 2 && q.Mode == kw.ModePhrase && pairs && !c.noSpace && c.keptCommon(q.Words[0]) && c.keptCommon(q.Words[1]) {
		return 'p', q.Words[0] + " " + q.Words[1], true
	}
	if len(q.Words) != 1 {
		return 0, "", false
	}
	if !c.noSpace {
		return 'w', q.Words[0], true
	}
	if utf8.RuneCountInString(q.Words[0]) <= 2 {
		return 'g', q.Words[0], true
	}
	return 0, "", false
}

// keptCommon reports whether word w's list is kept and common.
func (c *exploreCountry) keptCommon(w string) bool {
	l, ok := c.dense.get("w" + w)
	return ok && l.n*exploreCommonShare >= c.n
}

// headPage answers a oneList query from the head of its postings value v.
func (c *exploreCountry) headPage(q *kw.ExploreQuery, v []byte) (kw.ExploreResult, error) {
	if len(v) < 1 || v[0] != exploreVersion {
		return kw.ExploreResult{}, fmt.Errorf("%w: postings of an unknown version", errCorrupt)
	}
	v = v[1:]
	n, k := binary.Uvarint(v)
	if k <= 0 || n > uint64(len(v)) {
		return kw.ExploreResult{}, fmt.Errorf("%w: postings count out of range", errCorrupt)
	}
	v = v[k:]
	page := make([]uint32, 0, min(uint64(q.Limit), n))
	prev := int64(-1)
	var afterCount int64
	for i := uint64(0); i < n && len(page) < q.Limit; i++ {
		d, k := binary.Uvarint(v)
		if k <= 0 || d == 0 || prev+int64(d) >= int64(c.n) {
			return kw.ExploreResult{}, fmt.Errorf("%w: postings out of range", errCorrupt)
		}
		v = v[k:]
		prev += int64(d)
		r := uint32(prev)
		if afterCount == 0 && q.After != nil && c.cmpAfter(q, r) <= 0 {
			continue
		}
		if afterCount == 0 {
			afterCount = int64(n - i)
		}
		page = append(page, r)
	}
	return c.answer(*q, int64(n), page, afterCount), nil
}

// copyOpt copies a number out of the columns, which answers must not
// share.
func copyOpt[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// addToGroup counts rank r in its group's accumulator.
func (c *exploreCountry) addToGroup(slot []int32, accs *[]exploreGroupAcc, r uint32) {
	g := c.group[r]
	k := int(slot[g]) - 1
	if k < 0 {
		k = len(*accs)
		slot[g] = int32(k + 1)
		*accs = append(*accs, exploreGroupAcc{gid: g})
	}
	a := &(*accs)[k]
	a.count++
	if c.has[r]&hasVolume != 0 {
		a.volume += c.vol[r]
	}
	// Ranks arrive in the default order: the first are the top.
	if a.nTop < len(a.top) {
		a.top[a.nTop] = r
		a.nTop++
	}
}

// groupScratch is what group=intent reuses from one query to the next:
// a slot for every group, cleared after use, and the groups found.
type groupScratch struct {
	slot []int32
	accs []exploreGroupAcc
}

// groupAcc is an intent group among the matches.
type exploreGroupAcc struct {
	gid    uint32
	count  int64
	volume int64
	top    [kw.ExploreTopMembers]uint32
	nTop   int
}

func (c *exploreCountry) groups(q kw.ExploreQuery, next func() ([]uint32, error)) (kw.ExploreResult, error) {
	var res kw.ExploreResult
	// slot maps a group id to its place in accs plus one (0: none yet);
	// it is as long as there are groups, so it is pooled and cleared
	// where used.
	sp, _ := c.slots.Get().(*groupScratch)
	if sp == nil {
		sp = &groupScratch{slot: make([]int32, c.n+len(c.extras))}
	}
	slot := sp.slot
	accs := sp.accs[:0]
	defer func() {
		for i := range accs {
			slot[accs[i].gid] = 0
		}
		sp.accs = accs[:0]
		c.slots.Put(sp)
	}()
	err := eachChunk(next, func(chunk []uint32) {
		res.Total += int64(len(chunk))
		for _, r := range chunk {
			c.addToGroup(slot, &accs, r)
		}
	})
	if err != nil {
		return res, err
	}
	res.TotalGroups = int64(len(accs))
	cmp := func(a, b uint32) int {
		x, y := &accs[a], &accs[b]
		if x.volume != y.volume {
			if x.volume > y.volume {
				return -1
			}
			return 1
		}
		return strings.Compare(c.leader(x.gid), c.leader(y.gid))
	}
	top := topRanks{limit: q.Limit, cmp: cmp}
	var afterCount int64
	for i := range accs {
		a := &accs[i]
		if p := q.After; p != nil && (a.volume > p.Value || a.volume == p.Value && c.leader(a.gid) <= p.Keyword) {
			continue
		}
		afterCount++
		top.offer(uint32(i))
	}
	page := top.sorted()
	res.Groups = make([]kw.ExploreGroup, len(page))
	for i, k := range page {
		a := &accs[k]
		g := kw.ExploreGroup{Intent: c.leader(a.gid), MembersMatched: a.count, Volume: a.volume, Top: make([]string, a.nTop)}
		for j := range g.Top {
			g.Top[j] = c.kw(a.top[j])
		}
		res.Groups[i] = g
	}
	if afterCount > int64(len(page)) && len(page) > 0 {
		last := res.Groups[len(page)-1]
		res.NextCursor = q.EncodeCursor(kw.ExplorePosition{Value: last.Volume, Keyword: last.Intent})
	}
	return res, nil
}

// topRanks keeps the limit first values offered in cmp's order: a heap
// whose root is the last of them.
type topRanks struct {
	limit int
	cmp   func(a, b uint32) int
	heap  []uint32
}

func (t *topRanks) offer(r uint32) {
	if len(t.heap) < t.limit {
		t.heap = append(t.heap, r)
		// Sift up.
		for i := len(t.heap) - 1; i > 0; {
			p := (i - 1) / 2
			if t.cmp(t.heap[i], t.heap[p]) <= 0 {
				break
			}
			t.heap[i], t.heap[p] = t.heap[p], t.heap[i]
			i = p
		}
		return
	}
	if t.limit == 0 || t.cmp(r, t.heap[0]) >= 0 {
		return
	}
	t.heap[0] = r
	for i := 0; ; {
		l, big := 2*i+1, i
		if l < len(t.heap) && t.cmp(t.heap[l], t.heap[big]) > 0 {
			big = l
		}
		if l+1 < len(t.heap) && t.cmp(t.heap[l+1], t.heap[big]) > 0 {
			big = l + 1
		}
		if big == i {
			break
		}
		t.heap[i], t.heap[big] = t.heap[big], t.heap[i]
		i = big
	}
}

func (t *topRanks) sorted() []uint32 {
	slices.SortFunc(t.heap, t.cmp)
	return t.heap
}
