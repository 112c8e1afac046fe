package lake

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"unsafe"

	"github.com/parquet-go/parquet-go"

	"github.com/kwdata/kwdata/kw"
)

// TestScanParallelMatchesRead checks that the columnar, parallel reader
// returns the same values in the same order as Read, over several row
// groups and files, with any number of workers, for required and optional
// (null) columns, and that decode sees every batch exactly once.
func TestScanParallelMatchesRead(t *testing.T) {
	data := t.TempDir()
	const n = 3*rowsPerGroup + 1234
	rows := make([]kw.SERPRow, n)
	for i := range rows {
		rows[i] = kw.SERPRow{Keyword: fmt.Sprintf("kw %07d", i/20), Rank: int32(i%20 + 1), URL: "https://x/", URLKey: fmt.Sprintf("site%d.example/%d", i%977, i%13)}
	}
	// Two files: the second call of Write after a Commit is a new partition,
	// so write one partition with a writer that rolls by hand.
	w, err := Create[kw.SERPRow](data, kw.DatasetSERPs, "us", "2026-11-21")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rows[:n/2]...); err != nil {
		t.Fatal(err)
	}
	if err := w.roll(); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rows[n/2:]...); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	recs := []kw.KeywordRecord{{Keyword: "a", VolumeRange: "1K – 10K"}, {Keyword: "b"}, {Keyword: "c", VolumeRange: "10 – 100"}}
	if err := WritePartition(data, kw.DatasetKeywords, "us", "2026-11-21", recs); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		dataset string
		columns []string
		want    [][2]string
	}{
		{kw.DatasetKeywords, []string{"volume_range", "keyword"}, [][2]string{{"1K – 10K", "a"}, {"", "b"}, {"10 – 100", "c"}}},
		{kw.DatasetSERPs, []string{"keyword", "url_key"}, nil},
	}
	for _, r := range rows {
		tests[1].want = append(tests[1].want, [2]string{r.Keyword, r.URLKey})
	}
	for _, tt := range tests {
		for _, workers := range []int{1, 2, 5} {
			t.Run(fmt.Sprintf("%s/w%d", tt.dataset, workers), func(t *testing.T) {
				var got [][2]string
				decoded, seq := 0, 0
				err := Scan(context.Background(), data, tt.dataset, "us", "2026-11-21", tt.columns,
					ScanOptions{Workers: workers, Decode: func(b *Batch) error {
						b.Aux = b.Rows
						return nil
					}},
					func(b *Batch) error {
						if b.Seq != seq || b.Aux.(int) != b.Rows {
							t.Fatalf("batch %d (aux %v, %d rows) arrived as number %d", b.Seq, b.Aux, b.Rows, seq)
						}
						seq++
						decoded += b.Rows
						for i := range b.Rows {
							got = append(got, [2]string{string(b.Bytes(0, i)), string(b.Bytes(1, i))})
						}
						return nil
					})
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != len(tt.want) || decoded != len(tt.want) {
					t.Fatalf("got %d rows, want %d", len(got), len(tt.want))
				}
				for i := range got {
					if got[i] != tt.want[i] {
						t.Fatalf("row %d = %q, want %q", i, got[i], tt.want[i])
					}
				}
				if tt.dataset == kw.DatasetSERPs && seq < 4 {
					t.Fatalf("only %d batches; the test wants several row groups and files", seq)
				}
			})
		}
	}
}

func TestScanErrors(t *testing.T) {
	data := t.TempDir()
	if err := WritePartition(data, kw.DatasetSERPs, "us", "2026-11-21", []kw.SERPRow{{Keyword: "a", Rank: 1, URLKey: "u"}, {Keyword: "b", Rank: 1, URLKey: "v"}}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	stop := errors.New("stop")
	tests := []struct {
		name    string
		date    string
		columns []string
		fn      func(*Batch) error
		want    func(error) bool
	}{
		{"missing partition", "2026-11-20", []string{"keyword"}, nil, func(err error) bool { return errors.Is(err, ErrNoPartition) }},
		{"no such column", "2026-11-21", []string{"nope"}, nil, func(err error) bool { return err != nil }},
		{"fn error", "2026-11-21", []string{"keyword"}, func(*Batch) error { return stop }, func(err error) bool { return errors.Is(err, stop) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fn := tt.fn
			if fn == nil {
				fn = func(*Batch) error { return nil }
			}
			err := Scan(ctx, data, kw.DatasetSERPs, "us", tt.date, tt.columns, ScanOptions{Workers: 2}, fn)
			if !tt.want(err) {
				t.Fatalf("Scan: %v", err)
			}
		})
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := Scan(cctx, data, kw.DatasetSERPs, "us", "2026-11-21", []string{"keyword"}, ScanOptions{Workers: 2}, func(*Batch) error { return nil }); err == nil {
		t.Error("Scan with a cancelled context returned no error")
	}
}

// int32Row has INT32 columns in each encoding Scan must read: plain
// required (rank), dictionary-encoded (dict) and optional with nulls (opt).
type int32Row struct {
	Keyword string `parquet:"keyword"`
	Rank    int32  `parquet:"rank"`
	Dict    int32  `parquet:"dict,dict"`
	Opt     *int32 `parquet:"opt,optional"`
}

// TestScanInt32 checks INT32 columns next to string columns, over
// several row groups and files, with any number of workers.
func TestScanInt32(t *testing.T) {
	data := t.TempDir()
	const n = 2*rowsPerGroup + 777
	rows := make([]int32Row, n)
	for i := range rows {
		rows[i] = int32Row{Keyword: fmt.Sprintf("kw %07d", i/25), Rank: int32(i%25 + 1), Dict: int32(i%7) - 3}
		if i%5 != 0 {
			v := int32(-i)
			rows[i].Opt = &v
		}
	}
	rows[1].Rank, rows[2].Rank = math.MaxInt32, math.MinInt32
	const dataset, date = "int32s", "2026-11-21"
	writeTwoFiles(t, data, dataset, date, rows)
	for _, workers := range []int{1, 3} {
		t.Run(fmt.Sprintf("w%d", workers), func(t *testing.T) {
			i, seq := 0, 0
			err := Scan(context.Background(), data, dataset, "us", date, []string{"rank", "keyword", "opt", "dict"}, ScanOptions{Workers: workers},
				func(b *Batch) error {
					seq++
					for r := range b.Rows {
						want := rows[i]
						var opt int32
						if want.Opt != nil {
							opt = *want.Opt
						}
						if got := string(b.Bytes(1, r)); got != want.Keyword {
							t.Fatalf("row %d: keyword %q, want %q", i, got, want.Keyword)
						}
						if b.Int32(0, r) != want.Rank || b.Int32(2, r) != opt || b.Int32(3, r) != want.Dict {
							t.Fatalf("row %d: rank, opt, dict = %d, %d, %d; want %d, %d, %d", i,
								b.Int32(0, r), b.Int32(2, r), b.Int32(3, r), want.Rank, opt, want.Dict)
						}
						i++
					}
					return nil
				})
			if err != nil {
				t.Fatal(err)
			}
			if i != n || seq < 3 {
				t.Fatalf("read %d rows in %d batches, want %d rows in several row groups and files", i, seq, n)
			}
		})
	}
}

// TestReserveKeepsArrayAcrossGrowingChunks checks that a batch's column,
// reused for row group after row group, keeps its arrays while the chunks
// grow by a few percent, as a partition's do, instead of allocating
// another each time a chunk is a little larger than the largest so far.
func TestReserveKeepsArrayAcrossGrowingChunks(t *testing.T) {
	c := column{colSpec: colSpec{kind: parquet.ByteArray}}
	const rows, bytes = 131072, 8 << 20
	c.reserve(rows, chunkSize{values: rows, bytes: bytes})
	data, offs := unsafe.SliceData(c.data), unsafe.SliceData(c.offs)
	for pct := 1; pct <= 20; pct++ {
		r := rows * (100 + pct) / 100
		c.reserve(r, chunkSize{values: int64(r), bytes: int64(bytes * (100 + pct) / 100)})
		if unsafe.SliceData(c.data) != data || unsafe.SliceData(c.offs) != offs {
			t.Fatalf("a chunk %d%% larger than the first allocated new arrays", pct)
		}
		if cap(c.data) < bytes*(100+pct)/100 || cap(c.offs) < r+1 {
			t.Fatalf("a chunk %d%% larger: room for %d bytes and %d offsets", pct, cap(c.data), cap(c.offs))
		}
	}
}
