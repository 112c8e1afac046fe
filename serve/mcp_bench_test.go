package serve

import (
	"context"
	"github.com/kwdata/kwdata/internal/testservers"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// countingWriter is a ResponseWriter that keeps only the size of the answer.
type countingWriter struct {
	h      http.Header
	status int
	n      int
}

func (w *countingWriter) Header() http.Header { return w.h }
func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += len(p)
	return len(p), nil
}
func (w *countingWriter) WriteHeader(code int) { w.status = code }

// newMaxServer is a Server over newMaxIndex that counts nothing.
func newMaxServer(tb testing.TB) *Server {
	tb.Helper()
	return New(Options{Index: newMaxIndex(tb), Access: &fakeAccess{}, Logger: slog.New(slog.DiscardHandler)})
}

// BenchmarkMCPRequest gives the cost of each of the costliest POST /mcp
// requests (costlyBodies) and the size of its answer, in-process.
func BenchmarkMCPRequest(b *testing.B) {
	s := newMaxServer(b)
	bodies := costlyBodies(b)
	names := make([]string, 0, len(bodies))
	for name := range bodies {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		body := bodies[name]
		b.Run(slug(name), func(b *testing.B) {
			w := &countingWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				r := httptest.NewRequest("POST", "/mcp", strings.NewReader(body))
				r.Header.Set("Content-Type", "application/json")
				clear(w.h)
				w.n, w.status = 0, 0
				s.ServeHTTP(w, r)
			}
			if w.status >= 500 {
				b.Fatalf("status %d", w.status)
			}
			b.ReportMetric(float64(w.n), "answer-bytes")
		})
	}
}

// BenchmarkMCPFlood measures what a flood of the costliest MCP requests
// (keyword_lookup_bulk over 100 of the largest records, 1.7 MB answers)
// does to another client's GET /v1/keyword, over loopback: the p50 and p99
// of that client's lookups with no flood, then while floodClients clients
// post to /mcp as fast as they are answered, in the same run. "slots" is
// the server as it is; "unbounded" lets every MCP request in at once, for
// comparison. Each run is a quiet and a flooded phase of 2 s of lookups
// (at least 20, which takes longer when they take up to a second each);
// run it with -benchtime=3x or so.
// With the slots in place it fails when the flood makes the p50 more than
// 5 times, or the p99 more than 50 times, what it is without.
func BenchmarkMCPFlood(b *testing.B) {
	const (
		floodClients  = 24
		maxPerFlooder = 5000 // bounds each flooding loop
		phase         = 2 * time.Second
		minLookups    = 20
		maxLookups    = 200_000
	)
	for _, bc := range []struct {
		name      string
		unbounded bool
	}{{"slots", false}, {"unbounded", true}} {
		b.Run(bc.name, func(b *testing.B) {
			s := newMaxServer(b)
			if bc.unbounded {
				s.agent.SetSlots(1 << 16)
			}
			hs := httptest.NewServer(s)
			defer hs.Close()
			flood := costlyBodies(b)["bulk of the largest records"]
			lookupURL := hs.URL + "/v1/keyword?q=" + url.QueryEscape(maxKeyword(7))

			lookups := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			floodTransport := &http.Transport{MaxIdleConnsPerHost: floodClients}
			defer floodTransport.CloseIdleConnections()
			defer lookups.CloseIdleConnections()

			// measure looks up for d, at least minLookups times and at
			// most maxLookups.
			measure := func(d time.Duration) []time.Duration {
				var out []time.Duration
				for t0 := time.Now(); len(out) < minLookups || time.Since(t0) < d && len(out) < maxLookups; {
					start := time.Now()
					resp, err := lookups.Get(lookupURL)
					if err != nil {
						b.Fatal(err)
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					out = append(out, time.Since(start))
					if resp.StatusCode != 200 {
						b.Fatalf("lookup: status %d", resp.StatusCode)
					}
				}
				return out
			}
			var quiet, flooded []time.Duration
			var floodDone atomic.Int64
			var floodTime time.Duration
			var floodCount int64
			measure(100 * time.Millisecond) // warm the connection and the server
			b.ResetTimer()
			for range b.N {
				quiet = append(quiet, measure(phase)...)

				ctx, stop := context.WithCancel(context.Background())
				var wg sync.WaitGroup
				var started atomic.Int64
				for range floodClients {
					wg.Go(func() {
						c := &http.Client{Transport: floodTransport}
						for range maxPerFlooder {
							req, _ := http.NewRequestWithContext(ctx, "POST", hs.URL+"/mcp", strings.NewReader(flood))
							req.Header.Set("Content-Type", "application/json")
							resp, err := c.Do(req)
							if err != nil {
								return // stopped
							}
							io.Copy(io.Discard, resp.Body)
							resp.Body.Close()
							if resp.StatusCode != 200 {
								b.Errorf("flood: status %d", resp.StatusCode)
								return
							}
							started.Add(1)
							floodDone.Add(1)
						}
					})
				}
				if !testservers.Poll(time.Minute, func() bool { return started.Load() >= floodClients }) {
					b.Fatal("the flooders never got under way")
				}
				t0, n0 := time.Now(), floodDone.Load()
				flooded = append(flooded, measure(phase)...)
				floodTime += time.Since(t0)
				floodCount += floodDone.Load() - n0
				stop()
				wg.Wait()
			}
			b.StopTimer()
			q50, q99 := percentile(quiet, 50), percentile(quiet, 99)
			f50, f99 := percentile(flooded, 50), percentile(flooded, 99)
			b.ReportMetric(float64(q50.Microseconds()), "quiet-p50-µs")
			b.ReportMetric(float64(q99.Microseconds()), "quiet-p99-µs")
			b.ReportMetric(float64(f50.Microseconds()), "flood-p50-µs")
			b.ReportMetric(float64(f99.Microseconds()), "flood-p99-µs")
			b.ReportMetric(float64(f50)/float64(q50), "p50-ratio")
			b.ReportMetric(float64(f99)/float64(q99), "p99-ratio")
			b.ReportMetric(float64(floodCount)/floodTime.Seconds(), "mcp-req/s")
			if !bc.unbounded && (f50 > 5*q50 || f99 > 50*q99) {
				b.Errorf("with the slots in place a flood takes lookups from p50 %s and p99 %s to p50 %s and p99 %s", q50, q99, f50, f99)
			}
		})
	}
}

// percentile returns the p-th percentile of ds (nearest rank).
func percentile(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[max(i-1, 0)]
}
