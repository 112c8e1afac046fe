package index

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/kwdata/kwdata/kw"
)

func months(from string, n int, base int64) []kw.MonthlySearches {
	m, _ := parseMonth(from)
	out := make([]kw.MonthlySearches, n)
	for i := range out {
		out[i] = kw.MonthlySearches{Month: monthName(m + i), Searches: i64(base + int64(i))}
	}
	return out
}

// testLake is a small lake covering the cases the merge must get right:
// trends longer than 12 months and out of order, more than 10 related rows,
// related and intent rows of keywords without a record, keywords without
// related rows or intents, countries without related or intents partitions.
func testLake(tb testing.TB, data string) {
	tb.Helper()
	var usRelated []kw.RelatedRow
	usRelated = append(usRelated, kw.RelatedRow{Keyword: "aaa orphan", Rank: 1, Related: "x", Overlap: 1})
	usRelated = append(usRelated, kw.RelatedRow{Keyword: "best running shoes", Rank: 1, Related: "running shoes", Overlap: 14, Volume: i64(301000), CPCMicros: i64(1230000), SameIntent: true})
	for i := 1; i <= 12; i++ {
		usRelated = append(usRelated, kw.RelatedRow{Keyword: "running shoes", Rank: int32(i), Related: fmt.Sprintf("rs %02d", i), Overlap: int32(20 - i), Volume: i64(int64(1000 * i)), CPCMicros: i64(int64(10000 * i)), SameIntent: i%2 == 0})
	}
	usRelated = append(usRelated, kw.RelatedRow{Keyword: "sneakers orphan", Rank: 1, Related: "y", Overlap: 2})
	unsorted := []kw.MonthlySearches{{Month: "2026-03", Searches: i64(3)}, {Month: "2026-01", Searches: i64(1)}, {Month: "bogus", Searches: i64(9)}, {Month: "2026-02", Searches: i64(2)}}
	writeLake(tb, data, "2026-11-21", map[string]lakeCountry{
		"us": {
			keywords: []kw.KeywordRecord{
				{Keyword: "best running shoes", Volume: i64(90500), CPCMicros: i64(1450000), Competition: f64(0.61), CompetitionLevel: "MEDIUM", Monthly: months("2026-08", 3, 100)},
				{Keyword: "running shoes", Volume: i64(301000), CPCMicros: i64(1230000), Competition: f64(0.87), CompetitionLevel: "HIGH", BidLowMicros: i64(1), BidHighMicros: i64(2), Monthly: months("2025-08", 15, 200000), Source: "planner-csv", YoYChange: f64(900), ThreeMonthChange: f64(math.Inf(1))},
				{Keyword: "trail shoes", Volume: i64(0), Competition: f64(0), Monthly: unsorted},
				{Keyword: "zzz no trend", Volume: i64(10), CompetitionLevel: "UNSPECIFIED"},
			},
			related: usRelated,
			intents: []kw.IntentRow{
				{Keyword: "best running shoes", Intent: "running shoes"},
				{Keyword: "running shoes", Intent: "running shoes"},
				{Keyword: "sneakers orphan", Intent: "sneakers orphan"},
				{Keyword: "zzz no trend", Intent: "zzz leader"},
			},
		},
		"gb": {
			keywords: []kw.KeywordRecord{
				{Keyword: "football boots", Volume: i64(1000), VolumeRange: "1K – 10K", CPCMicros: i64(990000), Competition: f64(0.05), Monthly: months("2026-10", 1, 7)},
			},
		},
		"de": {keywords: []kw.KeywordRecord{}, related: []kw.RelatedRow{}, intents: []kw.IntentRow{}},
		"fr": {related: []kw.RelatedRow{{Keyword: "chaussures", Rank: 1, Related: "baskets", Overlap: 3}}},
	})
	// Another date must not leak in.
	writeLake(tb, data, "2026-11-20", map[string]lakeCountry{
		"us": {keywords: []kw.KeywordRecord{{Keyword: "old keyword", Volume: i64(1)}}},
		"it": {keywords: []kw.KeywordRecord{{Keyword: "scarpe", Volume: i64(1)}}},
	})
}

func TestBuildLookup(t *testing.T) {
	data := t.TempDir()
	testLake(t, data)
	var progress [][2]int
	m, err := Build(context.Background(), BuildOptions{
		Data: data, Date: "2026-11-21", Logger: testLogger(t), AllowMissingRelated: true, // gb has none
		Progress: func(done, total int) { progress = append(progress, [2]int{done, total}) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int{"US": 4, "GB": 1, "DE": 0}; !reflect.DeepEqual(m.Countries, want) || m.Keys != 5 {
		t.Errorf("manifest countries %v keys %d, want %v and 5", m.Countries, m.Keys, want)
	}
	// Keywords done of all countries' keywords, after each country (de, gb, us).
	if want := [][2]int{{0, 5}, {0, 5}, {1, 5}, {5, 5}}; !reflect.DeepEqual(progress, want) {
		t.Errorf("progress %v, want %v", progress, want)
	}
	if m.FormatVersion != FormatVersion || m.DataDate != "2026-11-21" || m.Bytes <= 0 || len(m.Probes) == 0 {
		t.Errorf("manifest %+v", m)
	}
	if id := readCurrent(t, data); id != m.BuildID {
		t.Errorf("CURRENT names %q, want %q", id, m.BuildID)
	}
	if ids, err := ListBuilds(data); err != nil || !reflect.DeepEqual(ids, []string{m.BuildID}) {
		t.Errorf("ListBuilds = %v, %v; want [%s]", ids, err, m.BuildID)
	}

	s := openStore(t, data)
	info, ok := s.Info()
	if !ok || info.Version != m.BuildID || info.DataDate != "2026-11-21" || !reflect.DeepEqual(info.Countries, m.Countries) || !info.BuiltAt.Equal(m.BuiltAt) {
		t.Errorf("Info() = %+v, %v", info, ok)
	}

	var rsRelated []kw.RelatedKeyword
	for i := 1; i <= 10; i++ {
		rsRelated = append(rsRelated, kw.RelatedKeyword{Keyword: fmt.Sprintf("rs %02d", i), Overlap: int32(20 - i), Volume: i64(int64(1000 * i)), CPCMicros: i64(int64(10000 * i)), SameIntent: i%2 == 0})
	}
	tests := []struct {
		country, keyword string
		want             kw.Entry
		err              error
	}{
		{"US", "running shoes", kw.Entry{
			Keyword: "running shoes", Country: "US", Volume: i64(301000), CPCMicros: i64(1230000), Competition: f64(0.87), CompetitionLevel: "HIGH",
			YoYChange: f64(900), ThreeMonthChange: f64(math.Inf(1)),
			Intent: "running shoes", Trend: months("2025-11", 12, 200003), Related: rsRelated,
		}, nil},
		{"us", "best running shoes", kw.Entry{
			Keyword: "best running shoes", Country: "US", Volume: i64(90500), CPCMicros: i64(1450000), Competition: f64(0.61), CompetitionLevel: "MEDIUM",
			Intent: "running shoes", Trend: months("2026-08", 3, 100),
			Related: []kw.RelatedKeyword{{Keyword: "running shoes", Overlap: 14, Volume: i64(301000), CPCMicros: i64(1230000), SameIntent: true}},
		}, nil},
		{"US", "trail shoes", kw.Entry{
			Keyword: "trail shoes", Country: "US", Intent: "trail shoes", Volume: i64(0), Competition: f64(0), // zero is a value
			Trend: []kw.MonthlySearches{{Month: "2026-01", Searches: i64(1)}, {Month: "2026-02", Searches: i64(2)}, {Month: "2026-03", Searches: i64(3)}},
		}, nil},
		{"US", "zzz no trend", kw.Entry{Keyword: "zzz no trend", Country: "US", Volume: i64(10), CompetitionLevel: "UNSPECIFIED", Intent: "zzz leader"}, nil},
		{"gb", "football boots", kw.Entry{
			Keyword: "football boots", Country: "GB", Volume: i64(1000), VolumeRange: "1K – 10K", CPCMicros: i64(990000), Competition: f64(0.05),
			Intent: "football boots", Trend: months("2026-10", 1, 7),
		}, nil},
		{"US", "aaa orphan", kw.Entry{}, kw.ErrNotFound},
		{"US", "sneakers orphan", kw.Entry{}, kw.ErrNotFound},
		{"US", "old keyword", kw.Entry{}, kw.ErrNotFound},
		{"IT", "scarpe", kw.Entry{}, kw.ErrNotFound},
		{"FR", "chaussures", kw.Entry{}, kw.ErrNotFound},
		{"GB", "running shoes", kw.Entry{}, kw.ErrNotFound},
		{"USA", "running shoes", kw.Entry{}, kw.ErrNotFound},
		{"U1", "running shoes", kw.Entry{}, kw.ErrNotFound},
		{"", "running shoes", kw.Entry{}, kw.ErrNotFound},
		{"US", "", kw.Entry{}, kw.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.country+"/"+tt.keyword, func(t *testing.T) {
			got, err := s.Lookup(context.Background(), tt.country, tt.keyword)
			if !errors.Is(err, tt.err) || (tt.err == nil && err != nil) {
				t.Fatalf("Lookup error %v, want %v", err, tt.err)
			}
			want := tt.want
			if tt.err == nil {
				want.DataDate = "2026-11-21" // every entry carries its build's date
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Lookup =\n%+v\nwant\n%+v", got, want)
			}
		})
	}
}

func TestBuildRefusesBadLake(t *testing.T) {
	tests := []struct {
		name    string
		date    string
		lake    map[string]lakeCountry
		wantErr string
	}{
		{"no keywords on date", "2026-11-22", nil, "no keywords partition"},
		{"bad date", "2026-13-01", nil, "not YYYY-MM-DD"},
		{"empty", "2026-11-21", map[string]lakeCountry{"us": {keywords: []kw.KeywordRecord{}}}, "empty index"},
		{"unsorted keywords", "2026-11-21", map[string]lakeCountry{"us": {keywords: []kw.KeywordRecord{{Keyword: "b"}, {Keyword: "a"}}}}, "not sorted"},
		{"duplicate keyword", "2026-11-21", map[string]lakeCountry{"us": {keywords: []kw.KeywordRecord{{Keyword: "a"}, {Keyword: "a"}}}}, "repeats"},
		{"unsorted related", "2026-11-21", map[string]lakeCountry{"us": {
			keywords: []kw.KeywordRecord{{Keyword: "a"}, {Keyword: "b"}},
			related:  []kw.RelatedRow{{Keyword: "a", Rank: 2, Related: "b"}, {Keyword: "a", Rank: 1, Related: "c"}},
		}}, "not sorted by keyword then rank"},
		{"unsorted intents", "2026-11-21", map[string]lakeCountry{"us": {
			keywords: []kw.KeywordRecord{{Keyword: "a"}, {Keyword: "c"}},
			intents:  []kw.IntentRow{{Keyword: "b", Intent: "b"}, {Keyword: "a", Intent: "a"}},
		}}, "intents partition of US is not sorted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := t.TempDir()
			if tt.lake != nil {
				writeLake(t, data, "2026-11-21", tt.lake)
			}
			// A good build is published first; the failed one must not
			// replace it or leave anything behind.
			simpleLake(t, data, "2026-01-01", "us", 3, 1)
			good := buildIndex(t, data, "2026-01-01")
			// The publish guards are tested on their own; these lakes
			// would trip them before their faults are found.
			_, err := Build(context.Background(), BuildOptions{Data: data, Date: tt.date, Logger: testLogger(t), AllowMissingRelated: true, AllowShrink: true})
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Build error %v, want one containing %q", err, tt.wantErr)
			}
			if id := readCurrent(t, data); id != good.BuildID {
				t.Errorf("CURRENT names %q after a failed build, want %q", id, good.BuildID)
			}
			if got, want := indexEntries(t, data), []string{good.BuildID, "CURRENT"}; !slices.Equal(got, want) {
				t.Errorf("index folder holds %v, want %v", got, want)
			}
		})
	}
}

func TestBuildRollsTables(t *testing.T) {
	data := t.TempDir()
	simpleLake(t, data, "2026-11-21", "us", 3000, 5)
	m, err := Build(context.Background(), BuildOptions{Data: data, Date: "2026-11-21", Logger: testLogger(t), TableBytes: 16 << 10})
	if err != nil {
		t.Fatal(err)
	}
	s := openStore(t, data)
	h := s.acquire()
	defer s.release(h)
	levels, err := h.db.SSTables()
	if err != nil {
		t.Fatal(err)
	}
	tables := 0
	for l, lv := range levels {
		if len(lv) > 0 && l != len(levels)-1 {
			t.Errorf("%d tables ingested into L%d, want all in the last level", len(lv), l)
		}
		tables += len(lv)
	}
	if tables < 3 {
		t.Errorf("%d tables, want several of about 16 KiB", tables)
	}
	// Every table's first and last key is probed.
	if len(m.Probes) < tables+1 {
		t.Errorf("%d probes for %d tables", len(m.Probes), tables)
	}
	for i := 0; i < 3000; i += 97 {
		k := fmt.Sprintf("kw %06d", i)
		e, err := s.Lookup(context.Background(), "us", k)
		if err != nil || e.Keyword != k || len(e.Related) != 2 || e.Intent != "kw 000000" {
			t.Fatalf("Lookup(%q) = %+v, %v", k, e, err)
		}
	}
}

func TestTrendOf(t *testing.T) {
	tests := []struct {
		in      []kw.MonthlySearches
		want    []string
		wantBad int
	}{
		{nil, nil, 0},
		{months("2025-01", 14, 0), []string{"2025-03", "2025-04", "2025-05", "2025-06", "2025-07", "2025-08", "2025-09", "2025-10", "2025-11", "2025-12", "2026-01", "2026-02"}, 0},
		{[]kw.MonthlySearches{{Month: "2026-02"}, {Month: "2026-01"}}, []string{"2026-01", "2026-02"}, 0},
		{[]kw.MonthlySearches{{Month: "2026-01"}, {Month: "2026-01"}, {Month: "2026-13"}}, []string{"2026-01"}, 2},
	}
	for i, tt := range tests {
		got, bad := trendOf(nil, tt.in)
		// EncodeEntry applies the last-12 and validity rules.
		e, err := DecodeEntry(EncodeEntry(nil, &kw.Entry{Trend: got}))
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, m := range e.Trend {
			names = append(names, m.Month)
		}
		if !slices.Equal(names, tt.want) || bad != tt.wantBad {
			t.Errorf("case %d: months %v bad %d, want %v and %d", i, names, bad, tt.want, tt.wantBad)
		}
	}
}

func TestListBuildsAndPublished(t *testing.T) {
	data := t.TempDir()
	if id, err := Published(data); err != nil || id != "" {
		t.Fatalf("Published with no index folder = %q, %v", id, err)
	}
	if ids, err := ListBuilds(data); err != nil || len(ids) != 0 {
		t.Fatalf("ListBuilds with no index folder = %v, %v", ids, err)
	}
	simpleLake(t, data, "2026-11-21", "us", 3, 1)
	a := buildIndex(t, data, "2026-11-21")
	b := buildIndex(t, data, "2026-11-21")
	// A crashed build's leftovers and foreign folders are not builds.
	for _, dir := range []string{".building-20261122T000000Z-abcdef", "20261122T000000Z-nomanifest"} {
		if err := os.MkdirAll(filepath.Join(data, "index", dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{a.BuildID, b.BuildID}
	slices.Sort(want)
	if ids, err := ListBuilds(data); err != nil || !slices.Equal(ids, want) {
		t.Errorf("ListBuilds = %v, %v; want %v", ids, err, want)
	}
	if id := readCurrent(t, data); id != b.BuildID {
		t.Errorf("Published = %q, want the last build %q", id, b.BuildID)
	}
	// Retention reads builds through these, so they must agree with Build.
	if m, err := ReadManifest(data, a.BuildID); err != nil || m.BuildID != a.BuildID || m.DataDate != "2026-11-21" || !m.BuiltAt.Equal(a.BuiltAt) {
		t.Errorf("ReadManifest(%s) = %+v, %v; want the manifest Build returned", a.BuildID, m, err)
	}
	for _, id := range []string{"20261122T000000Z-nomanifest", "../" + a.BuildID, ".building-20261122T000000Z-abcdef", ""} {
		if _, err := ReadManifest(data, id); err == nil {
			t.Errorf("ReadManifest(%q) succeeded; want an error", id)
		}
	}
	wantUnfinished := []string{filepath.Join(data, "index", ".building-20261122T000000Z-abcdef")}
	if got, err := Unfinished(data); err != nil || !slices.Equal(got, wantUnfinished) {
		t.Errorf("Unfinished = %v, %v; want %v", got, err, wantUnfinished)
	}
	if got, err := Unfinished(t.TempDir()); err != nil || len(got) != 0 {
		t.Errorf("Unfinished with no index folder = %v, %v", got, err)
	}
}
