package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/kwdata/kwdata/index"
	"github.com/kwdata/kwdata/internal/testservers"
	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/lake"
)

// The explorer's exactness against DuckDB. The rules of an explore query
// (docs/perf/explore.md) are written here a second time, as SQL over the
// lake's keywords and intents datasets; DuckDB answers every query of a
// random set in one Node process, and the answers of the served build,
// page after page through the cursors, must be the same rows in the same
// order with the same total on every page.

// exploreDuckDBDate is the data date of the lakes these tests build.
const exploreDuckDBDate = "2026-11-21"

// TestExploreMatchesDuckDBOnTheSample checks the explorer against DuckDB
// on lakes made by kwdata sample: us (English), de in the web shape (a
// long tail of small intent groups), tw (a language written without
// spaces, where terms match as substrings, here of text with spaces) and
// jp, the sample's keywords and SERPs reworded in Japanese (substrings,
// and questions by the keyword's first characters).
func TestExploreMatchesDuckDBOnTheSample(t *testing.T) {
	t.Parallel()
	node, mods := duckDBTool(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	in, web := filepath.Join(dir, "sample"), filepath.Join(dir, "web")
	run(t, "sample", "--out", in, "--keywords", "2500", "--countries", "us,tw,jp", "--seed", "21")
	run(t, "sample", "--out", web, "--keywords", "2500", "--countries", "de", "--seed", "22", "--shape", "web")
	japanese(t, filepath.Join(in, "jp"))
	for _, c := range []struct{ cc, dir string }{{"us", in}, {"tw", in}, {"jp", in}, {"de", web}} {
		run(t, "ingest", "--data", data, "--date", exploreDuckDBDate, "--country", c.cc,
			"--planner-csv", filepath.Join(c.dir, c.cc, "keyword-planner.csv"), "--serp-jsonl", filepath.Join(c.dir, c.cc, "serps.jsonl"))
	}
	run(t, "similarity", "--data", data, "--date", exploreDuckDBDate)
	run(t, "build-index", "--data", data, "--date", exploreDuckDBDate)
	checkExploreWithDuckDB(t, node, mods, data, []string{"us", "de", "tw", "jp"}, 70, 1)
}

// japaneseWords are what japanese turns the sample's English words into:
// some are question words of kw.QuestionWords("ja"), some begin with one
// without being one (どうぶつ), some are pieces of others (東, 京, 東京).
var japaneseWords = strings.Fields(`東京 大阪 ホテル 安い 格安 口コミ おすすめ ランキング 比較 通販 人気 子供 靴 服 時計
	料理 旅行 予約 無料 中古 新品 近く 方法 値段 英語 学校 車 保険 東 京 都 水 本 電話 カメラ パソコン ゲーム 映画
	音楽 犬 猫 なぜ どう いくら 何 どこ いつ どうぶつ 京都 東京都 ランチ 温泉 北海道 沖縄 アプリ 求人`)

// japanese rewords a sample country's planner export and SERPs in
// Japanese, in place: each English word becomes a Japanese word or two
// (the most frequent the shortest), written without spaces but in one
// keyword of five. Keywords that come out the same as an earlier one are
// dropped from both files.
func japanese(t *testing.T, dir string) {
	t.Helper()
	plannerFile, serpFile := filepath.Join(dir, "keyword-planner.csv"), filepath.Join(dir, "serps.jsonl")
	b, err := os.ReadFile(plannerFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 2 || b[0] != 0xff || b[1] != 0xfe {
		t.Fatalf("%s is not UTF-16LE with a byte order mark", plannerFile)
	}
	units := make([]uint16, (len(b)-2)/2)
	for i := range units {
		units[i] = binary.LittleEndian.Uint16(b[2+2*i:])
	}
	lines := strings.Split(string(utf16.Decode(units)), "\n")
	header := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "Keyword\t") })
	if header < 0 {
		t.Fatalf("%s has no header row", plannerFile)
	}
	freq := map[string]int{}
	for _, l := range lines[header+1:] {
		k, _, _ := strings.Cut(l, "\t")
		for _, w := range strings.Fields(k) {
			freq[w]++
		}
	}
	english := slices.Sorted(maps.Keys(freq))
	slices.SortStableFunc(english, func(a, b string) int { return freq[b] - freq[a] })
	word, used := map[string]string{}, map[string]bool{}
	for i, n := 0, 0; n < len(english); i++ {
		w := japaneseWords[i%len(japaneseWords)]
		if j := i / len(japaneseWords); j > 0 {
			w += japaneseWords[(j-1)%len(japaneseWords)]
		}
		if !used[w] {
			used[w] = true
			word[english[n]] = w
			n++
		}
	}
	texts, seen := map[string]string{}, map[string]bool{}
	reword := func(k string) (string, bool) {
		if jp, ok := texts[k]; ok {
			return jp, jp != ""
		}
		ws := strings.Fields(k)
		for i, w := range ws {
			ws[i] = word[w]
		}
		sep := ""
		if len(texts)%5 == 4 {
			sep = " "
		}
		jp := strings.Join(ws, sep)
		if seen[jp] {
			jp = ""
		}
		seen[jp], texts[k] = true, jp
		return jp, jp != ""
	}
	out := lines[:header+1]
	for _, l := range lines[header+1:] {
		k, rest, ok := strings.Cut(l, "\t")
		if !ok {
			out = append(out, l)
			continue
		}
		if jp, ok := reword(k); ok {
			out = append(out, jp+"\t"+rest)
		}
	}
	enc := []byte{0xff, 0xfe}
	for _, u := range utf16.Encode([]rune(strings.Join(out, "\n"))) {
		enc = binary.LittleEndian.AppendUint16(enc, u)
	}
	if err := os.WriteFile(plannerFile, enc, 0o644); err != nil {
		t.Fatal(err)
	}
	b, err = os.ReadFile(serpFile)
	if err != nil {
		t.Fatal(err)
	}
	var serps []byte
	for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var s map[string]any
		if err := json.Unmarshal(l, &s); err != nil {
			t.Fatalf("cannot read a line of %s: %v", serpFile, err)
		}
		k, _ := s["keyword"].(string)
		jp, ok := reword(k)
		if !ok {
			continue
		}
		s["keyword"] = jp
		line, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		serps = append(append(serps, line...), '\n')
	}
	if err := os.WriteFile(serpFile, serps, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestExploreMatchesDuckDBOnRealExports checks the explorer against
// DuckDB on Keyword Planner exports people published, a shape kwdata
// sample does not make (repeated and unknown metrics, long keywords,
// Spanish questions); it is skipped when the exports are not beside the
// repository.
func TestExploreMatchesDuckDBOnRealExports(t *testing.T) {
	t.Parallel()
	node, mods := duckDBTool(t)
	real := realExportsDir(t)
	data := filepath.Join(t.TempDir(), "data")
	exports := []struct{ cc, file string }{
		{"au", "barakataa-2024-keyword-stats.csv"},
		{"es", "paisadallas-2021-keyword-stats-es.csv"},
		{"gb", "tarunchand-2023-gbp-segmentation-38_res.csv"},
		{"id", "indransyah-adwords-2014-sepatu-olahraga.csv"},
	}
	var countries []string
	for _, e := range exports {
		file := filepath.Join(real, e.file)
		if _, err := os.Stat(file); err != nil {
			t.Logf("%s is not among the exports (%v); its country is left out", e.file, err)
			continue
		}
		run(t, "ingest", "--data", data, "--date", exploreDuckDBDate, "--country", e.cc, "--planner-csv", file,
			"--usd-rate", "GBP=1.27", "--usd-rate", "EUR=1.08")
		countries = append(countries, e.cc)
	}
	if len(countries) == 0 {
		t.Skipf("none of the published planner exports is in %s", real)
	}
	run(t, "similarity", "--data", data, "--date", exploreDuckDBDate)
	run(t, "build-index", "--data", data, "--date", exploreDuckDBDate)
	checkExploreWithDuckDB(t, node, mods, data, countries, 70, 2)
}

// duckDBTool returns node and the folder holding DuckDB's Node package,
// or skips the test.
func duckDBTool(t *testing.T) (node, mods string) {
	t.Helper()
	mods = os.Getenv("KWDATA_DUCKDB")
	node, err := exec.LookPath("node")
	if mods == "" || err != nil {
		testservers.SkipForTool(t, "DuckDB", "npm install --prefix DIR @duckdb/node-api@1.5.6-r.1, then KWDATA_DUCKDB=DIR (Node.js needed; .ci/run does both)")
	}
	return node, mods
}

// exploreCase is one random query: its parameters, as parsed, and the SQL
// DuckDB answers it with.
type exploreCase struct {
	v   url.Values
	q   kw.ExploreQuery
	sql string
}

// checkExploreWithDuckDB draws perCountry random queries for each country
// of the build in data, answers them all with DuckDB over the lake and
// with the served build, cursors walked to the end, and compares.
func checkExploreWithDuckDB(t *testing.T, node, mods, data string, countries []string, perCountry int, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 33))
	var cases []exploreCase
	for _, cc := range countries {
		c := loadExploreCorpus(t, data, cc)
		for range perCountry {
			v := c.randomQuery(rng)
			q, err := kw.ParseExploreQuery(v)
			if err != nil {
				t.Fatalf("the generator made a query the parser refuses, %s: %v", v.Encode(), err)
			}
			cases = append(cases, exploreCase{v: v, q: q, sql: exploreSQL(q, c.noSpace, c.lang)})
		}
	}
	answers := duckDBAnswers(t, node, mods, data, cases)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store, err := index.OpenStore(ctx, data, index.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()

	var matched, paged, rows, pages, failed int
	for i, c := range cases {
		got, err := walkExplore(ctx, store, c.v)
		if err != nil {
			t.Errorf("query %s: %v", c.v.Encode(), err)
			failed++
			continue
		}
		var msg string
		var n int
		if c.q.GroupIntent {
			n, msg = compareGroups(c.q, got, duckGroups(t, answers[i]))
		} else {
			n, msg = compareRows(c.q, got, duckRows(t, answers[i]))
		}
		if msg != "" {
			failed++
			if failed <= 10 {
				t.Errorf("query %s (%d pages): %s\nSQL: %s", c.v.Encode(), len(got), msg, c.sql)
			}
			continue
		}
		rows += n
		pages += len(got)
		if n > 0 {
			matched++
		}
		if len(got) > 1 {
			paged++
		}
	}
	if failed > 10 {
		t.Errorf("%d more queries disagree with DuckDB", failed-10)
	}
	t.Logf("%d queries over %v: %d with matches, %d over several pages; %d pages, %d rows or groups, all as DuckDB answers",
		len(cases), countries, matched, paged, pages, rows)
	// The check means little if the queries miss the corpus.
	if matched < len(cases)/2 || paged < len(cases)/5 {
		t.Errorf("only %d of %d queries had matches and %d spanned several pages; draw queries from the corpus's own words", matched, len(cases), paged)
	}
}

// walkExplore answers the query of v, then follows next_cursor to the
// last page. A cursor that leads on forever is an error.
func walkExplore(ctx context.Context, s *index.Store, v url.Values) ([]kw.ExploreResult, error) {
	v = cloneValues(v)
	var out []kw.ExploreResult
	for {
		q, err := kw.ParseExploreQuery(v)
		if err != nil {
			return out, fmt.Errorf("cannot parse page %d: %w", len(out)+1, err)
		}
		res, err := s.Explore(ctx, q)
		if err != nil {
			return out, fmt.Errorf("cannot answer page %d: %w", len(out)+1, err)
		}
		out = append(out, res)
		if res.NextCursor == "" {
			return out, nil
		}
		if len(out) > 10_000 {
			return out, fmt.Errorf("the cursors still lead on after %d pages", len(out))
		}
		v.Set("cursor", res.NextCursor)
	}
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = slices.Clone(vs)
	}
	return out
}

// checkPages checks what every answer must hold whatever the rows: the
// same total on every page, full pages but the last, a cursor on every
// page but the last, nothing after the last. total is DuckDB's count of
// rows (of groups for group=intent).
func checkPages(q kw.ExploreQuery, pages []kw.ExploreResult, total int, size func(kw.ExploreResult) int) string {
	want := max(1, (total+q.Limit-1)/q.Limit)
	if len(pages) != want {
		return fmt.Sprintf("%d pages of %d for %d matches; want %d", len(pages), q.Limit, total, want)
	}
	for i, p := range pages {
		n := size(p)
		last := i == len(pages)-1
		switch {
		case !last && n != q.Limit:
			return fmt.Sprintf("page %d holds %d, not a full page of %d", i+1, n, q.Limit)
		case last && n != total-i*q.Limit:
			return fmt.Sprintf("the last page (%d) holds %d, want %d", i+1, n, total-i*q.Limit)
		}
	}
	return ""
}

// compareRows compares the rows of pages with DuckDB's and returns how
// many there are, or what differs.
func compareRows(q kw.ExploreQuery, pages []kw.ExploreResult, want []kw.ExploreRow) (int, string) {
	for i, p := range pages {
		if p.Total != int64(len(want)) {
			return 0, fmt.Sprintf("page %d says total %d, DuckDB counts %d", i+1, p.Total, len(want))
		}
	}
	var got []kw.ExploreRow
	seen := map[string]int{}
	for i, p := range pages {
		for _, r := range p.Rows {
			if j, dup := seen[r.Keyword]; dup {
				return 0, fmt.Sprintf("page %d repeats %q of page %d", i+1, r.Keyword, j)
			}
			seen[r.Keyword] = i + 1
		}
		got = append(got, p.Rows...)
	}
	for i := range min(len(got), len(want)) {
		if !sameExploreRow(got[i], want[i]) {
			return 0, fmt.Sprintf("row %d (page %d) is %s; DuckDB: %s (before it, DuckDB has %s)",
				i+1, i/q.Limit+1, showRow(got[i]), showRow(want[i]), showRows(want[max(0, i-2):i]))
		}
	}
	if len(got) != len(want) {
		return 0, fmt.Sprintf("the pages hold %d rows, DuckDB %d", len(got), len(want))
	}
	return len(want), checkPages(q, pages, len(want), func(r kw.ExploreResult) int { return len(r.Rows) })
}

// compareGroups is compareRows for group=intent.
func compareGroups(q kw.ExploreQuery, pages []kw.ExploreResult, want []kw.ExploreGroup) (int, string) {
	var total int64
	for _, g := range want {
		total += g.MembersMatched
	}
	for i, p := range pages {
		if p.Total != total || p.TotalGroups != int64(len(want)) {
			return 0, fmt.Sprintf("page %d says total %d in %d groups, DuckDB counts %d in %d", i+1, p.Total, p.TotalGroups, total, len(want))
		}
	}
	var got []kw.ExploreGroup
	seen := map[string]int{}
	for i, p := range pages {
		for _, g := range p.Groups {
			if j, dup := seen[g.Intent]; dup {
				return 0, fmt.Sprintf("page %d repeats group %q of page %d", i+1, g.Intent, j)
			}
			seen[g.Intent] = i + 1
		}
		got = append(got, p.Groups...)
	}
	for i := range min(len(got), len(want)) {
		g, w := got[i], want[i]
		if g.Intent != w.Intent || g.MembersMatched != w.MembersMatched || g.Volume != w.Volume || !slices.Equal(g.Top, w.Top) {
			return 0, fmt.Sprintf("group %d (page %d) is %+v; DuckDB: %+v", i+1, i/q.Limit+1, g, w)
		}
	}
	if len(got) != len(want) {
		return 0, fmt.Sprintf("the pages hold %d groups, DuckDB %d", len(got), len(want))
	}
	return len(want), checkPages(q, pages, len(want), func(r kw.ExploreResult) int { return len(r.Groups) })
}

func sameExploreRow(a, b kw.ExploreRow) bool {
	same := func(x, y *int64) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return a.Keyword == b.Keyword && a.Intent == b.Intent && same(a.Volume, b.Volume) && same(a.CPCMicros, b.CPCMicros) &&
		(a.Competition == nil) == (b.Competition == nil) && (a.Competition == nil || *a.Competition == *b.Competition)
}

func showRow(r kw.ExploreRow) string {
	opt := func(p *int64) string {
		if p == nil {
			return "-"
		}
		return strconv.FormatInt(*p, 10)
	}
	comp := "-"
	if r.Competition != nil {
		comp = strconv.FormatFloat(*r.Competition, 'g', -1, 64)
	}
	return fmt.Sprintf("{%q volume %s cpc %s competition %s intent %q}", r.Keyword, opt(r.Volume), opt(r.CPCMicros), comp, r.Intent)
}

func showRows(rs []kw.ExploreRow) string {
	var s []string
	for _, r := range rs {
		s = append(s, showRow(r))
	}
	return "[" + strings.Join(s, " ") + "]"
}

// duckDBAnswers runs testdata/duckdb-explore.mjs once for every case and
// returns each query's rows, as DuckDB prints them.
func duckDBAnswers(t *testing.T, node, mods, data string, cases []exploreCase) [][][]any {
	t.Helper()
	// One table of the served date's keywords with their intent leader
	// (the keyword itself when it has no intents row) and their words.
	read := func(ds string) string {
		return fmt.Sprintf("read_parquet(%s, hive_partitioning=true)", sqlString(filepath.Join(data, "lake", ds, "*", "*", "*.parquet")))
	}
	job := struct {
		Setup   []string `json:"setup"`
		Queries []string `json:"queries"`
	}{Setup: []string{fmt.Sprintf(`CREATE TABLE kws AS
SELECT k.country, k.keyword, k.volume, k.cpc_micros, k.competition,
       coalesce(nullif(i.intent, ''), k.keyword) AS intent,
       string_split(k.keyword, ' ') AS words
FROM %s k
LEFT JOIN %s i USING (country, date, keyword)
WHERE k.date = DATE '%s'`, read("keywords"), read("intents"), exploreDuckDBDate)}}
	for _, c := range cases {
		job.Queries = append(job.Queries, c.sql)
	}
	dir := t.TempDir()
	jobFile := filepath.Join(dir, "queries.json")
	b, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(jobFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile("testdata/duckdb-explore.mjs")
	if err != nil {
		t.Fatal(err)
	}
	// Node resolves packages from the script's folder, so run a copy that
	// sits beside the installed node_modules; the name is the test's own,
	// since tests run in parallel.
	local := filepath.Join(mods, "kwdata-"+strings.ReplaceAll(t.Name(), "/", "-")+".mjs")
	if err := os.WriteFile(local, script, 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(local)
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(node, local, jobFile)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("duckdb: %v\n%s", err, stderr.Bytes())
	}
	var out [][][]any
	d := json.NewDecoder(&stdout)
	d.UseNumber()
	if err := d.Decode(&out); err != nil {
		t.Fatalf("cannot read DuckDB's answers: %v", err)
	}
	if len(out) != len(cases) {
		t.Fatalf("DuckDB answered %d queries of %d", len(out), len(cases))
	}
	return out
}

// duckRows reads DuckDB's rows of a query of rows.
func duckRows(t *testing.T, rows [][]any) []kw.ExploreRow {
	t.Helper()
	out := make([]kw.ExploreRow, len(rows))
	for i, r := range rows {
		if len(r) != 5 {
			t.Fatalf("DuckDB answered a row of %d columns: %v", len(r), r)
		}
		out[i] = kw.ExploreRow{Keyword: duckString(t, r[0]), Volume: duckInt(t, r[1]), CPCMicros: duckInt(t, r[2]), Intent: duckString(t, r[4])}
		if r[3] != nil {
			f, err := strconv.ParseFloat(fmt.Sprint(r[3]), 64)
			if err != nil {
				t.Fatalf("DuckDB answered competition %v: %v", r[3], err)
			}
			out[i].Competition = &f
		}
	}
	return out
}

// duckGroups reads DuckDB's rows of a group=intent query.
func duckGroups(t *testing.T, rows [][]any) []kw.ExploreGroup {
	t.Helper()
	out := make([]kw.ExploreGroup, len(rows))
	for i, r := range rows {
		if len(r) != 4 {
			t.Fatalf("DuckDB answered a group of %d columns: %v", len(r), r)
		}
		top, _ := r[3].([]any)
		g := kw.ExploreGroup{Intent: duckString(t, r[0]), MembersMatched: *duckInt(t, r[1]), Volume: *duckInt(t, r[2]), Top: []string{}}
		for _, k := range top {
			g.Top = append(g.Top, duckString(t, k))
		}
		out[i] = g
	}
	return out
}

func duckString(t *testing.T, v any) string {
	t.Helper()
	s, ok := v.(string)
	if !ok {
		t.Fatalf("DuckDB answered %v (%T) for a text", v, v)
	}
	return s
}

// duckInt reads a BIGINT or HUGEINT, which DuckDB's Node package prints as
// a string; nil for NULL.
func duckInt(t *testing.T, v any) *int64 {
	t.Helper()
	if v == nil {
		return nil
	}
	n, err := strconv.ParseInt(fmt.Sprint(v), 10, 64)
	if err != nil {
		t.Fatalf("DuckDB answered %v for a whole number: %v", v, err)
	}
	return &n
}

// sqlString quotes s as an SQL string literal.
func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// exploreSQL writes q as a query over the kws table, by the rules of the
// explorer read afresh: a keyword's words are its text split at spaces;
// in a language written without spaces every term is a substring; a
// missing number never passes a bound on it (SQL's NULL comparisons);
// sorts put missing values last in either order and break ties by the
// keyword's bytes (encode: BLOB order, whatever the collation).
func exploreSQL(q kw.ExploreQuery, noSpace bool, lang string) string {
	has := func(w string) string {
		if noSpace {
			return "contains(keyword, " + sqlString(w) + ")"
		}
		return "list_contains(words, " + sqlString(w) + ")"
	}
	anyOf := func(ws []string) string {
		var s []string
		for _, w := range ws {
			s = append(s, has(w))
		}
		return "(" + strings.Join(s, " OR ") + ")"
	}
	where := []string{"country = " + sqlString(strings.ToLower(q.Country))}
	for _, w := range q.Words {
		where = append(where, has(w))
	}
	switch q.Mode {
	case kw.ModePhrase:
		if noSpace {
			where = append(where, "contains(keyword, "+sqlString(q.Q)+")")
		} else {
			where = append(where, "contains(' ' || keyword || ' ', "+sqlString(" "+strings.Join(q.Words, " ")+" ")+")")
		}
	case kw.ModeQuestions:
		var s []string
		for _, qw := range kw.QuestionWords(lang) {
			if noSpace {
				s = append(s, "starts_with(keyword, "+sqlString(qw)+")")
				continue
			}
			ws := strings.Split(qw, " ")
			lits := make([]string, len(ws))
			for i, w := range ws {
				lits[i] = sqlString(w)
			}
			s = append(s, fmt.Sprintf("words[1:%d] = [%s]", len(ws), strings.Join(lits, ", ")))
		}
		where = append(where, "("+strings.Join(s, " OR ")+")")
	}
	if len(q.Include) > 0 {
		where = append(where, anyOf(q.Include))
	}
	if len(q.Exclude) > 0 {
		where = append(where, "NOT "+anyOf(q.Exclude))
	}
	bound := func(col, op string, p *int64) {
		if p != nil {
			where = append(where, fmt.Sprintf("%s %s %d", col, op, *p))
		}
	}
	bound("volume", ">=", q.MinVolume)
	bound("volume", "<=", q.MaxVolume)
	bound("cpc_micros", ">=", q.MinCPCMicros)
	bound("cpc_micros", "<=", q.MaxCPCMicros)
	bound("len(words)", ">=", q.MinWords)
	bound("len(words)", "<=", q.MaxWords)
	for _, b := range []struct {
		op string
		p  *float64
	}{{">=", q.MinCompetition}, {"<=", q.MaxCompetition}} {
		if b.p != nil {
			where = append(where, fmt.Sprintf("competition %s CAST(%s AS DOUBLE)", b.op, sqlString(strconv.FormatFloat(*b.p, 'g', -1, 64))))
		}
	}
	if q.Intent != "" {
		where = append(where, "intent = "+sqlString(q.Intent))
	}
	matches := "SELECT keyword, volume, cpc_micros, competition, intent FROM kws WHERE " + strings.Join(where, "\n  AND ")
	if q.GroupIntent {
		return fmt.Sprintf(`WITH m AS (%s)
SELECT intent, count(*), coalesce(sum(volume), 0),
       list(keyword ORDER BY volume DESC NULLS LAST, encode(keyword))[1:%d]
FROM m GROUP BY intent
ORDER BY coalesce(sum(volume), 0) DESC, encode(intent)`, matches, kw.ExploreTopMembers)
	}
	dir := "ASC"
	if q.Desc {
		dir = "DESC"
	}
	key := map[kw.ExploreSort]string{
		kw.SortVolume: "volume", kw.SortCPC: "cpc_micros", kw.SortCompetition: "competition",
		kw.SortWords: "len(words)", kw.SortKeyword: "encode(keyword)",
	}[q.Sort]
	return fmt.Sprintf("%s\nORDER BY %s %s NULLS LAST, encode(keyword) ASC", matches, key, dir)
}

// exploreCorpus is what the query generator knows of one country's
// keywords: the words to draw from, the numbers to make bounds of, the
// leaders of groups of several.
type exploreCorpus struct {
	cc        string
	lang      string
	noSpace   bool
	recs      []kw.KeywordRecord
	common    []string // the most frequent words
	rare      []string // words of at most three keywords
	questions []kw.KeywordRecord
	leaders   []string
}

func loadExploreCorpus(t *testing.T, data, cc string) *exploreCorpus {
	t.Helper()
	recs, err := lake.Read[kw.KeywordRecord](data, kw.DatasetKeywords, cc, exploreDuckDBDate)
	if err != nil {
		t.Fatal(err)
	}
	intents, err := lake.Read[kw.IntentRow](data, kw.DatasetIntents, cc, exploreDuckDBDate)
	if err != nil {
		t.Fatal(err)
	}
	country, ok := kw.LookupCountry(cc)
	if !ok {
		t.Fatalf("%s is not a country", cc)
	}
	c := &exploreCorpus{cc: cc, lang: country.LanguageCode, noSpace: kw.NoSpaceLanguage(country.LanguageCode), recs: recs}
	freq := map[string]int{}
	qws := kw.QuestionWords(c.lang)
	for _, r := range recs {
		for _, w := range distinct(strings.Split(r.Keyword, " ")) {
			freq[w]++
		}
		for _, qw := range qws {
			if c.noSpace && strings.HasPrefix(r.Keyword, qw) || r.Keyword == qw || strings.HasPrefix(r.Keyword, qw+" ") {
				c.questions = append(c.questions, r)
				break
			}
		}
	}
	words := slices.Collect(func(yield func(string) bool) {
		for w := range freq {
			if !yield(w) {
				return
			}
		}
	})
	slices.SortFunc(words, func(a, b string) int {
		if freq[a] != freq[b] {
			return freq[b] - freq[a]
		}
		return strings.Compare(a, b)
	})
	c.common = words[:min(len(words), 12)]
	for _, w := range words {
		if freq[w] <= 3 {
			c.rare = append(c.rare, w)
		}
	}
	size := map[string]int{}
	for _, r := range intents {
		size[r.Intent]++
	}
	for l, n := range size {
		if n >= 2 {
			c.leaders = append(c.leaders, l)
		}
	}
	slices.Sort(c.leaders)
	if len(recs) == 0 || len(c.common) == 0 {
		t.Fatalf("%s has no keywords to query", cc)
	}
	return c
}

func distinct(ws []string) []string {
	var out []string
	for _, w := range ws {
		if w != "" && !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

// term draws a word (for a language without spaces, a piece of a
// keyword) that some keywords hold: common, rare, or from one keyword.
func (c *exploreCorpus) term(rng *rand.Rand) string {
	switch rng.IntN(4) {
	case 0:
		return c.common[rng.IntN(len(c.common))]
	case 1:
		if len(c.rare) > 0 && !c.noSpace {
			return c.rare[rng.IntN(len(c.rare))]
		}
	}
	return c.wordOf(rng, c.recs[rng.IntN(len(c.recs))].Keyword)
}

// wordOf draws a word of keyword k (for a language without spaces, a
// piece of one of its words).
func (c *exploreCorpus) wordOf(rng *rand.Rand, k string) string {
	ws := strings.Split(k, " ")
	w := ws[rng.IntN(len(ws))]
	if c.noSpace {
		return piece(rng, w, 1+rng.IntN(4))
	}
	return w
}

// piece returns up to n characters of k from a random place, trimmed of
// spaces at its ends (k itself when it is all spaces there).
func piece(rng *rand.Rand, k string, n int) string {
	rs := []rune(k)
	i := rng.IntN(len(rs))
	p := strings.TrimSpace(string(rs[i:min(len(rs), i+n)]))
	if p == "" {
		return k
	}
	return p
}

// randomQuery draws the parameters of one explore query over the
// corpus's own words and numbers, so that most queries match keywords and
// many span several pages; every parameter is in the mix.
func (c *exploreCorpus) randomQuery(rng *rand.Rand) url.Values {
	v := url.Values{"country": {c.cc}}
	// q and the mode.
	modes := []string{"", "terms", "phrase", "phrase"}
	if kw.QuestionWords(c.lang) != nil && len(c.questions) > 0 {
		modes = append(modes, "questions", "questions")
	}
	mode := modes[rng.IntN(len(modes))]
	if mode != "" {
		v.Set("mode", mode)
	}
	src := c.recs[rng.IntN(len(c.recs))].Keyword
	if mode == "questions" {
		src = c.questions[rng.IntN(len(c.questions))].Keyword
	}
	switch {
	case rng.IntN(10) == 0:
		v.Set("q", "zqxj") // no keyword holds it
	case mode == "phrase" || mode == "questions" || rng.IntN(2) == 0:
		// Adjacent words (or characters) of one keyword.
		if c.noSpace {
			v.Set("q", piece(rng, src, 1+rng.IntN(5)))
		} else {
			ws := strings.Split(src, " ")
			i := rng.IntN(len(ws))
			v.Set("q", strings.Join(ws[i:min(len(ws), i+1+rng.IntN(3))], " "))
		}
	case rng.IntN(3) == 0:
		// Words drawn on their own: common, rare, or any.
		var ws []string
		for range 1 + rng.IntN(2) {
			ws = append(ws, c.term(rng))
		}
		v.Set("q", strings.Join(ws, " "))
	default:
		// Words of one keyword in another order.
		ws := []string{c.wordOf(rng, src), c.wordOf(rng, src)}
		v.Set("q", strings.Join(ws[:1+rng.IntN(2)], " "))
	}
	// The words filters.
	// Some lists hold a word of the keyword q came from.
	list := func(own int) string {
		var ws []string
		for range 1 + rng.IntN(3) {
			ws = append(ws, c.term(rng))
		}
		if rng.IntN(own) == 0 {
			ws[0] = c.wordOf(rng, src)
		}
		return strings.Join(ws, ",")
	}
	if rng.IntN(4) == 0 {
		v.Set("include", list(2))
	}
	if rng.IntN(4) == 0 {
		v.Set("exclude", list(4))
	}
	// The bounds, from the corpus's own values: a bound lands on some
	// keyword's value exactly, to try its inclusiveness.
	pick := func(get func(kw.KeywordRecord) (int64, bool)) (int64, bool) {
		for range 20 {
			if n, ok := get(c.recs[rng.IntN(len(c.recs))]); ok {
				return n, true
			}
		}
		return 0, false
	}
	bounds := func(name string, get func(kw.KeywordRecord) (int64, bool), format func(int64) string) {
		if rng.IntN(5) != 0 {
			return
		}
		a, ok := pick(get)
		if !ok {
			return
		}
		b, _ := pick(get)
		if b < a {
			a, b = b, a
		}
		switch rng.IntN(3) {
		case 0:
			v.Set("min_"+name, format(a))
		case 1:
			v.Set("max_"+name, format(b))
		default:
			v.Set("min_"+name, format(a))
			v.Set("max_"+name, format(b))
		}
	}
	bounds("volume", func(r kw.KeywordRecord) (int64, bool) { return kw.Deref(r.Volume), r.Volume != nil },
		func(n int64) string { return strconv.FormatInt(n, 10) })
	bounds("cpc", func(r kw.KeywordRecord) (int64, bool) {
		if r.CPCMicros == nil {
			return 0, false
		}
		// Now and then one micro off a real value, either side.
		return max(0, *r.CPCMicros+int64(rng.IntN(3)-1)*int64(rng.IntN(2))), true
	}, usdOfMicros)
	bounds("competition", func(r kw.KeywordRecord) (int64, bool) {
		return kw.OrderedFloat(kw.Deref(r.Competition)), r.Competition != nil
	}, func(n int64) string {
		// Back from OrderedFloat's order to the number, written exactly.
		for _, r := range c.recs {
			if r.Competition != nil && kw.OrderedFloat(*r.Competition) == n {
				return strconv.FormatFloat(*r.Competition, 'g', -1, 64)
			}
		}
		panic("no such competition")
	})
	bounds("words", func(r kw.KeywordRecord) (int64, bool) { return int64(strings.Count(r.Keyword, " ") + 1), true },
		func(n int64) string { return strconv.FormatInt(n, 10) })
	if rng.IntN(8) == 0 && len(c.leaders) > 0 {
		// A group and a word of its leader, so that q and the group meet.
		l := c.leaders[rng.IntN(len(c.leaders))]
		v.Set("intent", l)
		v.Set("q", c.wordOf(rng, l))
	}
	// Order and page.
	if rng.IntN(6) == 0 {
		v.Set("group", "intent")
	} else {
		if s := []string{"", "volume", "cpc", "competition", "words", "keyword"}[rng.IntN(6)]; s != "" {
			v.Set("sort", s)
		}
		if o := []string{"", "asc", "desc"}[rng.IntN(3)]; o != "" {
			v.Set("order", o)
		}
	}
	switch rng.IntN(8) {
	case 0: // the default page
	case 1, 2, 3:
		v.Set("limit", strconv.Itoa(1+rng.IntN(5)))
	default:
		v.Set("limit", strconv.Itoa(1+rng.IntN(40)))
	}
	return v
}

// usdOfMicros writes micros as USD, as a client would: six decimals, or
// fewer when they end in zeros.
func usdOfMicros(m int64) string {
	s := fmt.Sprintf("%d.%06d", m/kw.MicrosPerUnit, m%kw.MicrosPerUnit)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}
