package serve

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/kwdata/kwdata/kw"
)

// fakeIndex is an in-memory kw.Index: a map from country and keyword.
type fakeIndex struct {
	mu      sync.Mutex
	info    kw.IndexInfo
	ok      bool
	entries map[[2]string]kw.Entry
	err     error  // returned by Lookup instead of an answer when set
	panicOn string // Lookup of this keyword panics
	lookups int
}

func (f *fakeIndex) Lookup(ctx context.Context, country, keyword string) (kw.Entry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lookups++
	if f.panicOn != "" && keyword == f.panicOn {
		panic("fake index panics on purpose")
	}
	if f.err != nil {
		return kw.Entry{}, f.err
	}
	if !f.ok {
		return kw.Entry{}, kw.ErrNoIndex
	}
	e, ok := f.entries[[2]string{country, keyword}]
	if !ok {
		return kw.Entry{}, kw.ErrNotFound
	}
	return e, nil
}

func (f *fakeIndex) Info() (kw.IndexInfo, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.info, f.ok
}

func (f *fakeIndex) add(e kw.Entry) {
	if f.entries == nil {
		f.entries = map[[2]string]kw.Entry{}
	}
	f.entries[[2]string{e.Country, e.Keyword}] = e
}

// months returns n consecutive monthly volumes ending with end ("YYYY-MM"),
// oldest first; volume i is base+i.
func months(tb testing.TB, end string, n int, base int64) []kw.MonthlySearches {
	tb.Helper()
	t, err := time.Parse("2006-01", end)
	if err != nil {
		tb.Fatal(err)
	}
	out := make([]kw.MonthlySearches, n)
	for i := range n {
		out[i] = kw.MonthlySearches{
			Month:    t.AddDate(0, i-n+1, 0).Format("2006-01"),
			Searches: i64(base + int64(i)),
		}
	}
	return out
}

func related(n int) []kw.RelatedKeyword {
	out := make([]kw.RelatedKeyword, n)
	for i := range n {
		out[i] = kw.RelatedKeyword{
			Keyword:    fmt.Sprintf("related %02d", i+1),
			Volume:     i64(int64(90500 - 1000*i)),
			CPCMicros:  i64(int64(1_450_000 + 5_000*i)),
			Overlap:    int32(14 - i),
			SameIntent: i < 3,
		}
	}
	return out
}

var testBuiltAt = time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)

// newFakeIndex returns the fixture every handler test reads.
func newFakeIndex(tb testing.TB) *fakeIndex {
	tb.Helper()
	f := &fakeIndex{ok: true, panicOn: "panic please", info: kw.IndexInfo{
		Version: "20261122T030000Z", DataDate: "2026-11-21", BuiltAt: testBuiltAt,
		Countries: map[string]int{"US": 7, "DE": 1},
	}}
	f.add(kw.Entry{
		Keyword: "running shoes", Country: "US", Volume: i64(301000), CPCMicros: i64(1_234_999),
		Competition: f64(0.87), CompetitionLevel: "HIGH", Intent: "running shoes",
		YoYChange: f64(900), ThreeMonthChange: f64(-12.5),
		Trend: months(tb, "2025-11", 15, 246000), Related: related(12),
	})
	f.add(kw.Entry{
		Keyword: "trail shoes", Country: "US", Volume: i64(49500), CPCMicros: i64(1_235_000),
		Competition: f64(0.5), Intent: "running shoes", Trend: months(tb, "2025-11", 3, 40000), Related: related(2),
		YoYChange: f64(math.Inf(1)), ThreeMonthChange: f64(0),
	})
	f.add(kw.Entry{Keyword: "free shoes", Country: "US", Volume: i64(10), CPCMicros: i64(0), Competition: f64(0), Intent: "free shoes"})
	// The source gave no numbers: every one of them is null, never 0.
	f.add(kw.Entry{Keyword: "airgun", Country: "US", Intent: "airgun",
		Trend:   []kw.MonthlySearches{{Month: "2026-09"}, {Month: "2026-10", Searches: i64(0)}},
		Related: []kw.RelatedKeyword{{Keyword: "air rifle", Overlap: 4}}})
	f.add(kw.Entry{
		Keyword: "cheap shoes", Country: "US", Volume: i64(1000), VolumeRange: "1K – 10K", CPCMicros: i64(5_000),
		Competition: f64(0.285), Intent: "cheap shoes",
	})
	// Months out of order: the answer must still be oldest first.
	shuffled := months(tb, "2025-11", 14, 100)
	shuffled[0], shuffled[13] = shuffled[13], shuffled[0]
	shuffled[5], shuffled[9] = shuffled[9], shuffled[5]
	f.add(kw.Entry{Keyword: "shoe sizes", Country: "US", Volume: i64(720), CPCMicros: i64(999_999), Competition: f64(0.999), Intent: "shoe sizes", Trend: shuffled})
	f.add(kw.Entry{
		Keyword: `shoes "<b>" & más`, Country: "US", Volume: i64(1), CPCMicros: i64(10_000), Competition: f64(0.01),
		Intent: "tab\there\u2028", Related: []kw.RelatedKeyword{{Keyword: "a\\b</script>", Volume: i64(2), Overlap: 1}},
	})
	f.add(kw.Entry{Keyword: "laufschuhe", Country: "DE", Volume: i64(74000), CPCMicros: i64(830_000), Competition: f64(0.61), Intent: "laufschuhe"})
	return f
}

// fakeAccess records what the server asks of Access.
type fakeAccess struct {
	mu        sync.Mutex
	err       error // returned by Admit when set
	admits    []int
	clients   []netip.Addr
	committed []int
	cancelled int
}

func (a *fakeAccess) Admit(ctx context.Context, r *http.Request, client netip.Addr, n int) (Ticket, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.admits = append(a.admits, n)
	a.clients = append(a.clients, client)
	if a.err != nil {
		return nil, a.err
	}
	return &fakeTicket{a: a}, nil
}

type fakeTicket struct {
	a    *fakeAccess
	done bool
}

func (t *fakeTicket) Commit(counted int, h http.Header) {
	if t.done {
		return
	}
	t.done = true
	t.a.mu.Lock()
	t.a.committed = append(t.a.committed, counted)
	t.a.mu.Unlock()
	h.Set("RateLimit-Policy", `"daily";q=20;w=86400`)
	h.Set("RateLimit", `"daily";r=19;t=3600`)
}

func (t *fakeTicket) Cancel() {
	if t.done {
		return
	}
	t.done = true
	t.a.mu.Lock()
	t.a.cancelled++
	t.a.mu.Unlock()
}

// testServer is a Server over the fixture with a log captured in a buffer.
type testServer struct {
	*Server
	index  *fakeIndex
	access *fakeAccess
	log    *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newTestServer(tb testing.TB) *testServer {
	tb.Helper()
	ts := &testServer{index: newFakeIndex(tb), access: &fakeAccess{}, log: &syncBuffer{}}
	ts.Server = New(Options{
		Index:  ts.index,
		Logger: slog.New(slog.NewTextHandler(ts.log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Now:    func() time.Time { return testBuiltAt.Add(90 * time.Minute) },
		Access: ts.access,
		TrustedProxies: []netip.Prefix{
			netip.MustParsePrefix("10.0.0.0/8"),
		},
	})
	return ts
}

// do sends a request to h and returns the recorded answer.
func do(tb testing.TB, h http.Handler, method, target string, header http.Header) *httptest.ResponseRecorder {
	tb.Helper()
	r := httptest.NewRequest(method, target, nil)
	for k, v := range header {
		r.Header[k] = v
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// IntentGroup computes the group of a leader from the entries, by brute
// force: every entry whose intent is the leader. A member's overlap is the
// one its entry or the leader's lists between them; the leader's own is 20.
func (f *fakeIndex) IntentGroup(ctx context.Context, country, leader string) (kw.IntentGroup, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return kw.IntentGroup{}, f.err
	}
	if !f.ok {
		return kw.IntentGroup{}, kw.ErrNoIndex
	}
	g := kw.IntentGroup{Leader: leader, Country: country, DataDate: f.info.DataDate}
	le, ok := f.entries[[2]string{country, leader}]
	if !ok {
		return g, kw.ErrNotFound
	}
	for k, e := range f.entries {
		if k[0] != country || (e.Intent != leader && !(e.Intent == "" && k[1] == leader)) {
			continue
		}
		m := kw.GroupMember{Keyword: e.Keyword, Volume: e.Volume, CPCMicros: e.CPCMicros, Overlap: 20}
		if e.Keyword != leader {
			m.Overlap = 8 // the least a follower has, where neither lists the other
			for _, r := range append(slices.Clone(le.Related), e.Related...) {
				if r.Keyword == e.Keyword || r.Keyword == leader {
					m.Overlap = max(m.Overlap, r.Overlap)
				}
			}
		}
		g.Size++
		g.TotalVolume += kw.Deref(e.Volume)
		g.Members = append(g.Members, m)
	}
	slices.SortFunc(g.Members, func(a, b kw.GroupMember) int {
		if va, vb := kw.Deref(a.Volume), kw.Deref(b.Volume); va != vb {
			return cmp.Compare(vb, va)
		}
		return strings.Compare(a.Keyword, b.Keyword)
	})
	if len(g.Members) > kw.MaxGroupMembers {
		g.Members = g.Members[:kw.MaxGroupMembers]
	}
	return g, nil
}

// SharedPrefix is the brute force of kw.SuggestIndex's: the longest
// common beginning of q and any keyword of the country.
func (f *fakeIndex) SharedPrefix(ctx context.Context, country, q string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return "", f.err
	}
	if !f.ok {
		return "", kw.ErrNoIndex
	}
	best := ""
	for k := range f.entries {
		if k[0] != country {
			continue
		}
		n := 0
		for n < len(q) && n < len(k[1]) && q[n] == k[1][n] {
			n++
		}
		for n > 0 && n < len(q) && !utf8.RuneStart(q[n]) {
			n--
		}
		if n > len(best) {
			best = q[:n]
		}
	}
	return best, nil
}

// Suggest is the brute force of kw.SuggestIndex over the entries: those
// beginning with prefix by volume, then those holding it as whole words
// after their first word.
func (f *fakeIndex) Suggest(ctx context.Context, country, prefix string, n int) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	if !f.ok {
		return nil, kw.ErrNoIndex
	}
	var begins, holds []kw.Entry
	for k, e := range f.entries {
		switch {
		case k[0] != country:
		case strings.HasPrefix(e.Keyword, prefix):
			begins = append(begins, e)
		case strings.Contains(e.Keyword+" ", " "+prefix+" "):
			holds = append(holds, e)
		}
	}
	var out []string
	for _, list := range [][]kw.Entry{begins, holds} {
		slices.SortFunc(list, func(a, b kw.Entry) int {
			if va, vb := kw.Deref(a.Volume), kw.Deref(b.Volume); va != vb {
				return cmp.Compare(vb, va)
			}
			return strings.Compare(a.Keyword, b.Keyword)
		})
		for _, e := range list {
			if len(out) < n {
				out = append(out, e.Keyword)
			}
		}
	}
	return out, nil
}
