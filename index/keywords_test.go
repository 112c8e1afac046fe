package index

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/lake"
)

// TestStreamKeywordsMatchesRead streams partitions whose row groups split
// into several chunks, with gaps of every kind, and checks each record
// against lake.Read's reflective reading of the same rows.
func TestStreamKeywordsMatchesRead(t *testing.T) {
	for _, n := range []int{0, 1, kwChunkRows - 1, 2*kwChunkRows + 17} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			data := t.TempDir()
			r := rand.New(rand.NewPCG(5, uint64(n)))
			maybe := func() bool { return r.IntN(4) > 0 }
			recs := make([]kw.KeywordRecord, n)
			for i := range recs {
				rec := &recs[i]
				rec.Keyword, rec.Source = fmt.Sprintf("k%07d", i), "test"
				if maybe() {
					rec.Volume = i64(int64(r.IntN(1e6)))
				}
				if maybe() {
					rec.VolumeRange = "100 – 1K"
				}
				if maybe() {
					rec.CPCMicros = i64(int64(r.IntN(1e7)))
				}
				if maybe() {
					rec.Competition = f64(r.Float64())
				}
				if maybe() {
					rec.CompetitionLevel = "HIGH"
				}
				if maybe() {
					rec.BidLowMicros = i64(int64(r.IntN(1e6)))
				}
				if maybe() {
					rec.BidHighMicros = i64(int64(r.IntN(1e7)))
				}
				if maybe() {
					rec.YoYChange = f64(r.NormFloat64())
				}
				if maybe() {
					rec.ThreeMonthChange = f64(r.NormFloat64())
				}
				for m := range r.IntN(13) {
					ms := kw.MonthlySearches{Month: fmt.Sprintf("2026-%02d", m%12+1)}
					if maybe() {
						ms.Searches = i64(int64(r.IntN(1e5)))
					}
					rec.Monthly = append(rec.Monthly, ms)
				}
			}
			if err := lake.WritePartition(data, kw.DatasetKeywords, "us", "2026-11-21", recs); err != nil {
				t.Fatal(err)
			}
			want, err := lake.Read[kw.KeywordRecord](data, kw.DatasetKeywords, "us", "2026-11-21")
			if err != nil {
				t.Fatal(err)
			}
			for i := range want {
				want[i].Source = "" // not indexed, so not read
				if len(want[i].Monthly) == 0 {
					want[i].Monthly = nil
				}
			}
			s := streamKeywords(context.Background(), data, "us", "2026-11-21")
			i := 0
			// A record is valid until the next peek after next, so each is
			// checked as it comes.
			for rec := s.peek(); rec != nil; rec = s.peek() {
				if i >= len(want) {
					t.Fatalf("streamed more than the %d records Read gave", len(want))
				}
				if !reflect.DeepEqual(*rec, want[i]) {
					t.Fatalf("record %d: streamed %+v, Read %+v", i, *rec, want[i])
				}
				i++
				s.next()
			}
			if err := s.close(); err != nil {
				t.Fatal(err)
			}
			if i != n || len(want) != n {
				t.Fatalf("streamed %d records, Read %d, wrote %d", i, len(want), n)
			}
		})
	}
}

// TestStreamKeywordsOlderPartition reads a keywords partition written
// before most metric columns existed (keyword, volume and the monthly
// series only): the stream gives what lake.Read gives, null for each
// missing column, instead of refusing the partition.
func TestStreamKeywordsOlderPartition(t *testing.T) {
	type oldRecord struct {
		Keyword string               `parquet:"keyword"`
		Volume  *int64               `parquet:"volume,optional"`
		Monthly []kw.MonthlySearches `parquet:"monthly,list"`
	}
	data := t.TempDir()
	rows := []oldRecord{
		{Keyword: "a", Volume: i64(10), Monthly: []kw.MonthlySearches{{Month: "2026-01", Searches: i64(3)}}},
		{Keyword: "b"},
	}
	if err := lake.WritePartition(data, kw.DatasetKeywords, "us", "2026-11-21", rows); err != nil {
		t.Fatal(err)
	}
	want, err := lake.Read[kw.KeywordRecord](data, kw.DatasetKeywords, "us", "2026-11-21")
	if err != nil {
		t.Fatal(err)
	}
	s := streamKeywords(context.Background(), data, "us", "2026-11-21")
	i := 0
	for rec := s.peek(); rec != nil; rec = s.peek() {
		w := want[i]
		if len(w.Monthly) == 0 {
			w.Monthly = nil
		}
		if !reflect.DeepEqual(*rec, w) {
			t.Fatalf("record %d: streamed %+v, Read %+v", i, *rec, w)
		}
		i++
		s.next()
	}
	if err := s.close(); err != nil {
		t.Fatalf("an older partition is refused: %v", err)
	}
	if i != len(rows) || want[0].CPCMicros != nil || want[0].YoYChange != nil {
		t.Fatalf("streamed %d of %d; Read gave %+v", i, len(rows), want[0])
	}
}
