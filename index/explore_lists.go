package index

import (
	"math/bits"
	"slices"
	"sync"
)

// Candidate lists of the explorer's engine. A list of ranks is either
// sparse (the ranks, ascending) or dense (a bitmap of the country's
// ranks). A word held by a large share of a country's keywords
// (exploreDenseShare) is kept as a bitmap, decoded on the first query
// that reads it and kept while the build is served: intersecting two
// common words is then an AND of bitmaps and their total a popcount, in
// place of a merge of millions of ranks decoded on every query.

// exploreDenseShare: a list holding at least 1/exploreDenseShare of a
// country's keywords is dense (a bitmap is then at most twice as large
// as the list's ranks). 0 keeps every list sparse; tests vary it.
var exploreDenseShare = 32

// rankList is a set of ranks, sparse or dense.
type rankList struct {
	ranks []uint32 // ascending; nil when dense
	bits  []uint64 // bit r%64 of word r/64; nil when sparse
	n     int      // entries
	// own: the bitmap is the query's own, to change in place (a kept
	// list's is shared by every query).
	own bool
	// and, when set, is a second bitmap the list is the AND of bits
	// with: two kept lists intersected without writing the result, which
	// a query that only counts and takes a page never needs.
	and []uint64
}

// word returns the list's word i of 64 ranks.
func (l *rankList) word(i int) uint64 {
	if l.and != nil {
		return l.bits[i] & l.and[i]
	}
	return l.bits[i]
}

// plain returns l with its AND written out, if it has one.
func (l rankList) plain() rankList {
	if l.and == nil {
		return l
	}
	out := make([]uint64, len(l.bits))
	for i := range out {
		out[i] = l.bits[i] & l.and[i]
	}
	return rankList{bits: out, n: l.n, own: true}
}

func (l *rankList) dense() bool { return l.bits != nil }

func (l *rankList) has(r uint32) bool {
	if l.bits != nil {
		return l.word(int(r>>6))&(1<<(r&63)) != 0
	}
	_, ok := slices.BinarySearch(l.ranks, r)
	return ok
}

// denseLists holds a country's dense lists by key (kind and term).
type denseLists struct {
	mu sync.Mutex
	m  map[string]*rankList
}

// get returns the list kept under key.
func (d *denseLists) get(key string) (*rankList, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	l, ok := d.m[key]
	return l, ok
}

// put keeps l under key.
func (d *denseLists) put(key string, l *rankList) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil {
		d.m = map[string]*rankList{}
	}
	d.m[key] = l
}

// isDense reports whether a list of k entries over n ranks is kept as a
// bitmap.
func isDense(k, n int) bool {
	return exploreDenseShare > 0 && k > 0 && k*exploreDenseShare >= n
}

// toBits sets the bits of ranks in a bitmap of n ranks.
func toBits(ranks []uint32, n int) []uint64 {
	b := make([]uint64, (n+63)/64)
	for _, r := range ranks {
		b[r>>6] |= 1 << (r & 63)
	}
	return b
}

// window restricts l to the ranks in [lo, hi): a sparse list by slicing
// (its storage shared), a dense one into a new bitmap.
func (l rankList) window(lo, hi uint32) rankList {
	if l.bits == nil {
		i, _ := slices.BinarySearch(l.ranks, lo)
		j, _ := slices.BinarySearch(l.ranks, hi)
		r := l.ranks[i:j]
		return rankList{ranks: r, n: len(r)}
	}
	l = l.plain()
	out := l.bits
	if !l.own {
		out = make([]uint64, len(l.bits))
		copy(out[lo>>6:], l.bits[lo>>6:(hi+63)>>6])
	}
	return bitsList(clipBits(out, lo, hi))
}

// clipBits clears the bits of b outside [lo, hi).
func clipBits(b []uint64, lo, hi uint32) []uint64 {
	for i := uint32(0); i < lo>>6; i++ {
		b[i] = 0
	}
	if lo&63 != 0 {
		b[lo>>6] &^= 1<<(lo&63) - 1
	}
	if hi>>6 < uint32(len(b)) {
		b[hi>>6] &= 1<<(hi&63) - 1
		for i := hi>>6 + 1; i < uint32(len(b)); i++ {
			b[i] = 0
		}
	}
	return b
}

// bitsList is the query's own bitmap b as a list.
func bitsList(b []uint64) rankList {
	n := 0
	for _, w := range b {
		n += bits.OnesCount64(w)
	}
	return rankList{bits: b, n: n, own: true}
}

// intersectLists returns the ranks in every list. The lists are left as
// they are; the result is in storage of its own but when it is the one
// dense list given, which the caller must then not change.
func intersectLists(lists []rankList) rankList {
	if len(lists) == 0 {
		return rankList{}
	}
	slices.SortFunc(lists, func(a, b rankList) int { return a.n - b.n })
	var sparse, dense []rankList
	for _, l := range lists {
		switch {
		case l.and != nil:
			dense = append(dense, rankList{bits: l.bits, n: l.n}, rankList{bits: l.and, n: l.n})
		case l.dense():
			dense = append(dense, l)
		default:
			sparse = append(sparse, l)
		}
	}
	if len(sparse) == 0 {
		if len(dense) == 1 {
			return dense[0] // shared: never changed
		}
		if len(dense) == 2 {
			// Counted, not written: a query often needs no more.
			a, b := dense[0].bits, dense[1].bits[:len(dense[0].bits)]
			n := 0
			for i := range a {
				n += bits.OnesCount64(a[i] & b[i])
			}
			return rankList{bits: a, and: b, n: n}
		}
		out := make([]uint64, len(dense[0].bits))
		n := 0
		a, b := dense[0].bits, dense[1].bits[:len(dense[0].bits)]
		for i := range out {
			out[i] = a[i] & b[i]
		}
		for _, d := range dense[2:] {
			for i, w := range d.bits[:len(out)] {
				out[i] &= w
			}
		}
		for _, w := range out {
			n += bits.OnesCount64(w)
		}
		return rankList{bits: out, n: n, own: true}
	}
	out := slices.Clone(sparse[0].ranks)
	for _, l := range sparse[1:] {
		if len(out) == 0 {
			break
		}
		out = intersect(out, l.ranks)
	}
	for _, d := range dense {
		out = slices.DeleteFunc(out, func(r uint32) bool { return d.bits[r>>6]&(1<<(r&63)) == 0 })
	}
	return rankList{ranks: out, n: len(out)}
}

// unionLists returns the ranks in any of the lists over n ranks: a
// bitmap if the result is dense.
func unionLists(lists []rankList, n int) rankList {
	total := 0
	for _, l := range lists {
		total += l.n
	}
	if !isDense(total, n) {
		var rs [][]uint32
		for _, l := range lists {
			rs = append(rs, l.ranks)
		}
		u := union(rs)
		return rankList{ranks: u, n: len(u)}
	}
	out := make([]uint64, (n+63)/64)
	for _, l := range lists {
		if l.bits != nil {
			for i := range out {
				out[i] |= l.word(i)
			}
			continue
		}
		for _, r := range l.ranks {
			out[r>>6] |= 1 << (r & 63)
		}
	}
	return bitsList(out)
}

// appendRanks appends the ranks of l to dst, ascending.
func (l *rankList) appendRanks(dst []uint32) []uint32 {
	if l.bits == nil {
		return append(dst, l.ranks...)
	}
	dst = slices.Grow(dst, l.n)
	for i := range l.bits {
		for w := l.word(i); w != 0; {
			dst = append(dst, uint32(i<<6+bits.TrailingZeros64(w)))
			w &= w - 1
		}
	}
	return dst
}

// countFrom returns the number of entries of l at rank from or after.
func (l *rankList) countFrom(from uint32) int {
	if from == 0 {
		return l.n
	}
	if l.bits == nil {
		i, _ := slices.BinarySearch(l.ranks, from)
		return len(l.ranks) - i
	}
	i := int(from >> 6)
	if i >= len(l.bits) {
		return 0
	}
	k := bits.OnesCount64(l.word(i) &^ (1<<(from&63) - 1))
	for j := i + 1; j < len(l.bits); j++ {
		k += bits.OnesCount64(l.word(j))
	}
	return k
}

// firstFrom appends to dst the first k entries of l at rank from or
// after.
func (l *rankList) firstFrom(dst []uint32, from uint32, k int) []uint32 {
	if l.bits == nil {
		i, _ := slices.BinarySearch(l.ranks, from)
		return append(dst, l.ranks[i:min(len(l.ranks), i+k)]...)
	}
	for i := int(from >> 6); i < len(l.bits) && k > 0; i++ {
		w := l.word(i)
		if i == int(from>>6) {
			w &^= 1<<(from&63) - 1
		}
		for ; w != 0 && k > 0; w &= w - 1 {
			dst = append(dst, uint32(i<<6+bits.TrailingZeros64(w)))
			k--
		}
	}
	return dst
}

// without returns l less the ranks of ex, in storage of its own where l
// is dense (a sparse l is the query's own and is changed in place).
func (l rankList) without(ex rankList) rankList {
	if l.bits != nil {
		l = l.plain()
		out := l.bits
		if !l.own {
			out = slices.Clone(l.bits)
		}
		if ex.bits != nil {
			for i, w := range ex.bits {
				out[i] &^= w
			}
		} else {
			for _, r := range ex.ranks {
				out[r>>6] &^= 1 << (r & 63)
			}
		}
		return bitsList(out)
	}
	out := slices.DeleteFunc(l.ranks, ex.has)
	return rankList{ranks: out, n: len(out)}
}

// chunk appends to dst (of capacity at least 64) the entries of l from
// position at on, as many as fit, and returns them with the position
// after them: an index into the ranks, or a word of the bitmap.
func (l *rankList) chunk(dst []uint32, at int) ([]uint32, int) {
	if l.bits == nil {
		end := min(at+cap(dst), len(l.ranks))
		return append(dst, l.ranks[at:end]...), end
	}
	for ; at < len(l.bits) && cap(dst)-len(dst) >= 64; at++ {
		for w := l.word(at); w != 0; w &= w - 1 {
			dst = append(dst, uint32(at<<6+bits.TrailingZeros64(w)))
		}
	}
	return dst, at
}
