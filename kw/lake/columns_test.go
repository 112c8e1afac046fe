package lake

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/kwdata/kwdata/kw"
)

// TestScanColumnsMatchesRead checks that the columnar, parallel reader
// returns the same values in the same order as Read, over several row
// groups and files, with any number of workers, for required and optional
// (null) columns, and that decode sees every batch exactly once.
func TestScanColumnsMatchesRead(t *testing.T) {
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
				err := ScanColumns(context.Background(), data, tt.dataset, "us", "2026-11-21", tt.columns, workers,
					func(b *ColumnBatch) error {
						b.Aux = b.Rows
						return nil
					},
					func(b *ColumnBatch) error {
						if b.Seq != seq || b.Aux.(int) != b.Rows {
							t.Fatalf("batch %d (aux %v, %d rows) arrived as number %d", b.Seq, b.Aux, b.Rows, seq)
						}
						seq++
						decoded += b.Rows
						for i := range b.Rows {
							got = append(got, [2]string{string(b.Value(0, i)), string(b.Value(1, i))})
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

func TestScanColumnsErrors(t *testing.T) {
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
		fn      func(*ColumnBatch) error
		want    func(error) bool
	}{
		{"missing partition", "2026-11-20", []string{"keyword"}, nil, func(err error) bool { return errors.Is(err, ErrNoPartition) }},
		{"not a string column", "2026-11-21", []string{"rank"}, nil, func(err error) bool { return err != nil && strings.Contains(err.Error(), "rank") }},
		{"no such column", "2026-11-21", []string{"nope"}, nil, func(err error) bool { return err != nil }},
		{"fn error", "2026-11-21", []string{"keyword"}, func(*ColumnBatch) error { return stop }, func(err error) bool { return errors.Is(err, stop) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fn := tt.fn
			if fn == nil {
				fn = func(*ColumnBatch) error { return nil }
			}
			err := ScanColumns(ctx, data, kw.DatasetSERPs, "us", tt.date, tt.columns, 2, nil, fn)
			if !tt.want(err) {
				t.Fatalf("ScanColumns: %v", err)
			}
		})
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := ScanColumns(cctx, data, kw.DatasetSERPs, "us", "2026-11-21", []string{"keyword"}, 2, nil, func(*ColumnBatch) error { return nil }); err == nil {
		t.Error("ScanColumns with a cancelled context returned no error")
	}
}
