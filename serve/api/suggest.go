package api

import (
	"fmt"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/serve/web"
)

// SuggestRate is how many suggestion requests a client may make a second.
const SuggestRate = 10

// MaxSuggest is the most keywords GET /v1/suggest answers.
const MaxSuggest = 10

// rateLimiter is a token bucket per client (an IPv4 address or an IPv6
// /64, as the anonymous allowance counts them), in memory: suggestions
// are not counted, so a restart forgetting the buckets costs nothing.
type rateLimiter struct {
	rate    float64 // tokens a second, and the burst
	now     func() time.Time
	mu      sync.Mutex
	buckets map[netip.Addr]*bucket
	swept   time.Time
}

type bucket struct {
	tokens float64
	last   time.Time
}

// maxBuckets bounds the limiter's memory; beyond it, buckets idle long
// enough to be full again are dropped (they would admit anyway).
const maxBuckets = 100_000

func newRateLimiter(rate float64, now func() time.Time) *rateLimiter {
	return &rateLimiter{rate: rate, now: now, buckets: map[netip.Addr]*bucket{}}
}

// clientKey is the address a client is limited by: IPv6 /64, else itself.
func clientKey(a netip.Addr) netip.Addr {
	a = a.Unmap()
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.Addr()
	}
	return a
}

// allow takes one token of client's bucket, or reports how long until
// one is there.
func (l *rateLimiter) allow(client netip.Addr) (bool, time.Duration) {
	key := clientKey(client)
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[key]
	if b == nil {
		if len(l.buckets) >= maxBuckets && now.Sub(l.swept) > time.Second {
			l.sweep(now)
		}
		b = &bucket{tokens: l.rate, last: now}
		l.buckets[key] = b
	}
	if el := now.Sub(b.last).Seconds(); el > 0 {
		b.tokens = min(l.rate, b.tokens+el*l.rate)
	}
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / l.rate * float64(time.Second))
}

func (l *rateLimiter) sweep(now time.Time) {
	l.swept = now
	full := time.Duration(float64(time.Second) * 1.0) // a second refills any bucket
	for k, b := range l.buckets {
		if now.Sub(b.last) > full {
			delete(l.buckets, k)
		}
	}
}

// handleSuggest answers GET /v1/suggest?q=&country=: up to 10 keywords,
// uncounted, limited per client.
func (s *API) handleSuggest(w http.ResponseWriter, r *http.Request) error {
	if ok, wait := s.suggestLimit.allow(s.ClientAddr(r)); !ok {
		secs := max(1, int64((wait+time.Second-1)/time.Second))
		return web.HTTPError{Status: http.StatusTooManyRequests, Code: web.CodeRateLimited,
			Msg:    fmt.Sprintf("Suggestions are limited to %d a second per client; retry in %s.", SuggestRate, web.SecondsText(secs)),
			Header: http.Header{"Retry-After": {fmt.Sprint(secs)}}}
	}
	q, c, err := web.ParseKeywordQuery(r.URL.RawQuery)
	if err != nil {
		return err
	}
	info, ok := s.Index.Info()
	if !ok {
		return fmt.Errorf("cannot suggest for %q: %w", q, kw.ErrNoIndex)
	}
	if err := web.CountryIndexed(info, c); err != nil {
		return err
	}
	var list []string
	if si := s.Suggester(); si != nil {
		if list, err = si.Suggest(r.Context(), c.Code, q, MaxSuggest); err != nil {
			return fmt.Errorf("cannot suggest for %q in %s: %w", q, c.Code, err)
		}
	}
	w.Header().Set("Cache-Control", "public, max-age=300")
	return web.WriteBody(w, r, web.ContentTypeJSON, appendSuggestJSON(nil, q, c.Code, list))
}

// appendSuggestJSON appends the GET /v1/suggest document.
func appendSuggestJSON(dst []byte, q, country string, list []string) []byte {
	dst = append(dst, `{"q":`...)
	dst = web.AppendString(dst, q)
	dst = append(dst, `,"country":`...)
	dst = web.AppendString(dst, country)
	dst = append(dst, `,"suggestions":[`...)
	for i, k := range list {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = web.AppendString(dst, k)
	}
	return append(dst, "]}\n"...)
}
