package servetest

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/kwdata/kwdata/kw"
)

// Index is an in-memory kw.Index: a map from country and keyword.
type Index struct {
	Mu        sync.Mutex
	IndexInfo kw.IndexInfo
	OK        bool
	Entries   map[[2]string]kw.Entry
	Err       error  // returned by Lookup instead of an answer when set
	PanicOn   string // Lookup of this keyword panics
	Lookups   int
	// NoExplorer makes Explore answer kw.ErrExploreUnavailable, as a
	// build made before the explorer's tables does.
	NoExplorer bool
	Explores   int // Explore calls answered
}

// Lookup answers the entry of keyword in country, or the fault set in
// Err, or kw.ErrNoIndex while OK is false.
func (f *Index) Lookup(ctx context.Context, country, keyword string) (kw.Entry, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	f.Lookups++
	if f.PanicOn != "" && keyword == f.PanicOn {
		panic("fake index panics on purpose")
	}
	if f.Err != nil {
		return kw.Entry{}, f.Err
	}
	if !f.OK {
		return kw.Entry{}, kw.ErrNoIndex
	}
	e, ok := f.Entries[[2]string{country, keyword}]
	if !ok {
		return kw.Entry{}, kw.ErrNotFound
	}
	return e, nil
}

// Info returns IndexInfo and OK.
func (f *Index) Info() (kw.IndexInfo, bool) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	return f.IndexInfo, f.OK
}

// Add stores e under its country and keyword.
func (f *Index) Add(e kw.Entry) {
	if f.Entries == nil {
		f.Entries = map[[2]string]kw.Entry{}
	}
	f.Entries[[2]string{e.Country, e.Keyword}] = e
}

// Months returns n consecutive monthly volumes ending with end ("YYYY-MM"),
// oldest first; volume i is base+i.
func Months(tb testing.TB, end string, n int, base int64) []kw.MonthlySearches {
	tb.Helper()
	t, err := time.Parse("2006-01", end)
	if err != nil {
		tb.Fatal(err)
	}
	out := make([]kw.MonthlySearches, n)
	for i := range n {
		out[i] = kw.MonthlySearches{
			Month:    t.AddDate(0, i-n+1, 0).Format("2006-01"),
			Searches: I64(base + int64(i)),
		}
	}
	return out
}

// Related returns n related keywords with falling volumes, the first
// three of the same intent.
func Related(n int) []kw.RelatedKeyword {
	out := make([]kw.RelatedKeyword, n)
	for i := range n {
		out[i] = kw.RelatedKeyword{
			Keyword:    fmt.Sprintf("related %02d", i+1),
			Volume:     I64(int64(90500 - 1000*i)),
			CPCMicros:  I64(int64(1_450_000 + 5_000*i)),
			Overlap:    int32(14 - i),
			SameIntent: i < 3,
		}
	}
	return out
}

// BuiltAt is when the fixture index says it was built.
var BuiltAt = time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)

// NewIndex returns the fixture every handler test reads.
func NewIndex(tb testing.TB) *Index {
	tb.Helper()
	f := &Index{OK: true, PanicOn: "panic please", IndexInfo: kw.IndexInfo{
		Version: "20261122T030000Z", DataDate: "2026-11-21", BuiltAt: BuiltAt,
		Countries: map[string]int{"US": 7, "DE": 1},
	}}
	f.Add(kw.Entry{
		Keyword: "running shoes", Country: "US", Volume: I64(301000), CPCMicros: I64(1_234_999),
		Competition: F64(0.87), CompetitionLevel: "HIGH", Intent: "running shoes",
		YoYChange: F64(900), ThreeMonthChange: F64(-12.5),
		Trend: Months(tb, "2025-11", 15, 246000), Related: Related(12),
	})
	f.Add(kw.Entry{
		Keyword: "trail shoes", Country: "US", Volume: I64(49500), CPCMicros: I64(1_235_000),
		Competition: F64(0.5), Intent: "running shoes", Trend: Months(tb, "2025-11", 3, 40000), Related: Related(2),
		YoYChange: F64(math.Inf(1)), ThreeMonthChange: F64(0),
	})
	f.Add(kw.Entry{Keyword: "free shoes", Country: "US", Volume: I64(10), CPCMicros: I64(0), Competition: F64(0), Intent: "free shoes"})
	// The source gave no numbers: every one of them is null, never 0.
	f.Add(kw.Entry{Keyword: "airgun", Country: "US", Intent: "airgun",
		Trend:   []kw.MonthlySearches{{Month: "2026-09"}, {Month: "2026-10", Searches: I64(0)}},
		Related: []kw.RelatedKeyword{{Keyword: "air rifle", Overlap: 4}}})
	f.Add(kw.Entry{
		Keyword: "cheap shoes", Country: "US", Volume: I64(1000), VolumeRange: "1K – 10K", CPCMicros: I64(5_000),
		Competition: F64(0.285), Intent: "cheap shoes",
	})
	// Months out of order: the answer must still be oldest first.
	shuffled := Months(tb, "2025-11", 14, 100)
	shuffled[0], shuffled[13] = shuffled[13], shuffled[0]
	shuffled[5], shuffled[9] = shuffled[9], shuffled[5]
	f.Add(kw.Entry{Keyword: "shoe sizes", Country: "US", Volume: I64(720), CPCMicros: I64(999_999), Competition: F64(0.999), Intent: "shoe sizes", Trend: shuffled})
	f.Add(kw.Entry{
		Keyword: `shoes "<b>" & más`, Country: "US", Volume: I64(1), CPCMicros: I64(10_000), Competition: F64(0.01),
		Intent: "tab\there\u2028", Related: []kw.RelatedKeyword{{Keyword: "a\\b</script>", Volume: I64(2), Overlap: 1}},
	})
	f.Add(kw.Entry{Keyword: "laufschuhe", Country: "DE", Volume: I64(74000), CPCMicros: I64(830_000), Competition: F64(0.61), Intent: "laufschuhe"})
	return f
}

// IntentGroup computes the group of a leader from the entries, by brute
// force: every entry whose intent is the leader. A member's overlap is the
// one its entry or the leader's lists between them; the leader's own is 20.
func (f *Index) IntentGroup(ctx context.Context, country, leader string) (kw.IntentGroup, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if f.Err != nil {
		return kw.IntentGroup{}, f.Err
	}
	if !f.OK {
		return kw.IntentGroup{}, kw.ErrNoIndex
	}
	g := kw.IntentGroup{Leader: leader, Country: country, DataDate: f.IndexInfo.DataDate}
	le, ok := f.Entries[[2]string{country, leader}]
	if !ok {
		return g, kw.ErrNotFound
	}
	for k, e := range f.Entries {
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
func (f *Index) SharedPrefix(ctx context.Context, country, q string) (string, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if f.Err != nil {
		return "", f.Err
	}
	if !f.OK {
		return "", kw.ErrNoIndex
	}
	best := ""
	for k := range f.Entries {
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
func (f *Index) Suggest(ctx context.Context, country, prefix string, n int) ([]string, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if f.Err != nil {
		return nil, f.Err
	}
	if !f.OK {
		return nil, kw.ErrNoIndex
	}
	var begins, holds []kw.Entry
	for k, e := range f.Entries {
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
