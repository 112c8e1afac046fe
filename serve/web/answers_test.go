package web

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/serve/internal/servetest"
)

// TestAnswerCacheBound: the cache never holds more than its limit, keeps
// taking new answers once full, and refuses an answer larger than all of it.
func TestAnswerCacheBound(t *testing.T) {
	tests := []struct {
		name  string
		limit int64
		n     int
		body  int
	}{
		{"fits", 1 << 20, 100, 100},
		{"evicts", 4 << 10, 1000, 200},
		{"one larger than the cache", 100, 1, 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newAnswerCache("b", tt.limit)
			body := bytes.Repeat([]byte("x"), tt.body)
			for i := range tt.n {
				q := fmt.Sprintf("keyword %d", i)
				c.Put("US", q, body)
				if c.bytes > c.limit {
					t.Fatalf("after %d answers: %d bytes, limit %d", i+1, c.bytes, c.limit)
				}
				if int64(tt.body) < tt.limit && !c.full.Load() && !bytes.Equal(cachedBody(t, c, "US", q), body) {
					t.Fatalf("answer %d missing right after put into a cache not yet full", i)
				}
			}
			if tt.name == "evicts" {
				// Full, the cache takes one answer in admitEvery: of the
				// next 10*admitEvery keywords, 10 get in.
				got := 0
				for i := range 10 * admitEvery {
					q := fmt.Sprintf("later %d", i)
					c.Put("US", q, body)
					if cachedBody(t, c, "US", q) != nil {
						got++
					}
				}
				if got != 10 {
					t.Errorf("a full cache took %d of %d new answers, want 10", got, 10*admitEvery)
				}
			}
			var held int64
			for _, byQ := range c.m {
				for q, b := range byQ {
					held += entrySize(q, b)
				}
			}
			if held != c.bytes {
				t.Errorf("bytes %d, entries add up to %d", c.bytes, held)
			}
		})
	}
	// An answer counts as the allocation that holds it, not its length:
	// 1,808 bytes (the median answer at 200,000 keywords) take a
	// 2,048-byte size class.
	c := newAnswerCache("b", 1<<20)
	c.Put("US", "running shoes", bytes.Repeat([]byte("x"), 1808))
	if p := c.m["US"]["running shoes"]; p == nil || c.bytes < 2048 {
		t.Errorf("a 1808-byte answer counts %d bytes; want at least its 2048-byte allocation", c.bytes)
	}
	var nilCache *AnswerCache
	if cachedBody(t, nilCache, "US", "x") != nil {
		t.Error("a nil cache answered")
	}
	nilCache.Put("US", "x", []byte("y")) // must not panic
}

// syntheticAnswer is the GET /v1/keyword body of a made-up keyword,
// shaped like the sample's: 12 months, 10 related keywords.
func syntheticAnswer(r *rand.Rand, i int) (string, []byte) {
	words := []string{"running", "shoes", "best", "cheap", "trail", "women", "men", "near me", "2026", "reviews", "buy", "online", "kids", "wide"}
	phrase := func() string {
		var b strings.Builder
		for j := range 2 + r.IntN(4) {
			if j > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[r.IntN(len(words))])
		}
		return b.String()
	}
	e := kw.Entry{Keyword: fmt.Sprintf("%s %d", phrase(), i), Volume: servetest.I64(r.Int64N(100000)),
		CPCMicros: servetest.I64(r.Int64N(5_000_000)), Intent: phrase()}
	comp := r.Float64()
	e.Competition = &comp
	for m := range 12 {
		e.Trend = append(e.Trend, kw.MonthlySearches{Month: fmt.Sprintf("%04d-%02d", 2025+(10+m)/12, (10+m)%12+1), Searches: servetest.I64(r.Int64N(100000))})
	}
	for j := range 10 {
		e.Related = append(e.Related, kw.RelatedKeyword{Keyword: phrase() + " " + strconv.Itoa(j), Volume: servetest.I64(r.Int64N(10000)),
			CPCMicros: servetest.I64(r.Int64N(5_000_000)), Overlap: int32(20 - j), SameIntent: j < 3})
	}
	return e.Keyword, AppendKeywordJSON(nil, &e, "US", "2026-11-21")
}

// TestAnswerCacheCompresses: once the cache has seen enough answers to
// make its dictionary, it keeps them in a fraction of their size, and
// every answer, kept raw before or compressed after, comes back byte for
// byte.
func TestAnswerCacheCompresses(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	c := newAnswerCache("b", 1<<30)
	var qs []string
	var bodies [][]byte
	var rawBytes int64
	for i := 0; rawBytes < 4*dictSample; i++ {
		q, body := syntheticAnswer(r, i)
		qs, bodies = append(qs, q), append(bodies, body)
		rawBytes += int64(len(body))
		c.Put("US", q, body)
	}
	if c.dict.Load() == nil {
		t.Fatalf("no dictionary after %d bytes of answers", rawBytes)
	}
	var packed, raw, compressed int64
	for i, q := range qs {
		got, ok := c.Get("US", q, make([]byte, 0, 64))
		if !ok || !bytes.Equal(got, bodies[i]) {
			t.Fatalf("answer %d: got %q, want %q", i, got, bodies[i])
		}
		if p := c.m["US"][q]; p[0] == packDict {
			compressed++
			packed += int64(len(p))
			raw += int64(len(bodies[i]))
		}
	}
	if compressed < int64(len(qs))/2 {
		t.Fatalf("%d of %d answers compressed", compressed, len(qs))
	}
	if ratio := float64(raw) / float64(packed); ratio < 2.5 {
		t.Errorf("compressed answers take %d bytes for %d: %.1fx, want at least 2.5x", packed, raw, ratio)
	}
}

// TestAnswerCacheConcurrent: answers put and read from many goroutines,
// while the dictionary is being made, all come back intact.
func TestAnswerCacheConcurrent(t *testing.T) {
	c := newAnswerCache("b", 8<<20)
	const workers, each = 4, 150
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 7))
			buf := make([]byte, 0, 256)
			for i := range each {
				q, body := syntheticAnswer(r, w*each+i)
				c.Put("US", q, body)
				got, ok := c.Get("US", q, buf)
				if ok && !bytes.Equal(got, body) {
					t.Errorf("worker %d answer %d came back changed", w, i)
					return
				}
			}
		})
	}
	wg.Wait()
	if c.dict.Load() == nil {
		t.Error("no dictionary made")
	}
}

// cachedBody returns the answer c holds for q in country, or nil.
func cachedBody(tb testing.TB, c *AnswerCache, country, q string) []byte {
	tb.Helper()
	b, ok := c.Get(country, q, nil)
	if !ok {
		return nil
	}
	return bytes.Clone(b)
}
