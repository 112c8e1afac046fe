package lake

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/klauspost/compress/snappy"
	"github.com/kwdata/kwdata/kw"
	pq "github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

func sampleRecords() []kw.KeywordRecord {
	return []kw.KeywordRecord{
		{Keyword: "running shoes", Volume: i64(301000), CPCMicros: i64(1_230_000), Competition: f64(0.87), CompetitionLevel: "HIGH",
			BidLowMicros: i64(500_000), BidHighMicros: i64(2_000_000), Source: "planner-csv",
			Monthly: []kw.MonthlySearches{{Month: "2025-11", Searches: i64(246000)}, {Month: "2025-12", Searches: i64(301000)}}},
		{Keyword: "trail shoes", Volume: i64(1000), VolumeRange: "1K – 10K", Source: "planner-csv"},
	}
}

func TestWriteReadRoundTrip(t *testing.T) {
	data := t.TempDir()
	want := sampleRecords()
	if err := WritePartition(data, kw.DatasetKeywords, "US", "2026-11-21", want); err != nil {
		t.Fatal(err)
	}
	got, err := Read[kw.KeywordRecord](data, kw.DatasetKeywords, "us", "2026-11-21")
	if err != nil {
		t.Fatal(err)
	}
	// Parquet has no empty list distinct from null: normalise before comparing.
	for i := range got {
		if len(got[i].Monthly) == 0 {
			got[i].Monthly = nil
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, want)
	}
	if _, err := os.Stat(filepath.Join(data, "lake", "keywords", "country=us", "date=2026-11-21", "part-00000.parquet")); err != nil {
		t.Fatalf("partition is not at the Hive path: %v", err)
	}
	if n, err := Rows(data, kw.DatasetKeywords, "us", "2026-11-21"); err != nil || n != int64(len(want)) {
		t.Errorf("Rows = %d, %v; want %d", n, err, len(want))
	}
	if _, err := Rows(data, kw.DatasetKeywords, "gb", "2026-11-21"); !errors.Is(err, ErrNoPartition) {
		t.Errorf("Rows of a missing partition: %v, want ErrNoPartition", err)
	}
}

func TestCommitReplacesAndAbortLeavesLakeAlone(t *testing.T) {
	data := t.TempDir()
	rows := []kw.IntentRow{{Keyword: "a", Intent: "a"}, {Keyword: "b", Intent: "a"}}
	if err := WritePartition(data, kw.DatasetIntents, "gb", "2026-11-21", rows); err != nil {
		t.Fatal(err)
	}
	if err := WritePartition(data, kw.DatasetIntents, "gb", "2026-11-21", rows[:1]); err != nil {
		t.Fatal(err)
	}
	got, err := Read[kw.IntentRow](data, kw.DatasetIntents, "gb", "2026-11-21")
	if err != nil || len(got) != 1 {
		t.Fatalf("re-run did not replace the partition: %v %v", got, err)
	}

	w, err := Create[kw.IntentRow](data, kw.DatasetIntents, "gb", "2026-11-21")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rows...); err != nil {
		t.Fatal(err)
	}
	w.Abort()
	got, err = Read[kw.IntentRow](data, kw.DatasetIntents, "gb", "2026-11-21")
	if err != nil || len(got) != 1 {
		t.Fatalf("abort changed the partition: %v %v", got, err)
	}
	staged, _ := filepath.Glob(filepath.Join(data, ".staging", "*"))
	if len(staged) != 0 {
		t.Fatalf("abort left staging folders behind: %v", staged)
	}
}

func TestEmptyPartitionAndMissing(t *testing.T) {
	data := t.TempDir()
	if err := WritePartition[kw.RelatedRow](data, kw.DatasetRelated, "de", "2026-11-21", nil); err != nil {
		t.Fatal(err)
	}
	got, err := Read[kw.RelatedRow](data, kw.DatasetRelated, "de", "2026-11-21")
	if err != nil || len(got) != 0 {
		t.Fatalf("empty partition: %v %v", got, err)
	}
	_, err = Read[kw.RelatedRow](data, kw.DatasetRelated, "fr", "2026-11-21")
	if !errors.Is(err, ErrNoPartition) {
		t.Fatalf("missing partition: err = %v, want ErrNoPartition", err)
	}
}

func TestCountriesAndDates(t *testing.T) {
	data := t.TempDir()
	for _, p := range []struct{ cc, date string }{{"us", "2026-11-20"}, {"us", "2026-11-21"}, {"gb", "2026-11-21"}} {
		if err := WritePartition(data, kw.DatasetSERPs, p.cc, p.date, []kw.SERPRow{{Keyword: "k", Rank: 1, URL: "u", URLKey: "u"}}); err != nil {
			t.Fatal(err)
		}
	}
	cs, err := Countries(data, kw.DatasetSERPs, "2026-11-21")
	if err != nil || !reflect.DeepEqual(cs, []string{"gb", "us"}) {
		t.Fatalf("Countries = %v, %v", cs, err)
	}
	ds, err := Dates(data, kw.DatasetSERPs, "US")
	if err != nil || !reflect.DeepEqual(ds, []string{"2026-11-20", "2026-11-21"}) {
		t.Fatalf("Dates = %v, %v", ds, err)
	}
}

func TestDamagedFileIsAnError(t *testing.T) {
	data := t.TempDir()
	if err := WritePartition(data, kw.DatasetKeywords, "us", "2026-11-21", sampleRecords()); err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(kw.PartitionDir(data, kw.DatasetKeywords, "us", "2026-11-21"), "part-00000.parquet")
	b, _ := os.ReadFile(name)
	if err := os.WriteFile(name, b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read[kw.KeywordRecord](data, kw.DatasetKeywords, "us", "2026-11-21"); err == nil {
		t.Fatal("a truncated file was read without error")
	}
	// A file of another dataset's schema must not crash the reader.
	if err := WritePartition(data, kw.DatasetIntents, "us", "2026-11-21", []kw.IntentRow{{Keyword: "a", Intent: "a"}}); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(kw.PartitionDir(data, kw.DatasetIntents, "us", "2026-11-21"), "part-00000.parquet")
	b, _ = os.ReadFile(src)
	_ = os.WriteFile(name, b, 0o644)
	_, _ = Read[kw.KeywordRecord](data, kw.DatasetKeywords, "us", "2026-11-21")
}

// TestArrowReadsTheLake reads a partition file with Apache Arrow's Parquet
// implementation, the family pyarrow and pandas use, and checks the column
// types analysts are promised in docs/ANALYSTS.md.
func TestArrowReadsTheLake(t *testing.T) {
	data := t.TempDir()
	if err := WritePartition(data, kw.DatasetKeywords, "us", "2026-11-21", sampleRecords()); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(kw.PartitionDir(data, kw.DatasetKeywords, "us", "2026-11-21"), "part-00000.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tbl, err := pqarrow.ReadTable(context.Background(), f, parquet.NewReaderProperties(memory.DefaultAllocator),
		pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatalf("arrow cannot read the file: %v", err)
	}
	defer tbl.Release()
	if tbl.NumRows() != 2 {
		t.Fatalf("arrow read %d rows, want 2", tbl.NumRows())
	}
	want := map[string]string{
		"keyword": "utf8", "volume": "int64", "volume_range": "utf8", "cpc_micros": "int64",
		"competition": "float64", "competition_level": "utf8", "bid_low_micros": "int64",
		"bid_high_micros": "int64", "source": "utf8",
		"yoy_change": "float64", "three_month_change": "float64",
		"monthly": "list<element: struct<month: utf8, searches: int64 nullable>>",
	}
	for _, fld := range tbl.Schema().Fields() {
		w, ok := want[fld.Name]
		if !ok {
			t.Errorf("unexpected column %q", fld.Name)
			continue
		}
		if got := fld.Type.String(); got != w {
			t.Errorf("column %s has type %s, want %s", fld.Name, got, w)
		}
		delete(want, fld.Name)
		// Every metric is nullable: a value the source did not
		// give is NULL, never 0.
		if nullable := fld.Name != "keyword" && fld.Name != "source" && fld.Name != "monthly"; fld.Nullable != nullable {
			t.Errorf("column %s nullable = %v, want %v", fld.Name, fld.Nullable, nullable)
		}
	}
	for name := range want {
		t.Errorf("missing column %q", name)
	}
	col := tbl.Column(tbl.Schema().FieldIndices("volume_range")[0]).Data().Chunk(0)
	if !col.IsNull(0) || col.IsNull(1) {
		t.Error("volume_range should be null for an exact volume and set for a range")
	}
	// The second record has no CPC, competition or bids: NULL, not 0.
	for _, name := range []string{"cpc_micros", "competition", "competition_level", "bid_low_micros", "bid_high_micros"} {
		col := tbl.Column(tbl.Schema().FieldIndices(name)[0]).Data().Chunk(0)
		if col.IsNull(0) || !col.IsNull(1) {
			t.Errorf("%s: null = %v, %v; want set, then null", name, col.IsNull(0), col.IsNull(1))
		}
	}
}

// i64 and f64 are the nullable numbers of records and entries.
func i64(v int64) *int64     { return &v }
func f64(v float64) *float64 { return &v }

// TestOlderKeywordsPartitionsRead reads a keywords partition written before
// the change columns existed: they read as no value, so a lake date of an
// older release still builds.
func TestOlderKeywordsPartitionsRead(t *testing.T) {
	type oldRecord struct {
		Keyword string `parquet:"keyword"`
		Volume  *int64 `parquet:"volume,optional"`
		Source  string `parquet:"source"`
	}
	data := t.TempDir()
	v := int64(7)
	if err := WritePartition(data, kw.DatasetKeywords, "us", "2026-11-21", []oldRecord{{Keyword: "a", Volume: &v, Source: "x"}}); err != nil {
		t.Fatal(err)
	}
	got, err := Read[kw.KeywordRecord](data, kw.DatasetKeywords, "us", "2026-11-21")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Keyword != "a" || kw.Deref(got[0].Volume) != 7 || got[0].YoYChange != nil || got[0].ThreeMonthChange != nil {
		t.Fatalf("old partition read as %+v", got)
	}
}

// TestFastSnappyRoundTrip encodes pages of several kinds with the lake's
// Snappy codec and decodes them with a plain Snappy decoder, into a
// buffer too small and one large enough.
func TestFastSnappyRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	random := make([]byte, 100_000)
	for i := range random {
		random[i] = byte(rng.IntN(256))
	}
	pages := [][]byte{
		nil,
		[]byte("a"),
		[]byte(strings.Repeat("best running shoes for women ", 4000)),
		random,
	}
	for i, page := range pages {
		for _, dst := range [][]byte{nil, make([]byte, 0, 1<<20)} {
			enc, err := lakeSnappy.Encode(dst, page)
			if err != nil {
				t.Fatalf("page %d: %v", i, err)
			}
			got, err := snappy.Decode(nil, enc)
			if err != nil || !bytes.Equal(got, page) {
				t.Fatalf("page %d: decoded %d bytes (%v), want the %d encoded", i, len(got), err, len(page))
			}
		}
	}
}

// TestPartitionCodecs holds each dataset to its codec (codecFor): the
// similarity stage's outputs Snappy, the sources' data zstd; and another
// Parquet reader (Arrow's) reads a Snappy partition.
func TestPartitionCodecs(t *testing.T) {
	data := t.TempDir()
	const date = "2026-11-21"
	write := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	write(WritePartition(data, kw.DatasetKeywords, "us", date, sampleRecords()))
	write(WritePartition(data, kw.DatasetSERPs, "us", date, []kw.SERPRow{{Keyword: "a", Rank: 1, URL: "https://x.test/", URLKey: "x.test/"}}))
	write(WritePartition(data, kw.DatasetRelated, "us", date, []kw.RelatedRow{{Keyword: "a", Rank: 1, Related: "b", Overlap: 3, Volume: i64(10)}}))
	write(WritePartition(data, kw.DatasetIntents, "us", date, []kw.IntentRow{{Keyword: "b", Intent: "a", Overlap: 3}}))
	want := map[string]format.CompressionCodec{
		kw.DatasetKeywords: format.Zstd, kw.DatasetSERPs: format.Zstd,
		kw.DatasetRelated: format.Snappy, kw.DatasetIntents: format.Snappy,
	}
	for dataset, codec := range want {
		path := filepath.Join(kw.PartitionDir(data, dataset, "us", date), "part-00000.parquet")
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		st, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		pf, err := pq.OpenFile(f, st.Size())
		if err != nil {
			t.Fatalf("%s: %v", dataset, err)
		}
		for _, rg := range pf.Metadata().RowGroups {
			for _, c := range rg.Columns {
				if c.MetaData.Codec != codec {
					t.Errorf("%s: column %v compressed with %v, want %v", dataset, c.MetaData.PathInSchema, c.MetaData.Codec, codec)
				}
			}
		}
		if dataset == kw.DatasetRelated {
			tbl, err := pqarrow.ReadTable(context.Background(), f, parquet.NewReaderProperties(memory.DefaultAllocator),
				pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
			if err != nil {
				t.Fatalf("arrow cannot read %s: %v", dataset, err)
			}
			if tbl.NumRows() != 1 {
				t.Errorf("arrow read %d rows of %s, want 1", tbl.NumRows(), dataset)
			}
			tbl.Release()
		}
		f.Close()
	}
}

// TestPartitionChunkBounds checks that each row group's chunk of a
// sorted column carries its min and max, by which readers such as DuckDB
// skip row groups, though the pages' headers carry no statistics.
func TestPartitionChunkBounds(t *testing.T) {
	data := t.TempDir()
	const date = "2026-11-21"
	rows := make([]kw.RelatedRow, rowsPerGroup+100)
	for i := range rows {
		rows[i] = kw.RelatedRow{Keyword: fmt.Sprintf("k%07d", i/10), Rank: int32(i%10 + 1), Related: "r", Overlap: 1}
	}
	if err := WritePartition(data, kw.DatasetRelated, "us", date, rows); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(kw.PartitionDir(data, kw.DatasetRelated, "us", date), "part-00000.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	pf, err := pq.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	groups := pf.Metadata().RowGroups
	if len(groups) != 2 {
		t.Fatalf("%d row groups, want 2", len(groups))
	}
	first := 0
	for g, rg := range groups {
		s := rg.Columns[0].MetaData.Statistics
		last := first + int(rg.NumRows) - 1
		if string(s.MinValue) != rows[first].Keyword || string(s.MaxValue) != rows[last].Keyword {
			t.Errorf("row group %d: keyword from %q to %q, want %q to %q", g, s.MinValue, s.MaxValue, rows[first].Keyword, rows[last].Keyword)
		}
		first = last + 1
	}
}

// TestWriterSyncsFilesBehind checks that a full file is synced while the
// writer goes on with the next (the first file's sync waits until the
// second file is written), that Commit publishes only once every file is
// synced, and that a failed sync fails Commit and leaves the lake alone.
func TestWriterSyncsFilesBehind(t *testing.T) {
	const date = "2026-11-21"
	rows := []kw.IntentRow{{Keyword: "a", Intent: "a", Overlap: 20}, {Keyword: "b", Intent: "a", Overlap: 9}}
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprintf("fail=%v", fail), func(t *testing.T) {
			data := t.TempDir()
			var mu sync.Mutex
			synced := map[string]bool{}
			second := make(chan struct{})
			syncFile = func(f *os.File) error {
				name := filepath.Base(f.Name())
				if name == "part-00000.parquet" {
					<-second
				}
				mu.Lock()
				synced[name] = true
				mu.Unlock()
				if fail && name == "part-00000.parquet" {
					return errors.New("disk gone")
				}
				return f.Sync()
			}
			t.Cleanup(func() { syncFile = (*os.File).Sync })
			w, err := Create[kw.IntentRow](data, kw.DatasetIntents, "us", date)
			if err != nil {
				t.Fatal(err)
			}
			for _, step := range []func() error{func() error { return w.Write(rows[:1]...) }, w.roll, func() error { return w.Write(rows[1:]...) }} {
				if err := step(); err != nil {
					t.Fatal(err)
				}
			}
			close(second) // the first file's sync could not have ended before
			err = w.Commit()
			mu.Lock()
			n := len(synced)
			mu.Unlock()
			if n != 2 {
				t.Fatalf("Commit returned with %d of 2 files synced", n)
			}
			got, rerr := Read[kw.IntentRow](data, kw.DatasetIntents, "us", date)
			if fail {
				if err == nil || !strings.Contains(err.Error(), "disk gone") {
					t.Fatalf("Commit after a failed sync: %v", err)
				}
				if len(got) != 0 {
					t.Fatalf("a failed Commit published %d rows", len(got))
				}
				return
			}
			if err != nil || rerr != nil || len(got) != 2 {
				t.Fatalf("Commit: %v; read %d rows (%v)", err, len(got), rerr)
			}
		})
	}
}

// TestWriteSections checks that sections written at once read back in
// section order after the rows written before them, empty sections
// included, and that a section with other than its count of rows is an
// error.
func TestWriteSections(t *testing.T) {
	const date = "2026-11-21"
	row := func(i int) kw.IntentRow {
		return kw.IntentRow{Keyword: fmt.Sprintf("k%06d", i), Intent: fmt.Sprintf("i%d", i%7), Overlap: int32(i % 21)}
	}
	data := t.TempDir()
	w, err := Create[kw.IntentRow](data, kw.DatasetIntents, "us", date)
	if err != nil {
		t.Fatal(err)
	}
	var want []kw.IntentRow
	for i := range 5 {
		want = append(want, row(i))
	}
	if err := w.Write(want...); err != nil {
		t.Fatal(err)
	}
	sizes := []int{1000, 0, 3, 2500}
	starts := []int{5}
	for _, n := range sizes {
		starts = append(starts, starts[len(starts)-1]+n)
	}
	for i := 5; i < starts[len(sizes)]; i++ {
		want = append(want, row(i))
	}
	err = w.WriteSections(sizes, func(s int, emit func([]kw.IntentRow) error) error {
		for lo := starts[s]; lo < starts[s+1]; lo += 128 {
			if err := emit(want[lo:min(lo+128, starts[s+1])]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	got, err := Read[kw.IntentRow](data, kw.DatasetIntents, "us", date)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("read %d rows, wrote %d; first difference at %d", len(got), len(want), firstDiff(got, want))
	}

	for _, extra := range []int{-1, 1} {
		w, err := Create[kw.IntentRow](t.TempDir(), kw.DatasetIntents, "us", date)
		if err != nil {
			t.Fatal(err)
		}
		err = w.WriteSections([]int{3, 3}, func(s int, emit func([]kw.IntentRow) error) error {
			n := 3
			if s == 1 {
				n += extra
			}
			return emit(want[:n])
		})
		if err == nil || !strings.Contains(err.Error(), "section 1 has") {
			t.Errorf("a section of %d rows for 3: error %v", 3+extra, err)
		}
		w.Abort()
	}
}

func firstDiff[T any](a, b []T) int {
	for i := range min(len(a), len(b)) {
		if !reflect.DeepEqual(a[i], b[i]) {
			return i
		}
	}
	return min(len(a), len(b))
}
