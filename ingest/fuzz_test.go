package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"testing"
	"time"

	"github.com/kwdata/kwdata/kw"
)

// checkKeyword fails unless k is a keyword as kw.NormalizeKeyword leaves it.
func checkKeyword(tb testing.TB, k string) {
	tb.Helper()
	if n, err := kw.NormalizeKeyword(k); err != nil || n != k {
		tb.Fatalf("keyword %q is not normalized (%q, %v)", k, n, err)
	}
}

// checkBadLines fails unless bad rows carry ascending line numbers from 1.
func checkBadLines(tb testing.TB, bad []BadRow) {
	tb.Helper()
	for i, b := range bad {
		if b.Line < 1 || (i > 0 && b.Line <= bad[i-1].Line) || b.Reason == "" {
			tb.Fatalf("bad row %d = %v out of order or without a reason", i, b)
		}
	}
}

func FuzzParsePlanner(f *testing.F) {
	for _, name := range []string{"testdata/keyword-planner-utf16le.csv", "testdata/keyword-planner-utf8.csv",
		"testdata/planner-languages/ko.csv", "testdata/planner-languages/el.csv"} {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(encodeText(f, "utf16be", tsv(stdHeader, []string{"a", "EUR", "1K – 10K", "", "", "low", "12.5", "1,000.005", "", "5", "", "7"})))
	f.Add([]byte("x\nKeyword,Avg. monthly searches,Currency\n\"a\"\"b\",\"1,000\",usd\n,,\n\"unterminated,5\n"))
	f.Add([]byte("Keyword\tAvg. monthly searches\tSearches: Jan 2024\tSearches: Jan 2024\n a \t1.5K\t3\t4\r\n"))
	// Change headers in a language the table lacks, found by position, and
	// level words it cannot read.
	f.Add([]byte("Keyword\tAvg. monthly searches\tVáltozás 3\tVáltozás év\tCompetition\tCompetition (indexed value)\n" +
		"a\t10\tsok\t5%\tNagyon magas\t70\nb\t10\t∞\t-\t알 수 없음\t\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var bad []BadRow
		recs, st, err := ParsePlanner(bytes.NewReader(data), "f.csv", map[string]float64{"EUR": 1.08},
			func(b BadRow) { bad = append(bad, b) })
		if err != nil {
			var fe *FormatError
			var ce *CurrencyError
			if !errors.As(err, &fe) && !errors.As(err, &ce) {
				t.Fatalf("unexpected error %v", err)
			}
			if recs != nil {
				t.Fatal("refused file returned records")
			}
			return
		}
		if st.Records != len(recs) || st.Bad != len(bad) || st.Lines != st.Records+st.Bad+st.Summaries {
			t.Fatalf("stats %+v for %d records and %d bad rows", st, len(recs), len(bad))
		}
		checkBadLines(t, bad)
		for _, r := range recs {
			checkKeyword(t, r.Keyword)
			if kw.Deref(r.Volume) < 0 || kw.Deref(r.CPCMicros) < 0 || kw.Deref(r.BidLowMicros) < 0 || kw.Deref(r.BidHighMicros) < 0 || r.Source != SourcePlanner {
				t.Fatalf("record with insane numbers: %+v", r)
			}
			if c := kw.Deref(r.Competition); c < 0 || c > 1 || math.Round(c*100)/100 != c {
				t.Fatalf("competition %v is not 0.00-1.00", c)
			}
			switch r.CompetitionLevel {
			case "", "LOW", "MEDIUM", "HIGH":
			default:
				t.Fatalf("competition level %q", r.CompetitionLevel)
			}
			for i, m := range r.Monthly {
				if _, err := time.Parse("2006-01", m.Month); err != nil || kw.Deref(m.Searches) < 0 || (i > 0 && m.Month <= r.Monthly[i-1].Month) {
					t.Fatalf("monthly %+v not oldest first with sane values", r.Monthly)
				}
			}
		}
	})
}

func FuzzParseSERPJSONL(f *testing.F) {
	b, err := os.ReadFile("testdata/serps.jsonl")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(serpJSON("A  b", "US", 3, "https://www.x.com:443/a/?utm_x=1&b=2#f", "2", "x.com/a", 1.0, "//x.com") + "\r\n\n{}\n[1]\n"))
	f.Add([]byte("\uFEFF" + `{"keyword":"k","results":[{"rank":1,"url":"http://[::1]:8080/p"},{"url":"u"},{"rank":null}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var serps []SERP
		var bad []BadRow
		st, err := ParseSERPJSONL(bytes.NewReader(data), "f.jsonl", "us",
			func(k string, rows []kw.SERPRow) { serps = append(serps, SERP{k, rows}) },
			func(b BadRow) { bad = append(bad, b) })
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("unexpected error %v", err)
			}
			if len(serps) != 0 || len(bad) != 0 {
				t.Fatal("refused file emitted SERPs or bad rows")
			}
			return
		}
		// Every non-blank line is a SERP or a bad row.
		lines := 0
		for i, l := range bytes.Split(data, []byte{'\n'}) {
			if i == 0 {
				l = bytes.TrimPrefix(l, []byte("\uFEFF"))
			}
			if len(bytes.TrimSpace(l)) > 0 {
				lines++
			}
		}
		if st.Lines != lines || st.Records != len(serps) || st.Bad != len(bad) || st.Lines != st.Records+st.Bad {
			t.Fatalf("stats %+v for %d lines, %d SERPs, %d bad rows", st, lines, len(serps), len(bad))
		}
		checkBadLines(t, bad)
		rows := 0
		for _, s := range serps {
			checkKeyword(t, s.Keyword)
			if len(s.Rows) > kw.MaxRank {
				t.Fatalf("%d rows for %q", len(s.Rows), s.Keyword)
			}
			rows += len(s.Rows)
			for i, r := range s.Rows {
				if r.Keyword != s.Keyword || r.Rank < 1 || (i > 0 && r.Rank < s.Rows[i-1].Rank) {
					t.Fatalf("rows of %q out of order: %+v", s.Keyword, s.Rows)
				}
				if key, err := kw.URLKey(r.URL); err != nil || key != r.URLKey {
					t.Fatalf("url key of %q = %q, want %q (%v)", r.URL, r.URLKey, key, err)
				}
			}
		}
		if rows != st.Rows {
			t.Fatalf("%d rows emitted, stats say %d", rows, st.Rows)
		}
	})
}

// FuzzSERPFastPath is the oracle test of the hand-written decoder: whatever
// line it accepts, encoding/json must accept and decode the same way.
func FuzzSERPFastPath(f *testing.F) {
	f.Add([]byte(serpJSON("running shoes", "us", 1, "https://a.com/x", 2, "https://b.com/y")))
	f.Add([]byte(` { "results" : [ {}, {"url": "u"}, {"rank": 0}, {"rank": 2147483648, "url": ""} ] , "keyword":"ü" } `))
	f.Add([]byte(`{"keyword": "a\"b", "Country": "US", "results": [{"rank": 1.0}]}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		var p serpParser
		if !p.fast(line) {
			return
		}
		var want serpLine
		if err := json.Unmarshal(line, &want); err != nil {
			t.Fatalf("fast path accepts %q, encoding/json refuses it: %v", line, err)
		}
		if p.hasKeyword != (want.Keyword != nil) || (p.hasKeyword && string(p.keyword) != *want.Keyword) {
			t.Fatalf("keyword %q (%v), encoding/json %v", p.keyword, p.hasKeyword, want.Keyword)
		}
		if string(p.countryVal) != want.Country || len(p.results) != len(want.Results) {
			t.Fatalf("country %q, %d results; encoding/json %q, %d", p.countryVal, len(p.results), want.Country, len(want.Results))
		}
		// fast leaves rank.set to slow, which decodes every line with a
		// result that has no valid rank.
		for i, r := range p.results {
			w := want.Results[i].Rank
			if r.rank.v != w.v || r.rank.ok != w.ok || string(r.url) != want.Results[i].URL {
				t.Fatalf("result %d = %+v %q, encoding/json %+v", i, r.rank, r.url, want.Results[i])
			}
		}
	})
}

// FuzzFastURLKey checks the parser's URL key shortcut against kw.URLKey,
// which decides every URL the shortcut declines.
func FuzzFastURLKey(f *testing.F) {
	for _, s := range []string{"https://www.Example.com/Shoes/", "http://example.com", "https://WWW.", "https://www.",
		"https://a.b/c_d~e.f-g//", "http://a.com/b?c", "https://a.com:443/", "https://user@a.com/", "HTTPS://a.com/",
		"https://www.www.a.com/", "http:///x", "https://-a-.com/%41", "https://a.com:443?b=1&a&utm_x=2&=3#f?g",
		"http://www.:80/", "https://a.com/x?a=b=c", "https://a.com/#%zz", "https://a.com:/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := kw.URLKey(s)
		got, _, ok := appendURLKey([]byte("prefix"), []byte(s))
		if ok != (err == nil) || (ok && string(got) != "prefix"+want) {
			t.Fatalf("appendURLKey(%q) = %q, %v; kw.URLKey = %q, %v", s, got, ok, want, err)
		}
	})
}
