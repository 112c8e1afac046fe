package index

import (
	"context"
	"crypto/sha256"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/kwdata/kwdata/kw"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files in testdata/")

// TestBuildGolden builds fixed lakes and compares every key and value of
// the build with a digest recorded in testdata/build.golden: a change to
// the build (faster reading, another merge, other table writers) must not
// change a byte of what it stores, so the answers served from it stay the
// same. Each table (keywords, intent groups, prefix and word records) has
// its own line, so a failure says which one changed. Run with -update only
// for a change of the format, with a new format version.
func TestBuildGolden(t *testing.T) {
	lakes := []struct {
		name string
		make func(tb testing.TB, data string)
	}{
		{"test-lake", testLake},
		{"suggest-lake", func(tb testing.TB, data string) { suggestLake(tb, data, 1500, 3) }},
		{"synthetic-3000", func(tb testing.TB, data string) { genLake(tb, data, "2026-11-21", "us", 3000) }},
	}
	var got strings.Builder
	for _, l := range lakes {
		data := t.TempDir()
		l.make(t, data)
		if _, err := Build(context.Background(), BuildOptions{Data: data, Date: "2026-11-21", Logger: testLogger(t), AllowMissingRelated: true}); err != nil {
			t.Fatalf("%s: %v", l.name, err)
		}
		for _, line := range buildDigests(t, data) {
			fmt.Fprintf(&got, "%s %s\n", l.name, line)
		}
	}
	path := filepath.Join("testdata", "build.golden")
	if *updateGolden {
		if err := os.WriteFile(path, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != string(want) {
		t.Errorf("the build's contents changed:\n got:\n%s\nwant:\n%s", got.String(), want)
	}
}

// buildDigests reads every key and value of the published build and
// returns, per country and table, the number of keys and the SHA-256 of
// the keys and values in order.
func buildDigests(tb testing.TB, data string) []string {
	tb.Helper()
	id := readCurrent(tb, data)
	db, err := pebble.Open(filepath.Join(kw.IndexDir(data), id, dbDirName), &pebble.Options{ReadOnly: true})
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	it, err := db.NewIter(nil)
	if err != nil {
		tb.Fatal(err)
	}
	defer it.Close()
	tables := map[byte]string{0: "keywords", groupSep: "groups", prefixSep: "prefixes", wordSep: "words", exploreSep: "explore"}
	var out []string
	var section string
	n := 0
	h := sha256.New()
	flush := func() {
		if n > 0 {
			out = append(out, fmt.Sprintf("%s %d %x", section, n, h.Sum(nil)))
		}
		n = 0
		h.Reset()
	}
	for valid := it.First(); valid; valid = it.Next() {
		k := it.Key()
		if len(k) < 3 {
			tb.Fatalf("key %q is shorter than a country and a separator", k)
		}
		s := string(k[:2]) + "/" + tables[k[2]]
		if s != section {
			flush()
			section = s
		}
		v, err := it.ValueAndErr()
		if err != nil {
			tb.Fatal(err)
		}
		fmt.Fprintf(h, "%d:%s%d:", len(k), k, len(v))
		h.Write(v)
		n++
	}
	flush()
	if err := it.Error(); err != nil {
		tb.Fatal(err)
	}
	return out
}

var digestData = flag.String("digest-data", "", "data folder whose published build TestDigestOfData prints the table digests of (index/bench.sh compares two builds with it)")

// TestDigestOfData prints the digests TestBuildGolden compares, of the
// published build of -digest-data; without the flag it is skipped.
func TestDigestOfData(t *testing.T) {
	if *digestData == "" {
		t.Skip("no -digest-data folder given")
	}
	for _, line := range buildDigests(t, *digestData) {
		fmt.Println(line)
	}
}

// buildExplore is whether TestBuildOfData writes the explorer's tables.
var buildExplore = flag.Bool("build-explore", true, "whether TestBuildOfData writes the explorer's tables")

// TestBuildOfData builds -build-data's lake of -build-date into a new
// published build, with or without the explorer's tables
// (-build-explore): index/bench.sh times both. Without -build-data it is
// skipped.
func TestBuildOfData(t *testing.T) {
	if *buildData == "" {
		t.Skip("no -build-data folder given")
	}
	exploreTables = *buildExplore
	defer func() { exploreTables = true }()
	if _, err := Build(context.Background(), BuildOptions{Data: *buildData, Date: *buildDate, AllowShrink: true}); err != nil {
		t.Fatal(err)
	}
}
