package serve

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/kwdata/kwdata/serve/internal/servetest"
)

// stampBuild gives every fixture entry the data date of the served build,
// as the real index does, so that its answers may be cached.
func stampBuild(tb testing.TB, f *servetest.Index) {
	tb.Helper()
	f.Mu.Lock()
	defer f.Mu.Unlock()
	for k, e := range f.Entries {
		e.DataDate = f.IndexInfo.DataDate
		f.Entries[k] = e
	}
}

// TestKeywordAnswerCache: a cached answer is byte for byte the answer
// without the cache, skips the index, is still counted, and a build swap
// drops every cached answer of the old build.
func TestKeywordAnswerCache(t *testing.T) {
	cached := newTestServer(t)
	stampBuild(t, cached.index)
	plain := newTestServer(t)
	plain.Server = New(Options{Index: plain.index, Access: plain.access, Now: cached.Now, AnswerCacheBytes: -1})
	stampBuild(t, plain.index)

	targets := []string{
		"/v1/keyword?q=running+shoes",
		"/v1/keyword?q=Running%20Shoes&country=us",
		"/v1/keyword?q=airgun",
		"/v1/keyword?q=laufschuhe&country=de",
		"/v1/keyword?q=" + "shoes+%22%3Cb%3E%22+%26+m%C3%A1s",
	}
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		for _, target := range targets {
			want := do(t, plain, method, target, nil)
			for round := range 3 {
				before := cached.index.Lookups
				got := do(t, cached, method, target, nil)
				if got.Code != want.Code || !bytes.Equal(got.Body.Bytes(), want.Body.Bytes()) {
					t.Fatalf("%s %s round %d: %d %q, want %d %q", method, target, round, got.Code, got.Body, want.Code, want.Body)
				}
				for _, h := range []string{"Content-Type", "Content-Length", "RateLimit", "RateLimit-Policy"} {
					if got.Header().Get(h) != want.Header().Get(h) {
						t.Errorf("%s %s round %d: %s %q, want %q", method, target, round, h, got.Header().Get(h), want.Header().Get(h))
					}
				}
				if looked := cached.index.Lookups - before; round > 0 && looked != 0 {
					t.Errorf("%s %s round %d: %d index lookups, want 0 (a cached answer)", method, target, round, looked)
				}
			}
		}
	}
	if n, want := len(cached.access.committed), 2*3*len(targets); n != want {
		t.Errorf("%d lookups counted, want %d: a cached answer is counted like any other", n, want)
	}

	// A new build: same keyword, new figures, new data date.
	cached.index.Mu.Lock()
	cached.index.IndexInfo.Version, cached.index.IndexInfo.DataDate = "20261123T030000Z", "2026-11-22"
	e := cached.index.Entries[[2]string{"US", "running shoes"}]
	e.Volume, e.DataDate = servetest.I64(1), "2026-11-22"
	cached.index.Entries[[2]string{"US", "running shoes"}] = e
	cached.index.Mu.Unlock()
	got := do(t, cached, http.MethodGet, "/v1/keyword?q=running+shoes", nil)
	if !bytes.Contains(got.Body.Bytes(), []byte(`"volume":1,`)) || !bytes.Contains(got.Body.Bytes(), []byte(`"updated":"2026-11-22"`)) {
		t.Errorf("after the swap: %s, want the new build's answer", got.Body)
	}
}

// TestKeywordAnswerCacheCSV: a CSV download is never answered from the
// JSON cache.
func TestKeywordAnswerCacheCSV(t *testing.T) {
	ts := newTestServer(t)
	stampBuild(t, ts.index)
	do(t, ts, http.MethodGet, "/v1/keyword?q=running+shoes", nil)
	got := do(t, ts, http.MethodGet, "/v1/keyword?q=running+shoes&format=csv", nil)
	if ct := got.Header().Get("Content-Type"); !bytes.HasPrefix([]byte(ct), []byte("text/csv")) {
		t.Errorf("format=csv after a cached JSON answer: Content-Type %q, want text/csv", ct)
	}
}
