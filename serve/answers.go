package serve

import (
	"sync"
	"sync/atomic"
)

// DefaultAnswerCacheBytes is the default of Options.AnswerCacheBytes.
const DefaultAnswerCacheBytes = 64 << 20

// answerCache holds ready GET /v1/keyword bodies of one index build. A build
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
type answerCache struct {
	version string // kw.IndexInfo.Version of the build the answers come from
	limit   int64

	full atomic.Bool   // the bound was reached once
	tick atomic.Uint32 // answers offered while full, for sampling

	mu    sync.RWMutex
	m     map[string]map[string][]byte // country code -> keyword -> body
	bytes int64
}

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
func entrySize(q string, body []byte) int64 {
	return int64(cap(body)+len(q)) + answerOverhead
}

// answers returns the cache of build version, making a new one when the
// served build changed; nil when caching is off.
func (s *Server) answers(version string) *answerCache {
	if s.answerLimit <= 0 {
		return nil
	}
	for {
		c := s.answerCache.Load()
		if c != nil && c.version == version {
			return c
		}
		n := &answerCache{version: version, limit: s.answerLimit, m: map[string]map[string][]byte{}}
		if s.answerCache.CompareAndSwap(c, n) {
			return n
		}
	}
}

// get returns the body of keyword q in country, or nil.
func (c *answerCache) get(country, q string) []byte {
	if c == nil {
		return nil
	}
	c.mu.RLock()
	b := c.m[country][q]
	c.mu.RUnlock()
	return b
}

// put keeps a copy of body as the answer for q in country.
func (c *answerCache) put(country, q string, body []byte) {
	if c == nil || int64(len(body)+len(q))+answerOverhead > c.limit {
		return
	}
	if c.full.Load() && c.tick.Add(1)%admitEvery != 0 {
		return
	}
	b := append([]byte(nil), body...)
	size := entrySize(q, b)
	if size > c.limit {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
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
	byQ[q] = b
	c.bytes += size
}

// evictOne drops one arbitrary answer; false when there is none.
func (c *answerCache) evictOne() bool {
	for country, byQ := range c.m {
		for q, b := range byQ {
			delete(byQ, q)
			c.bytes -= entrySize(q, b)
			return true
		}
		delete(c.m, country)
	}
	return false
}

// answerCachePtr is the Server's current cache.
type answerCachePtr = atomic.Pointer[answerCache]
