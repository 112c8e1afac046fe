package ingest

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/kwdata/kwdata/kw"
)

// TestPlannerLanguages reads, for each interface language of the table, an
// export made with it (testdata/planner-languages/<code>.csv: UTF-16LE
// with a byte order mark, tab-separated, a preamble in the language, the
// change columns' headers in the language): every row is kept, with the
// level its word says and the changes of the columns after the average
// monthly searches.
func TestPlannerLanguages(t *testing.T) {
	for _, l := range plannerLanguages {
		t.Run(l.code, func(t *testing.T) {
			name := filepath.Join("testdata", "planner-languages", l.code+".csv")
			f, err := os.Open(name)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var bad []BadRow
			got, st, err := ParsePlanner(f, name, map[string]float64{"CAD": 1}, func(b BadRow) { bad = append(bad, b) })
			if err != nil {
				t.Fatal(err)
			}
			if len(bad) > 0 || len(st.Unreadable) > 0 || len(st.MissingColumns) > 0 {
				t.Errorf("bad rows %v, unreadable %v, missing columns %v; want none", bad, st.Unreadable, st.MissingColumns)
			}
			want := []struct {
				level       string
				competition float64 // NaN: null
				tri, yoy    float64
			}{
				{"LOW", 0.12, 0, -10}, {"MEDIUM", 0.5, 50, 0}, {"HIGH", 0.9, -90, 900}, {"", math.NaN(), 0, 0},
			}
			if len(got) != len(want) {
				t.Fatalf("%d records, want %d", len(got), len(want))
			}
			for i, w := range want {
				r := got[i]
				if r.CompetitionLevel != w.level || !sameFloat(r.Competition, w.competition) ||
					!sameFloat(r.ThreeMonthChange, w.tri) || !sameFloat(r.YoYChange, w.yoy) {
					t.Errorf("%s: level %q, competition %v, changes %v and %v; want %q, %v, %v and %v", r.Keyword,
						r.CompetitionLevel, show(r.Competition), show(r.ThreeMonthChange), show(r.YoYChange), w.level, w.competition, w.tri, w.yoy)
				}
			}
		})
	}
}

func sameFloat(p *float64, v float64) bool {
	if p == nil {
		return math.IsNaN(v)
	}
	return *p == v
}

func show(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestPlannerLanguagesTable: every interface language of the countries
// kwdata lists is in the table, with a fixture, and no word means two
// levels.
func TestPlannerLanguagesTable(t *testing.T) {
	have := map[string]bool{}
	for _, l := range plannerLanguages {
		if have[l.code] {
			t.Errorf("language %s is in the table twice", l.code)
		}
		have[l.code] = true
	}
	for _, c := range kw.Countries() {
		if !have[c.LanguageCode] {
			t.Errorf("%s (%s) is listed but its language %s is not in the table", c.Code, c.Name, c.LanguageCode)
		}
	}
	fixtures, err := filepath.Glob(filepath.Join("testdata", "planner-languages", "*.csv"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fixtures {
		if code := strings.TrimSuffix(filepath.Base(f), ".csv"); !have[code] {
			t.Errorf("fixture %s is for a language the table lacks", f)
		}
	}
	if len(fixtures) != len(plannerLanguages) {
		t.Errorf("%d fixtures for %d languages", len(fixtures), len(plannerLanguages))
	}

	meaning := map[string]string{}
	for _, l := range plannerLanguages {
		for word, level := range map[string]string{l.low: "LOW", l.medium: "MEDIUM", l.high: "HIGH", l.unknwn: ""} {
			if word == "" {
				t.Errorf("%s lacks a level word", l.code)
			}
			if was, ok := meaning[foldWord(word)]; ok && was != level {
				t.Errorf("%q of %s means %q and %q", word, l.code, was, level)
			}
			meaning[foldWord(word)] = level
		}
	}
}

// TestKoreanExportIngested: an export made with the planner's interface in
// Korean (amounts in CAD) was refused whole, none of its rows usable;
// every row is now ingested.
func TestKoreanExportIngested(t *testing.T) {
	data := t.TempDir()
	rep, err := Run(context.Background(), Options{Data: data, Date: "2026-03-01", Country: "kr",
		PlannerCSV: []string{filepath.Join("testdata", "planner-languages", "ko.csv")}, USDRate: map[string]float64{"CAD": 0.73}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Keywords != 4 || rep.BadCount != 0 {
		t.Errorf("%d keywords and %d bad rows, want 4 and none", rep.Keywords, rep.BadCount)
	}
	got := readPartition[kw.KeywordRecord](t, data, kw.DatasetKeywords, "kr", "2026-03-01")
	levels := map[string]string{}
	for _, r := range got {
		levels[r.Keyword] = r.CompetitionLevel
	}
	want := map[string]string{"low ko": "LOW", "medium ko": "MEDIUM", "high ko": "HIGH", "unknown ko": ""}
	if !reflect.DeepEqual(levels, want) {
		t.Errorf("levels %v, want %v", levels, want)
	}
}

// TestChangeColumnsByPosition: change columns whose headers are in a
// language the table lacks are the two columns after the average monthly
// searches, and only when those are no other column kwdata knows.
func TestChangeColumnsByPosition(t *testing.T) {
	tests := []struct {
		name      string
		header    []string
		tri, yoy  int // column indexes, -1 absent
		missingCh bool
	}{
		{"unknown language", []string{"Keyword", "Avg. monthly searches", "Változás 3", "Változás év", "Competition"}, 2, 3, false},
		{"English by name anywhere", []string{"Keyword", "YoY change", "Avg. monthly searches", "Three month change"}, 3, 1, false},
		{"Korean by name", []string{"Keyword", "Avg. monthly searches", "전년 대비 변동", "3개월간 변동"}, 3, 2, false},
		{"known columns are not changes", []string{"Keyword", "Avg. monthly searches", "Competition", "Competition (indexed value)"}, -1, -1, true},
		{"other English columns are not changes", []string{"Keyword", "Avg. monthly searches", "Ad impression share", "Organic impression share"}, -1, -1, true},
		{"months are not changes", []string{"Keyword", "Avg. monthly searches", "Searches: Jan 2026", "Searches: Feb 2026"}, -1, -1, true},
		{"one column is not two", []string{"Keyword", "Avg. monthly searches", "Változás"}, -1, -1, true},
		{"blank headers are not changes", []string{"Keyword", "Avg. monthly searches", "", "x"}, -1, -1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, missing := mapColumns(tt.header)
			if c.threeMonth != tt.tri || c.yoy != tt.yoy {
				t.Errorf("three month change at %d, YoY at %d; want %d and %d", c.threeMonth, c.yoy, tt.tri, tt.yoy)
			}
			if slices.Contains(missing, colThreeMonth) {
				t.Errorf("missing columns %q name a change column; they are optional", missing)
			}
		})
	}
}

// TestLevelFromIndex: the planner's bands, Low below 34, Medium to 66,
// High from 67.
func TestLevelFromIndex(t *testing.T) {
	for index, want := range map[int64]string{0: "LOW", 33: "LOW", 34: "MEDIUM", 50: "MEDIUM", 66: "MEDIUM", 67: "HIGH", 100: "HIGH"} {
		if got := levelFromIndex(index); got != want {
			t.Errorf("levelFromIndex(%d) = %s, want %s", index, got, want)
		}
	}
}

// TestCompetitionBandsRealExports checks the bands against the exports
// people published, which state the level and the index of each row: the
// level follows from the index, but at 33 and 67, where the planner's cut
// at a third falls inside the rounding of the index, and there the band
// holds for most rows.
func TestCompetitionBandsRealExports(t *testing.T) {
	files := realExports(t)
	checked := 0
	for _, name := range files {
		recs := parseFile(t, name)
		boundary := map[int64][2]int{} // index: rows that agree, rows that do not
		for _, r := range recs {
			if r.CompetitionLevel == "" || r.Competition == nil {
				continue
			}
			index := int64(math.Round(*r.Competition * 100))
			agree := levelFromIndex(index) == r.CompetitionLevel
			checked++
			if index == 33 || index == 67 {
				n := boundary[index]
				if agree {
					n[0]++
				} else {
					n[1]++
				}
				boundary[index] = n
				continue
			}
			if !agree {
				t.Errorf("%s: %q has index %d and level %s; the bands say %s", filepath.Base(name), r.Keyword, index, r.CompetitionLevel, levelFromIndex(index))
			}
		}
		for index, n := range boundary {
			if n[0] < n[1] {
				t.Errorf("%s: at index %d, %d rows agree with the bands and %d do not", filepath.Base(name), index, n[0], n[1])
			}
		}
	}
	if checked == 0 {
		t.Fatal("no published export states both a level and an index")
	}
}

// TestRealExportsNoLevelLost: no row of a published export is lost or
// left without a level for a word in a column other than the keyword. A
// Korean export (amounts in CAD) among them is read whole.
func TestRealExportsNoLevelLost(t *testing.T) {
	for _, name := range realExports(t) {
		t.Run(filepath.Base(name), func(t *testing.T) {
			f, err := os.Open(name)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			_, st, err := ParsePlanner(f, name, realRates, func(b BadRow) {
				if strings.HasPrefix(b.Reason, colCompetition+" ") || strings.Contains(b.Reason, "change") {
					t.Errorf("bad row %v", b)
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range st.Unreadable {
				t.Errorf("unreadable: %v", u)
			}
		})
	}
}

// realRates are USD rates for every currency of the published exports.
var realRates = map[string]float64{"GBP": 1.27, "EUR": 1.08, "CAD": 0.73, "KRW": 0.00072, "COP": 0.00025, "INR": 0.012}

// realExports lists the published planner exports kept beside the
// repository (../shared/real-exports from its root), skipping the test
// when they are not there.
func realExports(tb testing.TB) []string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for ; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		if filepath.Dir(dir) == dir {
			tb.Fatal("no go.mod above the test's folder")
		}
	}
	files, err := filepath.Glob(filepath.Join(filepath.Dir(dir), "shared", "real-exports", "*.csv"))
	if err != nil || len(files) == 0 {
		tb.Skipf("the published planner exports are not beside the repository (../shared/real-exports); skipped: %v", err)
	}
	return files
}

func parseFile(tb testing.TB, name string) []kw.KeywordRecord {
	tb.Helper()
	f, err := os.Open(name)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	recs, _, err := ParsePlanner(f, name, realRates, nil)
	var ce *CurrencyError
	if errors.As(err, &ce) {
		tb.Fatalf("%v: add its rate to realRates", err)
	}
	if err != nil {
		tb.Fatal(err)
	}
	return recs
}

// TestRunWarnsUnreadableOnce: the cells kwdata cannot read are one warning
// line a column, counting the rows, never a line each.
func TestRunWarnsUnreadableOnce(t *testing.T) {
	dir := t.TempDir()
	plan := writeFile(t, dir, "p.csv", []byte(tsv(
		[]string{"Keyword", "Avg. monthly searches", "Competition", "Competition (indexed value)"},
		[]string{"a", "10", "Très haut", "80"}, []string{"b", "10", "Très haut", "20"}, []string{"c", "10", "Très haut", ""},
		[]string{"d", "10", "Low", "1"})))
	var logs bytes.Buffer
	rep, err := Run(context.Background(), Options{Data: dir, Date: "2026-03-01", Country: "fr", PlannerCSV: []string{plan},
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Keywords != 4 || rep.BadCount != 0 {
		t.Errorf("%d keywords, %d bad rows; want 4 and none", rep.Keywords, rep.BadCount)
	}
	var warned []string
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "cannot read") {
			warned = append(warned, line)
		}
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "level=WARN") || !strings.Contains(warned[0], "rows=3") ||
		!strings.Contains(warned[0], "column=Competition") || !strings.Contains(warned[0], "2 took their level from Competition (indexed value), the other 1 have none") {
		t.Errorf("warnings %q, want one counting 3 rows of Competition", warned)
	}
	levels := map[string]string{}
	for _, r := range readPartition[kw.KeywordRecord](t, dir, kw.DatasetKeywords, "fr", "2026-03-01") {
		levels[r.Keyword] = r.CompetitionLevel
	}
	if want := map[string]string{"a": "HIGH", "b": "LOW", "c": "", "d": "LOW"}; !reflect.DeepEqual(levels, want) {
		t.Errorf("levels %v, want %v", levels, want)
	}
}

// TestDocsListPlannerLanguages keeps the operators' list of interface
// languages (docs/OPERATIONS.md) true to the table.
func TestDocsListPlannerLanguages(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "docs", "OPERATIONS.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(b), "**Exports in another interface language.**")
	section, _, _ = strings.Cut(section, "\n- ")
	section = strings.Join(strings.Fields(section), " ")
	for _, l := range plannerLanguages {
		name, _, _ := strings.Cut(l.name, " (")
		if !strings.Contains(section, name) {
			t.Errorf("docs/OPERATIONS.md does not list %s among the interface languages", l.name)
		}
	}
}
