package similarity

import (
	"fmt"
	"hash/maphash"
)

// corpus is the stage's input with URLs as integer ids: the keywords in
// input order and, in CSR form, the distinct URL ids of each keyword's SERP.
type corpus struct {
	kws  []Keyword
	off  []uint32 // len(kws)+1; urls[off[i]:off[i+1]] is keyword i's set
	urls []uint32
	nURL int
}

// urlInterner gives URL keys dense ids. Keys are identified by 96 bits of
// a 128-bit hash (two independent maphash seeds: the second word and the
// top half of the first) instead of the string itself, which keeps memory
// flat at tens of millions of distinct URLs; two different keys collide
// with probability about n²/2⁹⁷, which at 10⁸ keys is 10⁻¹³. A slot is 16
// bytes (a third less than the whole hash would take: 0.5 GiB less at the
// 50M URLs of 10M sample keywords, 1 GiB at 91M). The table is open
// addressing with linear probing on the stored half word: one cache line
// a lookup, no per-key allocation, and about twice as fast as a map at
// the 20 lookups a keyword costs.
type urlInterner struct {
	s1, s2 maphash.Seed
	slots  []internSlot
	n      int
	sink   uint32 // keeps peek's loads
}

// internSlot holds a key's hash (its second word and the top half of its
// first) and 1 + its id (0: empty).
type internSlot struct {
	h1 uint64
	h0 uint32
	id uint32
}

func newURLInterner() *urlInterner {
	return &urlInterner{s1: maphash.MakeSeed(), s2: maphash.MakeSeed(), slots: make([]internSlot, 1<<16)}
}

// hash is safe for concurrent use. It never returns the zero hash, which
// callers may use as a marker.
func (u *urlInterner) hash(key []byte) [2]uint64 {
	h := [2]uint64{maphash.Bytes(u.s1, key), maphash.Bytes(u.s2, key)}
	if h == [2]uint64{} {
		h[1] = 1
	}
	return h
}

func (u *urlInterner) len() int { return u.n }

// internAhead is how many rows ahead of its lookup a row's slot is peeked.
const internAhead = 8

// peek loads h's home slot, so that id(h) a few calls later finds it in
// cache. Its result means nothing; callers add it to sink.
func (u *urlInterner) peek(h [2]uint64) uint32 {
	return u.slots[uint64(uint32(h[0]>>32))&uint64(len(u.slots)-1)].id
}

// id returns h's id, giving it the next one if it is new.
func (u *urlInterner) id(h [2]uint64) uint32 {
	h0, h1 := uint32(h[0]>>32), h[1]
	mask := uint64(len(u.slots) - 1)
	for i := uint64(h0) & mask; ; i = (i + 1) & mask {
		s := &u.slots[i]
		if s.id == 0 {
			s.h1, s.h0, s.id = h1, h0, uint32(u.n)+1
			u.n++
			if u.n*4 > len(u.slots)*3 {
				u.grow()
			}
			return uint32(u.n - 1)
		}
		if s.h1 == h1 && s.h0 == h0 {
			return s.id - 1
		}
	}
}

func (u *urlInterner) grow() {
	old := u.slots
	u.slots = bigSlice[internSlot](2 * len(old))
	mask := uint64(len(u.slots) - 1)
	for _, s := range old {
		if s.id == 0 {
			continue
		}
		i := uint64(s.h0) & mask
		for u.slots[i].id != 0 {
			i = (i + 1) & mask
		}
		u.slots[i] = s
	}
}

// corpusBuilder collects (keyword, URL id) pairs in any order and builds the
// CSR sets, dropping duplicates within a keyword. The pairs go into chunks
// of a fixed size rather than one growing slice, whose copies would leave
// garbage as large as the pairs themselves (1.5 GB at 10M keywords) for
// the collector to find while the URL table also grows.
type corpusBuilder struct {
	kws    []Keyword
	chunks [][]builderPair
	rows   int
}

// builderPair is one SERP row: a keyword index and a URL id.
type builderPair struct{ kw, url uint32 }

// builderChunk is the number of pairs in a chunk (8 MiB).
const builderChunk = 1 << 20

func (b *corpusBuilder) add(kw int, url uint32) {
	// The first chunk grows as small inputs need; the next ones are
	// allocated whole.
	switch {
	case len(b.chunks) == 0:
		b.chunks = append(b.chunks, nil)
	case len(b.chunks[len(b.chunks)-1]) == builderChunk:
		b.chunks = append(b.chunks, bigSlice[builderPair](builderChunk)[:0])
	}
	last := &b.chunks[len(b.chunks)-1]
	*last = append(*last, builderPair{uint32(kw), url})
	b.rows++
}

func (b *corpusBuilder) build(nURL int) (*corpus, error) {
	n := len(b.kws)
	if uint64(b.rows) >= 1<<32 {
		return nil, fmt.Errorf("cannot index %d SERP rows; at most 2³²-1", b.rows)
	}
	off := bigSlice[uint32](n + 1)
	for _, ch := range b.chunks {
		for _, p := range ch {
			off[p.kw+1]++
		}
	}
	for i := 0; i < n; i++ {
		off[i+1] += off[i]
	}
	urls := bigSlice[uint32](b.rows)
	fill := bigSlice[uint32](n)
	copy(fill, off[:n])
	for j, ch := range b.chunks {
		for _, p := range ch {
			urls[fill[p.kw]] = p.url
			fill[p.kw]++
		}
		b.chunks[j] = nil
	}
	b.chunks = nil
	// Drop duplicates in place; lastSeen[u] holds 1+the last keyword with u.
	lastSeen := bigSlice[uint32](nURL)
	w := uint32(0)
	start := uint32(0)
	for i := 0; i < n; i++ {
		end := off[i+1]
		for _, u := range urls[start:end] {
			if lastSeen[u] != uint32(i)+1 {
				lastSeen[u] = uint32(i) + 1
				urls[w] = u
				w++
			}
		}
		start = end
		off[i+1] = w
		if w-off[i] > 1<<15 {
			return nil, fmt.Errorf("cannot compare keyword %q: its SERP has %d distinct URLs", b.kws[i].Text, w-off[i])
		}
	}
	return &corpus{kws: b.kws, off: off, urls: urls[:w:w], nURL: nURL}, nil
}

// newCorpus builds the corpus of Compute's arguments.
func newCorpus(keywords []Keyword, serps [][]string) (*corpus, error) {
	if len(serps) != len(keywords) {
		return nil, fmt.Errorf("cannot compare %d keywords with %d SERPs; pass one SERP (possibly nil) per keyword", len(keywords), len(serps))
	}
	// The caller owns the URL strings, so a string-keyed map costs no copies.
	ids := make(map[string]uint32)
	b := corpusBuilder{kws: keywords}
	for i, s := range serps {
		for _, u := range s {
			id, ok := ids[u]
			if !ok {
				id = uint32(len(ids))
				ids[u] = id
			}
			b.add(i, id)
		}
	}
	n := len(ids)
	ids = nil
	return b.build(n)
}
