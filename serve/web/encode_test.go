package web

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/serve/internal/servetest"
)

// docOf is the reference document: what encoding/json prints for entry e.
func docOf(e *kw.Entry, country, updated string) servetest.KeywordDoc {
	d := servetest.KeywordDoc{
		Keyword: e.Keyword, Country: country, Volume: e.Volume, VolumeRange: e.VolumeRange,
		CPC:     dollarsOf(e.CPCMicros),
		Updated: updated, Intent: e.Intent,
		Trend: []servetest.TrendDoc{}, Related: []servetest.RelatedDoc{},
	}
	if e.Competition != nil {
		d.Competition = servetest.F64(float64(CompetitionHundredths(*e.Competition)) / 100)
	}
	change := func(v *float64) (*float64, bool) {
		switch {
		case v == nil || math.IsNaN(*v) || math.IsInf(*v, -1):
			return nil, false
		case math.IsInf(*v, 1):
			return nil, true
		}
		return v, false
	}
	d.YoY, d.YoYFromZero = change(e.YoYChange)
	d.ThreeMonth, d.TMFromZero = change(e.ThreeMonthChange)
	for _, m := range TrimTrend(e.Trend) {
		d.Trend = append(d.Trend, servetest.TrendDoc{Month: m.Month, Volume: m.Searches})
	}
	for i, r := range e.Related {
		if i == 10 {
			break
		}
		d.Related = append(d.Related, servetest.RelatedDoc{
			Keyword: r.Keyword, Volume: r.Volume, CPC: dollarsOf(r.CPCMicros),
			Overlap: fmt.Sprintf("%d/20", r.Overlap), SameIntent: r.SameIntent,
		})
	}
	return d
}

// dollarsOf is the reference rounding of micros to dollars and cents.
func dollarsOf(micros *int64) *float64 {
	if micros == nil {
		return nil
	}
	return servetest.F64(float64(MicrosToCents(*micros)) / 100)
}

// trickyStrings exercise every branch of AppendString.
var trickyStrings = []string{
	"", "plain", `"quoted"`, `back\slash`, "<script>alert(1)</script>", "a&b", "tab\tnew\nret\rbs\bff\f",
	"\x00\x01\x1f\x7f", "ünïcödé 日本語 🏃", "\u2028\u2029", "\xff", "\xc3", "a\xc3(b", "\xed\xa0\x80",
	"\xf4\x90\x80\x80", "😀\xf0\x9f\x98", "end\\", `"`, "\u00a0nbsp", "\ufeffbom", "\ufffd",
}

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	check := func(s string) {
		t.Helper()
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendString(nil, s); string(got) != string(want) {
			t.Errorf("AppendString(%q) = %s, want %s", s, got, want)
		}
	}
	for _, s := range trickyStrings {
		check(s)
	}
	for b := range 256 {
		check(string([]byte{byte(b)}))
		check("x" + string([]byte{byte(b)}) + "y")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		check(randomString(rng))
	}
}

// randomString mixes ASCII, control bytes, multi-byte runes and broken UTF-8.
func randomString(rng *rand.Rand) string {
	pieces := []string{"a", "Z", " ", `"`, `\`, "<", ">", "&", "\n", "\x00", "\x1b", "\x7f", "é", "日", "🏃",
		"\u2028", "\u2029", "\xff", "\xc3", "\xe2\x80", "\xed\xa0\x80"}
	var b strings.Builder
	for range rng.IntN(30) {
		b.WriteString(pieces[rng.IntN(len(pieces))])
	}
	return b.String()
}

func TestKeywordJSONMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	entries := []kw.Entry{{}, {Keyword: "x", Trend: []kw.MonthlySearches{}, Related: []kw.RelatedKeyword{}}}
	f := servetest.NewIndex(t)
	for _, e := range f.Entries {
		entries = append(entries, e)
	}
	for i := range 500 {
		e := kw.Entry{
			Keyword:     randomString(rng),
			Volume:      servetest.I64(rng.Int64N(1 << 40)),
			CPCMicros:   servetest.I64(rng.Int64N(1 << 45)),
			Competition: servetest.F64(float64(rng.IntN(101)) / 100),
			Intent:      randomString(rng),
		}
		switch i % 5 {
		case 0:
			e.VolumeRange = randomString(rng)
		case 1:
			e.Competition = servetest.F64(rng.Float64())
		case 2:
			e.Volume, e.CPCMicros = servetest.I64(-*e.Volume), servetest.I64(-*e.CPCMicros) // never real, but must stay valid JSON
		case 3:
			e.Volume, e.CPCMicros, e.Competition = nil, nil, nil // the source gave none
		}
		// Changes as the index decodes them: hundredths of a percent,
		// whole percents, zero, ∞ or none.
		changes := []*float64{nil, servetest.F64(0), servetest.F64(math.Inf(1)), servetest.F64(float64(rng.IntN(20001)-100) / 100), servetest.F64(float64(rng.IntN(2000) - 100)), servetest.F64(-100), servetest.F64(1e9)}
		e.YoYChange, e.ThreeMonthChange = changes[rng.IntN(len(changes))], changes[rng.IntN(len(changes))]
		for j := range rng.IntN(20) {
			m := kw.MonthlySearches{Month: fmt.Sprintf("20%02d-%02d", 10+j/12, 1+j%12), Searches: servetest.I64(rng.Int64N(1e9))}
			if rng.IntN(5) == 0 {
				m.Searches = nil
			}
			e.Trend = append(e.Trend, m)
		}
		for range rng.IntN(14) {
			r := kw.RelatedKeyword{
				Keyword: randomString(rng), Volume: servetest.I64(rng.Int64N(1e9)), CPCMicros: servetest.I64(rng.Int64N(1e10)),
				Overlap: int32(rng.IntN(21)), SameIntent: rng.IntN(2) == 0,
			}
			if rng.IntN(5) == 0 {
				r.Volume, r.CPCMicros = nil, nil
			}
			e.Related = append(e.Related, r)
		}
		entries = append(entries, e)
	}
	for i := range entries {
		e := &entries[i]
		want, err := json.Marshal(docOf(e, "US", "2026-11-21"))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, '\n')
		got := AppendKeywordJSON(nil, e, "US", "2026-11-21")
		if string(got) != string(want) {
			t.Fatalf("entry %d:\ngot  %s\nwant %s", i, got, want)
		}
	}
}

func TestMicrosToCents(t *testing.T) {
	for _, tt := range []struct {
		micros int64
		want   string // as the JSON number
	}{
		{1_234_999, "1.23"}, {1_235_000, "1.24"}, {0, "0"}, {5_000, "0.01"}, {4_999, "0"},
		{1_000_000, "1"}, {1_200_000, "1.2"}, {1_204_999, "1.2"}, {1_205_000, "1.21"},
		{999_999, "1"}, {994_999, "0.99"}, {10_000, "0.01"}, {15_000, "0.02"},
		{123_456_789_000, "123456.79"}, {-5_000, "-0.01"}, {-4_999, "0"}, {-1_234_999, "-1.23"},
		{math.MaxInt64, "9223372036854.78"}, {math.MinInt64, "-9223372036854.78"},
	} {
		if got := string(AppendHundredths(nil, MicrosToCents(tt.micros))); got != tt.want {
			t.Errorf("cpc of %d micros = %s, want %s", tt.micros, got, tt.want)
		}
	}
}

// TestMicrosToCentsOracle checks the rounding against exact rational
// arithmetic.
func TestMicrosToCentsOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 20000 {
		m := rng.Int64N(1e12)
		if rng.IntN(4) == 0 {
			m = m - m%5000 // exact halves and multiples
		}
		// Half up: floor(m/10^4 + 1/2).
		r := new(big.Rat).SetFrac64(m, 10_000)
		r.Add(r, big.NewRat(1, 2))
		want := new(big.Int).Quo(r.Num(), r.Denom()).Int64()
		if got := MicrosToCents(m); got != want {
			t.Fatalf("MicrosToCents(%d) = %d, want %d", m, got, want)
		}
	}
}

func TestCompetitionHundredths(t *testing.T) {
	for _, tt := range []struct {
		c    float64
		want string
	}{
		{0, "0"}, {0.87, "0.87"}, {0.5, "0.5"}, {1, "1"}, {0.999, "1"}, {0.994, "0.99"},
		{0.285, "0.29"}, {0.125, "0.13"}, {0.124999, "0.12"}, {0.01, "0.01"}, {0.005, "0.01"},
		{0.0049, "0"}, {math.NaN(), "0"}, {math.Inf(1), "0"}, {math.Inf(-1), "0"}, {2.5, "2.5"},
	} {
		if got := string(AppendHundredths(nil, CompetitionHundredths(tt.c))); got != tt.want {
			t.Errorf("competition %v = %s, want %s", tt.c, got, tt.want)
		}
	}
	// Every competition index of the planner (0–100) survives the trip
	// through index/100 unchanged.
	for i := range 101 {
		if got := CompetitionHundredths(float64(i) / 100); got != int64(i) {
			t.Errorf("competition %d/100 = %d hundredths", i, got)
		}
	}
}

func TestTrimTrend(t *testing.T) {
	in := servetest.Months(t, "2025-11", 14, 0)
	got := TrimTrend(in)
	if len(got) != 12 || got[0].Month != "2024-12" || got[11].Month != "2025-11" {
		t.Errorf("TrimTrend = %v", got)
	}
	rev := append([]kw.MonthlySearches(nil), in...)
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	got = TrimTrend(rev)
	if len(got) != 12 || got[0].Month != "2024-12" || got[11].Month != "2025-11" || kw.Deref(got[11].Searches) != 13 {
		t.Errorf("TrimTrend of reversed = %v", got)
	}
	if rev[0].Month != "2025-11" {
		t.Error("TrimTrend sorted its input in place")
	}
	if got := TrimTrend(nil); len(got) != 0 {
		t.Errorf("TrimTrend(nil) = %v", got)
	}
}

// FuzzAppendString checks the escaper against encoding/json on arbitrary
// bytes.
func FuzzAppendString(f *testing.F) {
	for _, s := range trickyStrings {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		got := AppendString(nil, s)
		if string(got) != string(want) {
			t.Fatalf("AppendString(%q) = %s, want %s", s, got, want)
		}
		if !utf8.Valid(got) {
			t.Fatalf("AppendString(%q) is not UTF-8", s)
		}
	})
}

func BenchmarkEncode(b *testing.B) {
	f := servetest.NewIndex(b)
	e := f.Entries[[2]string{"US", "running shoes"}]
	b.Run("append", func(b *testing.B) {
		buf := make([]byte, 0, 4096)
		b.ReportAllocs()
		for b.Loop() {
			buf = AppendKeywordJSON(buf[:0], &e, "US", "2026-11-21")
		}
		b.SetBytes(int64(len(buf)))
	})
	b.Run("encoding_json", func(b *testing.B) {
		var n int
		b.ReportAllocs()
		for b.Loop() {
			out, err := json.Marshal(docOf(&e, "US", "2026-11-21"))
			if err != nil {
				b.Fatal(err)
			}
			n = len(out)
		}
		b.SetBytes(int64(n))
	})
}
