package sample

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	xunicode "golang.org/x/text/encoding/unicode"

	"github.com/kwdata/kwdata/kw"
)

var testNow = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

// generate runs Generate into a fresh folder and returns the folder.
func generate(tb testing.TB, opt Options) (string, Result) {
	tb.Helper()
	if opt.Out == "" {
		opt.Out = tb.TempDir()
	}
	if opt.Now.IsZero() {
		opt.Now = testNow
	}
	res, err := Generate(context.Background(), opt)
	if err != nil {
		tb.Fatalf("Generate: %v", err)
	}
	return opt.Out, res
}

func readFile(tb testing.TB, path string) []byte {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// plannerFile is a decoded planner export.
type plannerFile struct {
	preamble []string
	header   []string
	rows     [][]string
}

// readPlanner decodes a planner export the way an ingest would: UTF-16LE
// with a byte order mark, preamble lines, then a TAB-separated table.
func readPlanner(tb testing.TB, path string) plannerFile {
	tb.Helper()
	raw := readFile(tb, path)
	if !bytes.HasPrefix(raw, []byte{0xFF, 0xFE}) {
		tb.Fatalf("%s does not start with the UTF-16LE byte order mark", path)
	}
	text, err := xunicode.UTF16(xunicode.LittleEndian, xunicode.ExpectBOM).NewDecoder().Bytes(raw)
	if err != nil {
		tb.Fatalf("decode %s as UTF-16LE: %v", path, err)
	}
	lines := strings.Split(strings.TrimSuffix(string(text), "\r\n"), "\r\n")
	var pf plannerFile
	for i, l := range lines {
		cells := strings.Split(l, "\t")
		if pf.header == nil {
			if cells[0] == "Keyword" {
				pf.header = cells
				pf.preamble = lines[:i]
			}
			continue
		}
		if len(cells) != len(pf.header) {
			tb.Fatalf("%s line %d has %d cells, header has %d", path, i+1, len(cells), len(pf.header))
		}
		pf.rows = append(pf.rows, cells)
	}
	if pf.header == nil {
		tb.Fatalf("%s has no header row", path)
	}
	return pf
}

type serpLine struct {
	Keyword string `json:"keyword"`
	Country string `json:"country"`
	Results []struct {
		Rank int    `json:"rank"`
		URL  string `json:"url"`
	} `json:"results"`
}

func readSERPs(tb testing.TB, path string) []serpLine {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var out []serpLine
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		var s serpLine
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			tb.Fatalf("%s line %d: %v", path, n, err)
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}

// parseVolume reads "1,300" or the lower bound of "1K – 10K".
func parseVolume(s string) (int64, bool, error) {
	rangeText := strings.Contains(s, " – ")
	if rangeText {
		s, _, _ = strings.Cut(s, " – ")
		s = strings.Replace(strings.Replace(s, "K", "000", 1), "M", "000000", 1)
	}
	v, err := strconv.ParseInt(strings.ReplaceAll(s, ",", ""), 10, 64)
	return v, rangeText, err
}

func TestDeterministic(t *testing.T) {
	opt := Options{Keywords: 3000, Countries: []string{"us", "de"}, Seed: 7}
	a, _ := generate(t, opt)
	b, _ := generate(t, opt)
	for _, cc := range opt.Countries {
		for _, name := range []string{PlannerFile, SERPFile} {
			fa := readFile(t, filepath.Join(a, cc, name))
			fb := readFile(t, filepath.Join(b, cc, name))
			if !bytes.Equal(fa, fb) {
				t.Errorf("%s/%s differs between two runs with the same options", cc, name)
			}
		}
	}
}

func TestOptions(t *testing.T) {
	base := Options{Keywords: 2000, Countries: []string{"gb"}, Seed: 3}
	baseDir, baseRes := generate(t, base)
	basePlanner := readPlanner(t, filepath.Join(baseDir, "gb", PlannerFile))
	baseSERPs := readFile(t, filepath.Join(baseDir, "gb", SERPFile))

	t.Run("defaults", func(t *testing.T) {
		opt, err := Options{Out: "x"}.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		if opt.Keywords != 20000 || opt.Seed != 1 || opt.Months != 12 || !slices.Equal(opt.Countries, []string{"us", "gb", "de"}) || opt.Now.IsZero() || opt.Logger == nil {
			t.Errorf("defaults not filled: %+v", opt)
		}
	})
	t.Run("keywords", func(t *testing.T) {
		if baseRes.Keywords != 2000 {
			t.Errorf("Result.Keywords = %d, want 2000", baseRes.Keywords)
		}
		seen := map[string]bool{}
		for _, r := range basePlanner.rows {
			k, err := kw.NormalizeKeyword(r[0])
			if err != nil {
				t.Fatalf("keyword %q: %v", r[0], err)
			}
			seen[k] = true
		}
		if len(seen) != 2000 {
			t.Errorf("planner holds %d distinct keywords, want 2000", len(seen))
		}
	})
	t.Run("countries", func(t *testing.T) {
		dir, res := generate(t, Options{Keywords: 500, Countries: []string{"US", "fr"}})
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		if !slices.Equal(names, []string{"fr", "us"}) {
			t.Errorf("country folders %v, want [fr us]", names)
		}
		if len(res.Files) != 4 || res.Keywords != 1000 {
			t.Errorf("Result = %+v, want 4 files and 1000 keywords", res)
		}
		for _, s := range readSERPs(t, filepath.Join(dir, "fr", SERPFile)) {
			if s.Country != "fr" {
				t.Fatalf("fr SERP has country %q", s.Country)
			}
		}
	})
	t.Run("seed", func(t *testing.T) {
		opt := base
		opt.Seed = 4
		dir, _ := generate(t, opt)
		if bytes.Equal(readFile(t, filepath.Join(dir, "gb", SERPFile)), baseSERPs) {
			t.Error("another seed gave the same SERPs")
		}
	})
	t.Run("months", func(t *testing.T) {
		opt := base
		opt.Months = 3
		dir, _ := generate(t, opt)
		pf := readPlanner(t, filepath.Join(dir, "gb", PlannerFile))
		want := []string{"Searches: Aug 2026", "Searches: Sep 2026", "Searches: Oct 2026"}
		if got := pf.header[len(plannerColumns):]; !slices.Equal(got, want) {
			t.Errorf("monthly columns %q, want %q", got, want)
		}
	})
	t.Run("now changes labels only", func(t *testing.T) {
		opt := base
		opt.Now = time.Date(2027, 3, 2, 8, 30, 0, 0, time.UTC)
		dir, _ := generate(t, opt)
		pf := readPlanner(t, filepath.Join(dir, "gb", PlannerFile))
		if pf.preamble[0] != "Keyword Stats 2027-03-02 at 08_30_00" || pf.preamble[1] != "March 1, 2026 - February 28, 2027" {
			t.Errorf("preamble %q", pf.preamble)
		}
		if last := pf.header[len(pf.header)-1]; last != "Searches: Feb 2027" {
			t.Errorf("last monthly column %q, want Searches: Feb 2027", last)
		}
		if !slices.EqualFunc(pf.rows, basePlanner.rows, slices.Equal) {
			t.Error("planner rows changed with Now")
		}
		if !bytes.Equal(readFile(t, filepath.Join(dir, "gb", SERPFile)), baseSERPs) {
			t.Error("SERPs changed with Now")
		}
	})
	t.Run("invalid", func(t *testing.T) {
		dir := t.TempDir()
		for _, opt := range []Options{
			{},
			{Out: dir, Countries: []string{"xx"}},
			{Out: dir, Keywords: -1},
			{Out: dir, Keywords: MaxKeywords + 1},
			{Out: dir, Months: 49},
		} {
			if _, err := Generate(context.Background(), opt); err == nil {
				t.Errorf("Generate(%+v) succeeded, want an error", opt)
			}
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		dir := t.TempDir()
		_, err := Generate(ctx, Options{Out: dir, Keywords: 20000, Countries: []string{"us"}})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		ents, _ := os.ReadDir(filepath.Join(dir, "us"))
		if len(ents) != 0 {
			t.Errorf("a cancelled run left files behind: %v", ents)
		}
	})
}

// TestStructure checks the properties that ingest and the similarity stage
// rely on, on a sample of moderate size.
func TestStructure(t *testing.T) {
	n := 20000
	if testing.Short() {
		n = 5000
	}
	dir, res := generate(t, Options{Keywords: n, Countries: []string{"us", "de"}, Seed: 1})
	if res.Keywords != 2*n {
		t.Errorf("Result.Keywords = %d, want %d", res.Keywords, 2*n)
	}
	for _, cc := range []string{"us", "de"} {
		t.Run(cc, func(t *testing.T) {
			checkPlanner(t, filepath.Join(dir, cc, PlannerFile), n, cc)
			checkSERPs(t, dir, cc)
		})
	}
}

func checkPlanner(t *testing.T, path string, n int, cc string) {
	pf := readPlanner(t, path)
	if len(pf.preamble) != 2 || !strings.HasPrefix(pf.preamble[0], "Keyword Stats 2026-11-21 at ") {
		t.Errorf("preamble %q", pf.preamble)
	}
	if got := pf.header[:len(plannerColumns)]; !slices.Equal(got, plannerColumns) {
		t.Errorf("header %q", got)
	}
	months := pf.header[len(plannerColumns):]
	if len(months) != 12 || months[0] != "Searches: Nov 2025" || months[11] != "Searches: Oct 2026" {
		t.Errorf("monthly columns %q", months)
	}
	col := func(name string) int { return slices.Index(pf.header, name) }
	iVol, iComp, iIdx, iLow, iHigh := col("Avg. monthly searches"), col("Competition"), col("Competition (indexed value)"), col("Top of page bid (low range)"), col("Top of page bid (high range)")

	volumes := map[string][]int64{} // normalized keyword -> volumes of its rows
	volCount := map[int64]int{}
	var ranges, odd, nonASCII, blankBids, blankMonths int
	for _, r := range pf.rows {
		k, err := kw.NormalizeKeyword(r[0])
		if err != nil {
			t.Fatalf("keyword %q does not normalize: %v", r[0], err)
		}
		if k != r[0] {
			odd++
		}
		if strings.ContainsFunc(k, func(c rune) bool { return c > 0x7f }) {
			nonASCII++
		}
		if r[1] != "USD" {
			t.Fatalf("currency %q", r[1])
		}
		v, isRange, err := parseVolume(r[iVol])
		if err != nil || v < 10 {
			t.Fatalf("volume %q: %v", r[iVol], err)
		}
		if isRange {
			ranges++
		} else if v >= 1000 && !strings.Contains(r[iVol], ",") {
			t.Fatalf("volume %q lacks thousands separators", r[iVol])
		}
		volumes[k] = append(volumes[k], v)
		volCount[v]++
		switch r[iComp] {
		case "Low", "Medium", "High":
			if x, err := strconv.Atoi(r[iIdx]); err != nil || x < 0 || x > 100 {
				t.Fatalf("competition index %q", r[iIdx])
			}
		case "":
		default:
			t.Fatalf("competition %q", r[iComp])
		}
		if r[iLow] == "" {
			blankBids++
		} else {
			lo, err1 := strconv.ParseFloat(r[iLow], 64)
			hi, err2 := strconv.ParseFloat(r[iHigh], 64)
			if err1 != nil || err2 != nil || lo > hi {
				t.Fatalf("bids %q %q", r[iLow], r[iHigh])
			}
		}
		for _, m := range r[len(plannerColumns):] {
			if m == "" {
				blankMonths++
				continue
			}
			if _, _, err := parseVolume(m); err != nil {
				t.Fatalf("monthly searches %q: %v", m, err)
			}
		}
	}
	if len(volumes) != n {
		t.Errorf("%d distinct keywords, want %d", len(volumes), n)
	}
	dups := 0
	for k, vs := range volumes {
		if len(vs) > 1 {
			dups++
			if vs[0] == vs[1] {
				t.Errorf("duplicate rows of %q have the same volume", k)
			}
		}
	}
	ties := 0
	for _, c := range volCount {
		if c > 1 {
			ties += c
		}
	}
	for _, c := range []struct {
		name     string
		got, min int
	}{
		{"range volumes", ranges, n / 400},
		{"odd spellings", odd, n / 1000},
		{"duplicate keywords", dups, 1},
		{"rows that tie on volume", ties, len(pf.rows) / 2},
		{"blank bids", blankBids, n / 50},
		{"blank monthly cells", blankMonths, 1},
	} {
		if c.got < c.min {
			t.Errorf("%s: %d, want at least %d", c.name, c.got, c.min)
		}
	}
	if cc == "de" && nonASCII < n/100 {
		t.Errorf("only %d non-ASCII keywords in de", nonASCII)
	}
}

func checkSERPs(t *testing.T, dir, cc string) {
	pf := readPlanner(t, filepath.Join(dir, cc, PlannerFile))
	planned := map[string]bool{}
	for _, r := range pf.rows {
		k, _ := kw.NormalizeKeyword(r[0])
		planned[k] = true
	}
	serps := readSERPs(t, filepath.Join(dir, cc, SERPFile))

	keyCount := map[string]int{}       // SERPs holding a URL key
	spellings := map[string][]string{} // URL key -> distinct spellings
	var short, dupURL, orphans int
	withSERP := map[string]bool{}
	keySets := make([]map[string]bool, len(serps))
	for i, s := range serps {
		k, err := kw.NormalizeKeyword(s.Keyword)
		if err != nil {
			t.Fatalf("SERP keyword %q: %v", s.Keyword, err)
		}
		if withSERP[k] {
			t.Fatalf("two SERPs of %q", k)
		}
		withSERP[k] = true
		if !planned[k] {
			orphans++
		}
		if s.Country != cc || len(s.Results) == 0 || len(s.Results) > 20 {
			t.Fatalf("SERP of %q: country %q, %d results", k, s.Country, len(s.Results))
		}
		if len(s.Results) < 20 {
			short++
		}
		set := map[string]bool{}
		for j, r := range s.Results {
			if r.Rank != j+1 {
				t.Fatalf("SERP of %q: result %d has rank %d", k, j, r.Rank)
			}
			key, err := kw.URLKey(r.URL)
			if err != nil {
				t.Fatalf("URL %q: %v", r.URL, err)
			}
			if set[key] {
				dupURL++
			}
			set[key] = true
			if sp := spellings[key]; !slices.Contains(sp, r.URL) && len(sp) < 4 {
				spellings[key] = append(sp, r.URL)
			}
		}
		for key := range set {
			keyCount[key]++
		}
		keySets[i] = set
	}
	var noSERP int
	for k := range planned {
		if !withSERP[k] {
			noSERP++
		}
	}
	top := 0
	for _, c := range keyCount {
		top = max(top, c)
	}
	variants := 0
	for _, sp := range spellings {
		if len(sp) > 1 {
			variants++
		}
	}
	// Neighbouring lines are mostly of one intent group and share most URLs.
	sameIntent := 0
	for i := 1; i < len(keySets); i++ {
		shared := 0
		for key := range keySets[i] {
			if keySets[i-1][key] {
				shared++
			}
		}
		if shared >= 12 {
			sameIntent++
		}
	}
	n := len(serps)
	for _, c := range []struct {
		name     string
		got, min int
	}{
		{"SERPs holding the most popular URL", top, n / 50},
		{"short SERPs", short, n / 50},
		{"URLs listed twice in a SERP", dupURL, n / 500},
		{"keywords without a SERP", noSERP, len(planned) / 100},
		{"SERPs of keywords not in the planner", orphans, n / 1000},
		{"URL keys with several spellings", variants, n / 10},
		{"neighbouring SERPs sharing at least 12 URLs", sameIntent, n / 2},
	} {
		if c.got < c.min {
			t.Errorf("%s: %d, want at least %d", c.name, c.got, c.min)
		}
	}
	t.Logf("%s: %d SERPs, top URL in %.1f%%, %d short, %d duplicate URLs, %d without SERP, %d orphans, %d distinct URL keys",
		cc, n, 100*float64(top)/float64(n), short, dupURL, noSERP, orphans, len(keyCount))
}

// TestVocabularyNormalized guards the assumption that keywords built from
// the vocabulary are their own normalization.
func TestVocabularyNormalized(t *testing.T) {
	var words []string
	for _, c := range append(enCategories, deCategory) {
		for _, n := range c.nouns {
			words = append(words, n.plural, n.singular)
		}
		words = append(append(append(words, c.quals...), c.brands...), c.attrs...)
	}
	for _, m := range append(enModifiers, deModifiers...) {
		words = append(words, strings.ReplaceAll(m.format, "%", "x"))
	}
	words = append(append(append(words, enShopPrefixes...), enShopSuffixes...), enQuestionSuffixes...)
	words = append(append(words, deShopPrefixes...), deShopSuffixes...)
	for _, w := range words {
		if w == "" {
			continue
		}
		if k, err := kw.NormalizeKeyword(w); err != nil || k != w {
			t.Errorf("vocabulary entry %q normalizes to %q, %v", w, k, err)
		}
	}
}

func TestBucket(t *testing.T) {
	for _, c := range []struct {
		v    float64
		want int64
	}{
		{0, 10}, {14, 10}, {15, 20}, {1000, 1000}, {1140, 1000}, {1150, 1300}, {1e9, 11100000},
	} {
		if got := bucket(c.v); got != c.want {
			t.Errorf("bucket(%v) = %d, want %d", c.v, got, c.want)
		}
	}
}

func TestAppendThousands(t *testing.T) {
	for _, c := range []struct {
		v    int64
		want string
	}{
		{0, "0"}, {999, "999"}, {1000, "1,000"}, {1300, "1,300"}, {1220000, "1,220,000"}, {100005, "100,005"},
	} {
		if got := string(appendThousands(nil, c.v)); got != c.want {
			t.Errorf("appendThousands(%d) = %q, want %q", c.v, got, c.want)
		}
	}
}

// TestURLVariants checks that every spelling variant keeps the URL key.
func TestURLVariants(t *testing.T) {
	links := []link{
		{host: "example.com", path: "/"},
		{host: "example.com", path: "/a/b/", www: true},
		{host: "youtube.com", path: "/watch", query: "v=abc123", www: true},
		{host: "en.wikipedia.org", path: "/wiki/Caf%C3%A9_(12)"},
	}
	for _, l := range links {
		want, err := kw.URLKey(string(appendURL(nil, &l, 0, 0)))
		if err != nil {
			t.Fatal(err)
		}
		for v := 1; v < 1<<varCount; v++ {
			for pick := uint32(0); pick < 1<<10; pick += 257 {
				u := string(appendURL(nil, &l, v, pick))
				if got, err := kw.URLKey(u); err != nil || got != want {
					t.Errorf("URLKey(%q) = %q, %v; want %q", u, got, err, want)
				}
			}
		}
	}
}

// TestOddSpelling checks that odd spellings normalize back and differ.
func TestOddSpelling(t *testing.T) {
	w := &worker{}
	for _, text := range []string{"running shoes", "laufschuhe", "crème brûlée recipe", "günstige kopfhörer für damen"} {
		for kind := range oddKinds {
			got := w.oddSpelling(text, kind)
			if got == text {
				t.Errorf("oddSpelling(%q, %d) did not change it", text, kind)
			}
			if k, err := kw.NormalizeKeyword(got); err != nil || k != text {
				t.Errorf("NormalizeKeyword(%q) = %q, %v; want %q", got, k, err, text)
			}
		}
	}
}

func BenchmarkGenerate(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		b.Run(fmt.Sprintf("keywords=%d", n), func(b *testing.B) {
			out := b.TempDir()
			var res Result
			for b.Loop() {
				var err error
				res, err = Generate(context.Background(), Options{Out: out, Keywords: n, Countries: []string{"us"}, Now: testNow})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(res.Keywords)*float64(b.N)/b.Elapsed().Seconds(), "keywords/s")
		})
	}
}
