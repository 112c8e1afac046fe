package serve

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/kwdata/kwdata/kw"
)

// Suggestions (GET /v1/suggest) answer keywords only, no numbers, and are
// not counted against the allowance; instead each client may ask
// SuggestRate times a second (a burst of as many), so that the index
// cannot be walked quickly through them. A 404 offers up to DidYouMean
// keywords the same way, uncounted.

// CodeRateLimited is the problem code of a client asking for suggestions
// faster than SuggestRate a second.
const CodeRateLimited = "rate_limited"

// SuggestRate is how many suggestion requests a client may make a second.
const SuggestRate = 10

// MaxSuggest is the most keywords GET /v1/suggest answers.
const MaxSuggest = 10

// DidYouMean is the most keywords a 404 offers instead.
const DidYouMean = 3

// minSharedRunes is the shortest beginning a 404's keyword must share with
// a keyword of the index for that keyword to be offered; it must also be
// at least half of the keyword asked.
const minSharedRunes = 3

// Suggest forwards to the wrapped index when it suggests, counting damage
// like Lookup; an index that does not suggests nothing.
func (d damageCounter) Suggest(ctx context.Context, country, prefix string, n int) ([]string, error) {
	si, ok := d.Index.(kw.SuggestIndex)
	if !ok {
		return nil, nil
	}
	out, err := si.Suggest(ctx, country, prefix, n)
	if err != nil && errors.Is(err, kw.ErrIndexDamaged) {
		d.n.Inc()
	}
	return out, err
}

// SharedPrefix forwards like Suggest.
func (d damageCounter) SharedPrefix(ctx context.Context, country, q string) (string, error) {
	si, ok := d.Index.(kw.SuggestIndex)
	if !ok {
		return "", nil
	}
	p, err := si.SharedPrefix(ctx, country, q)
	if err != nil && errors.Is(err, kw.ErrIndexDamaged) {
		d.n.Inc()
	}
	return p, err
}

// suggester returns the index's suggestions, or nil when it has none.
func (s *Server) suggester() kw.SuggestIndex {
	si, _ := s.index.(kw.SuggestIndex)
	return si
}

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

// seconds writes n seconds in words: "1 second", "2 seconds".
func seconds(n int64) string {
	if n == 1 {
		return "1 second"
	}
	return fmt.Sprintf("%d seconds", n)
}

// handleSuggest answers GET /v1/suggest?q=&country=: up to 10 keywords,
// uncounted, limited per client.
func (s *Server) handleSuggest(w http.ResponseWriter, r *http.Request) error {
	if ok, wait := s.suggestLimit.allow(s.clientAddr(r)); !ok {
		secs := max(1, int64((wait+time.Second-1)/time.Second))
		return HTTPError{Status: http.StatusTooManyRequests, Code: CodeRateLimited,
			Msg:    fmt.Sprintf("Suggestions are limited to %d a second per client; retry in %s.", SuggestRate, seconds(secs)),
			Header: http.Header{"Retry-After": {fmt.Sprint(secs)}}}
	}
	q, c, err := parseKeywordQuery(r.URL.RawQuery)
	if err != nil {
		return err
	}
	info, ok := s.index.Info()
	if !ok {
		return fmt.Errorf("cannot suggest for %q: %w", q, kw.ErrNoIndex)
	}
	if err := countryIndexed(info, c); err != nil {
		return err
	}
	var list []string
	if si := s.suggester(); si != nil {
		if list, err = si.Suggest(r.Context(), c.Code, q, MaxSuggest); err != nil {
			return fmt.Errorf("cannot suggest for %q in %s: %w", q, c.Code, err)
		}
	}
	w.Header().Set("Cache-Control", "public, max-age=300")
	return writeBody(w, r, contentTypeJSON, appendSuggestJSON(nil, q, c.Code, list))
}

// appendSuggestJSON appends the GET /v1/suggest document.
func appendSuggestJSON(dst []byte, q, country string, list []string) []byte {
	dst = append(dst, `{"q":`...)
	dst = appendString(dst, q)
	dst = append(dst, `,"country":`...)
	dst = appendString(dst, country)
	dst = append(dst, `,"suggestions":[`...)
	for i, k := range list {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, k)
	}
	return append(dst, "]}\n"...)
}

// didYouMean returns up to DidYouMean keywords close to a keyword the
// index lacks: the suggestions of the longest beginning of q that begins
// some keyword (its trailing spaces dropped), when that beginning is at
// least half of q and minSharedRunes long. That costs one seek for the
// prefix and one suggestion read, so a bulk answer can offer them for
// each of its 404s. Failures give none: the answer is a 404 either way.
func (s *Server) didYouMean(ctx context.Context, country, q string) []string {
	si := s.suggester()
	if si == nil {
		return nil
	}
	p, err := si.SharedPrefix(ctx, country, q)
	// A beginning shorter than half of q ("r" of "rainbow unicorns") would
	// offer keywords that merely start with the same letter.
	n := utf8.RuneCountInString(strings.TrimRight(p, " "))
	if p = strings.TrimRight(p, " "); err != nil || n < minSharedRunes || 2*n < utf8.RuneCountInString(q) {
		return nil
	}
	got, err := si.Suggest(ctx, country, p, DidYouMean+1)
	if err != nil {
		return nil
	}
	got = removeString(got, q)
	return got[:min(len(got), DidYouMean)]
}

func removeString(list []string, s string) []string {
	out := list[:0]
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}

// didYouMeanText is the sentence a 404 ends with: ` Did you mean "a",
// "b" or "c"?`, empty without suggestions.
func didYouMeanText(list []string) string {
	if len(list) == 0 {
		return ""
	}
	quoted := make([]string, len(list))
	for i, k := range list {
		quoted[i] = fmt.Sprintf("%q", k)
	}
	last := quoted[len(quoted)-1]
	if len(quoted) == 1 {
		return " Did you mean " + last + "?"
	}
	return " Did you mean " + strings.Join(quoted[:len(quoted)-1], ", ") + " or " + last + "?"
}

// notFound is the 404 of a keyword the index lacks, in the words of GET
// /v1/keyword, with up to DidYouMean keywords to try instead.
func (s *Server) notFound(ctx context.Context, q, country string, err error) HTTPError {
	he := keywordNotFound(q, country, err)
	he.Msg += didYouMeanText(s.didYouMean(ctx, country, q))
	return he
}

// suggestScript is GET /suggest.js, the search box's suggestions.
//
//go:embed suggest.js
var suggestScript []byte

// handleSuggestScript answers GET /suggest.js.
func (s *Server) handleSuggestScript(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Cache-Control", "public, max-age=3600")
	return writeBody(w, r, []string{"text/javascript; charset=utf-8"}, suggestScript)
}
