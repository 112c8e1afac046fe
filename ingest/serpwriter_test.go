package ingest

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/kwdata/kwdata/kw"
)

// randomSERPs makes n SERPs over fewer keywords, so that many keywords
// come several times, with rows in shuffled rank order.
func randomSERPs(rng *rand.Rand, n int) []SERP {
	out := make([]SERP, n)
	for i := range out {
		k := fmt.Sprintf("kw %d", rng.IntN(max(n/3, 1)))
		rows := make([]kw.SERPRow, rng.IntN(21))
		for j := range rows {
			u := fmt.Sprintf("https://site%d.example/%d", rng.IntN(50), i)
			rows[j] = kw.SERPRow{Rank: int32(j + 1), URL: u, URLKey: strings.TrimPrefix(u, "https://")}
		}
		rng.Shuffle(len(rows), func(a, b int) { rows[a], rows[b] = rows[b], rows[a] })
		out[i] = SERP{Keyword: k, Rows: rows}
	}
	return out
}

// expectSERPs is the partition serps must give, computed the plain way:
// the last SERP with rows of each keyword (the last one when none has
// rows), keywords in order, rows by rank.
func expectSERPs(serps []SERP) (rows []kw.SERPRow, res WriteResult) {
	last := map[string]SERP{}
	for _, s := range serps {
		if prev, ok := last[s.Keyword]; !ok || len(s.Rows) > 0 || len(prev.Rows) == 0 {
			last[s.Keyword] = s
		}
	}
	res.Duplicates = len(serps) - len(last)
	res.Keywords = len(last)
	keys := make([]string, 0, len(last))
	for k := range last {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		rs := slices.Clone(last[k].Rows)
		slices.SortFunc(rs, func(a, b kw.SERPRow) int { return cmp.Compare(a.Rank, b.Rank) })
		for _, r := range rs {
			r.Keyword = k
			rows = append(rows, r)
		}
	}
	res.Rows = len(rows)
	return rows, res
}

// cloneSERPs deep-copies serps: writers reorder what they are given.
func cloneSERPs(serps []SERP) []SERP {
	out := make([]SERP, len(serps))
	for i, s := range serps {
		out[i] = SERP{Keyword: s.Keyword, Rows: slices.Clone(s.Rows)}
	}
	return out
}

func TestSERPWriterSpillsAndMerges(t *testing.T) {
	for _, tc := range []struct {
		n, budget int
	}{
		{0, 1}, {1, 1}, {50, 1}, {300, 2000}, {2000, 40_000}, {2000, 1 << 30},
	} {
		t.Run(fmt.Sprintf("n%d/budget%d", tc.n, tc.budget), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(tc.n), uint64(tc.budget)))
			serps := randomSERPs(rng, tc.n)
			wantRows, wantRes := expectSERPs(serps)
			data := t.TempDir()
			w := NewSERPWriter(data, "us", "2026-03-01", tc.budget)
			for _, s := range cloneSERPs(serps) {
				if err := w.Add(s); err != nil {
					t.Fatal(err)
				}
			}
			spilled := len(w.sorter.runs)
			res, err := w.Commit(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if tc.budget < 1000 && tc.n > 1 && spilled < 2 {
				t.Errorf("budget %d spilled %d runs; want several", tc.budget, spilled)
			}
			if res != wantRes {
				t.Errorf("result = %+v, want %+v", res, wantRes)
			}
			got := readPartition[kw.SERPRow](t, data, kw.DatasetSERPs, "us", "2026-03-01")
			if !reflect.DeepEqual(got, wantRows) && !(len(got) == 0 && len(wantRows) == 0) {
				t.Errorf("partition differs: got %d rows, want %d", len(got), len(wantRows))
			}
			assertStagingEmpty(t, data)
		})
	}
}

// assertStagingEmpty fails if a writer left scratch files behind.
func assertStagingEmpty(t *testing.T, data string) {
	t.Helper()
	left, _ := filepath.Glob(filepath.Join(data, ".staging", "*"))
	if len(left) > 0 {
		t.Errorf("staging holds %q after the writer ended", left)
	}
}

func TestSERPWriterAbortRemovesRuns(t *testing.T) {
	data := t.TempDir()
	w := NewSERPWriter(data, "us", "2026-03-01", 1)
	for _, s := range randomSERPs(rand.New(rand.NewPCG(1, 2)), 20) {
		if err := w.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	if len(w.sorter.runs) == 0 {
		t.Fatal("nothing spilled")
	}
	w.Abort()
	w.Abort()
	assertStagingEmpty(t, data)
	if _, err := os.Stat(kw.PartitionDir(data, kw.DatasetSERPs, "us", "2026-03-01")); !os.IsNotExist(err) {
		t.Errorf("aborted writer made a partition: %v", err)
	}
}

// A run damaged on disk fails the commit with its name and publishes
// nothing.
func TestSERPWriterDamagedRun(t *testing.T) {
	for _, damage := range []string{"truncate", "garble"} {
		t.Run(damage, func(t *testing.T) {
			data := t.TempDir()
			w := NewSERPWriter(data, "us", "2026-03-01", 500)
			for _, s := range randomSERPs(rand.New(rand.NewPCG(3, 4)), 200) {
				if err := w.Add(s); err != nil {
					t.Fatal(err)
				}
			}
			if len(w.sorter.runs) < 2 {
				t.Fatalf("spilled %d runs; want at least 2", len(w.sorter.runs))
			}
			name := w.sorter.runs[0]
			b, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			switch damage {
			case "truncate":
				b = b[:len(b)/2]
			case "garble":
				for i := len(b) / 3; i < len(b)/3+16 && i < len(b); i++ {
					b[i] ^= 0x5a
				}
			}
			if err := os.WriteFile(name, b, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = w.Commit(context.Background())
			if err == nil || !strings.Contains(err.Error(), "SERP run") {
				t.Fatalf("commit over a damaged run = %v; want an error naming the run", err)
			}
			if _, err := os.Stat(kw.PartitionDir(data, kw.DatasetSERPs, "us", "2026-03-01")); !os.IsNotExist(err) {
				t.Errorf("failed commit published a partition: %v", err)
			}
			assertStagingEmpty(t, data)
		})
	}
}

// Run gives the same lake whether SERPs fit in memory or are spilled.
func TestRunSpillsSERPs(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var b strings.Builder
	for _, s := range randomSERPs(rng, 400) {
		fmt.Fprintf(&b, `{"keyword":%q,"results":[`, s.Keyword)
		for j, r := range s.Rows {
			if j > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"rank":%d,"url":%q}`, r.Rank, r.URL)
		}
		b.WriteString("]}\n")
	}
	in := writeFile(t, t.TempDir(), "serps.jsonl", []byte(b.String()))
	var parts [2][]kw.SERPRow
	var reps [2]Report
	for i, budget := range []int{0, 3000} {
		data := t.TempDir()
		rep, err := Run(context.Background(), Options{Data: data, Date: "2026-03-01", Country: "us",
			SERPJSONL: []string{in}, spillBytes: budget})
		if err != nil {
			t.Fatal(err)
		}
		reps[i] = rep
		parts[i] = readPartition[kw.SERPRow](t, data, kw.DatasetSERPs, "us", "2026-03-01")
		assertStagingEmpty(t, data)
	}
	if reps[0].SERPDuplicates == 0 {
		t.Fatal("input has no duplicate keywords; the test proves nothing")
	}
	if reps[0].SERPs != reps[1].SERPs || reps[0].SERPRows != reps[1].SERPRows || reps[0].SERPDuplicates != reps[1].SERPDuplicates {
		t.Errorf("reports differ: in memory %+v, spilled %+v", reps[0], reps[1])
	}
	if !reflect.DeepEqual(parts[0], parts[1]) {
		t.Errorf("partitions differ: %d rows in memory, %d spilled", len(parts[0]), len(parts[1]))
	}
}

// TestSERPWriterLastNonEmptyWins checks that an empty SERP never replaces
// one with rows, in memory and across spilled runs alike.
func TestSERPWriterLastNonEmptyWins(t *testing.T) {
	r := func(url string) []kw.SERPRow { return []kw.SERPRow{{Rank: 1, URL: url, URLKey: url}} }
	serps := []SERP{
		{"a", r("a-old")}, {"a", r("a-new")}, {"a", nil}, // empty last: a-new stays
		{"b", nil}, {"b", r("b-only")}, {"b", nil},
		{"c", nil}, {"c", nil}, // never any rows: written empty
		{"d", r("d-old")}, {"d", nil}, {"d", r("d-new")},
	}
	want := []kw.SERPRow{row("a", 1, "a-new", "a-new"), row("b", 1, "b-only", "b-only"), row("d", 1, "d-new", "d-new")}
	for _, budget := range []int{math.MaxInt, 1, 150, 300} {
		t.Run(fmt.Sprintf("budget%d", budget), func(t *testing.T) {
			data := t.TempDir()
			w := NewSERPWriter(data, "us", "2026-03-01", budget)
			for _, s := range cloneSERPs(serps) {
				if err := w.Add(s); err != nil {
					t.Fatal(err)
				}
			}
			res, err := w.Commit(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if wantRes := (WriteResult{Keywords: 4, Rows: 3, Duplicates: 7}); res != wantRes {
				t.Errorf("result = %+v, want %+v", res, wantRes)
			}
			if got := readPartition[kw.SERPRow](t, data, kw.DatasetSERPs, "us", "2026-03-01"); !reflect.DeepEqual(got, want) {
				t.Errorf("partition\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

// A SERP payload decodes to the rows encoded, whether the key is a part
// of the URL or not, and whatever the hint of where it is; a cut one is an
// error.
func TestSERPPayloadRoundTrip(t *testing.T) {
	rows := []kw.SERPRow{
		{Rank: 1, URL: "https://www.a.com/x/", URLKey: "a.com/x"},
		{Rank: 2, URL: "https://A.com/", URLKey: "a.com/"},
		{Rank: 3, URL: "https://b.com/?z=1&a=2", URLKey: "b.com/?a=2&z=1"},
		{Rank: -7, URL: "", URLKey: ""},
	}
	for _, at := range []int{-1, 0, 8, 12, 1000} {
		p := binary.AppendUvarint(nil, uint64(len(rows)))
		for _, r := range rows {
			p = appendSERPRow(p, r.Rank, r.URL, r.URLKey, at)
		}
		got, err := decodeSERP("k", p)
		if err != nil || len(got) != len(rows) {
			t.Fatalf("at %d: decoded %d rows, %v", at, len(got), err)
		}
		for i, r := range rows {
			r.Keyword = "k"
			if got[i] != r {
				t.Errorf("at %d: row %d = %+v, want %+v", at, i, got[i], r)
			}
		}
		for cut := range len(p) {
			if _, err := decodeSERP("k", p[:cut]); err == nil {
				t.Fatalf("at %d: payload cut to %d of %d bytes decoded", at, cut, len(p))
			}
		}
	}
}
