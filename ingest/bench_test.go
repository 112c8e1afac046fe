package ingest

import (
	"bytes"
	"context"
	"encoding/csv"
	"hash/maphash"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kwdata/kwdata/ingest/sample"
	"github.com/kwdata/kwdata/kw"
)

// sampleFiles generates the sample planner export and SERP JSONL of n
// keywords of one country and returns their contents.
func sampleFiles(tb testing.TB, n int) (planner, serps []byte) {
	tb.Helper()
	dir := tb.TempDir()
	if _, err := sample.Generate(context.Background(), sample.Options{Out: dir, Keywords: n, Countries: []string{"us"}}); err != nil {
		tb.Fatal(err)
	}
	planner, err := os.ReadFile(filepath.Join(dir, "us", sample.PlannerFile))
	if err != nil {
		tb.Fatal(err)
	}
	serps, err = os.ReadFile(filepath.Join(dir, "us", sample.SERPFile))
	if err != nil {
		tb.Fatal(err)
	}
	return planner, serps
}

func BenchmarkParse(b *testing.B) {
	planner, serps := sampleFiles(b, 20000)
	b.Run("planner", func(b *testing.B) {
		b.SetBytes(int64(len(planner)))
		for b.Loop() {
			if _, _, err := ParsePlanner(bytes.NewReader(planner), "p", nil, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("serps", func(b *testing.B) {
		b.SetBytes(int64(len(serps)))
		for b.Loop() {
			if _, err := ParseSERPJSONL(bytes.NewReader(serps), "s", "us", func(string, []kw.SERPRow) {}, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("run", func(b *testing.B) {
		dir := b.TempDir()
		pf, sf := filepath.Join(dir, "p.csv"), filepath.Join(dir, "s.jsonl")
		if err := os.WriteFile(pf, planner, 0o644); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(sf, serps, 0o644); err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(planner) + len(serps)))
		for b.Loop() {
			opt := Options{Data: filepath.Join(dir, "data"), Date: "2026-03-01", Country: "us",
				PlannerCSV: []string{pf}, SERPJSONL: []string{sf}}
			if _, err := Run(context.Background(), opt); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkSplitCells compares the planner reader's cell splitter with
// encoding/csv (tab separator, LazyQuotes, FieldsPerRecord -1) on the
// sample export's rows, decoded to UTF-8: the reason the reader keeps a
// splitter of its own is not speed alone (see splitCells), but the figure
// says what the standard reader would cost.
func BenchmarkSplitCells(b *testing.B) {
	planner, _ := sampleFiles(b, 20000)
	text, err := io.ReadAll(decodePlanner(bytes.NewReader(planner)))
	if err != nil {
		b.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(text), "\r\n"), "\n")
	b.Run("splitCells", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		var cells []string
		for b.Loop() {
			for _, l := range lines {
				cells = splitCells(strings.TrimSuffix(l, "\r"), '\t', cells)
			}
		}
	})
	b.Run("encoding/csv", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			r := csv.NewReader(bytes.NewReader(text))
			r.Comma, r.LazyQuotes, r.FieldsPerRecord, r.ReuseRecord = '\t', true, -1, true
			for {
				if _, err := r.Read(); err != nil {
					if err == io.EOF {
						break
					}
					b.Fatal(err)
				}
			}
		}
	})
}

// BenchmarkSERPCoverage measures what counting the keywords that got a
// SERP adds to a run: the hashing and the intersection of the sample's
// keywords and SERP keywords ("coverage"), beside a whole run of the same
// files ("run", which includes it), so the ratio is its share.
func BenchmarkSERPCoverage(b *testing.B) {
	planner, serps := sampleFiles(b, 20000)
	recs, _, err := ParsePlanner(bytes.NewReader(planner), "p", nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	var keywords, serpKeywords [][]byte
	for _, r := range recs {
		keywords = append(keywords, []byte(r.Keyword))
	}
	if _, err := ParseSERPJSONL(bytes.NewReader(serps), "s", "us", func(k string, _ []kw.SERPRow) {
		serpKeywords = append(serpKeywords, []byte(k))
	}, nil); err != nil {
		b.Fatal(err)
	}
	b.Run("coverage", func(b *testing.B) {
		for b.Loop() {
			seed := maphash.MakeSeed()
			k, s := &keySet{seed: seed}, &keySet{seed: seed}
			for _, key := range keywords {
				k.add(key)
			}
			for _, key := range serpKeywords {
				s.add(key)
			}
			intersect(k.hashes, s.hashes)
		}
	})
	b.Run("run", func(b *testing.B) {
		dir := b.TempDir()
		pf, sf := filepath.Join(dir, "p.csv"), filepath.Join(dir, "s.jsonl")
		if err := os.WriteFile(pf, planner, 0o644); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(sf, serps, 0o644); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			opt := Options{Data: filepath.Join(dir, "data"), Date: "2026-03-01", Country: "us",
				PlannerCSV: []string{pf}, SERPJSONL: []string{sf}}
			if _, err := Run(context.Background(), opt); err != nil {
				b.Fatal(err)
			}
		}
	})
}
