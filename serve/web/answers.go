package web

import (
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/s2"
)

// DefaultAnswerCacheBytes is the default of Options.AnswerCacheBytes.
const DefaultAnswerCacheBytes = 64 << 20

// AnswerCache holds ready GET /v1/keyword bodies of one index build. A build
// is immutable, so an answer never goes stale while its build is served;
// the cache of a build is dropped whole when another build is served. A hit
// spares the index seek, the decoding and the encoding: most of what the
// handler does beyond net/http, and real traffic asks for the same popular
// keywords again and again. The cache is bounded in bytes; past the bound
// one new answer in admitEvery takes the place of an arbitrary old one (Go
// map iteration order). Admitting every one cost more than it saved when
// lookups spread evenly over many more keywords than fit (each insert
// evicted, few were asked again); sampled, a keyword asked often still
// gets in soon, and the cache follows a change in what is popular.
//
// Answers are kept compressed (S2, with a dictionary made from the
// build's first answers): the answers of a build share their field names,
// months and much of their words, and one compresses to about a sixth of
// its size (the sample's at 200,000 keywords: 1,824 bytes to 300), so the
// bound holds about five times as many. Decompressing a hit costs a
// fraction of the seek, decoding and encoding it spares.
type AnswerCache struct {
	version string // kw.IndexInfo.Version of the build the answers come from
	limit   int64

	full atomic.Bool   // the bound was reached once
	tick atomic.Uint32 // answers offered while full, for sampling

	// dict compresses every answer packed after it was made; nil until
	// the first dictSample bytes of answers have been seen.
	dict atomic.Pointer[s2.Dict]

	mu     sync.RWMutex
	m      map[string]map[string][]byte // country code -> keyword -> packed body
	bytes  int64
	sample []byte // answers for the dictionary, until it is made
}

// Packed answers start with how the rest holds the body.
const (
	packRaw  = 0 // the body as is
	packDict = 1 // an S2 block of the body, made with AnswerCache.dict
)

// dictSample is how many bytes of answers make the dictionary: the most
// S2 uses, about 35 answers.
const dictSample = s2.MaxDictSize

// dictStart is how every answer starts, where S2 looks first for a match.
var dictStart = []byte(`{"keyword":"`)

// admitEvery is how many answers a full cache is offered for each one it
// takes.
const admitEvery = 8

// answerOverhead approximates what an entry costs beyond its body and
// keyword: the map slot, the slice and string headers.
const answerOverhead = 64

// entrySize is what an entry holds of the heap. The body counts at its
// capacity: Go rounds an allocation up to its size class (a 1,808-byte
// answer takes 2,048 bytes), and counting the length let the cache hold
// about an eighth more than its bound.
func entrySize(q string, packed []byte) int64 {
	return int64(cap(packed)+len(q)) + answerOverhead
}

func newAnswerCache(version string, limit int64) *AnswerCache {
	return &AnswerCache{version: version, limit: limit, m: map[string]map[string][]byte{}}
}

// Answers returns the cache of build version, making a new one when the
// served build changed; nil when caching is off.
func (s *Core) Answers(version string) *AnswerCache {
	if s.answerLimit <= 0 {
		return nil
	}
	for {
		c := s.AnswerCache.Load()
		if c != nil && c.version == version {
			return c
		}
		n := newAnswerCache(version, s.answerLimit)
		if s.AnswerCache.CompareAndSwap(c, n) {
			return n
		}
	}
}

// Get returns the body of keyword q in country, decompressed into dst
// when it was compressed (the result may alias dst), and whether the cache
// holds it.
func (c *AnswerCache) Get(country, q string, dst []byte) ([]byte, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.RLock()
	p := c.m[country][q]
	c.mu.RUnlock()
	// A packed answer is never changed once stored (eviction only drops
	// it from the map), so it is read outside the lock.
	switch {
	case len(p) == 0:
		return nil, false
	case p[0] == packRaw:
		return p[1:], true
	}
	body, err := c.dict.Load().Decode(dst[:cap(dst)], p[1:])
	if err != nil {
		// Only a bug could get here: the block was made in this process.
		return nil, false
	}
	return body, true
}

// Put keeps a compressed copy of body as the answer for q in country.
func (c *AnswerCache) Put(country, q string, body []byte) {
	if c == nil || int64(len(body)+len(q))+answerOverhead > c.limit {
		return
	}
	if c.full.Load() && c.tick.Add(1)%admitEvery != 0 {
		return
	}
	p := c.pack(body)
	size := entrySize(q, p)
	if size > c.limit {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dict.Load() == nil && p[0] == packRaw {
		c.sample = append(c.sample, body...)
		if len(c.sample) >= dictSample {
			c.dict.Store(s2.MakeDict(c.sample, dictStart))
			c.sample = nil
		}
	}
	byQ := c.m[country]
	if byQ == nil {
		byQ = map[string][]byte{}
		c.m[country] = byQ
	}
	if _, ok := byQ[q]; ok {
		return
	}
	if c.bytes+size > c.limit {
		c.full.Store(true)
	}
	for c.bytes+size > c.limit && c.evictOne() {
	}
	byQ[q] = p
	c.bytes += size
}

// pack returns body as the cache keeps it: compressed with the dictionary
// once there is one, in an allocation of its own.
func (c *AnswerCache) pack(body []byte) []byte {
	// append, not make, so that cap reports the allocation's size class,
	// which is what the bound counts (see entrySize).
	d := c.dict.Load()
	if d == nil {
		return append([]byte{packRaw}, body...)
	}
	// The compressed block is made in a pooled buffer, then copied to
	// its exact size.
	sp := BufPool.Get().(*[]byte)
	// EncodeBetter packs the sample's answers a tenth tighter than
	// Encode, and its output decodes no slower; the cost is paid once an
	// answer, at admission.
	enc := d.EncodeBetter((*sp)[:cap(*sp)], body)
	p := append([]byte{packDict}, enc...)
	*sp = enc
	PutBuf(sp)
	return p
}

// evictOne drops one arbitrary answer; false when there is none.
func (c *AnswerCache) evictOne() bool {
	for country, byQ := range c.m {
		for q, p := range byQ {
			delete(byQ, q)
			c.bytes -= entrySize(q, p)
			return true
		}
		delete(c.m, country)
	}
	return false
}

// answerCachePtr is the Core's current cache.
type answerCachePtr = atomic.Pointer[AnswerCache]

// Version is the index build whose answers c holds.
func (c *AnswerCache) Version() string { return c.version }
