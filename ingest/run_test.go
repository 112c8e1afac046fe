package ingest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/lake"
)

// writeFile writes content to name in dir and returns its path.
func writeFile(tb testing.TB, dir, name string, content []byte) string {
	tb.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, content, 0o644); err != nil {
		tb.Fatal(err)
	}
	return p
}

// fileSize returns the size of a file, failing the test on error.
func fileSize(tb testing.TB, name string) int64 {
	tb.Helper()
	st, err := os.Stat(name)
	if err != nil {
		tb.Fatal(err)
	}
	return st.Size()
}

// readPartition reads a partition back, failing the test on error.
func readPartition[T any](tb testing.TB, data, dataset, country, date string) []T {
	tb.Helper()
	rows, err := lake.Read[T](data, dataset, country, date)
	if err != nil {
		tb.Fatal(err)
	}
	return rows
}

func TestRun(t *testing.T) {
	data := t.TempDir()
	stages := map[string]bool{}
	var lastDone, lastTotal int64
	rep, err := Run(context.Background(), Options{
		Data: data, Date: "2026-03-01", Country: "US",
		PlannerCSV: []string{"testdata/keyword-planner-utf16le.csv"},
		SERPJSONL:  []string{"testdata/serps.jsonl"},
		Progress: func(stage string, done, total int64) {
			if done > total || done < lastDone {
				t.Errorf("progress %d of %d after %d", done, total, lastDone)
			}
			stages[stage] = true
			lastDone, lastTotal = done, total
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := Report{Country: "US", Date: "2026-03-01",
		KeywordRows: 4, Summaries: 1, Keywords: 3, Duplicates: 1,
		SERPLines: 5, SERPs: 2, SERPRows: 3, SERPDuplicates: 1, SkippedResults: 1,
		KeywordsCompared: 3, KeywordsWithSERP: 2,
		BadCount: 3}
	gotBad := rep.Bad
	rep.Bad = nil
	if !reflect.DeepEqual(rep, want) {
		t.Errorf("report\n got %+v\nwant %+v", rep, want)
	}
	var lines []string
	for _, b := range gotBad {
		lines = append(lines, b.String())
	}
	wantLines := []string{
		`testdata/keyword-planner-utf16le.csv:9: Avg. monthly searches "abc" is not a search volume`,
		"testdata/serps.jsonl:3: not a JSON object",
		"testdata/serps.jsonl:4: country de in a us run",
	}
	if !reflect.DeepEqual(lines, wantLines) {
		t.Errorf("bad rows\n got %q\nwant %q", lines, wantLines)
	}
	if !stages[StagePlanner] || !stages[StageSERPs] || len(stages) != 2 {
		t.Errorf("progress stages = %v, want %s and %s", stages, StagePlanner, StageSERPs)
	}
	// One bar for the run: the sums over both stages' files.
	if want := fileSize(t, "testdata/keyword-planner-utf16le.csv") + fileSize(t, "testdata/serps.jsonl"); lastDone != want || lastTotal != want {
		t.Errorf("last progress %d of %d, want %d of %d", lastDone, lastTotal, want, want)
	}

	keywords := readPartition[kw.KeywordRecord](t, data, kw.DatasetKeywords, "us", "2026-03-01")
	var names []string
	for _, k := range keywords {
		names = append(names, k.Keyword)
	}
	if want := []string{`best "fast" shoes`, "running shoes", "trail running shoes"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("keywords = %q, want %q", names, want)
	}
	rs := keywords[1]
	wantRS := kw.KeywordRecord{Keyword: "running shoes", Volume: i64(301000), CPCMicros: i64(1595000), Competition: f64(1),
		CompetitionLevel: "HIGH", BidLowMicros: i64(520000), BidHighMicros: i64(2670000), Source: SourcePlanner,
		Monthly:   []kw.MonthlySearches{{Month: "2025-12", Searches: i64(246000)}, {Month: "2026-01", Searches: i64(301000)}, {Month: "2026-02", Searches: i64(368000)}},
		YoYChange: f64(-20), ThreeMonthChange: f64(0)}
	if !reflect.DeepEqual(rs, wantRS) {
		t.Errorf("running shoes read back as %+v, want %+v", rs, wantRS)
	}
	if keywords[2].VolumeRange != "1K – 10K" || keywords[0].VolumeRange != "" {
		t.Errorf("volume ranges = %q, %q", keywords[2].VolumeRange, keywords[0].VolumeRange)
	}

	serps := readPartition[kw.SERPRow](t, data, kw.DatasetSERPs, "us", "2026-03-01")
	wantSERPs := []kw.SERPRow{ // the last line of running shoes wins
		row("running shoes", 1, "https://example.com/shoes", "example.com/shoes"),
		row("running shoes", 2, "https://nike.com/running", "nike.com/running"),
		row("trail running shoes", 1, "http://example.com/shoes", "example.com/shoes"),
	}
	if !reflect.DeepEqual(serps, wantSERPs) {
		t.Errorf("serps\n got %+v\nwant %+v", serps, wantSERPs)
	}

	// A re-run of the same date replaces the partition.
	plan := writeFile(t, t.TempDir(), "p.csv", []byte(tsv([]string{"Keyword", "Avg. monthly searches"}, []string{"new", "5"})))
	if _, err := Run(context.Background(), Options{Data: data, Date: "2026-03-01", Country: "us", PlannerCSV: []string{plan}}); err != nil {
		t.Fatal(err)
	}
	keywords = readPartition[kw.KeywordRecord](t, data, kw.DatasetKeywords, "us", "2026-03-01")
	if len(keywords) != 1 || keywords[0].Keyword != "new" {
		t.Errorf("after re-run keywords = %+v", keywords)
	}
	if got := readPartition[kw.SERPRow](t, data, kw.DatasetSERPs, "us", "2026-03-01"); len(got) != 3 {
		t.Errorf("a planner-only run changed the serps partition: %d rows", len(got))
	}
}

func TestRunRefusesWholeFiles(t *testing.T) {
	dir := t.TempDir()
	good := writeFile(t, dir, "good.jsonl", []byte(serpJSON("a", "us", 1, "https://a.com")+"\n"))
	csvAsJSONL := writeFile(t, dir, "serps.csv", []byte("keyword,url\na,https://a.com\n"))
	jsonlAsPlanner := writeFile(t, dir, "plan.csv", []byte(serpJSON("a", "us", 1, "https://a.com")+"\n"))
	eur := writeFile(t, dir, "eur.csv", encodeText(t, "utf16le", tsv(preamble1, stdHeader,
		[]string{"laufschuhe", "EUR", "100", "", "", "Low", "5", "1.00", "2.00", "", "", ""})))
	tests := []struct {
		name string
		opt  Options
		err  string
	}{
		{"SERP file of the wrong format", Options{SERPJSONL: []string{good, csvAsJSONL}},
			csvAsJSONL + `: not SERP JSONL: expected one JSON object a line like {"keyword": ..., "country": ..., "results": [{"rank": 1, "url": ...}]}`},
		// The keywords partition, written beside the SERPs' parse, is
		// not published.
		{"SERP file of the wrong format beside a good planner export", Options{PlannerCSV: []string{"testdata/keyword-planner-utf16le.csv"}, SERPJSONL: []string{csvAsJSONL}},
			csvAsJSONL + `: not SERP JSONL`},
		{"planner file of the wrong format", Options{PlannerCSV: []string{jsonlAsPlanner}, SERPJSONL: []string{good}},
			jsonlAsPlanner + `: not a Keyword Planner export: expected a header row with a "Keyword" column (tab-separated, UTF-16 or UTF-8)`},
		{"currency without a rate", Options{PlannerCSV: []string{eur}, SERPJSONL: []string{good}}, "--usd-rate EUR=RATE"},
		{"missing file", Options{PlannerCSV: []string{filepath.Join(dir, "nope.csv")}}, "cannot open"},
		{"folder as file", Options{SERPJSONL: []string{dir}}, "it is a folder"},
		{"no inputs", Options{}, "no input files"},
		{"unsupported country", Options{Country: "XX", SERPJSONL: []string{good}}, `country "XX" is not supported`},
		{"bad date", Options{Date: "2026-3-1", SERPJSONL: []string{good}}, "not YYYY-MM-DD"},
		{"bad rate", Options{PlannerCSV: []string{eur}, USDRate: map[string]float64{"EUR": -1}}, "want a positive number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := t.TempDir()
			opt := tt.opt
			opt.Data = data
			if opt.Date == "" {
				opt.Date = "2026-03-01"
			}
			if opt.Country == "" {
				opt.Country = "us"
			}
			_, err := Run(context.Background(), opt)
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("err = %v, want one containing %q", err, tt.err)
			}
			for _, ds := range []string{kw.DatasetKeywords, kw.DatasetSERPs} {
				if _, err := lake.Read[kw.SERPRow](data, ds, "us", opt.Date); !errors.Is(err, lake.ErrNoPartition) {
					t.Errorf("%s partition exists after a refused run (err %v)", ds, err)
				}
			}
			if left, _ := os.ReadDir(lake.StagingDir(data)); len(left) > 0 {
				t.Errorf("staging folder holds %d entries after a refused run, first %s", len(left), left[0].Name())
			}
		})
	}

	// With a rate the same file is accepted and converted.
	data := t.TempDir()
	rep, err := Run(context.Background(), Options{Data: data, Date: "2026-03-01", Country: "de",
		PlannerCSV: []string{eur}, USDRate: map[string]float64{"EUR": 1.08}})
	if err != nil {
		t.Fatal(err)
	}
	got := readPartition[kw.KeywordRecord](t, data, kw.DatasetKeywords, "de", "2026-03-01")
	if rep.Keywords != 1 || len(got) != 1 || kw.Deref(got[0].BidHighMicros) != 2_160_000 || kw.Deref(got[0].CPCMicros) != 1_620_000 {
		t.Errorf("converted record = %+v", got)
	}
}

func TestRunCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	data := t.TempDir()
	_, err := Run(ctx, Options{Data: data, Date: "2026-03-01", Country: "us", SERPJSONL: []string{"testdata/serps.jsonl"}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if _, err := lake.Read[kw.SERPRow](data, kw.DatasetSERPs, "us", "2026-03-01"); !errors.Is(err, lake.ErrNoPartition) {
		t.Errorf("canceled run wrote a partition (err %v)", err)
	}
}

// A run canceled once every file is read, as the partitions are written,
// publishes neither and leaves no staging files.
func TestRunCanceledAfterReading(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	data := t.TempDir()
	_, err := Run(ctx, Options{Data: data, Date: "2026-03-01", Country: "us",
		PlannerCSV: []string{"testdata/keyword-planner-utf16le.csv"},
		SERPJSONL:  []string{"testdata/serps.jsonl"},
		Progress: func(_ string, done, total int64) {
			if done == total {
				cancel()
			}
		}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	for _, ds := range []string{kw.DatasetKeywords, kw.DatasetSERPs} {
		if _, err := lake.Read[kw.SERPRow](data, ds, "us", "2026-03-01"); !errors.Is(err, lake.ErrNoPartition) {
			t.Errorf("canceled run wrote the %s partition (err %v)", ds, err)
		}
	}
	if left, _ := os.ReadDir(lake.StagingDir(data)); len(left) > 0 {
		t.Errorf("staging folder holds %s after a canceled run", left[0].Name())
	}
}

func TestRunBadRowsCapped(t *testing.T) {
	var b strings.Builder
	b.WriteString(serpJSON("a", "us", 1, "https://a.com") + "\n")
	for range MaxBadRows + 50 {
		b.WriteString(`{"keyword": ""}` + "\n")
	}
	dir := t.TempDir()
	f := writeFile(t, dir, "s.jsonl", []byte(b.String()))
	rep, err := Run(context.Background(), Options{Data: dir, Date: "2026-03-01", Country: "us", SERPJSONL: []string{f}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.BadCount != MaxBadRows+50 || len(rep.Bad) != MaxBadRows || rep.Bad[MaxBadRows-1].Line != MaxBadRows+1 {
		t.Errorf("bad count %d, listed %d", rep.BadCount, len(rep.Bad))
	}
}

func TestWriteKeywords(t *testing.T) {
	data := t.TempDir()
	recs := []kw.KeywordRecord{
		{Keyword: "b", Volume: i64(10), Source: "first"},
		{Keyword: "a", Volume: i64(5)},
		{Keyword: "b", Volume: i64(30), Source: "largest"},
		{Keyword: "c", Volume: i64(7), Source: "first tie"},
		{Keyword: "b", Volume: i64(30), Source: "later tie"},
		{Keyword: "c", Volume: i64(7), Source: "second tie"},
		{Keyword: "B", Volume: i64(1)},
	}
	res, err := WriteKeywords(context.Background(), data, "GB", "2026-03-01", recs)
	if err != nil {
		t.Fatal(err)
	}
	if res != (WriteResult{Keywords: 4, Rows: 4, Duplicates: 3}) {
		t.Errorf("result = %+v", res)
	}
	got := readPartition[kw.KeywordRecord](t, data, kw.DatasetKeywords, "gb", "2026-03-01")
	var summary []string
	for _, r := range got {
		summary = append(summary, r.Keyword+":"+r.Source)
	}
	if want := []string{"B:", "a:", "b:largest", "c:first tie"}; !reflect.DeepEqual(summary, want) {
		t.Errorf("written = %q, want %q", summary, want)
	}
}

func TestWriteSERPs(t *testing.T) {
	data := t.TempDir()
	serps := []SERP{
		{"b", []kw.SERPRow{{Rank: 2, URL: "u2", URLKey: "k2"}, {Rank: 1, URL: "u1", URLKey: "k1"}}},
		{"a", []kw.SERPRow{{Rank: 1, URL: "old", URLKey: "old"}}},
		{"a", []kw.SERPRow{{Rank: 3, URL: "new3", URLKey: "n3"}, {Rank: 1, URL: "new1", URLKey: "n1"}}},
		{"c", nil},
	}
	res, err := WriteSERPs(context.Background(), data, "us", "2026-03-01", serps)
	if err != nil {
		t.Fatal(err)
	}
	if res != (WriteResult{Keywords: 3, Rows: 4, Duplicates: 1}) {
		t.Errorf("result = %+v", res)
	}
	got := readPartition[kw.SERPRow](t, data, kw.DatasetSERPs, "us", "2026-03-01")
	want := []kw.SERPRow{row("a", 1, "new1", "n1"), row("a", 3, "new3", "n3"), row("b", 1, "u1", "k1"), row("b", 2, "u2", "k2")}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("written\n got %+v\nwant %+v", got, want)
	}
}

// TestRunRefusesFilesWithoutGoodRows checks that a file whose every data
// row is bad (a file of another country, an export whose rows all fail)
// fails the run and leaves the partitions of an earlier run in place, and
// so does a file with no data rows at all (an empty SERP file, a
// header-only export, summary rows only), while files with some good rows
// are ingested as before.
func TestRunRefusesFilesWithoutGoodRows(t *testing.T) {
	dir := t.TempDir()
	goodSERPs := writeFile(t, dir, "good.jsonl", []byte(serpJSON("a", "gb", 1, "https://a.com")+"\n"))
	goodPlan := writeFile(t, dir, "good.csv", []byte(tsv([]string{"Keyword", "Avg. monthly searches"}, []string{"a", "10"})))
	usSERPs := writeFile(t, dir, "us.jsonl", []byte("\n"+serpJSON("a", "us", 1, "https://a.com")+"\n"+serpJSON("b", "us", 1, "https://b.com")+"\n"))
	badPlan := writeFile(t, dir, "bad.csv", []byte(tsv(preamble1, []string{"Keyword", "Avg. monthly searches"},
		[]string{"a", "lots"}, []string{"b", "-5"})))
	mixedSERPs := writeFile(t, dir, "mixed.jsonl", []byte(serpJSON("a", "us", 1, "https://a.com")+"\n"+serpJSON("b", "gb", 1, "https://b.com")+"\n"))
	emptySERPs := writeFile(t, dir, "empty.jsonl", nil)
	headerOnly := writeFile(t, dir, "header.csv", []byte(tsv([]string{"Keyword", "Avg. monthly searches"})))
	summaryOnly := writeFile(t, dir, "summary.csv", []byte(tsv([]string{"Keyword", "Segmentation", "Avg. monthly searches"}, []string{"", "All", "1.74483905E9"})))
	tests := []struct {
		name     string
		opt      Options
		err      string // "" when the run succeeds
		keywords int    // rows of the keywords partition afterwards
		serps    int
	}{
		{"SERP file of another country", Options{SERPJSONL: []string{usSERPs}},
			usSERPs + ": none of its 2 data rows is usable, so nothing was written; the first, line 2: country us in a gb run", 1, 1},
		{"SERP file of another country after a good one", Options{SERPJSONL: []string{goodSERPs, usSERPs}},
			usSERPs + ": none of its 2 data rows", 1, 1},
		{"planner export whose rows all fail", Options{PlannerCSV: []string{badPlan}, SERPJSONL: []string{goodSERPs}},
			badPlan + `: none of its 2 data rows is usable, so nothing was written; the first, line 3: Avg. monthly searches "lots" is not a search volume`, 1, 1},
		{"some good rows", Options{SERPJSONL: []string{mixedSERPs}}, "", 1, 1},
		{"empty SERP file", Options{SERPJSONL: []string{emptySERPs}}, emptySERPs + ": has no data rows, so nothing was written", 1, 1},
		{"header-only export", Options{PlannerCSV: []string{headerOnly}}, headerOnly + ": has no data rows, so nothing was written", 1, 1},
		{"summary-only export", Options{PlannerCSV: []string{summaryOnly}}, summaryOnly + ": has no keyword rows (only 1 summary rows without a keyword)", 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := t.TempDir()
			if _, err := Run(context.Background(), Options{Data: data, Date: "2026-03-01", Country: "gb",
				PlannerCSV: []string{goodPlan}, SERPJSONL: []string{goodSERPs}}); err != nil {
				t.Fatal(err)
			}
			opt := tt.opt
			opt.Data, opt.Date, opt.Country = data, "2026-03-01", "gb"
			_, err := Run(context.Background(), opt)
			if tt.err == "" && err != nil {
				t.Fatal(err)
			}
			if tt.err != "" {
				var ng *NoGoodRowsError
				var nr *NoRowsError
				if err == nil || !strings.Contains(err.Error(), tt.err) || !errors.As(err, &ng) && !errors.As(err, &nr) {
					t.Fatalf("err = %v, want a *NoGoodRowsError or *NoRowsError containing %q", err, tt.err)
				}
			}
			if n := len(readPartition[kw.KeywordRecord](t, data, kw.DatasetKeywords, "gb", "2026-03-01")); n != tt.keywords {
				t.Errorf("keywords partition has %d rows, want %d", n, tt.keywords)
			}
			if n := len(readPartition[kw.SERPRow](t, data, kw.DatasetSERPs, "gb", "2026-03-01")); n != tt.serps {
				t.Errorf("serps partition has %d rows, want %d", n, tt.serps)
			}
		})
	}
}

// TestSpillBudgets: read at once, the SERPs and the keyword records never
// hold more than one budget between them.
func TestSpillBudgets(t *testing.T) {
	for _, tt := range []struct {
		total              int
		planner, serps     bool
		wantSERP, wantKeys int
	}{
		{0, true, true, DefaultSpillBytes - DefaultSpillBytes/6, DefaultSpillBytes / 6},
		{0, false, true, DefaultSpillBytes, keywordSpillBytes},
		{0, true, false, DefaultSpillBytes, keywordSpillBytes},
		{600, true, true, 500, 100},
		{1, true, true, 1, 1},
	} {
		s, k := spillBudgets(tt.total, tt.planner, tt.serps)
		if s != tt.wantSERP || k != tt.wantKeys {
			t.Errorf("spillBudgets(%d, %v, %v) = %d, %d; want %d, %d", tt.total, tt.planner, tt.serps, s, k, tt.wantSERP, tt.wantKeys)
		}
		if total := cmp.Or(tt.total, DefaultSpillBytes); tt.planner && tt.serps && s+k > max(total, 2) {
			t.Errorf("spillBudgets(%d): %d + %d is more than the budget", tt.total, s, k)
		}
	}
}

// TestRunWriteProgress: WriteProgress sees every record merged into the
// lake, planner rows and SERPs, duplicates included, in memory or
// spilled; total is every record from the first call, done never goes
// back, it moves more than once while the partitions are written, and
// the last call has done == total.
func TestRunWriteProgress(t *testing.T) {
	planner, serps := sampleFiles(t, 4000)
	dir := t.TempDir()
	a := writeFile(t, dir, "a.csv", planner)
	b := writeFile(t, dir, "b.csv", planner)
	s := writeFile(t, dir, "serps.jsonl", serps)
	for _, budget := range []int{0, 600_000} {
		t.Run(fmt.Sprint("budget ", budget), func(t *testing.T) {
			type call struct{ done, total int64 }
			var calls []call
			rep, err := Run(context.Background(), Options{Data: t.TempDir(), Date: "2026-03-01", Country: "us",
				PlannerCSV: []string{a, b}, SERPJSONL: []string{s, s}, spillBytes: budget,
				WriteProgress: func(done, total int64) { calls = append(calls, call{done, total}) }})
			if err != nil {
				t.Fatal(err)
			}
			records := int64(rep.Keywords + rep.Duplicates + rep.SERPs + rep.SERPDuplicates)
			if rep.Duplicates == 0 || rep.SERPDuplicates == 0 || records < 2*progressRows {
				t.Fatalf("report %+v: the input proves nothing", rep)
			}
			if len(calls) < 3 {
				t.Fatalf("WriteProgress called %d times for %d records, want it to move while they are written: %v", len(calls), records, calls)
			}
			for i, c := range calls {
				if c.done > c.total || c.total != records || (i > 0 && c.done < calls[i-1].done) {
					t.Fatalf("call %d: %d of %d after %v", i, c.done, c.total, calls[:i])
				}
			}
			if last := calls[len(calls)-1]; last.done != records || last.total != records {
				t.Errorf("last call %d of %d, want %d of %d: every record merged", last.done, last.total, records, records)
			}
		})
	}
}
