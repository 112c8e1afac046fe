package similarity

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/lake"
)

// writeLake writes keywords (sorted by text) and SERP rows per date.
// lakeValue is the lake column of a Keyword's number: null for NoValue,
// which Run must read back as NoValue.
func lakeValue(v int64) *int64 {
	if v < 0 {
		return nil
	}
	return &v
}

func writeLake(tb testing.TB, data, cc, date string, kws []Keyword, serps map[string][][]string, texts map[string][]string) {
	tb.Helper()
	recs := make([]kw.KeywordRecord, len(kws))
	for i, k := range kws {
		recs[i] = kw.KeywordRecord{Keyword: k.Text, Volume: lakeValue(k.Volume), CPCMicros: lakeValue(k.CPCMicros), Source: "test"}
	}
	slices.SortFunc(recs, func(a, b kw.KeywordRecord) int { return strings.Compare(a.Keyword, b.Keyword) })
	if err := lake.WritePartition(data, kw.DatasetKeywords, cc, date, recs); err != nil {
		tb.Fatal(err)
	}
	for d, ss := range serps {
		var rows []kw.SERPRow
		for i, s := range ss {
			for r, u := range s {
				rows = append(rows, kw.SERPRow{Keyword: texts[d][i], Rank: int32(r + 1), URL: "https://" + u, URLKey: u})
			}
		}
		slices.SortStableFunc(rows, func(a, b kw.SERPRow) int { return strings.Compare(a.Keyword, b.Keyword) })
		if err := lake.WritePartition(data, kw.DatasetSERPs, cc, d, rows); err != nil {
			tb.Fatal(err)
		}
	}
}

// topSERPs cuts each SERP, written with ranks 1, 2, ..., to its top
// kw.MaxRank results, as Run reads it.
func topSERPs(serps [][]string) [][]string {
	out := make([][]string, len(serps))
	for i, s := range serps {
		out[i] = s[:min(len(s), kw.MaxRank)]
	}
	return out
}

// TestRun checks the stage end to end: newest SERP within the age limit,
// SERPs of keywords without a record ignored, output equal to Compute's.
func TestRun(t *testing.T) {
	data := t.TempDir()
	rng := rand.New(rand.NewPCG(9, 9))
	kws, serps := randomCorpus(rng, 300, 60)
	texts := make([]string, len(kws))
	for i, k := range kws {
		texts[i] = k.Text
	}
	// The newest SERP (2026-11-20) wins over older ones; the one dated
	// after Date and the one older than 30 days are never used.
	older := make([][]string, len(kws))
	for i := range older {
		older[i] = []string{"old.example/", fmt.Sprintf("old.example/%d", i%3)}
	}
	var newest [][]string
	var newestTexts []string
	want := make([][]string, len(kws))
	for i := range kws {
		switch {
		case i%3 == 0 && len(serps[i]) > 0: // an empty SERP leaves no rows
			newest = append(newest, serps[i])
			newestTexts = append(newestTexts, texts[i])
			want[i] = serps[i]
		default:
			want[i] = older[i] // only the older partition has it
		}
	}
	// A keyword without a record must be ignored.
	newest = append(newest, []string{"old.example/"})
	newestTexts = append(newestTexts, "zz no record")
	future := slices.Repeat([][]string{{"future.example/"}}, len(kws))
	stale := slices.Repeat([][]string{{"stale.example/"}}, len(kws))
	writeLake(t, data, "us", "2026-11-21", kws,
		map[string][][]string{"2026-11-20": newest, "2026-11-01": older, "2026-11-22": future, "2026-10-21": stale, "2026-10-20": stale},
		map[string][]string{"2026-11-20": newestTexts, "2026-11-01": texts, "2026-11-22": texts, "2026-10-21": texts, "2026-10-20": texts})
	// 2026-10-21 and 2026-10-20 are 31 and 32 days old, too old; as every
	// keyword has a newer SERP, this test cannot see the age cut, which
	// TestRunMaxAge checks at its edge.

	opt := Options{Workers: 2, BatchSize: 13, hubMinDF: 4}
	stats, err := Run(context.Background(), RunOptions{Data: data, Date: "2026-11-21", Options: opt})
	if err != nil {
		t.Fatal(err)
	}
	// randomCorpus SERPs run past rank 20; the stage keeps the top 20.
	wantRel, wantInt := Brute(kws, topSERPs(want), opt)
	if len(stats) != 1 || stats[0].Country != "us" || stats[0].Keywords != len(kws) || stats[0].RelatedRows != len(wantRel) {
		t.Fatalf("stats = %+v, want one for us with %d keywords and %d rows", stats, len(kws), len(wantRel))
	}
	gotRel, err := lake.Read[kw.RelatedRow](data, kw.DatasetRelated, "us", "2026-11-21")
	if err != nil {
		t.Fatal(err)
	}
	gotInt, err := lake.Read[kw.IntentRow](data, kw.DatasetIntents, "us", "2026-11-21")
	if err != nil {
		t.Fatal(err)
	}
	diff(t, wantRel, gotRel, wantInt, gotInt)

	// A run over a date without keywords says so.
	if _, err := Run(context.Background(), RunOptions{Data: data, Date: "2026-11-19"}); err == nil {
		t.Error("Run on a date without keywords succeeded")
	}
	if _, err := Run(context.Background(), RunOptions{Data: data, Date: "2026-11-19", Countries: []string{"US"}}); !errors.Is(err, lake.ErrNoPartition) {
		t.Errorf("Run of a missing partition: %v, want ErrNoPartition", err)
	}
}

// TestRunUnsortedLake checks the SERP matching when the lake is not in its
// usual order: SERP rows in descending keyword order (each keyword found by
// binary search), and keyword records out of order (found through a map).
func TestRunUnsortedLake(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 2))
	kws, serps := randomCorpus(rng, 200, 50)
	const date = "2026-11-21"
	var rows []kw.SERPRow
	for i, s := range serps {
		for r, u := range s {
			rows = append(rows, kw.SERPRow{Keyword: kws[i].Text, Rank: int32(r + 1), URLKey: u})
		}
	}
	rows = append(rows, kw.SERPRow{Keyword: "zz no record", Rank: 1, URLKey: "own1.example/"})
	slices.SortStableFunc(rows, func(a, b kw.SERPRow) int { return strings.Compare(b.Keyword, a.Keyword) })
	for _, sortedKeywords := range []bool{true, false} {
		t.Run(fmt.Sprintf("sorted-keywords=%v", sortedKeywords), func(t *testing.T) {
			data := t.TempDir()
			recs := make([]kw.KeywordRecord, len(kws))
			for i, k := range kws {
				recs[i] = kw.KeywordRecord{Keyword: k.Text, Volume: lakeValue(k.Volume), CPCMicros: lakeValue(k.CPCMicros)}
			}
			cmpText := func(a, b kw.KeywordRecord) int { return strings.Compare(a.Keyword, b.Keyword) }
			if sortedKeywords {
				slices.SortFunc(recs, cmpText)
			} else if slices.IsSortedFunc(recs, cmpText) {
				t.Fatal("the keyword records are sorted; the map path is not exercised")
			}
			if err := lake.WritePartition(data, kw.DatasetKeywords, "us", date, recs); err != nil {
				t.Fatal(err)
			}
			if err := lake.WritePartition(data, kw.DatasetSERPs, "us", date, rows); err != nil {
				t.Fatal(err)
			}
			opt := Options{Workers: 2, hubMinDF: 4}
			files := 1
			if !sortedKeywords {
				// The intent rows in two sections, two files.
				defer func(n int) { intentSection = n }(intentSection)
				intentSection, files = 64, 2
			}
			if _, err := Run(context.Background(), RunOptions{Data: data, Date: date, Options: opt}); err != nil {
				t.Fatal(err)
			}
			if got, err := os.ReadDir(kw.PartitionDir(data, kw.DatasetIntents, "us", date)); err != nil || len(got) != files {
				t.Fatalf("intents in %d files (%v), want %d", len(got), err, files)
			}
			wantRel, wantInt := Brute(kws, topSERPs(serps), opt)
			gotRel, err := lake.Read[kw.RelatedRow](data, kw.DatasetRelated, "us", date)
			if err != nil {
				t.Fatal(err)
			}
			gotInt, err := lake.Read[kw.IntentRow](data, kw.DatasetIntents, "us", date)
			if err != nil {
				t.Fatal(err)
			}
			diff(t, wantRel, gotRel, wantInt, gotInt)
		})
	}
}

// TestWriteRelatedBytes holds writeRelated's chunks to the bytes of one
// call a batch: the writer may end a page every 64 rows counted from each
// call, and the chunks are a multiple of that.
func TestWriteRelatedBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	rows := make([]kw.RelatedRow, 50_000)
	for i := range rows {
		r := &rows[i]
		r.Keyword, r.Rank = fmt.Sprintf("kw %06d", i/10), int32(i%10+1)
		r.Related, r.Overlap = fmt.Sprintf("related %d", rng.IntN(1_000_000)), int32(1+rng.IntN(20))
		if rng.IntN(4) != 0 {
			r.Volume = lakeValue(rng.Int64N(1 << 40))
		}
		if rng.IntN(3) != 0 {
			r.CPCMicros = lakeValue(rng.Int64N(1 << 30))
		}
		r.SameIntent = rng.IntN(5) == 0
	}
	write := func(data string, each func(*lake.Writer[kw.RelatedRow], []kw.RelatedRow) error) []byte {
		w, err := lake.Create[kw.RelatedRow](data, kw.DatasetRelated, "us", "2026-11-21")
		if err != nil {
			t.Fatal(err)
		}
		// Batches of uneven sizes, some below a chunk, some across several.
		for i := 0; i < len(rows); {
			n := min(len(rows)-i, 1+rng.IntN(2_000))
			if err := each(w, rows[i:i+n]); err != nil {
				t.Fatal(err)
			}
			i += n
		}
		if err := w.Commit(); err != nil {
			t.Fatal(err)
		}
		dir := kw.PartitionDir(data, kw.DatasetRelated, "us", "2026-11-21")
		files, err := filepath.Glob(filepath.Join(dir, "*.parquet"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no files in %s: %v", dir, err)
		}
		var all []byte
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, b...)
		}
		return all
	}
	seed := rng.Uint64()
	rng = rand.New(rand.NewPCG(seed, 1))
	one := write(t.TempDir(), func(w *lake.Writer[kw.RelatedRow], rows []kw.RelatedRow) error { return w.Write(rows...) })
	rng = rand.New(rand.NewPCG(seed, 1))
	chunked := write(t.TempDir(), writeRelated)
	if !bytes.Equal(one, chunked) {
		t.Errorf("writeRelated wrote %d bytes unlike one call a batch (%d bytes)", len(chunked), len(one))
	}
}

// The arena's slices never share bytes: each has exactly the room asked
// for, so filling one, or appending past it, leaves every other as it
// was, across chunks and for a request larger than any chunk.
func TestTextArena(t *testing.T) {
	var a textArena
	var got [][]byte
	for i, n := range []int{0, 5, 1 << 19, 1 << 20, 3, 70 << 20, 1, 2 << 20} {
		s := a.alloc(n)
		if len(s) != 0 || cap(s) != n {
			t.Fatalf("alloc(%d): len %d, cap %d", n, len(s), cap(s))
		}
		for range n {
			s = append(s, byte(i+1))
		}
		got = append(got, append(s, 0xff)[:n]) // past the room: a copy
	}
	for i, s := range got {
		for j, c := range s {
			if c != byte(i+1) {
				t.Fatalf("slice %d, byte %d: %d, want %d", i, j, c, i+1)
			}
		}
	}
}
