package lake

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kwdata/kwdata/kw"
)

// randomRelatedRows makes n rows sorted by keyword, 1–10 related keywords
// a keyword, with volumes and CPCs missing at random and runs of them
// missing, as the sources leave them.
func randomRelatedRows(n int) []kw.RelatedRow {
	rng := rand.New(rand.NewPCG(11, uint64(n)))
	rows := make([]kw.RelatedRow, 0, n)
	opt := func(p float64) *int64 {
		if rng.Float64() < p {
			return nil
		}
		v := rng.Int64N(1e7) - 10
		return &v
	}
	for k := 0; len(rows) < n; k++ {
		keyword := fmt.Sprintf("keyword %09d %s", k, strings.Repeat("x", rng.IntN(40)))
		missing := 0.1
		if k%500 < 50 {
			missing = 1 // a run of rows without figures
		}
		for r := int32(1); r <= int32(1+rng.IntN(10)) && len(rows) < n; r++ {
			rows = append(rows, kw.RelatedRow{
				Keyword: keyword, Rank: r,
				Related:    fmt.Sprintf("related %d %s", rng.IntN(1e6), strings.Repeat("y", rng.IntN(30))),
				Overlap:    int32(1 + rng.IntN(20)),
				Volume:     opt(missing),
				CPCMicros:  opt(missing + 0.2),
				SameIntent: rng.IntN(3) == 0,
			})
		}
	}
	return rows
}

// datasetBytes reads every file of a partition of dataset (us, 2026-03-01).
func datasetBytes(tb testing.TB, data, dataset string) map[string][]byte {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join(kw.PartitionDir(data, dataset, "us", "2026-03-01"), "*.parquet"))
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

// TestRelatedWriterMatchesWriter writes the same rows through Writer and
// RelatedWriter, in calls of varied sizes, and wants the same files, byte
// for byte: writing by columns on several goroutines changes nothing a
// reader could see.
func TestRelatedWriterMatchesWriter(t *testing.T) {
	for _, n := range []int{0, 1, 1000, rowsPerGroup, 3*rowsPerGroup + 12345} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			rows := randomRelatedRows(n)
			a, b := t.TempDir(), t.TempDir()
			if err := WritePartition(a, kw.DatasetRelated, "us", "2026-03-01", rows); err != nil {
				t.Fatal(err)
			}
			rw, err := CreateRelated(b, "us", "2026-03-01")
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(3, uint64(n)))
			for rest := rows; len(rest) > 0; {
				k := min(len(rest), 1+rng.IntN(3000))
				if err := rw.Write(rest[:k]...); err != nil {
					t.Fatal(err)
				}
				rest = rest[k:]
			}
			if err := rw.Commit(); err != nil {
				t.Fatal(err)
			}
			rw.Abort() // after Commit: changes nothing
			want := datasetBytes(t, a, kw.DatasetRelated)
			got := datasetBytes(t, b, kw.DatasetRelated)
			if len(got) != len(want) {
				t.Fatalf("%d files, want %d", len(got), len(want))
			}
			for name, w := range want {
				if !bytes.Equal(got[name], w) {
					t.Errorf("%s differs: %d bytes, want %d", name, len(got[name]), len(w))
				}
			}
			back, err := Read[kw.RelatedRow](b, kw.DatasetRelated, "us", "2026-03-01")
			if err != nil || len(back) != n {
				t.Fatalf("read back %d rows, %v; want %d", len(back), err, n)
			}
			for i := range back {
				if !reflect.DeepEqual(back[i], rows[i]) {
					t.Fatalf("row %d = %+v, want %+v", i, back[i], rows[i])
				}
			}
		})
	}
}

// TestIntentWriterMatchesWriter is TestRelatedWriterMatchesWriter for
// IntentWriter.
func TestIntentWriterMatchesWriter(t *testing.T) {
	for _, n := range []int{0, 1, 1000, 2*rowsPerGroup + 777} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(5, uint64(n)))
			rows := make([]kw.IntentRow, n)
			for i := range rows {
				k := fmt.Sprintf("keyword %09d %s", i, strings.Repeat("x", rng.IntN(40)))
				rows[i] = kw.IntentRow{Keyword: k, Intent: k, Overlap: int32(rng.IntN(21))}
				if rng.IntN(3) > 0 {
					rows[i].Intent = fmt.Sprintf("keyword %09d", rng.IntN(n))
				}
			}
			a, b := t.TempDir(), t.TempDir()
			if err := WritePartition(a, kw.DatasetIntents, "us", "2026-03-01", rows); err != nil {
				t.Fatal(err)
			}
			iw, err := CreateIntents(b, "us", "2026-03-01")
			if err != nil {
				t.Fatal(err)
			}
			for rest := rows; len(rest) > 0; {
				k := min(len(rest), 1+rng.IntN(70_000))
				if err := iw.Write(rest[:k]...); err != nil {
					t.Fatal(err)
				}
				rest = rest[k:]
			}
			if err := iw.Commit(); err != nil {
				t.Fatal(err)
			}
			want := datasetBytes(t, a, kw.DatasetIntents)
			got := datasetBytes(t, b, kw.DatasetIntents)
			if len(got) != len(want) {
				t.Fatalf("%d files, want %d", len(got), len(want))
			}
			for name, w := range want {
				if !bytes.Equal(got[name], w) {
					t.Errorf("%s differs: %d bytes, want %d", name, len(got[name]), len(w))
				}
			}
			back, err := Read[kw.IntentRow](b, kw.DatasetIntents, "us", "2026-03-01")
			if err != nil || !reflect.DeepEqual(back, rows) && n > 0 {
				t.Fatalf("read back %d rows (%v), want the %d written", len(back), err, n)
			}
		})
	}
}

// Write copies the rows' figures: the caller may reuse its rows and what
// their pointers point to as soon as Write returns.
func TestRelatedWriterCopiesRows(t *testing.T) {
	data := t.TempDir()
	rw, err := CreateRelated(data, "us", "2026-03-01")
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Abort()
	want := randomRelatedRows(rowsPerGroup + 100)
	buf := make([]kw.RelatedRow, 1)
	var vol, cpc int64
	for _, r := range want {
		buf[0] = r
		if r.Volume != nil {
			vol = *r.Volume
			buf[0].Volume = &vol
		}
		if r.CPCMicros != nil {
			cpc = *r.CPCMicros
			buf[0].CPCMicros = &cpc
		}
		if err := rw.Write(buf...); err != nil {
			t.Fatal(err)
		}
		buf[0] = kw.RelatedRow{Keyword: "overwritten"}
		vol, cpc = -99, -99
	}
	if err := rw.Commit(); err != nil {
		t.Fatal(err)
	}
	got, err := Read[kw.RelatedRow](data, kw.DatasetRelated, "us", "2026-03-01")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read back rows differ from those written (%d rows, want %d)", len(got), len(want))
	}
}

// An aborted RelatedWriter leaves neither a partition nor staging files,
// and leaves a partition published earlier as it was.
func TestRelatedWriterAbort(t *testing.T) {
	data := t.TempDir()
	old := randomRelatedRows(10)
	if err := WritePartition(data, kw.DatasetRelated, "us", "2026-03-01", old); err != nil {
		t.Fatal(err)
	}
	rw, err := CreateRelated(data, "us", "2026-03-01")
	if err != nil {
		t.Fatal(err)
	}
	if err := rw.Write(randomRelatedRows(2*rowsPerGroup + 10)...); err != nil {
		t.Fatal(err)
	}
	rw.Abort()
	rw.Abort()
	got, err := Read[kw.RelatedRow](data, kw.DatasetRelated, "us", "2026-03-01")
	if err != nil || !reflect.DeepEqual(got, old) {
		t.Errorf("after Abort the partition holds %d rows (%v), want the %d published before", len(got), err, len(old))
	}
	if left, _ := filepath.Glob(filepath.Join(StagingDir(data), "*")); len(left) > 0 {
		t.Errorf("staging holds %q", left)
	}
}

// BenchmarkRelatedWriter writes 4M related rows (1M, four times) the way
// the similarity stage hands them out (a batch's rows a call) through the
// reflective Writer, the baseline, and through RelatedWriter. Beside the wall time
// it reports the process's CPU time an op (cpu-ns/op), which is what the
// stage's other goroutines compete for. docs/perf/similarity.md quotes it.
func BenchmarkRelatedWriter(b *testing.B) {
	rows := randomRelatedRows(1_000_000)
	// The stage's related texts are the keywords' own, spread over the
	// heap: shuffle where the texts live, as the writer reads them.
	rng := rand.New(rand.NewPCG(1, 1))
	texts := make([]string, len(rows))
	for i := range rows {
		texts[i] = strings.Clone(rows[i].Related)
	}
	rng.Shuffle(len(texts), func(i, j int) { texts[i], texts[j] = texts[j], texts[i] })
	for i := range rows {
		rows[i].Related = texts[i]
	}
	const batch = 10_000
	cpu := func(b *testing.B, run func()) {
		start := cpuTime()
		for b.Loop() {
			run()
		}
		b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
	}
	b.Run("writer", func(b *testing.B) {
		cpu(b, func() {
			w, err := Create[kw.RelatedRow](b.TempDir(), kw.DatasetRelated, "us", "2026-03-01")
			if err != nil {
				b.Fatal(err)
			}
			for i := 0; i < 4*len(rows); i += batch {
				if err := w.Write(rows[i%len(rows) : i%len(rows)+batch]...); err != nil {
					b.Fatal(err)
				}
			}
			if err := w.Commit(); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("related-writer", func(b *testing.B) {
		cpu(b, func() {
			w, err := CreateRelated(b.TempDir(), "us", "2026-03-01")
			if err != nil {
				b.Fatal(err)
			}
			for i := 0; i < 4*len(rows); i += batch {
				if err := w.Write(rows[i%len(rows) : i%len(rows)+batch]...); err != nil {
					b.Fatal(err)
				}
			}
			if err := w.Commit(); err != nil {
				b.Fatal(err)
			}
		})
	})
}

// cpuTime is the CPU time (user and system) the process has used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
