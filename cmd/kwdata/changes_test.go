package main

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/lake"
)

// TestRealExportChanges ingests the published planner exports that state
// "Three month change" and "YoY change" and checks the definition kwdata
// computes them by where a source gives only the series: on every row of
// an export with monthly columns whose stated three month change is a
// number, kw.Changes of the row's months gives the same percent.
func TestRealExportChanges(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"paisadallas-2021-keyword-stats-es.csv", "tarunchand-2023-gbp-segmentation-38_res.csv", "barakataa-2024-keyword-stats.csv"} {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(realExportsDir(t), name)
			data := filepath.Join(t.TempDir(), "data")
			const date = "2026-11-21"
			run(t, "ingest", "--data", data, "--date", date, "--country", "us", "--planner-csv", file, "--usd-rate", "GBP=1.27")
			recs, err := lake.Read[kw.KeywordRecord](data, kw.DatasetKeywords, "us", date)
			if err != nil {
				t.Fatal(err)
			}
			stated, inf, compared, agree := 0, 0, 0, 0
			for _, r := range recs {
				if r.ThreeMonthChange == nil {
					continue
				}
				stated++
				if math.IsInf(*r.ThreeMonthChange, 1) {
					inf++
				}
				_, tri := kw.Changes(r.Monthly)
				if tri == nil {
					continue
				}
				compared++
				if *tri == *r.ThreeMonthChange {
					agree++
				} else if compared-agree <= 3 {
					t.Logf("%q: months %v; the export says %v, the series gives %v", r.Keyword, months(r.Monthly), *r.ThreeMonthChange, *tri)
				}
			}
			t.Logf("%d keywords, %d state a three month change (%d ∞), %d comparable with the series, %d agree", len(recs), stated, inf, compared, agree)
			if stated == 0 {
				t.Fatal("no keyword has a three month change")
			}
			if name == "paisadallas-2021-keyword-stats-es.csv" && compared < 400 {
				t.Errorf("only %d keywords of the export with months could be compared", compared)
			}
			if agree != compared {
				t.Errorf("the series gives the stated three month change for %d of %d keywords", agree, compared)
			}
		})
	}
}

func months(m []kw.MonthlySearches) []int64 {
	out := make([]int64, len(m))
	for i, x := range m {
		out[i] = kw.Deref(x.Searches)
	}
	return out
}
