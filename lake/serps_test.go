package lake

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/kwdata/kwdata/kw"
)

// randomSERPRows makes n rows sorted by keyword, 1–20 rows a keyword.
func randomSERPRows(n int) []kw.SERPRow {
	rng := rand.New(rand.NewPCG(7, uint64(n)))
	rows := make([]kw.SERPRow, 0, n)
	for k := 0; len(rows) < n; k++ {
		keyword := fmt.Sprintf("keyword %09d %s", k, string(rune('a'+rng.IntN(26))))
		for r := int32(1); r <= int32(1+rng.IntN(20)) && len(rows) < n; r++ {
			url := fmt.Sprintf("https://site%d.example/%s/%d", rng.IntN(500), keyword[8:], rng.IntN(1e6))
			rows = append(rows, kw.SERPRow{Keyword: keyword, Rank: r, URL: url, URLKey: url[8:]})
		}
	}
	return rows
}

// TestSERPWriterMatchesWriter writes the same rows through Writer and
// SERPWriter and wants the same files, byte for byte: the parallel
// encoding changes nothing a reader could see.
func TestSERPWriterMatchesWriter(t *testing.T) {
	for _, n := range []int{0, 1, 1000, rowsPerGroup, 2*rowsPerGroup + 12345} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			rows := randomSERPRows(n)
			a, b := t.TempDir(), t.TempDir()
			if err := WritePartition(a, kw.DatasetSERPs, "us", "2026-03-01", rows); err != nil {
				t.Fatal(err)
			}
			sw, err := CreateSERPs(b, "us", "2026-03-01")
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rows {
				if err := sw.Add([]byte(r.Keyword), r.Rank, []byte(r.URL), []byte(r.URLKey)); err != nil {
					t.Fatal(err)
				}
			}
			if err := sw.Commit(); err != nil {
				t.Fatal(err)
			}
			want := partitionBytes(t, a)
			got := partitionBytes(t, b)
			if len(got) != len(want) {
				t.Fatalf("%d files, want %d", len(got), len(want))
			}
			for name, w := range want {
				if !bytes.Equal(got[name], w) {
					t.Errorf("%s differs: %d bytes, want %d", name, len(got[name]), len(w))
				}
			}
			back, err := Read[kw.SERPRow](b, kw.DatasetSERPs, "us", "2026-03-01")
			if err != nil || len(back) != n {
				t.Fatalf("read back %d rows, %v; want %d", len(back), err, n)
			}
			for i := range back {
				if back[i] != rows[i] {
					t.Fatalf("row %d = %+v, want %+v", i, back[i], rows[i])
				}
			}
		})
	}
}

func partitionBytes(tb testing.TB, data string) map[string][]byte {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join(kw.PartitionDir(data, kw.DatasetSERPs, "us", "2026-03-01"), "*.parquet"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("no files: %v", err)
	}
	out := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		out[filepath.Base(f)] = b
	}
	return out
}

// An aborted SERPWriter leaves neither a partition nor staging files.
func TestSERPWriterAbort(t *testing.T) {
	data := t.TempDir()
	sw, err := CreateSERPs(data, "us", "2026-03-01")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range randomSERPRows(rowsPerGroup + 10) {
		if err := sw.Add([]byte(r.Keyword), r.Rank, []byte(r.URL), []byte(r.URLKey)); err != nil {
			t.Fatal(err)
		}
	}
	sw.Abort()
	sw.Abort()
	if _, err := os.Stat(kw.PartitionDir(data, kw.DatasetSERPs, "us", "2026-03-01")); !os.IsNotExist(err) {
		t.Errorf("aborted writer made a partition: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(StagingDir(data), "*")); len(left) > 0 {
		t.Errorf("staging holds %q", left)
	}
}

// Finish writes the files but publishes nothing: Abort after it leaves
// the lake as it was, Commit after it publishes every row.
func TestSERPWriterFinish(t *testing.T) {
	for _, then := range []string{"abort", "commit"} {
		t.Run(then, func(t *testing.T) {
			data := t.TempDir()
			sw, err := CreateSERPs(data, "us", "2026-03-01")
			if err != nil {
				t.Fatal(err)
			}
			rows := randomSERPRows(rowsPerGroup + 10)
			for _, r := range rows {
				if err := sw.Add([]byte(r.Keyword), r.Rank, []byte(r.URL), []byte(r.URLKey)); err != nil {
					t.Fatal(err)
				}
			}
			if err := sw.Finish(); err != nil {
				t.Fatal(err)
			}
			part := kw.PartitionDir(data, kw.DatasetSERPs, "us", "2026-03-01")
			if _, err := os.Stat(part); !os.IsNotExist(err) {
				t.Fatalf("Finish published the partition: %v", err)
			}
			if then == "abort" {
				sw.Abort()
				if left, _ := filepath.Glob(filepath.Join(StagingDir(data), "*")); len(left) > 0 {
					t.Errorf("staging holds %q", left)
				}
				return
			}
			if err := sw.Commit(); err != nil {
				t.Fatal(err)
			}
			got, err := Read[kw.SERPRow](data, kw.DatasetSERPs, "us", "2026-03-01")
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(rows) || got[len(got)-1] != rows[len(rows)-1] {
				t.Errorf("read back %d rows, want %d, the last as written", len(got), len(rows))
			}
		})
	}
}
