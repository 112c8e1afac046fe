package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/kwdata/kwdata/kw"
	"golang.org/x/text/encoding/unicode"
)

// encodeText encodes UTF-8 text as a planner export may arrive: "utf8",
// "utf8bom", "utf16le" or "utf16be" (with a byte order mark), or
// "utf16le-nobom" or "utf16be-nobom".
func encodeText(tb testing.TB, enc, text string) []byte {
	tb.Helper()
	switch enc {
	case "utf8":
		return []byte(text)
	case "utf8bom":
		return append([]byte("\uFEFF"), text...)
	case "utf16le", "utf16be", "utf16le-nobom", "utf16be-nobom":
		end, bom := unicode.LittleEndian, unicode.UseBOM
		if strings.HasPrefix(enc, "utf16be") {
			end = unicode.BigEndian
		}
		if strings.HasSuffix(enc, "-nobom") {
			bom = unicode.IgnoreBOM
		}
		b, err := unicode.UTF16(end, bom).NewEncoder().Bytes([]byte(text))
		if err != nil {
			tb.Fatal(err)
		}
		return b
	}
	tb.Fatalf("unknown encoding %q", enc)
	return nil
}

// tsv joins rows of cells with tabs and lines with CRLF, as the planner does.
func tsv(rows ...[]string) string {
	var b strings.Builder
	for _, r := range rows {
		b.WriteString(strings.Join(r, "\t"))
		b.WriteString("\r\n")
	}
	return b.String()
}

var (
	preamble1 = []string{"Keyword Stats 2026-03-01 at 10_00_00"}
	preamble2 = []string{"All locations, English, Google, Dec 1, 2025 - Feb 28, 2026"}
	stdHeader = []string{"Keyword", "Currency", "Avg. monthly searches", "Three month change", "YoY change",
		"Competition", "Competition (indexed value)", "Top of page bid (low range)", "Top of page bid (high range)",
		"Searches: Dec 2025", "Searches: Jan 2026", "Searches: Feb 2026"}
)

// rec builds an expected planner record; a negative volume is none.
func rec(keyword string, volume int64, fn ...func(*kw.KeywordRecord)) kw.KeywordRecord {
	r := kw.KeywordRecord{Keyword: keyword, Source: SourcePlanner}
	if volume >= 0 {
		r.Volume = i64(volume)
	}
	for _, f := range fn {
		f(&r)
	}
	return r
}

func bids(low, high, cpc int64) func(*kw.KeywordRecord) {
	opt := func(v int64) *int64 { // negative: the export has no value
		if v < 0 {
			return nil
		}
		return i64(v)
	}
	return func(r *kw.KeywordRecord) {
		r.BidLowMicros, r.BidHighMicros, r.CPCMicros = opt(low), opt(high), opt(cpc)
	}
}

func comp(level string, c float64) func(*kw.KeywordRecord) {
	return func(r *kw.KeywordRecord) { r.CompetitionLevel, r.Competition = level, f64(c) }
}

func months(kv ...any) func(*kw.KeywordRecord) {
	return func(r *kw.KeywordRecord) {
		for i := 0; i < len(kv); i += 2 {
			m := kw.MonthlySearches{Month: kv[i].(string)}
			if kv[i+1] != nil { // nil: the export left the month blank
				m.Searches = i64(int64(kv[i+1].(int)))
			}
			r.Monthly = append(r.Monthly, m)
		}
	}
}

// changes sets the YoY and three month changes; NaN is no value.
func changes(yoy, tri float64) func(*kw.KeywordRecord) {
	opt := func(v float64) *float64 {
		if math.IsNaN(v) {
			return nil
		}
		return f64(v)
	}
	return func(r *kw.KeywordRecord) { r.YoYChange, r.ThreeMonthChange = opt(yoy), opt(tri) }
}

func volRange(s string) func(*kw.KeywordRecord) {
	return func(r *kw.KeywordRecord) { r.VolumeRange = s }
}

func TestParsePlanner(t *testing.T) {
	std := tsv(preamble1, preamble2, stdHeader,
		[]string{"running shoes", "USD", "301,000", "0%", "-20%", "High", "100", "0.52", "2.67", "246,000", "301,000", "368,000"},
		[]string{"trail running shoes", "USD", "1K – 10K", "50%", "", "Medium", "45", "1.23", "", "1,000", "", "2,400"},
	)
	stdRecs := []kw.KeywordRecord{
		rec("running shoes", 301000, bids(520000, 2670000, 1595000), comp("HIGH", 1),
			months("2025-12", 246000, "2026-01", 301000, "2026-02", 368000), changes(-20, 0)),
		rec("trail running shoes", 1000, volRange("1K – 10K"), bids(1230000, -1, 1230000), comp("MEDIUM", 0.45),
			months("2025-12", 1000, "2026-01", nil, "2026-02", 2400), changes(math.NaN(), 50)),
	}
	type badWant struct {
		line   int
		reason string // substring
	}
	tests := []struct {
		name    string
		enc     string
		text    string
		rates   map[string]float64
		want    []kw.KeywordRecord
		bad     []badWant
		missing []string
		unread  []UnreadableCells // the cells kept as null, or levels taken from the index
		err     string            // substring of the error, when the file is refused
	}{
		{name: "utf16le with preamble", enc: "utf16le", text: std, want: stdRecs},
		{name: "utf16be", enc: "utf16be", text: std, want: stdRecs},
		{name: "utf16le without bom", enc: "utf16le-nobom", text: std, want: stdRecs},
		{name: "utf16be without bom", enc: "utf16be-nobom", text: std, want: stdRecs},
		{name: "utf8", enc: "utf8", text: std, want: stdRecs},
		{name: "utf8 bom", enc: "utf8bom", text: std, want: stdRecs},
		{name: "utf8 no preamble LF endings", enc: "utf8", text: strings.ReplaceAll(tsv(stdHeader,
			[]string{"running shoes", "USD", "301,000", "0%", "-20%", "High", "100", "0.52", "2.67", "246,000", "301,000", "368,000"}), "\r\n", "\n"),
			want: stdRecs[:1]},
		{
			name: "comma separated with quoted cells",
			enc:  "utf8",
			text: "Report\n" +
				"Keyword,Avg. monthly searches,Top of page bid (low range),Top of page bid (high range)\n" +
				`"shoes, running","1,000",0.10,0.21` + "\n" +
				`"the ""best"" shoe",10,,` + "\n",
			want: []kw.KeywordRecord{
				rec("shoes, running", 1000, bids(100000, 210000, 155000)),
				rec(`the "best" shoe`, 10),
			},
			missing: []string{"Currency", "Competition", "Competition (indexed value)", "Searches: Mon YYYY"},
		},
		{
			name: "reordered and unknown columns",
			enc:  "utf16le",
			text: tsv(preamble1,
				[]string{"Keyword", "Searches: Feb 2026", "In plan?", "Top of page bid (high range)", "Competition", "Searches: Jan 2026", "Avg. monthly searches", "Currency", "Top of page bid (low range)", "Competition (indexed value)"},
				[]string{"Shoes", "20", "Yes", "3", "low", "10", "1,234,567", "usd", "1", "7"}),
			want: []kw.KeywordRecord{rec("shoes", 1234567, bids(1000000, 3000000, 2000000), comp("LOW", 0.07),
				months("2026-01", 10, "2026-02", 20))},
		},
		{
			name: "ranges with hyphen and suffixes",
			enc:  "utf8",
			text: tsv([]string{"Keyword", "Avg. monthly searches"},
				[]string{"a", "100 - 1K"}, []string{"b", "10K–100K"}, []string{"c", "1M — 10M"},
				[]string{"d", "1.5K"}, []string{"e", "0 – 10"}),
			want: []kw.KeywordRecord{
				rec("a", 100, volRange("100 - 1K")), rec("b", 10000, volRange("10K–100K")),
				rec("c", 1000000, volRange("1M — 10M")), rec("d", 1500), rec("e", 0, volRange("0 – 10")),
			},
			missing: []string{"Currency", "Competition", "Competition (indexed value)", "Top of page bid (low range)", "Top of page bid (high range)", "Searches: Mon YYYY"},
		},
		{
			name: "blank and dash cells, short rows",
			enc:  "utf16le",
			text: tsv(preamble1, stdHeader,
				[]string{"blank", "", "", "", "", "", "", "", "", "", "", ""},
				[]string{"dashes", "USD", "--", "-", "—", "", "–", "-", "-", "", "", ""},
				[]string{"short", "USD", "5"},
				[]string{"", "", "", ""}, // blank line: not a data row
				[]string{"high only", "USD", "5", "", "", "", "", "", "2.5"}),
			want: []kw.KeywordRecord{rec("blank", -1), rec("dashes", -1), rec("short", 5),
				rec("high only", 5, bids(-1, 2500000, 2500000))},
		},
		{
			name: "money is exact",
			enc:  "utf8",
			text: tsv([]string{"Keyword", "Top of page bid (low range)", "Top of page bid (high range)", "Competition (indexed value)", "Avg. monthly searches"},
				[]string{"a", "1.23", "0.000001", "42.5", ""},
				[]string{"b", "1,234.5678905", "0.29", "0", ""},
				[]string{"c", "0.01", "0.02", "99.49", ""}),
			want: []kw.KeywordRecord{
				rec("a", -1, bids(1230000, 1, 615001), comp("", 0.43)),
				rec("b", -1, bids(1234567891, 290000, 617428946), comp("", 0)),
				rec("c", -1, bids(10000, 20000, 15000), comp("", 0.99)),
			},
			missing: []string{"Currency", "Competition", "Searches: Mon YYYY"},
		},
		{
			name: "average cpc column wins over bids",
			enc:  "utf8",
			text: tsv([]string{"Keyword", "Avg. CPC", "Top of page bid (low range)", "Top of page bid (high range)", "Avg. monthly searches"},
				[]string{"a", "0.70", "1", "2", "-"}, []string{"b", "", "1", "2", "-"}),
			want:    []kw.KeywordRecord{rec("a", -1, bids(1000000, 2000000, 700000)), rec("b", -1, bids(1000000, 2000000, 1500000))},
			missing: []string{"Currency", "Competition", "Competition (indexed value)", "Searches: Mon YYYY"},
		},
		{
			name: "non-USD refused naming the flag",
			enc:  "utf16le",
			text: tsv(preamble1, stdHeader, []string{"laufschuhe", "EUR", "100", "", "", "Low", "5", "1.00", "2.00", "", "", ""}),
			err:  "pass --usd-rate EUR=RATE",
		},
		{
			name:  "non-USD converted with a rate",
			enc:   "utf16le",
			text:  tsv(preamble1, stdHeader, []string{"laufschuhe", "eur", "100", "", "", "Low", "5", "1.00", "2.25", "", "", ""}),
			rates: map[string]float64{"eur": 1.08},
			want:  []kw.KeywordRecord{rec("laufschuhe", 100, bids(1080000, 2430000, 1755000), comp("LOW", 0.05))},
		},
		{
			name: "normalization and duplicates are kept for the writer",
			enc:  "utf8",
			text: tsv([]string{"Keyword", "Avg. monthly searches"},
				[]string{"  Running\u00a0 SHOES ", "10"}, []string{"running shoes", "20"}, []string{"ｓｈｏｅｓ", "1"}),
			want:    []kw.KeywordRecord{rec("running shoes", 10), rec("running shoes", 20), rec("shoes", 1)},
			missing: []string{"Currency", "Competition", "Competition (indexed value)", "Top of page bid (low range)", "Top of page bid (high range)", "Searches: Mon YYYY"},
		},
		{
			name: "bad rows with physical line numbers",
			enc:  "utf16le",
			text: tsv(preamble1, preamble2, stdHeader, // lines 1-3
				[]string{"", "USD", "100"}, // 4: no keyword: a summary row, skipped
				[]string{"ok", "USD", "100"},
				[]string{strings.Repeat("x", 81), "USD", "1"},                       // 6
				[]string{"one two three four five six seven eight nine ten eleven"}, // 7: fine, no word limit
				[]string{"vol", "USD", "abc"},                                       // 8
				[]string{"comma decimal", "USD", "1", "", "", "", "", "1,23"},       // 9
				[]string{"level", "USD", "1", "", "", "Very high"},                  // 10
				[]string{"index", "USD", "1", "", "", "", "101"},                    // 11
				[]string{"month", "USD", "1", "", "", "", "", "", "", "x"},          // 12
				[]string{"cur", "US$", "1"},                                         // 13
				[]string{"neg", "USD", "-5"},                                        // 14
				[]string{"range", "USD", "10K – 1K"},                                // 15
				[]string{"ctl\x01", "USD", "1"},                                     // 16
			),
			// A level word kwdata cannot read costs the row nothing.
			want: []kw.KeywordRecord{rec("ok", 100), rec("one two three four five six seven eight nine ten eleven", -1), rec("level", 1)},
			bad: []badWant{{6, "too long"},
				{8, `Avg. monthly searches "abc"`}, {9, `Top of page bid (low range) "1,23"`},
				{11, `"101" is not a number from 0 to 100`},
				{12, `Searches: Dec 2025 "x"`}, {13, `"US$" is not a currency code`},
				{14, `"-5"`}, {15, `"10K – 1K"`}, {16, "control characters"}},
			unread: []UnreadableCells{{Column: "Competition", Rows: 1, First: "Very high", Line: 10}},
		},
		{
			name: "header only",
			enc:  "utf16le",
			text: tsv(preamble1, stdHeader),
		},
		{
			name: "not a planner export",
			enc:  "utf8",
			text: "keyword;volume\nshoes;10\n",
			err:  `x.csv: not a Keyword Planner export: expected a header row with a "Keyword" column (tab-separated, UTF-16 or UTF-8)`,
		},
		{
			name: "binary garbage",
			enc:  "utf8",
			text: "\x00\x01\x02PK\x03\x04\xff\xfe\xfd" + strings.Repeat("\x00\xff", 5000),
			err:  "not a Keyword Planner export",
		},
		{
			name: "header too deep",
			enc:  "utf8",
			text: strings.Repeat("preamble\n", 150) + "Keyword\nshoes\n",
			err:  "not a Keyword Planner export",
		},
		{name: "empty file", enc: "utf16le", text: "", err: "not a Keyword Planner export"},
		{
			name: "no volume column",
			enc:  "utf16le",
			text: tsv(preamble1, []string{"Keyword", "Currency", "Competition", "Top of page bid (low range)"}, []string{"a", "USD", "Low", "1"}),
			err:  `x.csv: not a Keyword Planner export: expected a header row with an "Avg. monthly searches" column; the one at line 2 has none`,
		},
		{
			name: "competition dashes and blanks mean no value",
			enc:  "utf8",
			text: tsv([]string{"Keyword", "Avg. monthly searches", "Competition", "Competition (indexed value)"},
				[]string{"a", "10", "-", "-"}, []string{"b", "10", "--", ""}, []string{"c", "10", "—", "—"},
				[]string{"d", "10", " ", "–"}, []string{"e", "10", "low", "3"}, []string{"f", "10", "?", ""},
				[]string{"g", "10", "Very high", "66"}, []string{"h", "10", "Unknown", ""}),
			// An unreadable word is null, or follows from the index.
			want: []kw.KeywordRecord{rec("a", 10), rec("b", 10), rec("c", 10), rec("d", 10), rec("e", 10, comp("LOW", 0.03)),
				rec("f", 10), rec("g", 10, comp("MEDIUM", 0.66)), rec("h", 10)},
			unread: []UnreadableCells{{Column: "Competition", Rows: 2, FromIndex: 1, First: "?", Line: 7}},
		},
		{
			name: "dollar marks and grouped digits in amounts",
			enc:  "utf16le",
			text: tsv([]string{"Keyword", "Currency", "Avg. monthly searches", "Top of page bid (low range)", "Top of page bid (high range)"},
				[]string{"a", "USD", "1\u00a0200", "$1.20", "US$1,234.50"},
				[]string{"b", "", "12\u202f345", "2.00 USD", "$3 USD"},
				[]string{"c", "USD", "1 000 000", "$0.000001", "1\u00a0234.000001"},
				[]string{"bad1", "USD", "1", "€1", ""},
				[]string{"bad2", "USD", "1", "$-1", ""},
				[]string{"bad3", "USD", "1", "1.00USD", ""},
				[]string{"bad4", "USD", "1", "$", ""},
				[]string{"bad5", "USD", "1", "1 23", ""},
				[]string{"bad6", "USD", "1,2", "", ""},
				[]string{"bad7", "EUR", "1", "$1", ""},
				[]string{"bad8", "USD", "1", "$ 1", ""}),
			rates: map[string]float64{"EUR": 1.1},
			want: []kw.KeywordRecord{
				rec("a", 1200, bids(1_200_000, 1_234_500_000, 617_850_000)),
				rec("b", 12345, bids(2_000_000, 3_000_000, 2_500_000)),
				rec("c", 1_000_000, bids(1, 1_234_000_001, 617_000_001)),
			},
			bad: []badWant{
				{5, `Top of page bid (low range) "€1" is not an amount`}, {6, `"$-1" is not an amount`},
				{7, `"1.00USD" is not an amount`}, {8, `"$" is not an amount`}, {9, `"1 23" is not an amount`},
				{10, `Avg. monthly searches "1,2" is not a search volume`},
				{11, `Top of page bid (low range) "$1" is in USD but the row's currency is EUR`},
				{12, `"$ 1" is not an amount`},
			},
		},
		{
			name: "2020 export: N/A volume beside min and max search volume; Unknown competition",
			enc:  "utf16le",
			text: tsv(preamble1, []string{"Keyword", "Currency", "Avg. monthly searches", "Min search volume", "Max search volume",
				"Competition", "Competition (indexed value)", "Top of page bid (low range)", "Top of page bid (high range)", "Searches: Jan 2020", "Searches: Feb 2020"},
				[]string{"a", "USD", "N/A", "10,000", "100,000", "Unknown", "", "", "", "", ""},
				[]string{"b", "USD", "1,300", "1,000", "10,000", "Low", "20", "0.5", "1.5", "900", ""},
				[]string{"c", "USD", "N/A", "1,500", "", "unknown", "N/A", "N/A", "", "", ""}),
			want: []kw.KeywordRecord{
				// Jan 2020 has a value in some row, so a blank one is a null
				// month; Feb 2020 has none in any row and is left out.
				rec("a", 10000, volRange("10K – 100K"), months("2020-01", nil)),
				rec("b", 1300, comp("LOW", 0.2), bids(500000, 1500000, 1000000), months("2020-01", 900)),
				rec("c", 1500, months("2020-01", nil)),
			},
		},
		{
			name: "segmented export: a summary row without a keyword, float notation",
			enc:  "utf16le",
			text: tsv(preamble1, preamble2, []string{"Keyword", "Currency", "Segmentation", "Avg. monthly searches", "Competition", "Competition (indexed value)"},
				[]string{"", "", "All", "1.74483905E9", "", ""},
				[]string{"aa", "USD", "", "5000000.0", "Low", "9"},
				[]string{"airgun", "USD", "", "", "", ""},
				[]string{"big", "USD", "", "1.5E3", "High", "100"}),
			want: []kw.KeywordRecord{rec("aa", 5000000, comp("LOW", 0.09)), rec("airgun", -1), rec("big", 1500, comp("HIGH", 1))},
		},
		{
			name: "legacy AdWords export: Ad group first, decimal competition, suggested bid",
			enc:  "utf16le",
			text: tsv([]string{"Ad group", "Keyword", "Currency", "Avg. Monthly Searches (exact match only)", "Competition", "Suggested bid", "Impr. share"},
				[]string{"Seed Keywords", "sepatu olahraga", "USD", "2900", "0.66", "0.18", "0.000"},
				[]string{"Keyword Ideas", "sepatu lari", "USD", "480", "0.785", "", "0.000"},
				[]string{"Keyword Ideas", "sepatu", "USD", "50", "1.5", "0.1", "0.000"}),
			want: []kw.KeywordRecord{
				rec("sepatu olahraga", 2900, comp("", 0.66), func(r *kw.KeywordRecord) { r.CPCMicros = i64(180000) }),
				rec("sepatu lari", 480, comp("", 0.79)),
				rec("sepatu", 50, func(r *kw.KeywordRecord) { r.CPCMicros = i64(100000) }),
			},
			unread:  []UnreadableCells{{Column: "Competition", Rows: 1, First: "1.5", Line: 4}},
			missing: []string{"Searches: Mon YYYY"},
		},
		{
			name: "month headers with or without a space after the colon",
			enc:  "utf8",
			text: tsv([]string{"Keyword", "Avg. monthly searches", "Searches:Jan 2026", "Searches: Dec 2025", "searches:  Feb 2026"},
				[]string{"a", "10", "1", "2", "3"}),
			// Without change columns, the three month change comes from the series.
			want:    []kw.KeywordRecord{rec("a", 10, months("2025-12", 2, "2026-01", 1, "2026-02", 3), changes(math.NaN(), 50))},
			missing: []string{"Currency", "Competition", "Competition (indexed value)", "Top of page bid (low range)", "Top of page bid (high range)"},
		},
		{
			name: "change cells: infinity, dashes, thousands, a bad one",
			enc:  "utf8",
			text: tsv([]string{"Keyword", "Avg. monthly searches", "Three month change", "YoY change", "Searches: Jan 2026"},
				[]string{"a", "10", "∞", " --", "1"},
				[]string{"b", "10", "1,900%", "-90%", "1"},
				[]string{"c", "10", "12.5%", "", "1"},
				[]string{"d", "10", "lots", "0%", "1"}),
			want: []kw.KeywordRecord{
				rec("a", 10, months("2026-01", 1), changes(math.NaN(), math.Inf(1))),
				rec("b", 10, months("2026-01", 1), changes(-90, 1900)),
				rec("c", 10, months("2026-01", 1), changes(math.NaN(), 12.5)),
				rec("d", 10, months("2026-01", 1), changes(0, math.NaN())),
			},
			unread:  []UnreadableCells{{Column: "Three month change", Rows: 1, First: "lots", Line: 5}},
			missing: []string{"Currency", "Competition", "Competition (indexed value)", "Top of page bid (low range)", "Top of page bid (high range)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var bad []BadRow
			got, st, err := ParsePlanner(bytes.NewReader(encodeText(t, tt.enc, tt.text)), "x.csv", tt.rates,
				func(b BadRow) { bad = append(bad, b) })
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want one containing %q", err, tt.err)
				}
				if got != nil {
					t.Errorf("refused file returned %d records", len(got))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("records:\n got %s\nwant %s", showRecords(got), showRecords(tt.want))
			}
			if len(bad) != len(tt.bad) {
				t.Fatalf("bad rows = %v, want %d", bad, len(tt.bad))
			}
			for i, b := range bad {
				if b.File != "x.csv" || b.Line != tt.bad[i].line || !strings.Contains(b.Reason, tt.bad[i].reason) {
					t.Errorf("bad row %d = %v, want line %d with %q", i, b, tt.bad[i].line, tt.bad[i].reason)
				}
			}
			if st.Records != len(got) || st.Bad != len(bad) || st.Lines != st.Records+st.Bad+st.Summaries {
				t.Errorf("stats %+v do not match %d records and %d bad rows", st, len(got), len(bad))
			}
			if tt.missing != nil && !reflect.DeepEqual(st.MissingColumns, tt.missing) {
				t.Errorf("missing columns = %q, want %q", st.MissingColumns, tt.missing)
			}
			checkUnreadable(t, st.Unreadable, tt.unread)
		})
	}
}

func TestParsePlannerErrors(t *testing.T) {
	text := tsv(stdHeader, []string{"a", "USD", "1"}, []string{"b", "GBP", "1"})
	_, _, err := ParsePlanner(strings.NewReader(text), "gb.csv", map[string]float64{"EUR": 1.1}, nil)
	var ce *CurrencyError
	if !errors.As(err, &ce) || ce.Currency != "GBP" || ce.Line != 3 || ce.File != "gb.csv" {
		t.Fatalf("err = %#v, want a CurrencyError for GBP on gb.csv:3", err)
	}
	want := "gb.csv:3: amounts are in GBP and no USD rate for GBP is given; pass --usd-rate GBP=RATE (USD per GBP)"
	if err.Error() != want {
		t.Errorf("message = %q, want %q", err, want)
	}

	_, _, err = ParsePlanner(strings.NewReader("nothing"), "n.csv", nil, nil)
	var fe *FormatError
	if !errors.As(err, &fe) || fe.File != "n.csv" {
		t.Errorf("err = %v, want a FormatError", err)
	}
}

func TestParsePlannerFixtures(t *testing.T) {
	var want []kw.KeywordRecord
	for _, name := range []string{"testdata/keyword-planner-utf16le.csv", "testdata/keyword-planner-utf8.csv"} {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		var bad []BadRow
		got, _, err := ParsePlanner(f, name, nil, func(b BadRow) { bad = append(bad, b) })
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 4 || len(bad) != 1 || bad[0].Line != 9 {
			t.Fatalf("%s: %d records, bad %v; want 4 records and bad line 9 (line 8, without a keyword, is a summary)", name, len(got), bad)
		}
		if got[3].Keyword != `best "fast" shoes` {
			t.Errorf("quoted keyword = %q", got[3].Keyword)
		}
		if want == nil {
			want = got
		} else if !reflect.DeepEqual(got, want) {
			t.Errorf("%s parses differently from the UTF-16 fixture", name)
		}
	}
}

func TestParseNumbers(t *testing.T) {
	micros := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1.23", 1_230_000, true}, {"0", 0, true}, {".5", 500_000, true}, {"1,234.56", 1_234_560_000, true},
		{"0.0000005", 1, true}, {"0.0000004", 0, true}, {"999,999,999,999", 999_999_999_999_000_000, true},
		{"1,23", 0, false}, {"1,2345", 0, false}, {"12,34,567", 0, false}, {"1.", 0, false}, {"", 0, false},
		{"-1", 0, false}, {"1e3", 0, false},
		{"1 000", 1_000_000_000, true}, {"1\u00a0234.5", 1_234_500_000, true}, {"12\u202f345\u202f678", 12_345_678_000_000, true},
		{"1 234,567", 0, false}, {"1,234 567", 0, false}, {"12 34", 0, false}, {" 123", 0, false}, {"123 ", 0, false},
		{"1\u2009000", 0, false}, {"1  000", 0, false}, {"1,000,000,000,000", 0, false}, {"50%", 0, false},
	}
	for _, tt := range micros {
		got, err := parseMicros(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseMicros(%q) = %d, %v; want %d, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
	counts := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"301,000", 301000, true}, {"1K", 1000, true}, {"1.5k", 1500, true}, {"2M", 2_000_000, true},
		{"1B", 1_000_000_000, true}, {"1000.0", 1000, true}, {"1000.5", 0, false}, {"1.0005K", 0, false}, {"K", 0, false},
	}
	for _, tt := range counts {
		got, err := parseCount(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseCount(%q) = %d, %v; want %d, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

// i64 and f64 are the nullable numbers of records and entries.
func i64(v int64) *int64     { return &v }
func f64(v float64) *float64 { return &v }

// showRecords prints records with their nullable numbers, as JSON.
func showRecords(recs []kw.KeywordRecord) string {
	b, _ := json.Marshal(recs)
	return string(b)
}

// TestUnterminatedQuoteStaysOnItsLine: a keyword cell that opens a quote
// and never closes it costs that row only, not the rows after it (which a
// CSV reader would join into one cell up to the next quote).
func TestUnterminatedQuoteStaysOnItsLine(t *testing.T) {
	text := tsv([]string{"Keyword", "Currency", "Avg. monthly searches"},
		[]string{`"broken shoes`, "USD", "10"},
		[]string{"running shoes", "USD", "20"},
		[]string{"trail shoes", "USD", "30"})
	got, st, err := ParsePlanner(strings.NewReader(text), "q.csv", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range got {
		names = append(names, r.Keyword)
	}
	if st.Records+st.Bad != 3 || !slices.Contains(names, "running shoes") || !slices.Contains(names, "trail shoes") {
		t.Errorf("records %q, stats %+v; want the two rows after the broken one kept", names, st)
	}
}

// checkUnreadable compares the unreadable cells a parse counted with want.
func checkUnreadable(tb testing.TB, got, want []UnreadableCells) {
	tb.Helper()
	for i := range got {
		got[i].col = 0
	}
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		tb.Errorf("unreadable cells\n got %+v\nwant %+v", got, want)
	}
}
