package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/lake"
)

// TestIngestPrintsAtMostTenBadRows checks what plain ingest prints about
// bad rows: the first ten with file and line, then a count of the rest;
// for a SERP file of another country, where every line is bad, that is
// followed by the one-line reason and nothing is written.
func TestIngestPrintsAtMostTenBadRows(t *testing.T) {
	t.Parallel()
	serpLine := func(cc string, i int) string {
		return fmt.Sprintf(`{"keyword": "k%02d", "country": %q, "results": [{"rank": 1, "url": "https://a.example/%d"}]}`, i, cc, i) + "\n"
	}
	lines := func(n int, line func(i int) string) string {
		var b strings.Builder
		for i := range n {
			b.WriteString(line(i))
		}
		return b.String()
	}
	tests := []struct {
		name    string
		flag    string // --planner-csv or --serp-jsonl
		content string
		listed  []string // reasons of the bad rows printed, in order; line i+1 each
		more    int      // the count printed after them; 0: no count line
		err     string   // "" when the ingest succeeds
	}{
		{"SERP file of another country", "--serp-jsonl", lines(30, func(i int) string { return serpLine("us", i) }),
			slices.Repeat([]string{"country us in a gb run"}, 10), 20,
			"none of its 30 data rows is usable, so nothing was written; the first, line 1: country us in a gb run"},
		{"planner export with 12 bad rows", "--planner-csv",
			lines(12, func(i int) string { return fmt.Sprintf("k%02d\tlots\n", i) }) + "good keyword\t10\n",
			slices.Repeat([]string{`Avg. monthly searches "lots" is not a search volume`}, 10), 2, ""},
		{"SERP file with 3 lines of another country", "--serp-jsonl",
			lines(3, func(i int) string { return serpLine("us", i) }) + serpLine("gb", 7),
			slices.Repeat([]string{"country us in a gb run"}, 3), 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			content := tt.content
			if tt.flag == "--planner-csv" {
				// The header is line 1, so bad row i is on line i+2.
				content = "Keyword\tAvg. monthly searches\n" + content
			}
			file := writeTestFile(t, dir, "input", content)
			data := filepath.Join(dir, "data")
			m, out, errb := testMain(t)
			err := m.Run(context.Background(), []string{"ingest", "--data", data, "--date", "2026-11-21", "--country", "gb", tt.flag, file})
			var want []string
			for i, reason := range tt.listed {
				line := i + 1
				if tt.flag == "--planner-csv" {
					line = i + 2
				}
				want = append(want, fmt.Sprintf("bad row: %s:%d: %s", file, line, reason))
			}
			if tt.more > 0 {
				want = append(want, fmt.Sprintf("... and %d more bad rows", tt.more))
			}
			if got := strings.Split(strings.TrimSuffix(errb.String(), "\n"), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("stderr:\n%s\nwant:\n%s", errb, strings.Join(want, "\n"))
			}
			if tt.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				if bad := fmt.Sprintf("%d bad rows", len(tt.listed)+tt.more); !strings.Contains(out.String(), bad) {
					t.Errorf("summary %q, want %q", out, bad)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), file+": "+tt.err) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("err = %v, want one line with %q", err, tt.err)
			}
			if _, err := lake.Read[kw.SERPRow](data, kw.DatasetSERPs, "gb", "2026-11-21"); !errors.Is(err, lake.ErrNoPartition) {
				t.Errorf("a refused file wrote a serps partition (read err %v)", err)
			}
		})
	}
}
