package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kwdata/kwdata/ingest/googleads"
	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/lake"
	"github.com/kwdata/kwdata/pipelines"
)

// apiConfig is a configuration file whose sources are the fakes. Secrets
// are ${VARS}; relative paths are resolved against the file's folder.
func apiConfig(ads *fakeAds, dfs *fakeDFS, budget int) string {
	var b strings.Builder
	b.WriteString("data: ./b\ncountries: [US]\nkeywords:\n  us: keywords-us.txt\n")
	if ads != nil {
		fmt.Fprintf(&b, `googleads:
  endpoint: %s
  token_url: %s/token
  customer_id: "123-456-7890"
  client_id: ${GOOGLE_ADS_CLIENT_ID}
  client_secret: ${GOOGLE_ADS_CLIENT_SECRET}
  refresh_token: ${GOOGLE_ADS_REFRESH_TOKEN}
  developer_token: ${GOOGLE_ADS_DEVELOPER_TOKEN}
  requests_per_second: 50
`, ads.srv.URL, ads.srv.URL)
	}
	fmt.Fprintf(&b, `dataforseo:
  endpoint: %s
  login: ${DATAFORSEO_LOGIN}
  password: ${DATAFORSEO_PASSWORD}
  max_serps_per_run: %d
`, dfs.srv.URL, budget)
	return b.String()
}

// TestIngestConfigMatchesFileImport ingests one sample twice, from its files
// and through the Google Ads and DataForSEO clients talking to fakes that
// answer with the same data, and requires the two lakes to be the same but
// for the source column.
func TestIngestConfigMatchesFileImport(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const date = "2026-11-21"
	c := newSampleCorpus(t, dir, 300, 11)
	dataA, dataB := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	run(t, "ingest", "--data", dataA, "--date", date, "--country", "us",
		"--planner-csv", c.planner, "--serp-jsonl", c.serpFile)

	ads := newFakeAds(t, c)
	dfs := newFakeDFS(t, func(k string) ([]kw.SERPRow, bool) {
		rows, ok := c.serps[k]
		return rows, ok
	})
	// The universe file: keywords as an operator writes them (any case,
	// stray spaces), a comment, a blank line, and one keyword the planner
	// has no data for.
	var list strings.Builder
	list.WriteString("# keyword universe of the US\n\n")
	for i, k := range c.keywords {
		if i%7 == 0 {
			k = "  " + strings.ToUpper(k) + " "
		}
		list.WriteString(k + "\n")
	}
	list.WriteString("zzqx keyword nobody searches for\n")
	writeTestFile(t, dir, "keywords-us.txt", list.String())
	cfg := writeTestFile(t, dir, "kwdata.yaml", apiConfig(ads, dfs, 1000))

	out := runEnv(t, fakeEnv(), "ingest", "--config", cfg, "--date", date)

	recsA, err := lake.Read[kw.KeywordRecord](dataA, kw.DatasetKeywords, "us", date)
	if err != nil {
		t.Fatal(err)
	}
	recsB, err := lake.Read[kw.KeywordRecord](dataB, kw.DatasetKeywords, "us", date)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("ingested US %s: %d keywords, ", date, len(recsA)); !strings.Contains(out, want) {
		t.Errorf("ingest printed %q, want it to contain %q", out, want)
	}
	versions, asked := ads.requests()
	if len(asked) != 1 || len(asked[0]) != len(c.keywords)+1 {
		t.Errorf("google ads got %d requests, want one for all %d keywords", len(asked), len(c.keywords)+1)
	}
	for _, v := range versions {
		if v != googleads.DefaultAPIVersion {
			t.Errorf("google ads request to version %q, want the config default %q", v, googleads.DefaultAPIVersion)
		}
	}

	// What the comparison covers: the corpus must hold the cases where
	// the two mappings could part ways.
	var noBids, noComp, blankMonths, ranges int
	for _, r := range recsA {
		if r.BidLowMicros == nil && r.BidHighMicros == nil {
			noBids++
		}
		if r.CompetitionLevel == "" {
			noComp++
		}
		if len(r.Monthly) < len(c.months) || slices.ContainsFunc(r.Monthly, func(m kw.MonthlySearches) bool { return m.Searches == nil }) {
			blankMonths++
		}
		if r.VolumeRange != "" {
			ranges++
		}
	}
	if noBids == 0 || blankMonths == 0 || noBids == len(recsA) {
		t.Errorf("sample has %d records without bids and %d with blank months of %d; choose another seed that has both",
			noBids, blankMonths, len(recsA))
	}
	t.Logf("%d keywords: %d without bids, %d without competition, %d with blank months, %d volume ranges",
		len(recsA), noBids, noComp, blankMonths, ranges)

	// Keyword records: the same but for source and, where the planner
	// gave a range ("1K – 10K"), volume_range: the API has exact numbers
	// and no range text.
	if len(recsA) != len(recsB) {
		t.Fatalf("files gave %d keyword records, the APIs %d", len(recsA), len(recsB))
	}
	diffs := 0
	for i := range recsA {
		a, b := recsA[i], recsB[i]
		if a.Source != "planner-csv" || b.Source != "googleads" {
			t.Errorf("%q: sources %q and %q, want planner-csv and googleads", a.Keyword, a.Source, b.Source)
		}
		if b.VolumeRange != "" {
			t.Errorf("%q: the API record has volume_range %q", b.Keyword, b.VolumeRange)
		}
		a.Source, b.Source, a.VolumeRange = "", "", ""
		if !reflect.DeepEqual(a, b) {
			if diffs++; diffs <= 5 {
				t.Errorf("record %d differs:\nfiles %+v\napis  %+v", i, a, b)
			}
		}
	}
	if diffs > 5 {
		t.Errorf("... %d records differ in all", diffs)
	}

	// SERPs: the same rows for every keyword of the universe. DataForSEO is
	// asked only about keywords with a record, so a SERP line of another
	// keyword is in lake A only.
	serpsA, err := lake.Read[kw.SERPRow](dataA, kw.DatasetSERPs, "us", date)
	if err != nil {
		t.Fatal(err)
	}
	serpsB, err := lake.Read[kw.SERPRow](dataB, kw.DatasetSERPs, "us", date)
	if err != nil {
		t.Fatal(err)
	}
	var want []kw.SERPRow
	outside := map[string]bool{}
	for _, r := range serpsA {
		if _, ok := c.records[r.Keyword]; ok {
			want = append(want, r)
		} else {
			outside[r.Keyword] = true
		}
	}
	t.Logf("%d SERP rows from files (%d keywords without a record left out), %d through the API", len(serpsA), len(outside), len(serpsB))
	if len(want) == 0 || !reflect.DeepEqual(want, serpsB) {
		t.Errorf("SERP rows differ: files %d rows, API %d rows", len(want), len(serpsB))
		for i := range min(len(want), len(serpsB)) {
			if want[i] != serpsB[i] {
				t.Errorf("first difference at row %d: files %+v, API %+v", i, want[i], serpsB[i])
				break
			}
		}
	}
	if posted, n := dfs.postedSince(0); n != len(c.keywords) || !slices.IsSorted(posted) {
		t.Errorf("dataforseo got %d tasks, want one for each of %d keywords", n, len(c.keywords))
	}
	for _, n := range dfs.postSizes() {
		if n > 100 {
			t.Errorf("a task_post held %d tasks, more than 100", n)
		}
	}
}

// TestIngestConfigRollingSERPRefresh runs ingest --config on three days
// with a SERP budget of 40% of the keywords: each day pays for the budget
// only, keywords without a SERP go first, then the oldest; the similarity
// stage then uses each keyword's newest SERP within the maximum age.
func TestIngestConfigRollingSERPRefresh(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := newSampleCorpus(t, dir, 300, 5)
	dfs := newFakeDFS(t, func(k string) ([]kw.SERPRow, bool) {
		if rows, ok := c.serps[k]; ok {
			return rows, true
		}
		// A page of its own, so that every keyword gets a SERP and the
		// refresh order is all the test sees.
		return []kw.SERPRow{{Rank: 1, URL: "https://only.example/" + strings.ReplaceAll(k, " ", "-")}}, true
	})
	n := len(c.keywords)
	budget := n * 2 / 5
	// Keywords come from the planner export, SERPs from DataForSEO.
	cfg := writeTestFile(t, dir, "kwdata.yaml", fmt.Sprintf(`data: ./b
countries: [us]
files:
  us:
    planner_csv: [%q]
dataforseo:
  endpoint: %s
  login: ${DATAFORSEO_LOGIN}
  password: ${DATAFORSEO_PASSWORD}
  max_serps_per_run: %d
  max_age_days: 30
`, c.planner, dfs.srv.URL, budget))
	data := filepath.Join(dir, "b")
	days := []string{"2026-11-19", "2026-11-20", "2026-11-21"}

	picked := make([][]string, len(days))
	total := 0
	for i, day := range days {
		out := runEnv(t, fakeEnv(), "ingest", "--config", cfg, "--date", day)
		var posted []string
		posted, total = dfs.postedSince(total)
		slices.Sort(posted)
		picked[i] = posted
		if len(posted) != budget {
			t.Errorf("%s: %d SERP tasks paid for, want the budget %d", day, len(posted), budget)
		}
		if want := fmt.Sprintf("%d keywords, %d SERPs", n, budget); !strings.Contains(out, want) {
			t.Errorf("%s: ingest printed %q, want %q", day, out, want)
		}
		rows, err := lake.Read[kw.SERPRow](data, kw.DatasetSERPs, "us", day)
		if err != nil {
			t.Fatal(err)
		}
		var inLake []string
		for _, r := range rows {
			if len(inLake) == 0 || inLake[len(inLake)-1] != r.Keyword {
				inLake = append(inLake, r.Keyword)
			}
		}
		if !slices.Equal(inLake, posted) {
			t.Errorf("%s: the serps partition holds %d keywords, not the %d fetched", day, len(inLake), len(posted))
		}
	}

	// Day 1 and day 2 fetch keywords that had no SERP yet, in keyword
	// order; day 3 fetches the rest of those, then the oldest (day 1's).
	rest := c.keywords[2*budget:]
	wantDay3 := slices.Concat(rest, c.keywords[:budget-len(rest)])
	slices.Sort(wantDay3)
	for i, want := range [][]string{c.keywords[:budget], c.keywords[budget : 2*budget], wantDay3} {
		if !slices.Equal(picked[i], want) {
			extra, missing := setDiff(picked[i], want), setDiff(want, picked[i])
			t.Errorf("%s fetched %d keywords, want %d: %d unexpected (first %q), %d missing (first %q)",
				days[i], len(picked[i]), len(want), len(extra), extra[:min(3, len(extra))], len(missing), missing[:min(3, len(missing))])
		}
	}
	fetched := map[string]bool{}
	for _, k := range slices.Concat(picked[1], picked[2]) {
		fetched[k] = true
	}
	var day1Only []string
	for _, k := range picked[0] {
		if !fetched[k] {
			day1Only = append(day1Only, k)
		}
	}
	if len(day1Only) == 0 {
		t.Fatal("no keyword was fetched on day 1 only; the budget is too large for the test")
	}

	// Within max-age-days every keyword has a SERP on day 3, among them
	// those fetched on day 1 only; with a maximum age of one day, those
	// have none and appear in no related row.
	withSERP := regexp.MustCompile(`: (\d+) keywords, (\d+) with a SERP, (\d+) related rows`)
	for _, tc := range []struct {
		maxAge   string
		withSERP int
		related  bool // day-1-only keywords have related rows
	}{
		{"30", n, true},
		{"1", n - len(day1Only), false},
	} {
		out := run(t, "similarity", "--data", data, "--date", days[2], "--max-age-days", tc.maxAge)
		m := withSERP.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("similarity printed %q", out)
		}
		if got, _ := strconv.Atoi(m[2]); got != tc.withSERP || m[1] != strconv.Itoa(n) {
			t.Errorf("max age %s: %s keywords, %d with a SERP; want %d, %d", tc.maxAge, m[1], got, n, tc.withSERP)
		}
		related, err := lake.Read[kw.RelatedRow](data, kw.DatasetRelated, "us", days[2])
		if err != nil {
			t.Fatal(err)
		}
		old := map[string]bool{}
		for _, k := range day1Only {
			old[k] = true
		}
		withRelated := map[string]bool{}
		for _, r := range related {
			if old[r.Keyword] {
				withRelated[r.Keyword] = true
			}
			if !tc.related && old[r.Related] {
				t.Errorf("max age %s: %q is related to %q, whose SERP is too old", tc.maxAge, r.Keyword, r.Related)
			}
		}
		if tc.related && len(withRelated) == 0 {
			t.Errorf("max age %s: none of the %d keywords fetched on day 1 only has related keywords on day 3", tc.maxAge, len(day1Only))
		}
		if !tc.related && len(withRelated) > 0 {
			t.Errorf("max age %s: %d keywords fetched on day 1 only still have related keywords", tc.maxAge, len(withRelated))
		}
		t.Logf("max age %s: %d of %d day-1-only keywords have related keywords", tc.maxAge, len(withRelated), len(day1Only))
	}
}

// setDiff returns the elements of a that are not in b, in a's order.
func setDiff(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// TestIngestConfigSameDateRerun runs ingest --config twice for one date, as
// a retried or forced pipeline run does: the second run must pick the same
// keywords, pay for none of them again (the checkpoint of the date holds
// every collected task) and leave the serps partition as it was.
func TestIngestConfigSameDateRerun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const date = "2026-11-21"
	c := newSampleCorpus(t, dir, 300, 5)
	dfs := newFakeDFS(t, func(k string) ([]kw.SERPRow, bool) {
		rows, ok := c.serps[k]
		return rows, ok
	})
	cfg := writeTestFile(t, dir, "kwdata.yaml", fmt.Sprintf(`data: ./b
countries: [us]
files:
  us:
    planner_csv: [%q]
dataforseo:
  endpoint: %s
  login: ${DATAFORSEO_LOGIN}
  password: ${DATAFORSEO_PASSWORD}
  max_serps_per_run: 100
`, c.planner, dfs.srv.URL))
	data := filepath.Join(dir, "b")

	runEnv(t, fakeEnv(), "ingest", "--config", cfg, "--date", date)
	first, err := lake.Read[kw.SERPRow](data, kw.DatasetSERPs, "us", date)
	if err != nil {
		t.Fatal(err)
	}
	_, paid := dfs.postedSince(0)
	runEnv(t, fakeEnv(), "ingest", "--config", cfg, "--date", date)
	again, total := dfs.postedSince(paid)
	if total != paid {
		t.Errorf("the re-run paid for %d more SERP tasks (first %q)", total-paid, again[:min(3, len(again))])
	}
	second, err := lake.Read[kw.SERPRow](data, kw.DatasetSERPs, "us", date)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) == 0 || !reflect.DeepEqual(first, second) {
		t.Errorf("the re-run changed the serps partition: %d rows, then %d", len(first), len(second))
	}
}

// TestIngestConfigTakesTheRunLock refuses a manual ingest while a run holds
// the pipeline lock, and a country the config does not list.
func TestIngestConfigTakesTheRunLock(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := newSampleCorpus(t, dir, 50, 3)
	cfg, _ := fileConfig(t, dir, c, "")
	data := filepath.Join(dir, "data")

	release, err := pipelines.Lock(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, _, _ := testMain(t)
	err = m.Run(context.Background(), []string{"ingest", "--config", cfg, "--date", "2026-11-21"})
	if !errors.Is(err, pipelines.ErrLocked) {
		t.Errorf("ingest while a run holds the lock: err = %v, want the lock refusal", err)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}

	m, _, _ = testMain(t)
	err = m.Run(context.Background(), []string{"ingest", "--config", cfg, "--date", "2026-11-21", "--country", "de"})
	if err == nil || !strings.Contains(err.Error(), "not in the countries") {
		t.Errorf("ingest --country de with countries [us]: err = %v, want a refusal naming the countries", err)
	}
	run(t, "ingest", "--config", cfg, "--date", "2026-11-21", "--country", "US")
}

// adsConfig is a configuration whose keywords come from the Google Ads fake
// and that fetches no SERPs; extra lines go at the end of the googleads
// section.
func adsConfig(tb testing.TB, dir string, ads *fakeAds, keywords []string, extra string) string {
	tb.Helper()
	writeTestFile(tb, dir, "keywords-us.txt", strings.Join(keywords, "\n")+"\n")
	return writeTestFile(tb, dir, "kwdata.yaml", fmt.Sprintf(`data: ./data
countries: [us]
keywords:
  us: keywords-us.txt
googleads:
  endpoint: %s
  token_url: %s/token
  customer_id: "1234567890"
  client_id: ${GOOGLE_ADS_CLIENT_ID}
  client_secret: ${GOOGLE_ADS_CLIENT_SECRET}
  refresh_token: ${GOOGLE_ADS_REFRESH_TOKEN}
  developer_token: ${GOOGLE_ADS_DEVELOPER_TOKEN}
  requests_per_second: 50
%s`, ads.srv.URL, ads.srv.URL, extra))
}

// TestIngestConfigGoogleAdsCurrency reads the account currency before the
// metrics: a USD account is taken as is, a EUR account is refused with a
// message naming googleads.usd_rate, and with the rate its bids and CPCs
// land in the lake as USD micros.
func TestIngestConfigGoogleAdsCurrency(t *testing.T) {
	t.Parallel()
	const date = "2026-11-21"
	c := newSampleCorpus(t, t.TempDir(), 60, 3)
	for _, tc := range []struct {
		name, currency, extra string
		rate                  int64 // USD per unit; 0: refused
	}{
		{"USD", "USD", "", 1},
		{"EUR without a rate", "EUR", "", 0},
		{"EUR with a rate", "EUR", "  usd_rate: 2\n", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ads := newFakeAds(t, c)
			ads.currency = tc.currency
			cfg := adsConfig(t, dir, ads, c.keywords, tc.extra)
			m, _, _ := testMain(t)
			m.Getenv = func(k string) string { return fakeEnv()[k] }
			err := m.Run(context.Background(), []string{"ingest", "--config", cfg, "--date", date})
			if tc.rate == 0 {
				if err == nil || !strings.Contains(err.Error(), "EUR, not USD; set googleads.usd_rate") {
					t.Fatalf("err = %v, want a refusal naming googleads.usd_rate", err)
				}
				if _, asked := ads.requests(); len(asked) != 0 {
					t.Errorf("%d metrics requests after the refusal, want none", len(asked))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			recs, err := lake.Read[kw.KeywordRecord](filepath.Join(dir, "data"), kw.DatasetKeywords, "us", date)
			if err != nil {
				t.Fatal(err)
			}
			withBids := 0
			for _, r := range recs {
				src := c.records[r.Keyword]
				low, high := kw.Deref(src.BidLowMicros)*tc.rate, kw.Deref(src.BidHighMicros)*tc.rate
				cpc := int64(0)
				if low != 0 || high != 0 {
					cpc = (low + high + 1) / 2
					withBids++
				}
				if kw.Deref(r.BidLowMicros) != low || kw.Deref(r.BidHighMicros) != high || kw.Deref(r.CPCMicros) != cpc {
					t.Errorf("%q: bids %d–%d cpc %d, want %d–%d cpc %d", r.Keyword,
						kw.Deref(r.BidLowMicros), kw.Deref(r.BidHighMicros), kw.Deref(r.CPCMicros), low, high, cpc)
				}
			}
			if len(recs) == 0 || withBids == 0 {
				t.Fatalf("%d records, %d with bids; the test needs some", len(recs), withBids)
			}
		})
	}
}

// TestIngestConfigRefusesFileFlags refuses the file flags next to --config,
// which would otherwise be ignored without a word.
func TestIngestConfigRefusesFileFlags(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := newSampleCorpus(t, dir, 20, 3)
	cfg, _ := fileConfig(t, dir, c, "")
	for _, flags := range [][]string{
		{"--planner-csv", c.planner},
		{"--serp-jsonl", c.serpFile},
		{"--usd-rate", "EUR=1.08"},
	} {
		m, _, _ := testMain(t)
		args := append([]string{"ingest", "--config", cfg, "--date", "2026-11-21"}, flags...)
		err := m.Run(context.Background(), args)
		if err == nil || !strings.Contains(err.Error(), flags[0]+" cannot be used with --config") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s with --config: err = %v, want a one-line refusal naming the flag", flags[0], err)
		}
	}
	if dates, _ := lake.Dates(filepath.Join(dir, "data"), kw.DatasetKeywords, "us"); len(dates) > 0 {
		t.Errorf("a refused ingest wrote partitions %v", dates)
	}
}

// TestIngestConfigFileUSDRate ingests a planner export in EUR listed under
// files: refused without files.<cc>.usd_rate, with a message naming that
// key rather than the --usd-rate flag, and converted with it.
func TestIngestConfigFileUSDRate(t *testing.T) {
	t.Parallel()
	const date = "2026-11-21"
	dir := t.TempDir()
	writeTestFile(t, dir, "exports/us.csv", "Keyword\tCurrency\tAvg. monthly searches\tCompetition\tCompetition (indexed value)\tTop of page bid (low range)\tTop of page bid (high range)\n"+
		"running shoes\tEUR\t1000\tHigh\t87\t1.00\t2.00\n")
	config := func(rates string) string {
		return writeTestFile(t, dir, "kwdata.yaml", "data: ./data\ncountries: [us]\nfiles:\n  us:\n    planner_csv: [exports/us.csv]\n"+rates)
	}

	m, _, _ := testMain(t)
	err := m.Run(context.Background(), []string{"ingest", "--config", config(""), "--date", date})
	if err == nil || !strings.Contains(err.Error(), "add files.us.usd_rate: {EUR: RATE}") || strings.Contains(err.Error(), "--usd-rate") {
		t.Fatalf("EUR export without a rate: err = %v, want a refusal naming files.us.usd_rate", err)
	}

	run(t, "ingest", "--config", config("    usd_rate: {eur: 1.08}\n"), "--date", date)
	recs, err := lake.Read[kw.KeywordRecord](filepath.Join(dir, "data"), kw.DatasetKeywords, "us", date)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || kw.Deref(recs[0].BidLowMicros) != 1080000 || kw.Deref(recs[0].BidHighMicros) != 2160000 || kw.Deref(recs[0].CPCMicros) != 1620000 {
		t.Errorf("records %+v, want EUR 1.00–2.00 as USD 1.08–2.16", recs)
	}
}

// TestIngestConfigReportsBadRows logs each bad row of a configured export
// with its file and line, and counts them in the summary, as
// the file mode does.
func TestIngestConfigReportsBadRows(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	planner := writeTestFile(t, dir, "exports/us.csv", "Keyword\tAvg. monthly searches\n"+
		"running shoes\t1000\n"+
		strings.Repeat("x", 81)+"\t10\n"+ // longer than a keyword may be
		"trail shoes\t500\n")
	cfg := writeTestFile(t, dir, "kwdata.yaml", "data: ./data\ncountries: [us]\nfiles:\n  us:\n    planner_csv: [exports/us.csv]\n")
	m, out, _ := testMain(t)
	var logs bytes.Buffer
	m.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	if err := m.Run(context.Background(), []string{"ingest", "--config", cfg, "--date", "2026-11-21"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "2 keywords, 0 SERPs, 1 bad rows") {
		t.Errorf("summary %q, want 2 keywords and 1 bad row", out)
	}
	var bad []string
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "bad row") {
			bad = append(bad, line)
		}
	}
	if len(bad) != 1 || !strings.Contains(bad[0], "file="+planner) || !strings.Contains(bad[0], "line=3") {
		t.Errorf("bad row log lines %q, want one naming %s and line=3", bad, planner)
	}
}

// TestIngestConfigExpandIdeasResume stops on the daily quota during the
// keyword idea expansion with a message saying when to run again, and
// checkpoints the expanded universe of the date once it is whole: a
// re-run of the date asks for no ideas and no metrics again.
func TestIngestConfigExpandIdeasResume(t *testing.T) {
	t.Parallel()
	const date = "2026-11-21"
	dir := t.TempDir()
	c := newSampleCorpus(t, dir, 60, 3)
	listed := c.keywords[:len(c.keywords)/2]
	ads := newFakeAds(t, c)
	ads.ideasQuota = 1
	cfg := adsConfig(t, dir, ads, listed, "  expand_ideas: 10\n")

	m, _, _ := testMain(t)
	m.Getenv = func(k string) string { return fakeEnv()[k] }
	err := m.Run(context.Background(), []string{"ingest", "--config", cfg, "--date", date})
	if err == nil || !strings.Contains(err.Error(), "quota is used up while expanding the keyword list of US") ||
		!strings.Contains(err.Error(), "run the same date again after 11h17m") {
		t.Fatalf("quota stop during expansion: err = %v, want when to run again", err)
	}

	runEnv(t, fakeEnv(), "ingest", "--config", cfg, "--date", date)
	ideas, asked := ads.ideaRequests(), len(mustAsked(ads))
	recs, err := lake.Read[kw.KeywordRecord](filepath.Join(dir, "data"), kw.DatasetKeywords, "us", date)
	if err != nil {
		t.Fatal(err)
	}
	if len(ideas) == 0 || asked != 1 || len(recs) != len(listed)+10 {
		t.Fatalf("%d idea requests, %d metrics requests, %d records; want some, 1 and %d", len(ideas), asked, len(recs), len(listed)+10)
	}

	runEnv(t, fakeEnv(), "ingest", "--config", cfg, "--date", date)
	if n := len(ads.ideaRequests()); n != len(ideas) {
		t.Errorf("the re-run asked for ideas %d more times, want none", n-len(ideas))
	}
	if n := len(mustAsked(ads)); n != asked {
		t.Errorf("the re-run sent %d more metrics requests, want none: its batches should match the checkpoint", n-asked)
	}
	again, err := lake.Read[kw.KeywordRecord](filepath.Join(dir, "data"), kw.DatasetKeywords, "us", date)
	if err != nil || !reflect.DeepEqual(again, recs) {
		t.Errorf("the re-run changed the keywords partition (err %v)", err)
	}
}

// mustAsked returns the keywords of every metrics request the fake got.
func mustAsked(ads *fakeAds) [][]string {
	_, asked := ads.requests()
	return asked
}

// TestIngestConfigSERPRefreshOrder orders SERP refresh candidates by the
// later of their newest SERP and their last attempt: a keyword whose task
// finds no results is not picked first again the next day, and SERPs past
// max_age_days are refreshed oldest first, not in keyword order.
func TestIngestConfigSERPRefreshOrder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	dfs := newFakeDFS(t, func(k string) ([]kw.SERPRow, bool) {
		if k == "k01" {
			return nil, false // 40102 No Search Results, every time
		}
		return []kw.SERPRow{{Rank: 1, URL: "https://example.com/" + k}}, true
	})
	var all []string
	for i := 1; i <= 12; i++ {
		all = append(all, fmt.Sprintf("k%02d", i))
	}
	day := func(date string, keywords []string, budget int) []string {
		t.Helper()
		var export strings.Builder
		export.WriteString("Keyword\tAvg. monthly searches\n")
		for _, k := range keywords {
			export.WriteString(k + "\t100\n")
		}
		writeTestFile(t, dir, "exports/us.csv", export.String())
		cfg := writeTestFile(t, dir, "kwdata.yaml", fmt.Sprintf(`data: ./data
countries: [us]
files:
  us:
    planner_csv: [exports/us.csv]
dataforseo:
  endpoint: %s
  login: ${DATAFORSEO_LOGIN}
  password: ${DATAFORSEO_PASSWORD}
  max_serps_per_run: %d
  max_age_days: 5
`, dfs.srv.URL, budget))
		_, before := dfs.postedSince(0)
		runEnv(t, fakeEnv(), "ingest", "--config", cfg, "--date", date)
		posted, _ := dfs.postedSince(before)
		slices.Sort(posted)
		return posted
	}

	if got := day("2026-11-01", []string{"k01", "k08", "k09"}, 3); !slices.Equal(got, []string{"k01", "k08", "k09"}) {
		t.Fatalf("day 1 fetched %q", got)
	}
	// k01 has no SERP, but it was tried yesterday: the never-tried go first.
	if got, want := day("2026-11-02", all, 3), []string{"k02", "k03", "k04"}; !slices.Equal(got, want) {
		t.Errorf("day 2 fetched %q, want %q", got, want)
	}
	// Every SERP is past max_age_days now. The six never tried, then the
	// two oldest: k01 and k08 from day 1, before k02 of day 2.
	if got, want := day("2026-11-20", all, 8), []string{"k01", "k05", "k06", "k07", "k08", "k10", "k11", "k12"}; !slices.Equal(got, want) {
		t.Errorf("day 3 fetched %q, want %q", got, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "state", "dataforseo", "us", "attempts.json")); err != nil {
		t.Errorf("no attempts file: %v", err)
	}
}

// TestIngestConfigDataFlag writes where --data says, instead of the
// config's data:, and accepts a config without data: when --data is given.
func TestIngestConfigDataFlag(t *testing.T) {
	t.Parallel()
	const date = "2026-11-21"
	dir := t.TempDir()
	writeTestFile(t, dir, "exports/us.csv", "Keyword\tAvg. monthly searches\nrunning shoes\t1000\n")
	rest := "countries: [us]\nfiles:\n  us:\n    planner_csv: [exports/us.csv]\n"
	for _, tc := range []struct{ name, config string }{
		{"overrides data:", "data: ./data\n" + rest},
		{"config without data:", rest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := writeTestFile(t, dir, "kwdata.yaml", tc.config)
			other := filepath.Join(t.TempDir(), "other")
			run(t, "ingest", "--config", cfg, "--data", other, "--date", date)
			if dates, err := lake.Dates(other, kw.DatasetKeywords, "us"); err != nil || !slices.Equal(dates, []string{date}) {
				t.Errorf("partitions under --data: %v (err %v), want %s", dates, err, date)
			}
			if dates, _ := lake.Dates(filepath.Join(dir, "data"), kw.DatasetKeywords, "us"); len(dates) > 0 {
				t.Errorf("the config's data folder got partitions %v", dates)
			}
		})
	}
}
