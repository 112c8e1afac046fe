package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/kwdata/kwdata/kw"
)

// parsedSERPs is everything ParseSERPJSONL produced from one input.
type parsedSERPs struct {
	serps []SERP
	bad   []BadRow
	st    ParseStats
	err   error
}

func parseSERPs(tb testing.TB, input, country string) parsedSERPs {
	tb.Helper()
	var p parsedSERPs
	p.st, p.err = ParseSERPJSONL(strings.NewReader(input), "s.jsonl", country,
		func(k string, rows []kw.SERPRow) { p.serps = append(p.serps, SERP{k, rows}) },
		func(b BadRow) { p.bad = append(p.bad, b) })
	return p
}

// serpJSON renders one SERP line with results given as rank, url pairs.
func serpJSON(keyword, country string, results ...any) string {
	type res struct {
		Rank any    `json:"rank"`
		URL  string `json:"url"`
	}
	l := struct {
		Keyword string `json:"keyword"`
		Country string `json:"country,omitempty"`
		Results []res  `json:"results"`
	}{Keyword: keyword, Country: country, Results: []res{}}
	for i := 0; i < len(results); i += 2 {
		l.Results = append(l.Results, res{results[i], results[i+1].(string)})
	}
	b, _ := json.Marshal(l)
	return string(b)
}

func row(keyword string, rank int32, url, key string) kw.SERPRow {
	return kw.SERPRow{Keyword: keyword, Rank: rank, URL: url, URLKey: key}
}

func TestParseSERPJSONL(t *testing.T) {
	many := []any{}
	for i := 25; i >= 1; i-- {
		many = append(many, i, fmt.Sprintf("https://site%d.com/", i))
	}
	var top20 []kw.SERPRow
	for i := int32(1); i <= 20; i++ {
		top20 = append(top20, row("many", i, fmt.Sprintf("https://site%d.com/", i), fmt.Sprintf("site%d.com/", i)))
	}
	type badWant struct {
		line   int
		reason string
	}
	tests := []struct {
		name      string
		input     string
		want      []SERP
		bad       []badWant
		skipped   int
		truncated int
		err       string
	}{
		{
			name: "sorted by rank, ranks kept, variants share a key",
			input: serpJSON("Running  Shoes", "US",
				5, "https://www.Example.com:443/shoes/?utm_source=x#top", 2, "http://example.com/shoes", 9, "example.com/shoes?b=2&a=1") + "\n",
			want: []SERP{{"running shoes", []kw.SERPRow{
				row("running shoes", 2, "http://example.com/shoes", "example.com/shoes"),
				row("running shoes", 5, "https://www.Example.com:443/shoes/?utm_source=x#top", "example.com/shoes"),
				row("running shoes", 9, "example.com/shoes?b=2&a=1", "example.com/shoes?a=1&b=2"),
			}}},
		},
		{
			name:  "duplicates within a SERP stay, equal ranks keep their order",
			input: serpJSON("a", "us", 1, "https://x.com/", 1, "https://y.com/", 2, "https://x.com") + "\n",
			want: []SERP{{"a", []kw.SERPRow{row("a", 1, "https://x.com/", "x.com/"), row("a", 1, "https://y.com/", "y.com/"),
				row("a", 2, "https://x.com", "x.com/")}}},
		},
		{
			name:      "more than 20 results truncated by rank",
			input:     serpJSON("many", "us", many...) + "\n",
			want:      []SERP{{"many", top20}},
			truncated: 5,
		},
		{
			name: "results without a rank take their position",
			input: `{"keyword": "a", "results": [{"url": "https://p1.com"}, {"rank": 1, "url": "https://r1.com"}, ` +
				`{"url": "https://p3.com", "rank": null}, {"rank": 0, "url": "https://zero.com"}]}` + "\n" +
				`{"keyword": "b", "results": [{"url": "https://b1.com"}, {"url": "https://b2.com"}]}` + "\n",
			want: []SERP{
				{"a", []kw.SERPRow{row("a", 1, "https://p1.com", "p1.com/"), row("a", 1, "https://r1.com", "r1.com/"),
					row("a", 3, "https://p3.com", "p3.com/")}},
				{"b", []kw.SERPRow{row("b", 1, "https://b1.com", "b1.com/"), row("b", 2, "https://b2.com", "b2.com/")}},
			},
			skipped: 1,
		},
		{
			name: "ranks past 20 truncated even with fewer than 20 results",
			input: serpJSON("a", "us", 21, "https://r21.com", 3, "https://r3.com", 20, "https://r20.com",
				2147483647, "https://max.com") + "\n",
			want:      []SERP{{"a", []kw.SERPRow{row("a", 3, "https://r3.com", "r3.com/"), row("a", 20, "https://r20.com", "r20.com/")}}},
			truncated: 2,
		},
		{
			name: "ties at the top: at most 20 rows",
			input: serpJSON("a", "us", func() []any {
				var r []any
				for i := range 22 {
					r = append(r, 1+i/2, fmt.Sprintf("https://t%d.com", i))
				}
				return r
			}()...) + "\n",
			want: []SERP{{"a", func() []kw.SERPRow {
				var r []kw.SERPRow
				for i := range 20 {
					r = append(r, row("a", int32(1+i/2), fmt.Sprintf("https://t%d.com", i), fmt.Sprintf("t%d.com/", i)))
				}
				return r
			}()}},
			truncated: 2,
		},
		{
			name:    "a line whose results all drop is kept, its results counted",
			input:   serpJSON("a", "us", 1, "", 2, "not a url ://") + "\n",
			want:    []SERP{{"a", []kw.SERPRow{}}},
			skipped: 2,
		},
		{
			name: "bad results skipped, not the line",
			input: serpJSON("a", "us", 1, "", 2, "https://", 3, "not a url ://", 0, "https://zero.com", -1, "https://neg.com",
				"x", "https://str.com", 4, "https://ok.com", 5.0, "https://float.com", 5.5, "https://half.com", "6", "https://quoted.com") + "\n",
			want: []SERP{{"a", []kw.SERPRow{row("a", 4, "https://ok.com", "ok.com/"), row("a", 5, "https://float.com", "float.com/"),
				row("a", 6, "https://quoted.com", "quoted.com/")}}},
			skipped: 7,
		},
		{
			name: "bad lines with line numbers; blank lines counted but skipped",
			input: "\n" + // 1
				serpJSON("a", "us", 1, "https://a.com") + "\n" + // 2
				"not json\n" + // 3
				"  \r\n" + // 4
				`{"keyword": "b", "results": [}` + "\n" + // 5
				serpJSON("laufschuhe", "de", 1, "https://a.de") + "\n" + // 6
				`["keyword"]` + "\n" + // 7
				`{"results": []}` + "\n" + // 8
				serpJSON("", "us") + "\n" + // 9
				serpJSON(strings.Repeat("long ", 17), "us") + "\n" + // 10: 84 characters
				`{"keyword": 5}` + "\n" + // 11
				serpJSON("no results", "") + "\r\n" + // 12
				`{"keyword": "c"} trailing` + "\n" + // 13
				`{"keyword": "d", "country": "us"}`, // 14, no final newline
			want: []SERP{{"a", []kw.SERPRow{row("a", 1, "https://a.com", "a.com/")}}, {"no results", []kw.SERPRow{}}, {"d", []kw.SERPRow{}}},
			bad: []badWant{{3, "not a JSON object"}, {5, "invalid JSON"}, {6, "country de in a us run"}, {7, "not a JSON object"},
				{8, `no "keyword"`}, {9, "keyword is empty"}, {10, "too long"}, {11, "unexpected JSON"}, {13, "invalid JSON"}},
		},
		{
			name: "a keyword on several lines is emitted each time",
			input: serpJSON("a", "us", 1, "https://old.com") + "\n" + serpJSON("b", "us", 1, "https://b.com") + "\n" +
				serpJSON("A", "us", 1, "https://new.com") + "\n",
			want: []SERP{{"a", []kw.SERPRow{row("a", 1, "https://old.com", "old.com/")}}, {"b", []kw.SERPRow{row("b", 1, "https://b.com", "b.com/")}},
				{"a", []kw.SERPRow{row("a", 1, "https://new.com", "new.com/")}}},
		},
		{
			name:  "utf8 bom",
			input: "\uFEFF" + serpJSON("a", "us", 1, "https://a.com"),
			want:  []SERP{{"a", []kw.SERPRow{row("a", 1, "https://a.com", "a.com/")}}},
		},
		{name: "empty file", input: ""},
		{name: "only blank lines", input: "\n\n  \n"},
		{
			name:  "a CSV is refused",
			input: "keyword,country,rank,url\nshoes,us,1,https://a.com\n",
			err:   `s.jsonl: not SERP JSONL: expected one JSON object a line like {"keyword": ..., "country": ..., "results": [{"rank": 1, "url": ...}]}`,
		},
		{
			name:  "JSON objects of another kind are refused",
			input: strings.Repeat(`{"query": "shoes"}`+"\n", 3),
			err:   "not SERP JSONL",
		},
		{
			name:  "garbage before the probe limit is refused early",
			input: strings.Repeat("garbage\n", formatProbeLines) + serpJSON("a", "us", 1, "https://a.com") + "\n",
			err:   "not SERP JSONL",
		},
		{
			name:  "garbage within the probe limit is bad rows",
			input: strings.Repeat("garbage\n", formatProbeLines-1) + serpJSON("a", "us", 1, "https://a.com") + "\n",
			want:  []SERP{{"a", []kw.SERPRow{row("a", 1, "https://a.com", "a.com/")}}},
			bad: func() []badWant {
				var b []badWant
				for i := 1; i < formatProbeLines; i++ {
					b = append(b, badWant{i, "not a JSON object"})
				}
				return b
			}(),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := parseSERPs(t, tt.input, "us")
			if tt.err != "" {
				if p.err == nil || !strings.Contains(p.err.Error(), tt.err) {
					t.Fatalf("err = %v, want one containing %q", p.err, tt.err)
				}
				var fe *FormatError
				if !errors.As(p.err, &fe) {
					t.Errorf("err is %T, want *FormatError", p.err)
				}
				if len(p.serps) != 0 || len(p.bad) != 0 {
					t.Errorf("refused file emitted %d SERPs and %d bad rows", len(p.serps), len(p.bad))
				}
				return
			}
			if p.err != nil {
				t.Fatal(p.err)
			}
			if !reflect.DeepEqual(p.serps, tt.want) {
				t.Errorf("SERPs:\n got %+v\nwant %+v", p.serps, tt.want)
			}
			if len(p.bad) != len(tt.bad) {
				t.Fatalf("bad rows = %v, want %d", p.bad, len(tt.bad))
			}
			for i, b := range p.bad {
				if b.Line != tt.bad[i].line || !strings.Contains(b.Reason, tt.bad[i].reason) {
					t.Errorf("bad row %d = %v, want line %d with %q", i, b, tt.bad[i].line, tt.bad[i].reason)
				}
			}
			rows := 0
			for _, s := range p.serps {
				rows += len(s.Rows)
			}
			if p.st.Records != len(p.serps) || p.st.Bad != len(p.bad) || p.st.Lines != p.st.Records+p.st.Bad || p.st.Rows != rows {
				t.Errorf("stats %+v do not match %d SERPs, %d rows, %d bad", p.st, len(p.serps), rows, len(p.bad))
			}
			if p.st.SkippedResults != tt.skipped || p.st.Truncated != tt.truncated {
				t.Errorf("skipped %d truncated %d, want %d and %d", p.st.SkippedResults, p.st.Truncated, tt.skipped, tt.truncated)
			}
		})
	}
}

// TestParseSERPJSONLChunks checks that cutting the input into chunks, and
// lines longer than a chunk, change nothing: every line is parsed once with
// its own line number, in order.
func TestParseSERPJSONLChunks(t *testing.T) {
	var b strings.Builder
	var want []string
	line := 0
	for i := 0; b.Len() < 4*chunkSize; i++ {
		line++
		switch {
		case i%1000 == 7:
			b.WriteString("bad line\n")
			continue
		case i == 11 || i == 30000:
			// a line longer than a chunk: a SERP with a very long URL
			u := "https://long.com/" + strings.Repeat("p", chunkSize+100)
			b.WriteString(serpJSON(fmt.Sprintf("kw %d", line), "us", 1, u) + "\n")
		default:
			b.WriteString(serpJSON(fmt.Sprintf("kw %d", line), "us", 1, fmt.Sprintf("https://s%d.com/x", i%97)) + "\n")
		}
		want = append(want, fmt.Sprintf("kw %d", line))
	}
	// iotest.HalfReader makes the reads short and uneven.
	var got []string
	var bad []BadRow
	st, err := ParseSERPJSONL(iotest.HalfReader(strings.NewReader(b.String())), "big.jsonl", "us",
		func(k string, rows []kw.SERPRow) {
			if len(rows) != 1 || rows[0].Keyword != k {
				t.Fatalf("rows of %q = %+v", k, rows)
			}
			got = append(got, k)
		}, func(r BadRow) { bad = append(bad, r) })
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %d keywords, want %d (first difference matters)", len(got), len(want))
	}
	for _, r := range bad {
		if r.Reason != "not a JSON object" || (r.Line-1)%1000 != 7 {
			t.Fatalf("unexpected bad row %v", r)
		}
	}
	if st.Lines != line || st.Bad != len(bad) || len(bad) == 0 {
		t.Errorf("stats %+v, want %d lines", st, line)
	}
}

func TestParseSERPJSONLOverlongLine(t *testing.T) {
	if testing.Short() {
		t.Skip("reads a 64 MiB line")
	}
	input := serpJSON("a", "us", 1, "https://a.com") + "\n" +
		`{"keyword": "` + strings.Repeat("x", maxSERPLine) + `"}` + "\n" +
		serpJSON("b", "us", 1, "https://b.com") + "\n"
	p := parseSERPs(t, input, "us")
	if p.err != nil {
		t.Fatal(p.err)
	}
	if len(p.serps) != 2 || p.serps[1].Keyword != "b" || len(p.bad) != 1 || p.bad[0].Line != 2 {
		t.Fatalf("serps %d, bad %v; want a and b, line 2 bad", len(p.serps), p.bad)
	}
}

func TestParseSERPJSONLReadError(t *testing.T) {
	boom := errors.New("disk on fire")
	r := iotest.TimeoutReader(bytes.NewReader([]byte(serpJSON("a", "us", 1, "https://a.com") + "\n")))
	_, err := ParseSERPJSONL(iotest.ErrReader(boom), "e.jsonl", "us", nil, nil)
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "cannot read e.jsonl") {
		t.Errorf("err = %v, want the read error wrapped", err)
	}
	_, err = ParseSERPJSONL(r, "t.jsonl", "us", nil, nil)
	if !errors.Is(err, iotest.ErrTimeout) {
		t.Errorf("err = %v, want the timeout", err)
	}
}

func TestParseSERPJSONLFixture(t *testing.T) {
	f, err := os.Open("testdata/serps.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var keys []string
	var bad []BadRow
	st, err := ParseSERPJSONL(f, "serps.jsonl", "US", func(k string, rows []kw.SERPRow) { keys = append(keys, k) },
		func(b BadRow) { bad = append(bad, b) })
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"running shoes", "trail running shoes", "running shoes"}; !reflect.DeepEqual(keys, want) {
		t.Errorf("keywords = %q, want %q", keys, want)
	}
	if len(bad) != 2 || bad[0].Line != 3 || bad[1].Line != 4 || st.SkippedResults != 1 {
		t.Errorf("bad = %v, skipped %d; want lines 3 and 4, one skipped result", bad, st.SkippedResults)
	}
}

func TestAppendURLKey(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		fast     bool // the shortcut decides it, without net/url
	}{
		{"https://www.Example.com/Shoes/", "example.com/Shoes", true},
		{"http://example.com", "example.com/", true},
		{"https://example.com/", "example.com/", true},
		{"https://WWW.EXAMPLE.COM//a//", "example.com//a", true},
		{"https://www.www.example.com/a", "www.example.com/a", true},
		{"https://a.b/c_d~e.f-g", "a.b/c_d~e.f-g", true},
		{"https://example.com:443/a", "example.com/a", true},
		{"http://example.com:80", "example.com/", true},
		{"https://example.com:8080/a", "example.com:8080/a", false},
		{"https://example.com/a?b=2&a=1&&a=0&c", "example.com/a?a=0&a=1&b=2&c=", true},
		{"https://example.com/a/?utm_source=x&GCLID=1&fbclid=2&msclkid=3#top", "example.com/a", true},
		{"https://example.com/a#x?y", "example.com/a", true},
		{"https://example.com/a#%zz", "", false},
		{"https://example.com/a?b=c=d", "example.com/a?b=c%3Dd", false},
		{"https://example.com/a?q=running+shoes", "example.com/a?q=running+shoes", false},
		{"example.com/a", "example.com/a", false},
		{"HTTPS://example.com/a", "example.com/a", false},
		{"https://example.com/a%20b", "example.com/a%20b", false},
	} {
		_, _, fast := appendFastURLKey(nil, []byte(tc.in))
		got, _, ok := appendURLKey(nil, []byte(tc.in))
		if tc.want == "" {
			if ok || fast {
				t.Errorf("appendURLKey(%q) = %q; want no key", tc.in, got)
			}
			continue
		}
		if !ok || string(got) != tc.want || fast != tc.fast {
			t.Errorf("appendURLKey(%q) = %q, %v (fast %v); want %q (fast %v)", tc.in, got, ok, fast, tc.want, tc.fast)
		}
	}
	for _, bad := range []string{"https://www.", "https://", "http:///x", ""} {
		if got, _, ok := appendURLKey(nil, []byte(bad)); ok {
			t.Errorf("appendURLKey(%q) = %q, want no key", bad, got)
		}
	}
}
