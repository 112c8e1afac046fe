package main

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/lake"
)

// realExportsDir is where the Keyword Planner exports people published
// are kept, beside the repository (they are test data, not part of it).
func realExportsDir(tb testing.TB) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for ; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		if filepath.Dir(dir) == dir {
			tb.Fatal("no go.mod above the test's folder")
		}
	}
	real := filepath.Join(filepath.Dir(dir), "shared", "real-exports")
	if _, err := os.Stat(real); err != nil {
		tb.Skipf("the published planner exports are not here (%s): %v", real, err)
	}
	return real
}

// TestRealExports ingests every published Keyword Planner export with
// kwdata ingest and reads the lake back: every keyword of the export is
// there, and its volume and competition are what the export says, NULL
// where it says nothing. The expectation comes from a reader of its own
// (UTF-16 by hand, cells by tab, numbers through strconv), so the two
// would have to be wrong the same way to agree.
func TestRealExports(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join(realExportsDir(t), "*.csv"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no exports: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			want := readExport(t, file)
			data := filepath.Join(t.TempDir(), "data")
			const date = "2026-11-21"
			run(t, "ingest", "--data", data, "--date", date, "--country", "us", "--planner-csv", file,
				"--usd-rate", "GBP=1.27", "--usd-rate", "EUR=1.08", "--usd-rate", "CAD=0.73") // CAD: an export made in Korean
			got, err := lake.Read[kw.KeywordRecord](data, kw.DatasetKeywords, "us", date)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Errorf("the lake has %d keywords, the export %d", len(got), len(want))
			}
			var nullVolume, nullComp int
			for _, r := range got {
				w, ok := want[r.Keyword]
				if !ok {
					t.Errorf("%q is in the lake but not in the export", r.Keyword)
					continue
				}
				delete(want, r.Keyword)
				if !same(r.Volume, w.volume) {
					t.Errorf("%q: volume %s, the export says %s", r.Keyword, show(r.Volume), show(w.volume))
				}
				if (r.Competition == nil) != (w.competition == nil) ||
					r.Competition != nil && math.Abs(*r.Competition-*w.competition) > 1e-9 {
					t.Errorf("%q: competition %s, the export says %s", r.Keyword, show(r.Competition), show(w.competition))
				}
				if r.Volume == nil {
					nullVolume++
				}
				if r.Competition == nil {
					nullComp++
				}
			}
			for k := range want {
				t.Errorf("%q of the export is not in the lake", k)
			}
			t.Logf("%d keywords, %d without volume, %d without competition", len(got), nullVolume, nullComp)
			checkDuckDBNulls(t, data, len(got), nullVolume, nullComp)
		})
	}
}

// exportRow is what a test expects of one keyword of an export.
type exportRow struct {
	volume      *int64
	competition *float64
}

// readExport reads a planner export independently of the importer: by
// its header names, today's or the legacy AdWords ones; of rows that
// normalize to the same keyword, the largest volume wins (a missing one
// loses to any), the first on ties.
func readExport(tb testing.TB, name string) map[string]exportRow {
	tb.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		tb.Fatal(err)
	}
	if len(b) < 2 || b[0] != 0xff || b[1] != 0xfe {
		tb.Fatalf("%s is not UTF-16LE with a byte order mark", name)
	}
	units := make([]uint16, (len(b)-2)/2)
	for i := range units {
		units[i] = binary.LittleEndian.Uint16(b[2+2*i:])
	}
	lines := strings.Split(string(utf16.Decode(units)), "\n")
	header := -1
	col := map[string]int{}
	for i, line := range lines {
		for j, c := range strings.Split(strings.TrimRight(line, "\r"), "\t") {
			c = strings.ToLower(strings.TrimSpace(c))
			if _, dup := col[c]; !dup {
				col[c] = j
			}
			if c == "keyword" {
				header = i
			}
		}
		if header >= 0 {
			break
		}
		clear(col)
	}
	if header < 0 {
		tb.Fatalf("%s has no header row", name)
	}
	volCol := -1
	for h, j := range col {
		if strings.HasPrefix(h, "avg. monthly searches") {
			volCol = j
		}
	}
	index, hasIndex := col["competition (indexed value)"]
	out := map[string]exportRow{}
	for _, line := range lines[header+1:] {
		cells := strings.Split(strings.TrimRight(line, "\r"), "\t")
		cell := func(j int) string {
			if j < 0 || j >= len(cells) {
				return ""
			}
			return strings.Trim(strings.TrimSpace(cells[j]), `"`)
		}
		raw := cell(col["keyword"])
		if raw == "" {
			continue // blank line, or a segmentation's summary row
		}
		k, err := kw.NormalizeKeyword(raw)
		if err != nil {
			tb.Fatalf("%s: keyword %q: %v", name, raw, err)
		}
		var r exportRow
		if f, ok := number(cell(volCol)); ok {
			v := int64(f)
			r.volume = &v
		}
		if f, ok := number(cell(index)); ok && hasIndex {
			c := math.Round(f) / 100
			r.competition = &c
		} else if f, ok := number(cell(col["competition"])); ok && !hasIndex {
			c := math.Round(f*100) / 100 // the legacy export: a decimal 0–1
			r.competition = &c
		}
		if old, ok := out[k]; !ok || kw.MoreVolume(r.volume, old.volume) {
			out[k] = r
		}
	}
	return out
}

// number parses a numeric cell ("1,000", "5000000.0", "1.74483905E9"); ok
// is false for the cells that mean no value.
func number(s string) (float64, bool) {
	f, err := strconv.ParseFloat(strings.ReplaceAll(s, ",", ""), 64)
	return f, err == nil
}

// checkDuckDBNulls reads the keywords the test ingested with DuckDB, where
// it is installed, and checks that it sees the same NULLs: a missing value
// an analyst would otherwise average in as 0.
func checkDuckDBNulls(t *testing.T, data string, rows, nullVolume, nullComp int) {
	t.Helper()
	mods := os.Getenv("KWDATA_DUCKDB")
	node, err := exec.LookPath("node")
	if mods == "" || err != nil {
		t.Log("DuckDB is not installed (KWDATA_DUCKDB); the NULL check through DuckDB is skipped")
		return
	}
	script := filepath.Join(mods, "kwdata-duckdb-nulls.mjs")
	const js = `import { DuckDBInstance } from '@duckdb/node-api';
const db = await DuckDBInstance.create(':memory:');
const c = await db.connect();
const r = await c.runAndReadAll("SELECT count(*) AS n, count(*) - count(volume) AS nv, count(*) - count(competition) AS nc FROM read_parquet('" + process.argv[2] + "/lake/keywords/*/*/*.parquet', hive_partitioning=true)");
console.log(JSON.stringify(r.getRowObjectsJson()[0]));
`
	if err := os.WriteFile(script, []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(script)
	out, err := exec.Command(node, script, data).CombinedOutput()
	if err != nil {
		t.Fatalf("duckdb: %v\n%s", err, out)
	}
	var got struct{ N, NV, NC json.Number }
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("duckdb printed %s: %v", out, err)
	}
	if got.N.String() != strconv.Itoa(rows) || got.NV.String() != strconv.Itoa(nullVolume) || got.NC.String() != strconv.Itoa(nullComp) {
		t.Errorf("DuckDB sees %s rows, %s NULL volumes, %s NULL competitions; kwdata wrote %d, %d, %d",
			got.N, got.NV, got.NC, rows, nullVolume, nullComp)
	}
}
