package ingest

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
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
