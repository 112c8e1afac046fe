package servetest

import (
	"testing"
	"time"

	"github.com/kwdata/kwdata/kw"
)

// DemoRelated are the related keywords of "running shoes" in the demo
// fixture: realistic names and numbers, in rank order (overlap descending).
var DemoRelated = []kw.RelatedKeyword{
	{Keyword: "running shoe", Volume: I64(246000), CPCMicros: I64(1_190_000), Overlap: 16, SameIntent: true},
	{Keyword: "best running shoes", Volume: I64(90500), CPCMicros: I64(1_450_000), Overlap: 14},
	{Keyword: "running sneakers", Volume: I64(165000), CPCMicros: I64(1_050_000), Overlap: 12, SameIntent: true},
	{Keyword: "running shoes for women", Volume: I64(74000), CPCMicros: I64(1_120_000), Overlap: 11},
	{Keyword: "mens running shoes", Volume: I64(60500), CPCMicros: I64(1_080_000), Overlap: 10},
	{Keyword: "trail running shoes", Volume: I64(49500), CPCMicros: I64(980_000), Overlap: 9},
	{Keyword: "nike running shoes", Volume: I64(40500), CPCMicros: I64(870_000), Overlap: 8},
	{Keyword: "cushioned running shoes", Volume: I64(14800), CPCMicros: I64(1_310_000), Overlap: 7},
	{Keyword: "running shoes sale", Volume: I64(12100), CPCMicros: I64(640_000), Overlap: 6},
	{Keyword: "wide running shoes", Volume: I64(8100), CPCMicros: I64(0), Overlap: 5},
}

// demoSeason is a seasonal curve of 12 months, November to October, in
// per mille of the average month.
var demoSeason = []int64{820, 905, 1220, 1100, 1010, 1000, 1000, 905, 1000, 1000, 905, 1000}

// SeasonalTrend returns 12 months from 2025-11 to 2026-10 around avg.
func SeasonalTrend(avg int64) []kw.MonthlySearches {
	out := make([]kw.MonthlySearches, 12)
	start := time.Date(2025, 11, 1, 0, 0, 0, 0, time.UTC)
	for i := range out {
		out[i] = kw.MonthlySearches{Month: start.AddDate(0, i, 0).Format("2006-01"), Searches: I64(avg * demoSeason[i] / 1000)}
	}
	return out
}

// NewDemoIndex is the fake index of the handler tests with a realistic
// "running shoes" in the United States: 12 seasonal months and 10 related
// keywords that all have pages of their own. The OpenAPI examples, the
// golden files and the browser test read it.
func NewDemoIndex(tb testing.TB) *Index {
	tb.Helper()
	f := NewIndex(tb)
	f.PanicOn = ""
	f.Add(kw.Entry{
		Keyword: "running shoes", Country: "US", Volume: I64(301000), CPCMicros: I64(1_234_999),
		Competition: F64(0.87), CompetitionLevel: "HIGH", Intent: "running shoes",
		Trend: SeasonalTrend(301000), Related: DemoRelated,
	})
	for i, r := range DemoRelated {
		intent := r.Keyword
		if r.SameIntent {
			intent = "running shoes"
		}
		back := []kw.RelatedKeyword{{Keyword: "running shoes", Volume: I64(301000), CPCMicros: I64(1_234_999), Overlap: r.Overlap, SameIntent: r.SameIntent}}
		for j, o := range DemoRelated {
			if j != i && len(back) < 4 {
				o.Overlap, o.SameIntent = max(o.Overlap-3, 1), false
				back = append(back, o)
			}
		}
		f.Add(kw.Entry{
			Keyword: r.Keyword, Country: "US", Volume: r.Volume, CPCMicros: r.CPCMicros,
			Competition: F64(0.5 + float64(i)/40), Intent: intent, Trend: SeasonalTrend(*r.Volume), Related: back,
		})
	}
	us := 0
	for k := range f.Entries {
		if k[0] == "US" {
			us++
		}
	}
	f.IndexInfo.Countries = map[string]int{"US": us, "DE": 1}
	return f
}

// I64 and F64 are the nullable numbers of records and entries.
func I64(v int64) *int64 { return &v }

// F64 returns a pointer to v.
func F64(v float64) *float64 { return &v }
