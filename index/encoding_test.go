package index

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/kwdata/kwdata/kw"
)

// fullEntry has every field set, the way DecodeEntry returns it (no
// keyword, country or self intent).
func fullEntry() kw.Entry {
	e := kw.Entry{
		Volume: i64(301000), VolumeRange: "100K – 1M", CPCMicros: i64(1_234_567), Competition: f64(0.87), CompetitionLevel: "HIGH",
		Intent: "running shoes", Trend: months("2025-11", 12, 246000),
		YoYChange: f64(-20), ThreeMonthChange: f64(math.Inf(1)),
	}
	for i := 0; i < 10; i++ {
		e.Related = append(e.Related, kw.RelatedKeyword{Keyword: fmt.Sprintf("related %d", i), Volume: i64(int64(90500 - i)), CPCMicros: i64(int64(1_450_000 + i)), Overlap: int32(14 - i), SameIntent: i < 3})
	}
	return e
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		in   kw.Entry
		want kw.Entry // what DecodeEntry returns
	}{
		{"zero", kw.Entry{}, kw.Entry{}},
		{"full", fullEntry(), fullEntry()},
		{"key fields are not stored", kw.Entry{Keyword: "k", Country: "US", Intent: "k", Volume: i64(5)}, kw.Entry{Volume: i64(5)}},
		{"negative numbers", kw.Entry{Volume: i64(-1), CPCMicros: i64(math.MinInt64 + 1), Related: []kw.RelatedKeyword{{Volume: i64(math.MaxInt64), CPCMicros: i64(-7), Overlap: -3}}},
			kw.Entry{Volume: i64(-1), CPCMicros: i64(math.MinInt64 + 1), Related: []kw.RelatedKeyword{{Volume: i64(math.MaxInt64), CPCMicros: i64(-7), Overlap: -3}}}},
		{"the least int64 is stored as the next one", kw.Entry{Volume: i64(math.MinInt64)}, kw.Entry{Volume: i64(math.MinInt64 + 1)}},
		{"zero is a value, not a missing one", kw.Entry{Volume: i64(0), CPCMicros: i64(0), Competition: f64(0),
			Trend:   []kw.MonthlySearches{{Month: "2026-01", Searches: i64(0)}},
			Related: []kw.RelatedKeyword{{Keyword: "r", Volume: i64(0), CPCMicros: i64(0)}}},
			kw.Entry{Volume: i64(0), CPCMicros: i64(0), Competition: f64(0),
				Trend:   []kw.MonthlySearches{{Month: "2026-01", Searches: i64(0)}},
				Related: []kw.RelatedKeyword{{Keyword: "r", Volume: i64(0), CPCMicros: i64(0)}}}},
		{"missing values stay missing", kw.Entry{VolumeRange: "1K – 10K", CompetitionLevel: "HIGH",
			Trend:   []kw.MonthlySearches{{Month: "2026-01"}, {Month: "2026-02", Searches: i64(7)}},
			Related: []kw.RelatedKeyword{{Keyword: "r", Overlap: 3}}},
			kw.Entry{VolumeRange: "1K – 10K", CompetitionLevel: "HIGH",
				Trend:   []kw.MonthlySearches{{Month: "2026-01"}, {Month: "2026-02", Searches: i64(7)}},
				Related: []kw.RelatedKeyword{{Keyword: "r", Overlap: 3}}}},
		{"changes", kw.Entry{YoYChange: f64(900), ThreeMonthChange: f64(-12.5)}, kw.Entry{YoYChange: f64(900), ThreeMonthChange: f64(-12.5)}},
		{"change zero is a value", kw.Entry{YoYChange: f64(0)}, kw.Entry{YoYChange: f64(0)}},
		{"change infinity", kw.Entry{YoYChange: f64(math.Inf(1))}, kw.Entry{YoYChange: f64(math.Inf(1))}},
		{"change NaN and -Inf are no value", kw.Entry{YoYChange: f64(math.NaN()), ThreeMonthChange: f64(math.Inf(-1))}, kw.Entry{}},
		{"change rounds to hundredths and clamps", kw.Entry{YoYChange: f64(1.23456), ThreeMonthChange: f64(1e300)}, kw.Entry{YoYChange: f64(1.23), ThreeMonthChange: f64(1e9)}},
		{"levels", kw.Entry{CompetitionLevel: "LOW"}, kw.Entry{CompetitionLevel: "LOW"}},
		{"medium", kw.Entry{CompetitionLevel: "MEDIUM"}, kw.Entry{CompetitionLevel: "MEDIUM"}},
		{"other level", kw.Entry{CompetitionLevel: "UNSPECIFIED"}, kw.Entry{CompetitionLevel: "UNSPECIFIED"}},
		{"competition rounds to hundredths", kw.Entry{Competition: f64(0.876)}, kw.Entry{Competition: f64(0.88)}},
		{"competition clamps", kw.Entry{Competition: f64(-0.5)}, kw.Entry{Competition: f64(0)}},
		{"competition NaN is no value", kw.Entry{Competition: f64(math.NaN())}, kw.Entry{}},
		{"competition huge", kw.Entry{Competition: f64(1e9)}, kw.Entry{Competition: f64(655.34)}},
		{"last 12 months kept", kw.Entry{Trend: months("2024-01", 30, 0)}, kw.Entry{Trend: months("2025-07", 12, 18)}},
		{"bad months dropped", kw.Entry{Trend: []kw.MonthlySearches{{Month: "2026-1", Searches: i64(1)}, {Month: "2026-02", Searches: i64(2)}, {Month: "2026-02", Searches: i64(3)}, {Month: "2025-12", Searches: i64(4)}, {Month: "0999-00"}, {Month: "2027-12", Searches: i64(-5)}}},
			kw.Entry{Trend: []kw.MonthlySearches{{Month: "2026-02", Searches: i64(2)}, {Month: "2027-12", Searches: i64(-5)}}}},
		{"months outside the cached years", kw.Entry{Trend: []kw.MonthlySearches{{Month: "0001-01"}, {Month: "1999-12"}, {Month: "2100-01"}, {Month: "9999-12"}}},
			kw.Entry{Trend: []kw.MonthlySearches{{Month: "0001-01"}, {Month: "1999-12"}, {Month: "2100-01"}, {Month: "9999-12"}}}},
		{"first 10 related kept", kw.Entry{Related: make([]kw.RelatedKeyword, 15)}, kw.Entry{Related: make([]kw.RelatedKeyword, 10)}},
		{"unicode", kw.Entry{Intent: "laufschuhe größe 42", Related: []kw.RelatedKeyword{{Keyword: "靴"}}}, kw.Entry{Intent: "laufschuhe größe 42", Related: []kw.RelatedKeyword{{Keyword: "靴"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := EncodeEntry([]byte("prefix"), &tt.in)
			if !bytes.HasPrefix(b, []byte("prefix")) {
				t.Fatalf("EncodeEntry did not append")
			}
			got, err := DecodeEntry(b[len("prefix"):])
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("round trip\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestDecodeEntryRefuses(t *testing.T) {
	good := fullEntry()
	valid := EncodeEntry(nil, &good)
	tests := []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "empty"},
		{"future version", append([]byte{4}, valid[1:]...), "unknown format version 4"},
		{"change out of range", []byte{3, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0, 0, 0, 0, 0}, "change out of range"},
		{"version zero", []byte{0}, "unknown format version 0"},
		{"trailing byte", append(append([]byte{}, valid...), 0), "trailing"},
		{"truncated", valid[:len(valid)-1], "truncated"},
		{"version only", []byte{1}, "truncated"},
		{"string too long", []byte{1, 0, 0x7f}, "string longer"},
		{"bad level", []byte{1, 0, 0, 0, 0, 9, 0, 0, 0}, "competition level"},
		{"13 trend months", []byte{1, 0, 0, 0, 0, 0, 0, 13}, "count out of range"},
		{"11 related", append([]byte{1, 0, 0, 0, 0, 0, 0, 0, 11}, make([]byte, 60)...), "count out of range"},
		{"related count beyond the bytes", []byte{1, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0}, "count out of range"},
		{"repeated month", []byte{1, 0, 0, 0, 0, 0, 0, 2, 1, 0, 0, 0, 0}, "not ascending"},
		{"month out of range", []byte{1, 0, 0, 0, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0x0f, 0, 0}, "out of range"},
		{"varint overflow", []byte{1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}, "overflows"},
		{"competition overflow", []byte{1, 0, 0, 0, 0x80, 0x80, 0x04, 0, 0, 0, 0}, "competition out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := DecodeEntry(tt.b)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, errCorrupt) {
				t.Fatalf("DecodeEntry error %v, want one containing %q", err, tt.want)
			}
			if !reflect.DeepEqual(e, kw.Entry{}) {
				t.Errorf("DecodeEntry returned %+v with its error", e)
			}
		})
	}
}

// TestDecodeEntryVersion1 reads a value of the layout before missing
// values, which a server meets in the build it serves when it is upgraded:
// every number of it is a value, zero included.
func TestDecodeEntryVersion1(t *testing.T) {
	b := []byte{1,
		10,               // volume 5 (zig-zag)
		0,                // no range
		0,                // cpc 0
		87,               // competition 0.87
		3,                // HIGH
		0,                // intent is the keyword
		1,                // one month:
		0xf8, 0xbd, 0x01, // 2026-01 (2026*12+0 = 24312)
		4,      // 2 searches
		1,      // one related:
		1, 'r', // "r"
		0, 2, // volume 0, cpc 1
		7, // overlap 3, same intent
	}
	got, err := DecodeEntry(b)
	if err != nil {
		t.Fatal(err)
	}
	want := kw.Entry{Volume: i64(5), CPCMicros: i64(0), Competition: f64(0.87), CompetitionLevel: "HIGH",
		Trend:   []kw.MonthlySearches{{Month: "2026-01", Searches: i64(2)}},
		Related: []kw.RelatedKeyword{{Keyword: "r", Volume: i64(0), CPCMicros: i64(1), Overlap: 3, SameIntent: true}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("DecodeEntry(version 1) =\n%+v, want\n%+v", got, want)
	}
}

// TestDecodeEntryVersion2 reads a value of the layout before the changes:
// it has none.
func TestDecodeEntryVersion2(t *testing.T) {
	b := []byte{2,
		11,   // volume 5 (zig-zag plus one)
		0,    // no range
		0,    // no cpc
		88,   // competition 0.87
		3,    // HIGH
		0,    // intent is the keyword
		0, 0, // no trend, no related
	}
	got, err := DecodeEntry(b)
	if err != nil {
		t.Fatal(err)
	}
	want := kw.Entry{Volume: i64(5), Competition: f64(0.87), CompetitionLevel: "HIGH"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("DecodeEntry(version 2) =\n%+v, want\n%+v", got, want)
	}
}

func TestDecodeEntryAllocations(t *testing.T) {
	e := fullEntry()
	b := EncodeEntry(nil, &e)
	// One copy of the value for all strings, one trend slice, one related
	// slice, one block for the numbers; month names come from a table.
	if n := testing.AllocsPerRun(100, func() { DecodeEntry(b) }); n > 4 {
		t.Errorf("DecodeEntry allocates %v times, want at most 4", n)
	}
}

func FuzzDecodeEntry(f *testing.F) {
	full := fullEntry()
	f.Add(EncodeEntry(nil, &full))
	f.Add(EncodeEntry(nil, &kw.Entry{}))
	f.Add(EncodeEntry(nil, &kw.Entry{CompetitionLevel: "X", Trend: months("1999-11", 3, -2)}))
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 2, 1, 0, 1, 0, 0})
	f.Add([]byte{})
	f.Add([]byte{2})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := DecodeEntry(b)
		if err != nil {
			return
		}
		if len(e.Trend) > maxTrend || len(e.Related) > maxRelated {
			t.Fatalf("decoded %d months and %d related", len(e.Trend), len(e.Related))
		}
		// Whatever decodes re-encodes to a canonical form that decodes to
		// the same entry and re-encodes to itself.
		enc := EncodeEntry(nil, &e)
		e2, err := DecodeEntry(enc)
		if err != nil {
			t.Fatalf("re-encoded entry does not decode: %v", err)
		}
		if !reflect.DeepEqual(e, e2) {
			t.Fatalf("round trip changed the entry\n%+v\n%+v", e, e2)
		}
		if enc2 := EncodeEntry(nil, &e2); !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding not stable:\n%x\n%x", enc, enc2)
		}
		// An older version gains the two one-byte "no change" fields.
		grown := 0
		if b[0] < ValueVersion {
			grown = 2
		}
		if len(enc) > len(b)+grown {
			t.Fatalf("canonical encoding (%d bytes) longer than the input (%d)", len(enc), len(b))
		}
	})
}

func BenchmarkEncodeEntry(b *testing.B) {
	e := fullEntry()
	buf := EncodeEntry(nil, &e)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf = EncodeEntry(buf[:0], &e)
	}
}

func BenchmarkDecodeEntry(b *testing.B) {
	e := fullEntry()
	buf := EncodeEntry(nil, &e)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeEntry(buf); err != nil {
			b.Fatal(err)
		}
	}
}
