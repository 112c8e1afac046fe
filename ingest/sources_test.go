package ingest

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kwdata/kwdata/ingest/dataforseo"
	"github.com/kwdata/kwdata/ingest/googleads"
	"github.com/kwdata/kwdata/kw"
)

// TestSERPBudgetIsPerRun shares max_serps_per_run among the countries of a
// run: what a run pays for never exceeds it, whatever the country count,
// and what one country leaves unused goes to the countries after it.
func TestSERPBudgetIsPerRun(t *testing.T) {
	for _, tc := range []struct {
		name      string
		budget    int
		countries []string
		need      map[string]int // SERPs a country has to refresh; absent: more than any share
		want      []int          // shares, in country order
	}{
		{"even", 9, []string{"us", "de", "fr"}, nil, []int{3, 3, 3}},
		{"remainder goes first", 10, []string{"us", "de", "fr"}, nil, []int{4, 3, 3}},
		{"unused share carries over", 30, []string{"us", "de", "fr"}, map[string]int{"us": 2}, []int{10, 14, 14}},
		{"budget below country count", 2, []string{"us", "de", "fr"}, nil, []int{1, 1, 0}},
		{"file SERPs take no share", 10, []string{"us", "gb", "de"}, nil, []int{5, 0, 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &Sources{
				Files:      map[string]FileSources{"gb": {SERPJSONL: []string{"gb.jsonl"}}},
				DataForSEO: &dataforseo.Config{MaxSERPsPerRun: tc.budget},
			}
			b := src.newSERPBudget(tc.countries)
			var got []int
			total := 0
			for _, cc := range tc.countries {
				if !src.serpsFromAPI(cc) {
					got = append(got, 0)
					continue
				}
				share := b.share()
				got = append(got, share)
				picked := share
				if n, ok := tc.need[cc]; ok && n < share {
					picked = n
				}
				b.spend(picked)
				total += picked
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("shares %v, want %v", got, tc.want)
			}
			if total > tc.budget {
				t.Errorf("the run picked %d SERPs, more than its budget %d", total, tc.budget)
			}
		})
	}
}

// TestQuotaStopError says when to run again, and never "after 0s".
func TestQuotaStopError(t *testing.T) {
	for _, tc := range []struct {
		delay time.Duration
		want  string
	}{
		{0, "run the same date again later"},
		{10 * time.Second, "again after 10s"},
		{90 * time.Minute, "again after 1h30m0s"},
	} {
		msg := quotaStopError(&googleads.QuotaExhaustedError{RetryAfter: tc.delay, BatchesDone: 2, BatchesTotal: 5}, "US").Error()
		if !strings.Contains(msg, tc.want) || strings.Contains(msg, " 0s") || !strings.Contains(msg, "2 of 5 batches for US") {
			t.Errorf("delay %s: %q, want it to contain %q", tc.delay, msg, tc.want)
		}
	}
}

// TestSourcesCheckDefaults fills the clients' defaults into sections that
// leave keys out, lower-cases country keys and resolves relative paths.
func TestSourcesCheckDefaults(t *testing.T) {
	src := Sources{
		Keywords:   map[string]string{"DE": "seeds/de.txt"},
		Files:      map[string]FileSources{"us": {PlannerCSV: []string{"/abs/us.csv"}, SERPJSONL: []string{"us.jsonl"}, USDRate: map[string]float64{"eur": 1.08}}},
		GoogleAds:  &googleads.Config{CustomerID: "1234567890", ClientID: "a", ClientSecret: "b", RefreshToken: "c"},
		DataForSEO: &dataforseo.Config{Login: "l", Password: "p"},
	}
	if p := src.Check("/etc/kwdata", []string{"us", "de"}, func(string, bool) bool { return false }); len(p) > 0 {
		t.Fatalf("Check = %q, want no problem", p)
	}
	if g := *src.GoogleAds; g.Endpoint != googleads.DefaultEndpoint || g.APIVersion != googleads.DefaultAPIVersion ||
		g.TokenURL != googleads.DefaultTokenURL || g.RequestsPerSecond != googleads.DefaultRequestsPerSecond {
		t.Errorf("googleads = %+v, want the client's defaults", g)
	}
	if d := *src.DataForSEO; d.Endpoint != dataforseo.DefaultEndpoint || d.MaxSERPsPerRun != dataforseo.DefaultMaxSERPsPerRun || d.MaxAgeDays != kw.DefaultSERPMaxAgeDays {
		t.Errorf("dataforseo = %+v, want the client's defaults", d)
	}
	if got := src.SERPMaxAgeDays(); got != kw.DefaultSERPMaxAgeDays {
		t.Errorf("SERPMaxAgeDays = %d, want %d", got, kw.DefaultSERPMaxAgeDays)
	}
	if !maps.Equal(src.Keywords, map[string]string{"de": filepath.Join("/etc/kwdata", "seeds/de.txt")}) {
		t.Errorf("keywords = %v", src.Keywords)
	}
	us := src.Files["us"]
	if !slices.Equal(us.PlannerCSV, []string{"/abs/us.csv"}) || !slices.Equal(us.SERPJSONL, []string{"/etc/kwdata/us.jsonl"}) || !maps.Equal(us.USDRate, map[string]float64{"EUR": 1.08}) {
		t.Errorf("files.us = %+v", us)
	}
	if (&Sources{}).SERPMaxAgeDays() != kw.DefaultSERPMaxAgeDays || (&Sources{DataForSEO: &dataforseo.Config{MaxAgeDays: 9}}).SERPMaxAgeDays() != 9 {
		t.Error("SERPMaxAgeDays does not follow dataforseo.max_age_days")
	}
}

// TestSourcesCheckUnset asks the caller about every key that needs a value
// and about the keys that may stay empty, and does not call a key empty
// when its value came from an unset variable: the caller names that.
func TestSourcesCheckUnset(t *testing.T) {
	unsetKeys := map[string]bool{"googleads.client_secret": true, "googleads.developer_token": true}
	asked := map[string]bool{} // key -> optional
	src := Sources{
		Files:     map[string]FileSources{"us": {PlannerCSV: []string{"us.csv"}}},
		GoogleAds: &googleads.Config{CustomerID: "1234567890", ClientID: "a", RefreshToken: "c"},
	}
	p := src.Check("/etc", []string{"us"}, func(key string, optional bool) bool {
		asked[key] = optional
		return unsetKeys[key]
	})
	if len(p) > 0 {
		t.Errorf("Check = %q, want no problem of its own", p)
	}
	for key, optional := range map[string]bool{
		"googleads.customer_id": false, "googleads.client_id": false, "googleads.client_secret": false, "googleads.refresh_token": false,
		"googleads.login_customer_id": true, "googleads.developer_token": true, "files.us.planner_csv[0]": false,
	} {
		if got, ok := asked[key]; !ok || got != optional {
			t.Errorf("asked about %s: %v (optional %v), want optional %v", key, ok, got, optional)
		}
	}
}

// TestSourcesCheckProblems names each problem's key and what to write.
func TestSourcesCheckProblems(t *testing.T) {
	none := func(string, bool) bool { return false }
	for _, tc := range []struct {
		name      string
		src       Sources
		countries []string
		want      []string
	}{
		{"no source", Sources{}, []string{"us"}, []string{"countries: us has no keyword source"}},
		{"keywords without googleads", Sources{Keywords: map[string]string{"us": "us.txt"}}, []string{"us"}, []string{"us has no keyword source"}},
		{"entry for another country", Sources{Files: map[string]FileSources{"us": {PlannerCSV: []string{"a"}}, "fr": {PlannerCSV: []string{"b"}}}}, []string{"us"},
			[]string{"files.fr: fr is not in countries"}},
		{"unsupported country key", Sources{Files: map[string]FileSources{"us": {PlannerCSV: []string{"a"}}}, Keywords: map[string]string{"xx": "x"}}, []string{"us"},
			[]string{`keywords.xx: "xx" is not a supported country`}},
		{"empty path", Sources{Files: map[string]FileSources{"us": {PlannerCSV: []string{""}}}}, []string{"us"},
			[]string{"files.us.planner_csv[0] is empty; write e.g. files.us.planner_csv[0]: exports/us.csv"}},
		{"googleads", Sources{Files: map[string]FileSources{"us": {PlannerCSV: []string{"a"}}},
			GoogleAds: &googleads.Config{CustomerID: "12", Endpoint: "ftp://x", APIVersion: "26", RequestsPerSecond: -1, USDRate: -1, ExpandIdeas: -1}}, []string{"us"},
			[]string{`googleads.customer_id: "12" is not a customer id`, "googleads.client_id is empty", "googleads.endpoint", "http(s) URL",
				`googleads.api_version: "26" is not a version`, "googleads.requests_per_second is -1; write a positive number such as 1",
				"googleads.usd_rate is -1", "googleads.expand_ideas is -1"}},
		{"dataforseo", Sources{Files: map[string]FileSources{"us": {PlannerCSV: []string{"a"}}},
			DataForSEO: &dataforseo.Config{MaxSERPsPerRun: -1, MaxAgeDays: -1}}, []string{"us"},
			[]string{"dataforseo.login is empty", "dataforseo.password is empty", "dataforseo.max_serps_per_run is -1; write a positive budget such as 10000",
				"dataforseo.max_age_days is -1; write a positive number of days such as 30"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := strings.Join(tc.src.Check("/etc", tc.countries, none), "; ")
			for _, w := range tc.want {
				if !strings.Contains(p, w) {
					t.Errorf("problems %q lack %q", p, w)
				}
			}
		})
	}
}

// TestSourcesRunLogsFewBadRows logs the first MaxBadRows bad rows of a
// configured export with file and line, and a count of the rest, as
// `kwdata ingest` prints them for files given on its command line.
func TestSourcesRunLogsFewBadRows(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("Keyword\tAvg. monthly searches\n")
	for i := range MaxBadRows + 5 {
		fmt.Fprintf(&b, "k%02d\tlots\n", i)
	}
	b.WriteString("good keyword\t10\n")
	planner := writeFile(t, dir, "us.csv", []byte(b.String()))
	src := Sources{Files: map[string]FileSources{"us": {PlannerCSV: []string{planner}}}}
	var logs bytes.Buffer
	reps, err := src.Run(context.Background(), SourcesOptions{
		Data: dir, Date: "2026-11-21", Countries: []string{"us"}, StateDir: filepath.Join(dir, "state"),
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(reps) != 1 || reps[0].Counts["keywords"] != 1 || reps[0].Counts["bad_rows"] != MaxBadRows+5 {
		t.Errorf("reports %+v, want us with 1 keyword and %d bad rows", reps, MaxBadRows+5)
	}
	var listed, more []string
	for _, line := range strings.Split(logs.String(), "\n") {
		switch {
		case strings.Contains(line, `msg="bad row skipped"`):
			listed = append(listed, line)
		case strings.Contains(line, "more bad rows"):
			more = append(more, line)
		}
	}
	if len(listed) != MaxBadRows || !strings.Contains(listed[0], "file="+planner) || !strings.Contains(listed[0], "line=2") {
		t.Errorf("bad row lines %q, want %d, the first naming %s line 2", listed, MaxBadRows, planner)
	}
	if len(more) != 1 || !strings.Contains(more[0], "count=5") {
		t.Errorf("count lines %q, want one with count=5", more)
	}
}
