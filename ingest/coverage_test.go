package ingest

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// serpLines writes SERP JSONL of keywords for us, each with one result;
// a keyword ending in "!" has none.
func serpLines(keywords ...string) []byte {
	var b strings.Builder
	for _, k := range keywords {
		results := `[{"rank": 1, "url": "https://example.com/` + k + `"}]`
		if strings.HasSuffix(k, "!") {
			k, results = strings.TrimSuffix(k, "!"), "[]"
		}
		fmt.Fprintf(&b, `{"keyword": %q, "country": "us", "results": %s}`+"\n", k, results)
	}
	return []byte(b.String())
}

// TestRunWarnsFewSERPs: a run whose SERPs cover fewer than half of the
// keywords warns in one line naming both counts (a SERP file of another
// keyword list matches none, and similarity then finds nothing); half
// or more is no warning.
func TestRunWarnsFewSERPs(t *testing.T) {
	planner := tsv([]string{"Keyword", "Avg. monthly searches"},
		[]string{"a", "10"}, []string{"b", "10"}, []string{"c", "10"}, []string{"d", "10"})
	tests := []struct {
		name       string
		serps      []string
		with       int
		warn       string // "" none
		serpsAlone bool   // the SERPs in a run of their own, after the keywords
	}{
		{"SERPs of another keyword list", []string{"x", "y", "z"}, 0, "only 0 of the 4 keywords got a SERP", false},
		{"one of four", []string{"a", "x"}, 1, "only 1 of the 4 keywords got a SERP", false},
		{"a SERP without results is none", []string{"a", "b!"}, 1, "only 1 of the 4 keywords got a SERP", false},
		{"exactly half", []string{"a", "b", "x"}, 2, "", false},
		{"all", []string{"a", "b", "c", "d"}, 4, "", false},
		{"SERPs alone, against the date's keywords", []string{"x"}, 0, "only 0 of the 4 keywords got a SERP", true},
		{"SERPs alone, covering them", []string{"a", "b", "c"}, 3, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			plan := writeFile(t, dir, "p.csv", []byte(planner))
			serps := writeFile(t, dir, "s.jsonl", serpLines(tt.serps...))
			opt := Options{Data: dir, Date: "2026-03-01", Country: "us", PlannerCSV: []string{plan}, SERPJSONL: []string{serps}}
			if tt.serpsAlone {
				if _, err := Run(context.Background(), Options{Data: dir, Date: opt.Date, Country: "us", PlannerCSV: []string{plan}}); err != nil {
					t.Fatal(err)
				}
				opt.PlannerCSV = nil
			}
			var logs bytes.Buffer
			opt.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			rep, err := Run(context.Background(), opt)
			if err != nil {
				t.Fatal(err)
			}
			if rep.KeywordsCompared != 4 || rep.KeywordsWithSERP != tt.with {
				t.Errorf("%d of %d keywords with a SERP, want %d of 4", rep.KeywordsWithSERP, rep.KeywordsCompared, tt.with)
			}
			var warned []string
			for _, line := range strings.Split(logs.String(), "\n") {
				if strings.Contains(line, "got a SERP") {
					warned = append(warned, line)
				}
			}
			switch {
			case tt.warn == "" && len(warned) > 0:
				t.Errorf("warned %q", warned)
			case tt.warn != "" && (len(warned) != 1 || !strings.Contains(warned[0], "level=WARN") || !strings.Contains(warned[0], tt.warn)):
				t.Errorf("warnings %q, want one with %q", warned, tt.warn)
			}
		})
	}
}

// TestRunSERPsWithoutKeywords: SERPs ingested before any keywords of the
// date have nothing to be compared with, and no warning.
func TestRunSERPsWithoutKeywords(t *testing.T) {
	dir := t.TempDir()
	serps := writeFile(t, dir, "s.jsonl", serpLines("x"))
	var logs bytes.Buffer
	rep, err := Run(context.Background(), Options{Data: dir, Date: "2026-03-01", Country: "us", SERPJSONL: []string{serps},
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if rep.KeywordsCompared != 0 || strings.Contains(logs.String(), "got a SERP") || strings.Contains(logs.String(), "level=WARN") {
		t.Errorf("compared %d keywords, logged %q; want none and no warning", rep.KeywordsCompared, logs.String())
	}
}

func TestIntersect(t *testing.T) {
	for _, tt := range []struct {
		a, b []uint64
		want int
	}{
		{nil, nil, 0}, {[]uint64{3, 1, 2}, []uint64{2, 9, 3}, 2}, {[]uint64{5}, []uint64{1, 2, 3}, 0}, {[]uint64{1, 2}, []uint64{2, 1}, 2},
	} {
		if got := intersect(tt.a, tt.b); got != tt.want {
			t.Errorf("intersect(%v, %v) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
