package index

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/cockroachdb/pebble/v2"

	"github.com/kwdata/kwdata/kw"
)

// Suggestions. A prefix answer must cost the same at ten million keywords
// as at ten, so the build writes two small tables beside the keywords:
//
//   - prefix records (country, 0x02, prefix): for every prefix (at a rune
//     boundary) that begins more than PrefixScanLimit keywords, its
//     MaxSuggestions keywords with the largest volume. A prefix that
//     begins fewer has no record: its keywords are read straight from the
//     keyword keys, at most PrefixScanLimit of them.
//   - word records (country, 0x03, word): for every word that appears in
//     a keyword after its first word, the wordCandidates keywords with the
//     largest volume that contain it there.
//
// So a suggestion costs one seek for the prefix record and, without one,
// one bounded scan of at most PrefixScanLimit keyword keys; and, when the
// prefix gives fewer than asked for, one seek for the word record of each
// distinct word of the query (at most 40 at 80 characters; one for a query
// of one word). None of it depends on the number of keywords. Ranking is volume descending (none
// ranks as 0), then text ascending.

// MaxSuggestions is the most keywords a suggestion answers.
const MaxSuggestions = 10

// PrefixScanLimit is the most keyword keys a suggestion reads: a prefix
// beginning more keywords than this has a prefix record.
const PrefixScanLimit = 64

// wordCandidates is how many keywords a word record keeps: more than
// MaxSuggestions, so that a query of several words, which filters the
// records of its words, still finds some when all of them are frequent.
const wordCandidates = 32

// Separators of the suggestion tables in the key after the country code.
const (
	prefixSep = 0x02
	wordSep   = 0x03
)

// appendTableKey appends country, sep, text.
func appendTableKey(dst []byte, country string, sep byte, text string) ([]byte, bool) {
	dst, ok := appendKey(dst, country, text)
	if ok {
		dst[len(dst)-len(text)-1] = sep
	}
	return dst, ok
}

// scored is a keyword and the volume it ranks by.
type scored struct {
	keyword string
	volume  int64
}

func scoredCmp(a, b scored) int {
	if a.volume != b.volume {
		if a.volume > b.volume {
			return -1
		}
		return 1
	}
	return strings.Compare(a.keyword, b.keyword)
}

// topN keeps the best n keywords offered, best first.
type topN struct {
	n    int
	list []scored
}

// offer adds s if it is among the best n so far, and reports whether it
// is.
func (t *topN) offer(s scored) bool {
	if len(t.list) == t.n && scoredCmp(s, t.list[t.n-1]) >= 0 {
		return false
	}
	i, _ := slices.BinarySearchFunc(t.list, s, scoredCmp)
	if len(t.list) < t.n {
		t.list = append(t.list, scored{})
	}
	copy(t.list[i+1:], t.list[i:])
	t.list[i] = s
	return true
}

// encodeKeywords appends a list of keywords: uvarint n, n strings.
func encodeKeywords(dst []byte, list []scored) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(list)))
	for _, s := range list {
		dst = appendString(dst, s.keyword)
	}
	return dst
}

// decodeKeywords decodes encodeKeywords' list, at most max of them.
func decodeKeywords(b []byte, max int) ([]string, error) {
	d := decoder{s: string(b)}
	n := d.count(max, 1)
	out := make([]string, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, d.str())
	}
	if d.err == nil && d.off != len(d.s) {
		d.fail("trailing bytes")
	}
	if d.err != nil {
		return nil, d.err
	}
	return out, nil
}

// suggestBuilder collects the prefix and word records of one country while
// its keywords stream by in text order.
type suggestBuilder struct {
	prev    string
	n       int          // keywords added
	stack   []prefixNode // the open prefixes of prev, shortest first
	records []prefixRecord
	words   map[string]*topN
	// noWords: the explorer's builder writes the word records
	// (exploreBuilder.writeWordRecords); this one keeps none.
	noWords bool
	free    [][]scored // lists of closed prefixes without a record, for reuse
	seen    []string   // words of the current keyword
	// last holds the last PrefixScanLimit+1 keywords added, at n modulo
	// its length: a prefix keeps no list of its best until it begins more
	// keywords than a scan reads, and then they are exactly these.
	last [PrefixScanLimit + 1]scored
}

type prefixNode struct {
	end   int // the prefix is prev[:end]
	start int // keywords added before the prefix opened
	top   topN
}

type prefixRecord struct {
	prefix string
	list   []scored
}

// add offers the next keyword in text order (a missing volume is 0). It
// keeps keyword as it is, as groupBuilder.add does.
func (sb *suggestBuilder) add(keyword string, volume int64) {
	s := scored{keyword, max(volume, 0)}
	// Close the prefixes of the previous keyword this one does not share.
	common := 0
	for common < len(keyword) && common < len(sb.prev) && keyword[common] == sb.prev[common] {
		common++
	}
	for common > 0 && common < len(keyword) && !utf8.RuneStart(keyword[common]) {
		common--
	}
	sb.close(common)
	// Open its own, at every rune boundary after the shared part.
	for i := common + 1; i <= len(keyword); i++ {
		if i == len(keyword) || utf8.RuneStart(keyword[i]) {
			sb.stack = append(sb.stack, prefixNode{end: i, start: sb.n, top: topN{n: MaxSuggestions}})
		}
	}
	sb.last[sb.n%len(sb.last)] = s
	sb.n++
	// Only a prefix beginning more than PrefixScanLimit keywords gets a
	// record, so only such a prefix needs its best: most prefixes, the
	// long ones, never get there and cost nothing. The open prefixes are
	// nested (each holds every keyword of the longer ones after it), so
	// the longest come first with the fewest keywords, and a keyword that
	// does not make the top of a full prefix makes none of the shorter
	// ones, whose tenth best is at least as good: the offers stop there.
	for i := len(sb.stack) - 1; i >= 0; i-- {
		p := &sb.stack[i]
		switch count := sb.n - p.start; {
		case count <= PrefixScanLimit:
		case count == PrefixScanLimit+1:
			if k := len(sb.free); k > 0 {
				p.top.list, sb.free = sb.free[k-1], sb.free[:k-1]
			} else {
				p.top.list = make([]scored, 0, MaxSuggestions)
			}
			for _, k := range sb.last {
				p.top.offer(k)
			}
		default:
			if !p.top.offer(s) {
				i = 0 // and so for every shorter prefix
			}
		}
	}
	sb.prev = keyword
	if sb.noWords {
		return
	}
	// Words after the first, each once.
	if sb.words == nil {
		sb.words = map[string]*topN{}
	}
	rest := keyword
	first := true
	seen := sb.seen[:0]
	for rest != "" {
		var w string
		w, rest, _ = strings.Cut(rest, " ")
		if first || w == "" || slices.Contains(seen, w) {
			first = false
			continue
		}
		seen = append(seen, w)
		t := sb.words[w]
		if t == nil {
			t = &topN{n: wordCandidates}
			sb.words[strings.Clone(w)] = t
		}
		t.offer(s)
	}
	sb.seen = seen[:0]
}

// close ends the open prefixes longer than keep bytes, recording those
// that begin more keywords than a scan may read.
func (sb *suggestBuilder) close(keep int) {
	for len(sb.stack) > 0 && sb.stack[len(sb.stack)-1].end > keep {
		n := sb.stack[len(sb.stack)-1]
		sb.stack = sb.stack[:len(sb.stack)-1]
		if sb.n-n.start > PrefixScanLimit {
			sb.records = append(sb.records, prefixRecord{prefix: sb.prev[:n.end], list: n.top.list})
		} else if n.top.list != nil {
			clear(n.top.list) // the keywords may go
			sb.free = append(sb.free, n.top.list[:0])
		}
	}
}

// write appends the country's suggestion tables to tw, in key order, and
// returns the number of prefix and word records.
func (sb *suggestBuilder) write(ctx context.Context, tw *tableWriter, cc string) (prefixes, words int, err error) {
	sb.close(0)
	slices.SortFunc(sb.records, func(a, b prefixRecord) int { return strings.Compare(a.prefix, b.prefix) })
	var key, val []byte
	for i, r := range sb.records {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return 0, 0, err
			}
		}
		key, _ = appendTableKey(key[:0], cc, prefixSep, r.prefix)
		val = encodeKeywords(val[:0], r.list)
		if err := tw.add(key, val); err != nil {
			return 0, 0, err
		}
	}
	ws := make([]string, 0, len(sb.words))
	for w := range sb.words {
		ws = append(ws, w)
	}
	slices.Sort(ws)
	for i, w := range ws {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return 0, 0, err
			}
		}
		key, _ = appendTableKey(key[:0], cc, wordSep, w)
		val = encodeKeywords(val[:0], sb.words[w].list)
		if err := tw.add(key, val); err != nil {
			return 0, 0, err
		}
	}
	n := len(sb.records)
	*sb = suggestBuilder{}
	return n, len(ws), nil
}

// Suggest returns up to n (at most MaxSuggestions) keywords of a country
// that begin with the normalized prefix, by volume, then, if fewer than n
// do, keywords that hold it as whole words after their first word. It
// reads one prefix record or at most PrefixScanLimit keyword keys, and at
// most one word record a word of prefix, whatever the size of the index. A build older
// than format version 3 has no tables: its prefixes are scanned (still at
// most PrefixScanLimit keys) and words find nothing.
func (s *Store) Suggest(ctx context.Context, country, prefix string, n int) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	n = min(n, MaxSuggestions)
	if n <= 0 || prefix == "" {
		return nil, nil
	}
	h := s.acquire()
	if h == nil {
		return nil, kw.ErrNoIndex
	}
	defer s.release(h)
	out, err := h.suggest(country, prefix, n)
	if err != nil {
		if _, ok := err.(undecodable); ok {
			return nil, fmt.Errorf("cannot decode suggestions for %s %q in index build %s: %w", country, prefix, h.id, err)
		}
		s.damaged(h, err)
		return nil, fmt.Errorf("cannot read suggestions for %s %q from index build %s: %w: %s", country, prefix, h.id, kw.ErrIndexDamaged, s.describe(err))
	}
	return out, nil
}

func (h *handle) suggest(country, prefix string, n int) ([]string, error) {
	key, ok := appendTableKey(nil, country, prefixSep, prefix)
	if !ok {
		return nil, nil
	}
	var out []string
	found, err := h.getValue(key, func(v []byte) error {
		var err error
		out, err = decodeKeywords(v, MaxSuggestions)
		return err
	})
	if err != nil {
		return nil, err
	}
	if found {
		out = out[:min(n, len(out))]
	} else if out, err = h.scanPrefix(country, prefix, n); err != nil {
		return nil, err
	}
	if len(out) >= n {
		return out, nil
	}
	return h.wholeWords(country, prefix, n, out)
}

// scanPrefix reads the keyword keys that begin with prefix, at most
// PrefixScanLimit of them, and returns the best n.
func (h *handle) scanPrefix(country, prefix string, n int) ([]string, error) {
	lower, _ := appendKey(nil, country, prefix)
	upper := append(append([]byte{}, lower...), 0xff)
	it, err := h.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, err
	}
	top := topN{n: n}
	read := 0
	for valid := it.First(); valid && read < PrefixScanLimit; valid = it.Next() {
		k := it.Key()
		if !bytes.HasPrefix(k, lower) {
			break
		}
		read++
		v, err := it.ValueAndErr()
		if err != nil {
			_ = it.Close()
			return nil, err
		}
		vol, err := entryVolume(v)
		if err != nil {
			_ = it.Close()
			return nil, undecodable{err}
		}
		top.offer(scored{string(k[3:]), vol})
	}
	if err := it.Close(); err != nil {
		return nil, err
	}
	out := make([]string, len(top.list))
	for i, s := range top.list {
		out[i] = s.keyword
	}
	return out, nil
}

// wholeWords adds to out, up to n, keywords that hold prefix as whole
// words after their first word, from the word records of prefix's words:
// every such keyword holds each of them after its first word, so the
// record of any one of them lists it, unless that record is full (a word
// after the first word of more than wordCandidates keywords keeps only its
// wordCandidates most searched). The answer is exact when one record is
// complete, or when one record alone yields enough matches (any match it
// lacks ranks below all of them); only a query all of whose words are
// frequent and whose few matches rank low in each record can miss some.
// It reads one word record for each distinct word of prefix.
func (h *handle) wholeWords(country, prefix string, n int, out []string) ([]string, error) {
	want := n - len(out)
	var best []string // the most matches of a full record
	var key []byte
	var seen []string
	for w := range strings.SplitSeq(prefix, " ") {
		if w == "" || slices.Contains(seen, w) {
			continue
		}
		seen = append(seen, w)
		var ok bool
		if key, ok = appendTableKey(key[:0], country, wordSep, w); !ok {
			return out, nil
		}
		var cands []string
		if _, err := h.getValue(key, func(v []byte) error {
			var err error
			cands, err = decodeKeywords(v, wordCandidates)
			return err
		}); err != nil {
			return nil, err
		}
		var matches []string
		for _, c := range cands {
			if len(matches) < want && !slices.Contains(out, c) && holdsWords(c, prefix) {
				matches = append(matches, c)
			}
		}
		if len(cands) < wordCandidates || len(matches) == want {
			return append(out, matches...), nil
		}
		if len(matches) > len(best) {
			best = matches
		}
	}
	return append(out, best...), nil
}

// holdsWords reports whether keyword holds words as whole words, after its
// first word.
func holdsWords(keyword, words string) bool {
	for i := 0; i < len(keyword); i++ {
		if keyword[i] != ' ' {
			continue
		}
		rest := keyword[i+1:]
		if strings.HasPrefix(rest, words) && (len(rest) == len(words) || rest[len(words)] == ' ') {
			return true
		}
	}
	return false
}

// entryVolume reads only the volume of an entry value, the first number
// after the version byte; none ranks as 0.
func entryVolume(b []byte) (int64, error) {
	if len(b) == 0 || b[0] < valueVersion1 || b[0] > ValueVersion {
		return 0, fmt.Errorf("%w: unknown format version", errCorrupt)
	}
	d := decoder{s: string(b[:min(len(b), 1+binary.MaxVarintLen64)]), off: 1, v1: b[0] == valueVersion1}
	var one [1]int64
	d.nums = one[:0]
	v := d.opt()
	if d.err != nil {
		return 0, d.err
	}
	return max(kw.Deref(v), 0), nil
}

// SharedPrefix returns the longest beginning of the normalized keyword q,
// cut at a rune boundary, that also begins some keyword of the country: ""
// when none shares even its first character. The keywords that share the
// most with q are its neighbours in key order, so it is one seek and one
// step back, whatever the size of the index; a 404's "did you mean" asks
// for the suggestions of this prefix instead of bisecting over q's
// prefixes with a suggestion read each.
func (s *Store) SharedPrefix(ctx context.Context, country, q string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	h := s.acquire()
	if h == nil {
		return "", kw.ErrNoIndex
	}
	defer s.release(h)
	p, err := h.sharedPrefix(country, q)
	if err != nil {
		s.damaged(h, err)
		return "", fmt.Errorf("cannot read the keywords next to %s %q in index build %s: %w: %s", country, q, h.id, kw.ErrIndexDamaged, s.describe(err))
	}
	return p, nil
}

func (h *handle) sharedPrefix(country, q string) (string, error) {
	key, ok := appendKey(nil, country, q)
	if !ok || q == "" {
		return "", nil
	}
	// Keyword keys only: the country, 0x00, the keyword.
	lower := key[:3:3]
	upper := []byte{key[0], key[1], 1}
	it, err := h.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return "", err
	}
	n := 0
	if it.SeekGE(key) {
		n = commonPrefix(q, string(it.Key()[3:]))
	}
	if it.Error() == nil && it.SeekLT(key) {
		n = max(n, commonPrefix(q, string(it.Key()[3:])))
	}
	// Close returns the error of either seek.
	if err := it.Close(); err != nil {
		return "", err
	}
	for n > 0 && n < len(q) && !utf8.RuneStart(q[n]) {
		n--
	}
	return q[:n], nil
}

// commonPrefix is the length in bytes of the longest common prefix of a and b.
func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
