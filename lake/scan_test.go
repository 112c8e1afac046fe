package lake

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/kwdata/kwdata/kw"
)

// TestScanMatchesRows writes related rows with nulls (none, some,
// all) in partitions of one and of several row groups and checks that
// Scan reads every column of every row as Read does.
func TestScanMatchesRows(t *testing.T) {
	cases := []struct {
		name  string
		rows  int
		nulls func(r *rand.Rand, i int) bool
	}{
		{"empty", 0, func(*rand.Rand, int) bool { return false }},
		{"no nulls", 1000, func(*rand.Rand, int) bool { return false }},
		{"some nulls", 1000, func(r *rand.Rand, _ int) bool { return r.IntN(4) == 0 }},
		{"all nulls", 500, func(*rand.Rand, int) bool { return true }},
		{"nulls from the second row group on", rowsPerGroup + 5000, func(_ *rand.Rand, i int) bool { return i > rowsPerGroup && i%3 == 0 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data := t.TempDir()
			r := rand.New(rand.NewPCG(1, 2))
			rows := make([]kw.RelatedRow, tc.rows)
			for i := range rows {
				rows[i] = kw.RelatedRow{Keyword: fmt.Sprintf("k%07d", i/10), Rank: int32(i%10 + 1), Related: strings.Repeat("é", r.IntN(5)),
					Overlap: int32(r.IntN(21)), SameIntent: r.IntN(2) == 0}
				if !tc.nulls(r, i) {
					rows[i].Volume = ptr(int64(r.IntN(1e6)) - 10)
				}
				if !tc.nulls(r, i) {
					rows[i].CPCMicros = ptr(int64(r.IntN(1e7)))
				}
			}
			if err := WritePartition(data, kw.DatasetRelated, "us", "2026-11-21", rows); err != nil {
				t.Fatal(err)
			}
			var got []kw.RelatedRow
			batches := 0
			err := Scan(context.Background(), data, kw.DatasetRelated, "us", "2026-11-21",
				[]string{"keyword", "rank", "related", "overlap", "volume", "cpc_micros", "same_intent"}, ScanOptions{}, func(b *Batch) error {
					batches++
					for i := 0; i < b.Rows; i++ {
						row := kw.RelatedRow{Keyword: string(b.Bytes(0, i)), Rank: b.Int32(1, i), Related: string(b.Bytes(2, i)),
							Overlap: b.Int32(3, i), SameIntent: b.Bool(6, i)}
						if v, ok := b.Int64(4, i); ok {
							row.Volume = ptr(v)
						} else if !b.Null(4, i) {
							t.Fatalf("row %d: Int64 says null, Null says not", len(got))
						}
						if v, ok := b.Int64(5, i); ok {
							row.CPCMicros = ptr(v)
						}
						got = append(got, row)
					}
					return nil
				})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(rows) {
				t.Fatalf("read %d rows in %d batches, wrote %d", len(got), batches, len(rows))
			}
			for i := range rows {
				if !relatedEqual(got[i], rows[i]) {
					t.Fatalf("row %d: read %s, wrote %s", i, relatedString(got[i]), relatedString(rows[i]))
				}
			}
		})
	}
}

func TestScanRefuses(t *testing.T) {
	data := t.TempDir()
	type row struct {
		Keyword string  `parquet:"keyword"`
		Ratio   float32 `parquet:"ratio"`
	}
	if err := WritePartition(data, kw.DatasetKeywords, "us", "2026-11-21", []row{{Keyword: "a"}}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		column, want string
	}{
		{"no_such_column", "no such column"},
		{"monthly.list.element.nothing", "no such column"},
		{"ratio", "not a string, INT32, INT64, DOUBLE or BOOLEAN"},
	}
	for _, tc := range tests {
		err := Scan(context.Background(), data, kw.DatasetKeywords, "us", "2026-11-21", []string{tc.column}, ScanOptions{}, func(*Batch) error { return nil })
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("column %s: err %v, want one saying %q", tc.column, err, tc.want)
		}
	}
	err := Scan(context.Background(), data, kw.DatasetRelated, "us", "2026-11-21", []string{"keyword"}, ScanOptions{}, func(*Batch) error { return nil })
	if !errors.Is(err, ErrNoPartition) {
		t.Errorf("missing partition: err %v, want ErrNoPartition", err)
	}
}

func ptr[T any](v T) *T { return &v }

func relatedEqual(a, b kw.RelatedRow) bool {
	eq := func(x, y *int64) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return a.Keyword == b.Keyword && a.Rank == b.Rank && a.Related == b.Related && a.Overlap == b.Overlap &&
		a.SameIntent == b.SameIntent && eq(a.Volume, b.Volume) && eq(a.CPCMicros, b.CPCMicros)
}

func relatedString(r kw.RelatedRow) string {
	s := func(p *int64) string {
		if p == nil {
			return "nil"
		}
		return fmt.Sprint(*p)
	}
	return fmt.Sprintf("{%q %d %q %d %s %s %v}", r.Keyword, r.Rank, r.Related, r.Overlap, s(r.Volume), s(r.CPCMicros), r.SameIntent)
}

// TestScanKeywordsMatchesRead writes keyword records with every kind
// of gap (null numbers, null texts, no months, months with null searches)
// in partitions of one and of several row groups, and checks that the
// columns Scan reads, list leaves included, rebuild every record as
// Read does.
func TestScanKeywordsMatchesRead(t *testing.T) {
	columns := []string{"keyword", "volume", "volume_range", "competition", "competition_level", "yoy_change",
		"monthly.list.element.month", "monthly.list.element.searches"}
	for _, tt := range []struct {
		n     int
		plain bool // plain list pages read by listFast, not value by value
	}{{0, true}, {1, true}, {1000, true}, {1000, false}, {rowsPerGroup + 3000, true}, {rowsPerGroup + 3000, false}} {
		n := tt.n
		t.Run(fmt.Sprintf("%d/plain=%v", n, tt.plain), func(t *testing.T) {
			defer func(was bool) { plainListPages = was }(plainListPages)
			plainListPages = tt.plain
			data := t.TempDir()
			r := rand.New(rand.NewPCG(3, uint64(n)))
			maybe := func() bool { return r.IntN(3) > 0 }
			recs := make([]kw.KeywordRecord, n)
			for i := range recs {
				rec := &recs[i]
				rec.Keyword, rec.Source = fmt.Sprintf("k%07d%s", i, strings.Repeat("é", r.IntN(3))), "test"
				if maybe() {
					rec.Volume = ptr(int64(r.IntN(1e6)))
				}
				if maybe() {
					rec.VolumeRange = "1K – 10K"
				}
				if maybe() {
					rec.Competition = ptr(r.Float64())
				}
				if maybe() {
					rec.CompetitionLevel = []string{"LOW", "MEDIUM", "HIGH"}[r.IntN(3)]
				}
				if maybe() {
					rec.YoYChange = ptr(r.NormFloat64() * 100)
				}
				for m := range r.IntN(14) {
					ms := kw.MonthlySearches{Month: fmt.Sprintf("2025-%02d", m%12+1)}
					if maybe() {
						ms.Searches = ptr(int64(r.IntN(1e5)))
					}
					rec.Monthly = append(rec.Monthly, ms)
				}
			}
			if err := WritePartition(data, kw.DatasetKeywords, "us", "2026-11-21", recs); err != nil {
				t.Fatal(err)
			}
			want, err := Read[kw.KeywordRecord](data, kw.DatasetKeywords, "us", "2026-11-21")
			if err != nil {
				t.Fatal(err)
			}
			var got []kw.KeywordRecord
			err = Scan(context.Background(), data, kw.DatasetKeywords, "us", "2026-11-21", columns, ScanOptions{}, func(b *Batch) error {
				for i := 0; i < b.Rows; i++ {
					rec := kw.KeywordRecord{Keyword: string(b.Bytes(0, i)), VolumeRange: string(b.Bytes(2, i)),
						CompetitionLevel: string(b.Bytes(4, i)), Source: "test"}
					if v, ok := b.Int64(1, i); ok {
						rec.Volume = ptr(v)
					}
					if v, ok := b.Float64(3, i); ok {
						rec.Competition = ptr(v)
					}
					if v, ok := b.Float64(5, i); ok {
						rec.YoYChange = ptr(v)
					}
					lo, hi := b.Span(6, i)
					if slo, shi := b.Span(7, i); slo != lo || shi != hi {
						t.Fatalf("row %d: months at [%d, %d), searches at [%d, %d)", len(got), lo, hi, slo, shi)
					}
					for k := lo; k < hi; k++ {
						ms := kw.MonthlySearches{Month: string(b.Bytes(6, k))}
						if v, ok := b.Int64(7, k); ok {
							ms.Searches = ptr(v)
						} else if !b.Null(7, k) {
							t.Fatalf("row %d: Int64 says null, Null says not", len(got))
						}
						rec.Monthly = append(rec.Monthly, ms)
					}
					got = append(got, rec)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) || len(want) != n {
				t.Fatalf("Scan read %d records, Read %d, wrote %d", len(got), len(want), n)
			}
			for i := range want {
				if len(want[i].Monthly) == 0 {
					want[i].Monthly = nil // Read may give an empty list for none
				}
				if !reflect.DeepEqual(got[i], want[i]) {
					t.Fatalf("record %d: Scan read %+v, Read %+v", i, got[i], want[i])
				}
			}
		})
	}
}
