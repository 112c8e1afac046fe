package main

import (
	"encoding/json"
	"github.com/kwdata/kwdata/internal/testservers"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestServeDamagedIndex truncates the table of the build a running server
// serves: every lookup answers 200 or 503 index_unavailable (never 500),
// the 503s are counted in kwdata_index_damaged_lookups_total, /readyz
// answers 503, the log names the table; once a good build is published
// the server switches to it and is ready again.
func TestServeDamagedIndex(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := newSampleCorpus(t, dir, 2000, 5)
	data := filepath.Join(dir, "data")
	for _, d := range []string{"2026-11-20", "2026-11-21"} {
		run(t, "ingest", "--data", data, "--date", d, "--country", "us", "--planner-csv", c.planner, "--serp-jsonl", c.serpFile)
		run(t, "similarity", "--data", data, "--date", d)
	}
	run(t, "build-index", "--data", data, "--date", "2026-11-20")
	served := currentBuild(t, data)
	key := paidKey(t, data)
	logs := &syncBuffer{}
	base := startLoggedServer(t, data, logs)

	ssts, err := filepath.Glob(filepath.Join(data, "index", served, "db", "*.sst"))
	if err != nil || len(ssts) == 0 {
		t.Fatalf("tables of %s: %v, %v", served, ssts, err)
	}
	for _, sst := range ssts {
		st, err := os.Stat(sst)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(sst, st.Size()/2); err != nil {
			t.Fatal(err)
		}
	}

	unavailable := 0
	for _, k := range c.keywords {
		status, code := lookupStatus(t, base, key, k)
		switch {
		case status == http.StatusServiceUnavailable && code == "index_unavailable":
			unavailable++
		case status != http.StatusOK:
			t.Fatalf("GET %q on a damaged build: %d %s, want 200 or 503 index_unavailable", k, status, code)
		}
	}
	if unavailable == 0 {
		t.Fatalf("no lookup of %d met the truncated tables", len(c.keywords))
	}
	t.Logf("%d of %d lookups met the truncated tables", unavailable, len(c.keywords))
	if status, code := getStatus(t, base+"/readyz"); status != http.StatusServiceUnavailable || code != "index_unavailable" {
		t.Errorf("/readyz on a damaged build: %d %s, want 503 index_unavailable", status, code)
	}
	if got := metricOf(t, base, "kwdata_index_damaged_lookups_total"); got != float64(unavailable) {
		t.Errorf("kwdata_index_damaged_lookups_total = %v, want %d", got, unavailable)
	}
	if got := metricOf(t, base, "kwdata_index_ready"); got != 0 {
		t.Errorf("kwdata_index_ready = %v on a damaged build, want 0", got)
	}
	// The server checks the build again on the first damaged lookup; the
	// refusal names the table (bounded wait for its log line).
	table := filepath.Base(ssts[0])
	testservers.Poll(30*time.Second, func() bool { return strings.Contains(logs.String(), table) })
	if !strings.Contains(logs.String(), table) || !strings.Contains(logs.String(), served) {
		t.Errorf("the log does not name table %s of build %s:\n%s", table, served, logs)
	}

	run(t, "build-index", "--data", data, "--date", "2026-11-21")
	waitUpdated(t, base, key, c.keywords[0], "2026-11-21")
	if status, _ := getStatus(t, base+"/readyz"); status != http.StatusOK {
		t.Errorf("/readyz after a good build: %d, want 200", status)
	}
	for _, k := range c.keywords {
		if status, code := lookupStatus(t, base, key, k); status != http.StatusOK {
			t.Fatalf("GET %q after a good build: %d %s", k, status, code)
		}
	}
}

// startLoggedServer is startServer with the server's log in logs.
func startLoggedServer(tb testing.TB, data string, logs io.Writer) string {
	tb.Helper()
	m, _, _ := testMain(tb)
	m.Logger = slog.New(slog.NewTextHandler(logs, nil))
	return serveUntilCleanup(tb, m, data)
}

// lookupStatus asks for keyword in us with key and returns the status and
// the problem code of a refusal.
func lookupStatus(tb testing.TB, base, key, keyword string) (int, string) {
	tb.Helper()
	req, err := http.NewRequest(http.MethodGet, base+"/v1/keyword?"+url.Values{"q": {keyword}, "country": {"us"}}.Encode(), nil)
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	return doStatus(tb, req)
}

func getStatus(tb testing.TB, u string) (int, string) {
	tb.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return doStatus(tb, req)
}

func doStatus(tb testing.TB, req *http.Request) (int, string) {
	tb.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	var p struct {
		Code string `json:"code"`
	}
	if resp.StatusCode != http.StatusOK {
		_ = json.NewDecoder(resp.Body).Decode(&p)
	}
	return resp.StatusCode, p.Code
}

// metricOf reads an unlabelled sample from GET /metrics.
func metricOf(tb testing.TB, base, name string) float64 {
	tb.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				tb.Fatalf("%s: %v", name, err)
			}
			return f
		}
	}
	tb.Fatalf("metrics lack %s", name)
	return 0
}
