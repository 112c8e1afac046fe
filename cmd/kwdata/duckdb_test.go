package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/lake"

	"github.com/kwdata/kwdata/internal/testservers"
)

// TestDuckDBReadsTheLake reads the lake with DuckDB the way docs/ANALYSTS.md
// shows analysts (read_parquet with hive_partitioning) and checks that
// it sees exactly the rows and partition columns kwdata wrote. It needs
// node and DuckDB's Node package: KWDATA_DUCKDB names a folder holding
// node_modules/@duckdb/node-api (.ci/run installs it); without it the test
// is skipped.
func TestDuckDBReadsTheLake(t *testing.T) {
	t.Parallel()
	mods := os.Getenv("KWDATA_DUCKDB")
	node, err := exec.LookPath("node")
	if mods == "" || err != nil {
		testservers.SkipForTool(t, "DuckDB", "npm install --prefix DIR @duckdb/node-api@1.5.6-r.1, then KWDATA_DUCKDB=DIR (Node.js needed; .ci/run does both)")
	}
	dir := t.TempDir()
	in, data := filepath.Join(dir, "in"), filepath.Join(dir, "data")
	const date = "2026-11-21"
	run(t, "sample", "--out", in, "--keywords", "1500", "--countries", "us,de", "--seed", "3")
	for _, cc := range []string{"us", "de"} {
		run(t, "ingest", "--data", data, "--date", date, "--country", cc,
			"--planner-csv", filepath.Join(in, cc, "keyword-planner.csv"), "--serp-jsonl", filepath.Join(in, cc, "serps.jsonl"))
	}
	run(t, "similarity", "--data", data, "--date", date)

	script, err := filepath.Abs("testdata/duckdb-lake.mjs")
	if err != nil {
		t.Fatal(err)
	}
	// Node resolves packages from the script's folder, so run a copy that
	// sits beside the installed node_modules.
	local := filepath.Join(mods, "kwdata-duckdb-lake.mjs")
	b, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(local, b, 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(local)
	out, err := exec.Command(node, local, data).CombinedOutput()
	if err != nil {
		t.Fatalf("duckdb: %v\n%s", err, out)
	}
	type row map[string]any
	var got struct{ Keywords, SERPs, Related, Intents, Groups, Types []row }
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("duckdb printed %s: %v", out, err)
	}

	num := func(v any) int64 {
		n, _ := strconv.ParseInt(fmt.Sprint(v), 10, 64)
		return n
	}
	for i, cc := range []string{"de", "us"} {
		recs, err := lake.Read[kw.KeywordRecord](data, kw.DatasetKeywords, cc, date)
		if err != nil {
			t.Fatal(err)
		}
		var ranges, months, cpc int64
		for _, r := range recs {
			if r.VolumeRange != "" {
				ranges++
			}
			months += int64(len(r.Monthly))
			cpc += kw.Deref(r.CPCMicros) // SUM skips nulls
		}
		k := got.Keywords[i]
		if k["country"] != cc || k["date"] != date || num(k["n"]) != int64(len(recs)) ||
			num(k["ranges"]) != ranges || num(k["months"]) != months || num(k["cpc"]) != cpc {
			t.Errorf("%s keywords: DuckDB sees %v; kwdata wrote n=%d ranges=%d months=%d cpc=%d",
				cc, k, len(recs), ranges, months, cpc)
		}
		serps, _ := lake.Read[kw.SERPRow](data, kw.DatasetSERPs, cc, date)
		if s := got.SERPs[i]; s["country"] != cc || num(s["n"]) != int64(len(serps)) {
			t.Errorf("%s serps: DuckDB sees %v, kwdata wrote %d rows", cc, s, len(serps))
		}
		related, _ := lake.Read[kw.RelatedRow](data, kw.DatasetRelated, cc, date)
		var overlap, same int64
		for _, r := range related {
			overlap += int64(r.Overlap)
			if r.SameIntent {
				same++
			}
		}
		if r := got.Related[i]; num(r["n"]) != int64(len(related)) || num(r["overlap"]) != overlap || num(r["same"]) != same {
			t.Errorf("%s related: DuckDB sees %v; kwdata wrote n=%d overlap=%d same=%d", cc, r, len(related), overlap, same)
		}
		intents, _ := lake.Read[kw.IntentRow](data, kw.DatasetIntents, cc, date)
		if r := got.Intents[i]; num(r["n"]) != int64(len(intents)) || len(intents) != len(recs) {
			t.Errorf("%s intents: DuckDB sees %v; kwdata wrote %d for %d keywords", cc, r, len(intents), len(recs))
		}
	}
	// The README's intent_groups view: the largest groups of de, by total
	// volume, as kwdata's own intents and keywords give them.
	{
		recs, _ := lake.Read[kw.KeywordRecord](data, kw.DatasetKeywords, "de", date)
		intents, _ := lake.Read[kw.IntentRow](data, kw.DatasetIntents, "de", date)
		vol := map[string]int64{}
		for _, r := range recs {
			vol[r.Keyword] = kw.Deref(r.Volume)
		}
		size, total := map[string]int64{}, map[string]int64{}
		for _, r := range intents {
			size[r.Intent]++
			total[r.Intent] += vol[r.Keyword]
		}
		if len(got.Groups) != 5 {
			t.Fatalf("intent_groups answered %d rows", len(got.Groups))
		}
		for _, g := range got.Groups {
			l := fmt.Sprint(g["leader"])
			if g["country"] != "de" || num(g["size"]) != size[l] || num(g["total_volume"]) != total[l] {
				t.Errorf("intent_groups row %v; kwdata has size %d total %d", g, size[l], total[l])
			}
		}
	}
	want := map[string]string{"keyword": "VARCHAR", "rank": "INTEGER", "related": "VARCHAR", "overlap": "INTEGER",
		"volume": "BIGINT", "cpc_micros": "BIGINT", "same_intent": "BOOLEAN", "country": "VARCHAR", "date": "DATE"}
	for _, ty := range got.Types {
		name := fmt.Sprint(ty["column_name"])
		if w, ok := want[name]; !ok || fmt.Sprint(ty["column_type"]) != w {
			t.Errorf("related column %s has DuckDB type %v, want %q", name, ty["column_type"], w)
		}
		delete(want, name)
	}
	if len(want) > 0 {
		t.Errorf("DuckDB does not see related columns %v", want)
	}
}
