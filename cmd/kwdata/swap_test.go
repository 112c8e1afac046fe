package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kwdata/kwdata/internal/testservers"
)

// TestServeSwapUnderLoad publishes new indexes with `kwdata build-index`
// while concurrent clients query the running server over loopback: every
// answer must be 200, no client may see the data date go back, and all
// of them must end on the last published date.
func TestServeSwapUnderLoad(t *testing.T) {
	t.Parallel()
	const (
		clients = 4
		// within bounds each client: far more than the builds and swaps
		// take, even on a loaded machine.
		within = 5 * time.Minute
	)
	dir := t.TempDir()
	c := newSampleCorpus(t, dir, 200, 11)
	data := filepath.Join(dir, "data")
	days := []string{"2026-11-18", "2026-11-19", "2026-11-20", "2026-11-21"}
	for _, d := range days {
		run(t, "ingest", "--data", data, "--date", d, "--country", "us",
			"--planner-csv", c.planner, "--serp-jsonl", c.serpFile)
		run(t, "similarity", "--data", data, "--date", d)
	}
	run(t, "build-index", "--data", data, "--date", days[0])
	key := paidKey(t, data)
	base := startServer(t, data)

	hc := &http.Client{
		Transport: &http.Transport{MaxIdleConnsPerHost: clients},
		Timeout:   10 * time.Second,
	}
	defer hc.CloseIdleConnections()
	last := days[len(days)-1]
	var published atomic.Bool // the last date is published
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, dates, err := swapClient(hc, base, key, c.keywords, rand.New(rand.NewPCG(uint64(i), 7)), days[0], last, &published, within)
			if err == nil && dates < 2 {
				err = fmt.Errorf("client %d saw %d data date in %d requests; it never queried across a swap", i, dates, n)
			}
			t.Logf("client %d: %d requests, %d data dates", i, n, dates)
			errs <- err
		}()
	}
	for _, d := range days[1:] {
		run(t, "build-index", "--data", data, "--date", d)
		waitUpdated(t, base, key, c.keywords[0], d)
	}
	published.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// swapClient looks up random keywords one after another (at the pace of
// testservers.Poll) until it has seen last after published was set, or
// within has passed. It fails on any answer but 200 and on a data date
// older than the one before. It returns the requests it made and the data
// dates it saw.
func swapClient(hc *http.Client, base, key string, keywords []string, rng *rand.Rand, first, last string, published *atomic.Bool, within time.Duration) (requests, dates int, err error) {
	seen, dates := first, 1
	// lookup makes one request and checks its answer.
	lookup := func() error {
		requests++
		q := keywords[rng.IntN(len(keywords))]
		req, err := http.NewRequest(http.MethodGet, base+"/v1/keyword?"+url.Values{"q": {q}, "country": {"us"}}.Encode(), nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := hc.Do(req)
		if err != nil {
			return fmt.Errorf("request %d: %w", requests, err)
		}
		var e apiEntry
		err = json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || err != nil {
			return fmt.Errorf("request %d for %q: status %d, %v", requests, q, resp.StatusCode, err)
		}
		if e.Updated < seen {
			return fmt.Errorf("request %d: data date went back from %s to %s", requests, seen, e.Updated)
		}
		if e.Updated != seen {
			seen, dates = e.Updated, dates+1
		}
		return nil
	}
	done := testservers.Poll(within, func() bool {
		if err = lookup(); err != nil {
			return true
		}
		return seen == last && published.Load()
	})
	if err == nil && !done {
		err = fmt.Errorf("after %d requests in %s the client still sees %s, want %s", requests, within, seen, last)
	}
	return requests, dates, err
}
