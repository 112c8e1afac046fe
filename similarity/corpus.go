package similarity

import (
	"fmt"
	"hash/maphash"
	"sync"

	"github.com/kwdata/kwdata/internal/prefetch"
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
}

// internSlot holds a key's hash (its second word and the top half of its
// first) and 1 + its id (0: empty).
type internSlot struct {
	h1 uint64
	h0 uint32
	id uint32
}

func newURLInterner() *urlInterner { return newURLInternerFor(0) }

// newURLInternerFor returns an interner whose table takes keys keys
// before it first grows. Growing doubles the table: each doubling rehashes
// every key and faults in a fresh table, and the chain of them up to tens
// of millions of keys cost the read of a million web keywords' SERPs about
// a second of CPU, a third of it the kernel clearing pages.
func newURLInternerFor(keys int) *urlInterner {
	n := 1 << 16
	for n*3 < keys*4 {
		n *= 2
	}
	return &urlInterner{s1: maphash.MakeSeed(), s2: maphash.MakeSeed(), slots: bigSlice[internSlot](n)}
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

// internAhead is how many keys ahead of its lookup a key's home slot is
// fetched, so that the lookup finds it in cache.
const internAhead = 8

// home is h's home slot: the top half of its first word, masked.
func (u *urlInterner) home(h [2]uint64) int {
	return int(uint64(uint32(h[0]>>32)) & uint64(len(u.slots)-1))
}

// id returns h's id, giving it the next one if it is new.
func (u *urlInterner) id(h [2]uint64) uint32 {
	h0, h1 := uint32(h[0]>>32), h[1]
	mask := uint64(len(u.slots) - 1)
	for i := uint64(u.home(h)); ; i = (i + 1) & mask {
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

// internShards is the most goroutines that intern URL keys while the SERPs
// are read. Interning is the read's one serial step: about 200M lookups in
// a table of gigabytes at 10M keywords, each a cache miss, and the faults
// of the table's fresh memory as it grows.
const internShards = 8

// shardedInterner interns the URL keys of SERP rows on its own goroutines,
// one per shard of the keys (a few low bits of the hash, which the table
// does not use), each with its own table. The reading goroutine hands it
// one batch of rows at a time and writes a batch's ids while the shards
// intern the next one. A key's id is its id within its shard, shifted
// left by the shard bits, with the shard in those bits; shardIDs makes
// them dense. The ids are those of the same input whatever the timing.
type shardedInterner struct {
	bits   uint
	tables []*urlInterner
	in     []chan *internBatch
	free   []*internBatch
	wg     sync.WaitGroup
}

// internBatch is one batch of rows on its way through the shards.
type internBatch struct {
	start int            // the position of its first row among the builder's rows
	shard []uint8        // each row's shard
	keys  [][][2]uint64  // per shard, its rows' keys in row order
	ids   [][]uint32     // per shard, their ids
	done  sync.WaitGroup // one count per shard
}

// newShardedInterner starts the largest power of two of shards up to
// workers and internShards (at least one), with tables that take keys
// keys in all before they grow.
func newShardedInterner(workers, keys int) *shardedInterner {
	s := &shardedInterner{}
	for 1<<(s.bits+1) <= min(workers, internShards) {
		s.bits++
	}
	for i := range 1 << s.bits {
		u, in := newURLInternerFor(keys>>s.bits), make(chan *internBatch, 1)
		s.tables, s.in = append(s.tables, u), append(s.in, in)
		s.wg.Go(func() {
			for b := range in {
				keys, ids := b.keys[i], b.ids[i][:0]
				// Each key's home slot is fetched a few keys ahead of its
				// lookup, so the table's cache misses overlap instead of
				// queueing behind each lookup's branches.
				for j, h := range keys {
					if j+internAhead < len(keys) {
						prefetch.At(u.slots, u.home(keys[j+internAhead]))
					}
					ids = append(ids, u.id(h))
				}
				b.ids[i] = ids
				b.done.Done()
			}
		})
	}
	return s
}

// hash is the key's hash for add; it is safe for concurrent use.
func (s *shardedInterner) hash(key []byte) [2]uint64 { return s.tables[0].hash(key) }

// batch returns an empty batch whose first row is the builder's row start.
func (s *shardedInterner) batch(start int) *internBatch {
	var b *internBatch
	if n := len(s.free); n > 0 {
		b, s.free = s.free[n-1], s.free[:n-1]
	} else {
		b = &internBatch{keys: make([][][2]uint64, len(s.tables)), ids: make([][]uint32, len(s.tables))}
	}
	b.start, b.shard = start, b.shard[:0]
	for i := range b.keys {
		b.keys[i] = b.keys[i][:0]
	}
	return b
}

// add appends a row with key h to b.
func (s *shardedInterner) add(b *internBatch, h [2]uint64) {
	sh := uint8(h[0] & (1<<s.bits - 1))
	b.shard = append(b.shard, sh)
	b.keys[sh] = append(b.keys[sh], h)
}

// send hands b to the shards.
func (s *shardedInterner) send(b *internBatch) {
	b.done.Add(len(s.in))
	for _, in := range s.in {
		in <- b
	}
}

// finish waits for b's ids and writes them over urls[b.start:], in row
// order.
func (s *shardedInterner) finish(b *internBatch, urls []uint32) {
	b.done.Wait()
	var next [internShards]int
	for j, sh := range b.shard {
		urls[b.start+j] = b.ids[sh][next[sh]]<<s.bits | uint32(sh)
		next[sh]++
	}
	s.free = append(s.free, b)
}

// close stops the shards' goroutines once they are done with what they
// were sent. It returns the number of distinct keys and the map to dense
// ids, or an error if a shard's ids do not fit beside the shard bits.
func (s *shardedInterner) close() (int, shardIDs, error) {
	s.stop()
	ids := shardIDs{bits: s.bits}
	n := 0
	for i, u := range s.tables {
		if uint64(u.len()) > 1<<(32-s.bits) {
			return 0, ids, fmt.Errorf("cannot index %d distinct URLs in one of %d shards; at most 2^%d", u.len(), len(s.tables), 32-s.bits)
		}
		ids.base[i] = uint32(n)
		n += u.len()
	}
	if uint64(n) >= 1<<32 {
		return 0, ids, fmt.Errorf("cannot index %d distinct URLs; at most 2³²-1", n)
	}
	// The tables (2 GiB at 10M keywords) are garbage from here, before
	// the corpus is built beside them.
	s.tables = nil
	return n, ids, nil
}

// stop stops the shards' goroutines, once; a batch sent is finished first.
func (s *shardedInterner) stop() {
	for _, in := range s.in {
		close(in)
	}
	s.in = nil
	s.wg.Wait()
}

// shardIDs maps a shardedInterner's ids to dense ones: the keys of shard
// 0 first, then those of shard 1, and so on. Its zero value maps every id
// to itself.
type shardIDs struct {
	bits uint
	base [internShards]uint32
}

func (m shardIDs) dense(u uint32) uint32 {
	return m.base[u&(1<<m.bits-1)] + u>>m.bits
}

// corpusBuilder collects SERP rows, each a keyword index and a URL id, and
// builds the CSR sets, dropping duplicates within a keyword. The URL ids are
// kept in arrival order with a run per stretch of rows of one keyword: when
// each keyword has one run and the runs come in keyword order (a lake
// partition's order), the ids already are the CSR array and build only
// drops duplicates, in place.
type corpusBuilder struct {
	kws  []Keyword
	urls []uint32
	runs []builderRun
}

// builderRun says that the rows from urls[start] to the next run's start
// are keyword kw's.
type builderRun struct{ kw, start uint32 }

// add appends a row. The run offsets are 32-bit: build rejects 2³² rows or
// more.
func (b *corpusBuilder) add(kw int, url uint32) {
	if n := len(b.runs); n == 0 || b.runs[n-1].kw != uint32(kw) {
		b.runs = append(b.runs, builderRun{uint32(kw), uint32(len(b.urls))})
	}
	b.urls = append(b.urls, url)
}

// build makes the corpus of nURL distinct URLs. ids maps the rows' ids to
// dense ones in [0, nURL).
func (b *corpusBuilder) build(nURL int, ids shardIDs) (*corpus, error) {
	n, rows := len(b.kws), len(b.urls)
	if uint64(rows) >= 1<<32 {
		return nil, fmt.Errorf("cannot index %d SERP rows; at most 2³²-1", rows)
	}
	end := func(r int) uint32 {
		if r+1 < len(b.runs) {
			return b.runs[r+1].start
		}
		return uint32(rows)
	}
	off := bigSlice[uint32](n + 1)
	inOrder := true
	for r, run := range b.runs {
		off[run.kw+1] += end(r) - run.start
		inOrder = inOrder && (r == 0 || run.kw > b.runs[r-1].kw)
	}
	for i := 0; i < n; i++ {
		off[i+1] += off[i]
	}
	urls := b.urls
	if !inOrder {
		urls = bigSlice[uint32](rows)
		fill := bigSlice[uint32](n)
		copy(fill, off[:n])
		for r, run := range b.runs {
			fill[run.kw] += uint32(copy(urls[fill[run.kw]:], b.urls[run.start:end(r)]))
		}
	}
	b.urls, b.runs = nil, nil
	// Drop duplicates in place, and number the URLs in order of first
	// appearance: the interner's ids depend on its hash seeds, which
	// change with every process, and the ids order the hubs and light
	// URLs of equal df, hence which keywords the light pass cuts and
	// the hub groups, so logged counters would vary between runs of one
	// lake (the rows never did). seen[u] holds 1+the last keyword with
	// u and 1+u's new id, in one cache line.
	// The reads of seen are at random over 8 bytes a URL (730 MB at 10M
	// web keywords): each row's entry is asked for buildAhead rows ahead.
	// On the 10M web lake the pass took 3.7 and 4.2 s that way against
	// 5.0 and 5.0 s (two alternated rounds). A row's id is made dense
	// where it is asked for, in place, so the pass reads dense ids.
	seen := bigSlice[[2]uint32](nURL)
	for a := range min(buildAhead, len(urls)) {
		urls[a] = ids.dense(urls[a])
	}
	next := uint32(0)
	w := uint32(0)
	start := uint32(0)
	for i := 0; i < n; i++ {
		end := off[i+1]
		for j := start; j < end; j++ {
			if a := int(j) + buildAhead; a < len(urls) {
				urls[a] = ids.dense(urls[a])
				prefetch.At(seen, int(urls[a]))
			}
			s := &seen[urls[j]]
			if s[0] != uint32(i)+1 {
				if s[0] == 0 {
					next++
					s[1] = next
				}
				s[0] = uint32(i) + 1
				urls[w] = s[1] - 1
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

// buildAhead is how many rows ahead build asks for a row's entry of its
// table of URLs.
const buildAhead = 16

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
	return b.build(n, shardIDs{})
}
