package access

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kwdata/kwdata/internal/testservers"
	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/serve"
)

// readOnlyIndex is a lock-free kw.Index over a fixed map, so that parallel
// benchmarks measure the server and the access store, not a fake's mutex.
type readOnlyIndex struct {
	info    kw.IndexInfo
	entries map[[2]string]kw.Entry
}

func (x *readOnlyIndex) Lookup(_ context.Context, country, keyword string) (kw.Entry, error) {
	e, ok := x.entries[[2]string{country, keyword}]
	if !ok {
		return kw.Entry{}, kw.ErrNotFound
	}
	return e, nil
}

func (x *readOnlyIndex) Info() (kw.IndexInfo, bool) { return x.info, true }

// BenchmarkServeParallel measures GET /v1/keyword through Server.ServeHTTP
// on every core, with the real access store: "paid" is the uncounted path
// of a paid key, "registered" and "anonymous" are counted (allowances set
// high enough never to refuse, so every request counts and sets the
// RateLimit fields), "no_access" is the server without access tiers.
// Requests spread over 1,000 keywords and, for anonymous callers, 1,024
// client addresses. The redis_* cases are the same with the shared store
// on a redis-server on loopback (skipped when it is not installed): a
// counted request pays one round trip, a paid one none.
func BenchmarkServeParallel(b *testing.B) {
	idx := &readOnlyIndex{info: kw.IndexInfo{Version: "20261122T030000Z", DataDate: "2026-11-21", Countries: map[string]int{"US": 1000}},
		entries: map[[2]string]kw.Entry{}}
	volume, cpc, competition := int64(301000), int64(1_234_999), 0.87
	base := kw.Entry{Keyword: "running shoes", Country: "US", Volume: &volume, CPCMicros: &cpc, Competition: &competition, Intent: "running shoes"}
	const nKeywords = 1000
	for i := range nKeywords {
		e := base
		e.Keyword = fmt.Sprintf("running shoes %d", i)
		idx.entries[[2]string{"US", e.Keyword}] = e
	}
	st, err := Open(Options{
		Dir:                b.TempDir(),
		AnonymousPerDay:    1 << 60,
		RegisteredPerMonth: 1 << 60,
		FlushInterval:      time.Second, // the flusher runs as in production
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	ctx := context.Background()
	regKey, _, err := st.CreateKey(ctx, Registered, "", time.Time{})
	if err != nil {
		b.Fatal(err)
	}
	paidKey, _, err := st.CreateKey(ctx, Paid, "", time.Time{})
	if err != nil {
		b.Fatal(err)
	}
	type benchCase struct {
		name      string
		access    serve.Access
		key       string
		rateLimit bool // counted answers carry RateLimit fields
	}
	cases := []benchCase{
		{"no_access", nil, "", false},
		{"paid", st.ForServer(), paidKey, false},
		{"registered", st.ForServer(), regKey, true},
		{"anonymous", st.ForServer(), "", true},
	}
	if _, err := exec.LookPath("redis-server"); err == nil {
		rd := testservers.StartRedis(b)
		rs, err := OpenRedis(ctx, RedisOptions{URL: rd.URL()}, Options{
			AnonymousPerDay: 1 << 60, RegisteredPerMonth: 1 << 60,
		})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { rs.Close() })
		regKey, _, err := rs.CreateKey(ctx, Registered, "", time.Time{})
		if err != nil {
			b.Fatal(err)
		}
		paidKey, _, err := rs.CreateKey(ctx, Paid, "", time.Time{})
		if err != nil {
			b.Fatal(err)
		}
		cases = append(cases,
			benchCase{"redis_paid", rs.ForServer(), paidKey, false},
			benchCase{"redis_registered", rs.ForServer(), regKey, true},
			benchCase{"redis_anonymous", rs.ForServer(), "", true})
	} else {
		b.Log("redis-server is not installed: no redis_* cases")
	}
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			s := serve.New(serve.Options{Index: idx, Access: bc.access, Logger: slog.New(slog.DiscardHandler)})
			reqs := make([]*http.Request, nKeywords)
			for i := range reqs {
				r := httptest.NewRequest("GET", fmt.Sprintf("/v1/keyword?q=running+shoes+%d&country=us", i), nil)
				r.RemoteAddr = fmt.Sprintf("198.51.%d.%d:40000", i>>8&3, i&0xff)
				if bc.key != "" {
					r.Header.Set("Authorization", "Bearer "+bc.key)
				}
				reqs[i] = r
			}
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, reqs[0])
			if rec.Code != http.StatusOK || (rec.Header().Get("RateLimit") != "") != bc.rateLimit {
				b.Fatalf("status %d, RateLimit %q: %s", rec.Code, rec.Header().Get("RateLimit"), rec.Body)
			}
			var next atomic.Uint32
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := next.Add(7919)
				w := &discardWriter{h: http.Header{}}
				for pb.Next() {
					i++
					clear(w.h)
					s.ServeHTTP(w, reqs[i%nKeywords])
				}
			})
		})
	}
}

// discardWriter is a ResponseWriter that keeps nothing but its header.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(int)             {}
