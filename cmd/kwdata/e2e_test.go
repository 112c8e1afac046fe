package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/lake"
)

// testMain returns a Main whose output the test can read.
func testMain(tb testing.TB) (*Main, *bytes.Buffer, *bytes.Buffer) {
	tb.Helper()
	var out, errb bytes.Buffer
	return &Main{
		Stdout: &out, Stderr: &errb, Stdin: strings.NewReader(""),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Getenv: func(string) string { return "" },
	}, &out, &errb
}

func run(tb testing.TB, args ...string) string {
	tb.Helper()
	m, out, errb := testMain(tb)
	if err := m.Run(context.Background(), args); err != nil {
		tb.Fatalf("kwdata %s: %v\nstderr: %s", strings.Join(args, " "), err, errb)
	}
	return out.String()
}

// startServer serves data on a loopback port until the test ends.
func startServer(tb testing.TB, data string) string {
	tb.Helper()
	m, _, _ := testMain(tb)
	return serveUntilCleanup(tb, m, data)
}

// serveUntilCleanup runs m's server for data on a free loopback port until
// the test ends, and returns its base URL.
func serveUntilCleanup(tb testing.TB, m *Main, data string) string {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addrc, done := make(chan string, 1), make(chan error, 1)
	go func() {
		done <- m.serve(ctx, serveConfig{data: data, addr: "127.0.0.1:0", ready: func(a string) { addrc <- a }})
	}()
	tb.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("serve: %v", err)
		}
	})
	select {
	case a := <-addrc:
		return "http://" + a
	case err := <-done:
		tb.Fatalf("serve stopped: %v", err)
	case <-time.After(30 * time.Second):
		tb.Fatal("server did not start")
	}
	return ""
}

type apiRelated struct {
	Keyword    string   `json:"keyword"`
	Volume     *int64   `json:"volume"`
	CPC        *float64 `json:"cpc"`
	Overlap    string   `json:"overlap"`
	SameIntent bool     `json:"same_intent"`
}

type apiEntry struct {
	Keyword     string   `json:"keyword"`
	Country     string   `json:"country"`
	Volume      *int64   `json:"volume"`
	CPC         *float64 `json:"cpc"`
	Competition *float64 `json:"competition"`
	Updated     string   `json:"updated"`
	Intent      string   `json:"intent"`
	Trend       []struct {
		Month  string `json:"month"`
		Volume *int64 `json:"volume"`
	} `json:"trend"`
	Related []apiRelated `json:"related"`
}

// same reports whether two nullable numbers are both null or equal.
func same[T int64 | float64](a, b *T) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}

// show prints a nullable number as JSON does.
func show[T int64 | float64](p *T) string {
	if p == nil {
		return "null"
	}
	return fmt.Sprint(*p)
}

// dollars is what the API answers for micros of USD: cents, half up.
func dollars(micros *int64) *float64 {
	if micros == nil {
		return nil
	}
	d := float64((*micros+5000)/10000) / 100
	return &d
}

// TestEndToEnd runs every stage on a small sample through the command line
// and checks that the API answers what the lake holds.
func TestEndToEnd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in, data := filepath.Join(dir, "in"), filepath.Join(dir, "data")
	const date = "2026-11-21"
	run(t, "sample", "--out", in, "--keywords", "3000", "--countries", "us,de", "--seed", "7")
	for _, cc := range []string{"us", "de"} {
		out := run(t, "ingest", "--data", data, "--date", date, "--country", cc,
			"--planner-csv", filepath.Join(in, cc, "keyword-planner.csv"),
			"--serp-jsonl", filepath.Join(in, cc, "serps.jsonl"))
		if !strings.Contains(out, "ingested "+strings.ToUpper(cc)) {
			t.Fatalf("ingest printed %q", out)
		}
	}
	run(t, "similarity", "--data", data, "--date", date)
	if out := run(t, "build-index", "--data", data, "--date", date); !strings.Contains(out, "published index") || !strings.Contains(out, "keywords in 2 countries,") {
		t.Fatalf("build-index printed %q", out)
	}
	key := paidKey(t, data) // more lookups than the anonymous allowance
	base := startServer(t, data)
	if resp, err := http.Get(base + "/debug/pprof/"); err != nil {
		t.Fatal(err)
	} else if resp.Body.Close(); resp.StatusCode != http.StatusNotFound {
		t.Errorf("public address serves the profiler: %s", resp.Status)
	}

	for _, cc := range []string{"us", "de"} {
		recs, err := lake.Read[kw.KeywordRecord](data, kw.DatasetKeywords, cc, date)
		if err != nil {
			t.Fatal(err)
		}
		related, err := lake.Read[kw.RelatedRow](data, kw.DatasetRelated, cc, date)
		if err != nil {
			t.Fatal(err)
		}
		intents, err := lake.Read[kw.IntentRow](data, kw.DatasetIntents, cc, date)
		if err != nil {
			t.Fatal(err)
		}
		if len(intents) != len(recs) {
			t.Fatalf("%s: %d intent rows for %d keywords", cc, len(intents), len(recs))
		}
		byKeyword := map[string][]kw.RelatedRow{}
		for _, r := range related {
			byKeyword[r.Keyword] = append(byKeyword[r.Keyword], r)
		}
		intentOf := map[string]string{}
		for _, r := range intents {
			intentOf[r.Keyword] = r.Intent
		}
		full := 0
		rng := rand.New(rand.NewPCG(1, 2))
		for i := 0; i < 150; i++ {
			rec := recs[rng.IntN(len(recs))]
			var got apiEntry
			status := getJSON(t, base+"/v1/keyword?"+url.Values{"q": {strings.ToUpper(rec.Keyword)}, "country": {strings.ToUpper(cc)}}.Encode(), key, &got)
			if status != http.StatusOK {
				t.Fatalf("%s %q: status %d", cc, rec.Keyword, status)
			}
			checkEntry(t, cc, date, rec, byKeyword[rec.Keyword], intentOf[rec.Keyword], got)
			if len(got.Related) == 10 {
				full++
			}
		}
		if full == 0 {
			t.Errorf("%s: no sampled keyword has 10 related keywords", cc)
		}
	}
	var problem struct{ Code string }
	if s := getJSON(t, base+"/v1/keyword?q=no+such+keyword+anywhere&country=us", key, &problem); s != 404 || problem.Code != "keyword_not_found" {
		t.Errorf("unknown keyword: %d %q", s, problem.Code)
	}
	if s := getJSON(t, base+"/v1/keyword?q=x&country=zz", key, &problem); s != 400 || problem.Code != "unsupported_country" {
		t.Errorf("unknown country: %d %q", s, problem.Code)
	}
}

func checkEntry(t *testing.T, cc, date string, rec kw.KeywordRecord, related []kw.RelatedRow, intent string, got apiEntry) {
	t.Helper()
	where := cc + " " + rec.Keyword
	if got.Keyword != rec.Keyword || got.Country != strings.ToUpper(cc) || !same(got.Volume, rec.Volume) || got.Updated != date {
		t.Errorf("%s: got %s/%s/%s/%s", where, got.Keyword, got.Country, show(got.Volume), got.Updated)
	}
	if want := dollars(rec.CPCMicros); !same(got.CPC, want) {
		t.Errorf("%s: cpc %s, want %s (micros %s)", where, show(got.CPC), show(want), show(rec.CPCMicros))
	}
	if (got.Competition == nil) != (rec.Competition == nil) ||
		got.Competition != nil && math.Abs(*got.Competition-*rec.Competition) > 0.005 {
		t.Errorf("%s: competition %s, want %s", where, show(got.Competition), show(rec.Competition))
	}
	if got.Intent != intent {
		t.Errorf("%s: intent %q, want %q", where, got.Intent, intent)
	}
	monthly := rec.Monthly
	if len(monthly) > 12 {
		monthly = monthly[len(monthly)-12:]
	}
	if len(got.Trend) != len(monthly) {
		t.Errorf("%s: %d trend months, want %d", where, len(got.Trend), len(monthly))
	} else {
		for i, m := range monthly {
			if got.Trend[i].Month != m.Month || !same(got.Trend[i].Volume, m.Searches) {
				t.Errorf("%s: trend[%d] = %+v, want %+v", where, i, got.Trend[i], m)
			}
		}
	}
	if len(got.Related) != len(related) {
		t.Fatalf("%s: %d related, the lake has %d", where, len(got.Related), len(related))
	}
	for i, r := range related {
		want := apiRelated{r.Related, r.Volume, dollars(r.CPCMicros), fmt.Sprintf("%d/20", r.Overlap), r.SameIntent}
		g := got.Related[i]
		if int(r.Rank) != i+1 || g.Keyword != want.Keyword || !same(g.Volume, want.Volume) || !same(g.CPC, want.CPC) ||
			g.Overlap != want.Overlap || g.SameIntent != want.SameIntent {
			t.Errorf("%s: related[%d] = %+v, lake rank %d %+v", where, i, got.Related[i], r.Rank, want)
		}
	}
}

// getJSON GETs u, with key as the API key when it is not empty, and decodes
// the body into v.
func getJSON(tb testing.TB, u, key string, v any) int {
	tb.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		tb.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		tb.Fatalf("GET %s: %v", u, err)
	}
	return resp.StatusCode
}

func TestCommandLineErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "no command"},
		{[]string{"nosuch"}, "unknown command"},
		{[]string{"ingest", "--date", "2026-11-21", "--country", "us"}, "--data is required"},
		{[]string{"ingest", "--data", "d", "--date", "2026-11-21", "--country", "us"}, "nothing to ingest"},
		{[]string{"ingest", "--data", "d", "--date", "2026-11-21", "--country", "us", "--planner-csv", "x", "--usd-rate", "EUR"}, "CUR=RATE"},
		{[]string{"build-index", "--data", "d"}, "--date is required"},
		{[]string{"serve", "--data", "d", "--trusted-proxy", "nonsense"}, "not a CIDR"},
		{[]string{"sample", "--out", "o", "extra"}, "unexpected argument"},
	} {
		m, _, _ := testMain(t)
		err := m.Run(context.Background(), tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("kwdata %v: err = %v, want it to mention %q", tc.args, err, tc.want)
		}
	}
}
