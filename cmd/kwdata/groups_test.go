package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"github.com/kwdata/kwdata/internal/testservers"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/lake"
)

// TestIntentSuggestCSVOnABuiltIndex runs sample → ingest → similarity →
// build-index → serve and checks the answers that come from the tables
// the build computed against brute force over the lake: intent groups
// (members, sizes, totals and each member's overlap with its leader,
// recomputed from the SERPs), suggestions, the changes and the CSV.
func TestIntentSuggestCSVOnABuiltIndex(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in, data := filepath.Join(dir, "in"), filepath.Join(dir, "data")
	const date = "2026-11-21"
	run(t, "sample", "--out", in, "--keywords", "3000", "--countries", "us", "--seed", "11")
	run(t, "ingest", "--data", data, "--date", date, "--country", "us",
		"--planner-csv", filepath.Join(in, "us", "keyword-planner.csv"), "--serp-jsonl", filepath.Join(in, "us", "serps.jsonl"))
	run(t, "similarity", "--data", data, "--date", date)
	run(t, "build-index", "--data", data, "--date", date)
	key := paidKey(t, data)
	base := startServer(t, data)

	recs, err := lake.Read[kw.KeywordRecord](data, kw.DatasetKeywords, "us", date)
	if err != nil {
		t.Fatal(err)
	}
	intents, err := lake.Read[kw.IntentRow](data, kw.DatasetIntents, "us", date)
	if err != nil {
		t.Fatal(err)
	}
	serps, err := lake.Read[kw.SERPRow](data, kw.DatasetSERPs, "us", date)
	if err != nil {
		t.Fatal(err)
	}
	rec := map[string]kw.KeywordRecord{}
	for _, r := range recs {
		rec[r.Keyword] = r
	}
	urls := map[string]map[string]bool{} // a keyword's top-20 URL keys
	for _, s := range serps {
		if kw.InTop(s.Rank) {
			if urls[s.Keyword] == nil {
				urls[s.Keyword] = map[string]bool{}
			}
			if len(urls[s.Keyword]) < kw.MaxRank {
				urls[s.Keyword][s.URLKey] = true
			}
		}
	}
	overlap := func(a, b string) int {
		n := 0
		for u := range urls[a] {
			if urls[b][u] {
				n++
			}
		}
		return n
	}
	groups := map[string][]kw.IntentRow{}
	leaderOf := map[string]string{}
	for _, r := range intents {
		groups[r.Intent] = append(groups[r.Intent], r)
		leaderOf[r.Keyword] = r.Intent
	}

	t.Run("intent", func(t *testing.T) {
		// The largest groups, and some keywords at random.
		var leaders []string
		for l := range groups {
			leaders = append(leaders, l)
		}
		slices.SortFunc(leaders, func(a, b string) int { return len(groups[b]) - len(groups[a]) })
		rng := rand.New(rand.NewPCG(3, 4))
		var asks []string
		for _, l := range leaders[:5] {
			asks = append(asks, groups[l][rng.IntN(len(groups[l]))].Keyword)
		}
		for range 20 {
			asks = append(asks, recs[rng.IntN(len(recs))].Keyword)
		}
		t.Logf("%d groups, the largest %d keywords", len(groups), len(groups[leaders[0]]))
		if len(groups[leaders[0]]) < 3 {
			t.Fatalf("the largest group has %d keywords; the sample should make bigger ones", len(groups[leaders[0]]))
		}
		for _, q := range asks {
			var got struct {
				Keyword, Leader, Country, Updated string
				Size                              int64
				TotalVolume                       int64 `json:"total_volume"`
				Members                           []struct {
					Keyword string
					Volume  *int64
					CPC     *float64
					Overlap string
				}
			}
			if s := getJSON(t, base+"/v1/intent?"+url.Values{"q": {q}, "country": {"us"}}.Encode(), key, &got); s != 200 {
				t.Fatalf("%q: status %d", q, s)
			}
			leader := leaderOf[q]
			members := groups[leader]
			var total int64
			for _, m := range members {
				total += kw.Deref(rec[m.Keyword].Volume)
			}
			if got.Leader != leader || got.Size != int64(len(members)) || got.TotalVolume != total || got.Updated != date {
				t.Fatalf("%q: leader %q size %d total %d, want %q %d %d", q, got.Leader, got.Size, got.TotalVolume, leader, len(members), total)
			}
			slices.SortFunc(members, func(a, b kw.IntentRow) int {
				va, vb := kw.Deref(rec[a.Keyword].Volume), kw.Deref(rec[b.Keyword].Volume)
				if va != vb {
					if va > vb {
						return -1
					}
					return 1
				}
				return strings.Compare(a.Keyword, b.Keyword)
			})
			members = members[:min(len(members), kw.MaxGroupMembers)]
			if len(got.Members) != len(members) {
				t.Fatalf("%q: %d members, want %d", q, len(got.Members), len(members))
			}
			for i, m := range members {
				g := got.Members[i]
				want := overlap(m.Keyword, leader)
				if g.Keyword != m.Keyword || g.Overlap != fmt.Sprintf("%d/20", want) || !same(g.Volume, rec[m.Keyword].Volume) {
					t.Fatalf("%q member %d = %+v, want %s with overlap %d/20 (the lake says %d)", q, i, g, m.Keyword, want, m.Overlap)
				}
				if m.Keyword != leader && want < 8 {
					t.Fatalf("%q: member %s shares only %d results with its leader", q, m.Keyword, want)
				}
			}
		}
	})

	t.Run("suggest", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(5, 6))
		for i := range 25 {
			k := recs[rng.IntN(len(recs))].Keyword
			p := strings.TrimSpace(k[:1+rng.IntN(min(len(k), 6))])
			for !strings.HasPrefix(k, p) || !isRuneBoundary(k, len(p)) {
				p = p[:len(p)-1]
			}
			if i%5 == 0 {
				p = k // a whole keyword
			}
			var got struct{ Suggestions []string }
			getSuggest(t, base+"/v1/suggest?"+url.Values{"q": {p}, "country": {"us"}}.Encode(), &got)
			var begins []kw.KeywordRecord
			for _, r := range recs {
				if strings.HasPrefix(r.Keyword, p) {
					begins = append(begins, r)
				}
			}
			slices.SortFunc(begins, func(a, b kw.KeywordRecord) int {
				va, vb := kw.Deref(a.Volume), kw.Deref(b.Volume)
				if va != vb {
					if va > vb {
						return -1
					}
					return 1
				}
				return strings.Compare(a.Keyword, b.Keyword)
			})
			n := min(len(begins), 10)
			if len(got.Suggestions) < n {
				t.Fatalf("suggest %q: %d answers, want at least %d", p, len(got.Suggestions), n)
			}
			for j := 0; j < n; j++ {
				if got.Suggestions[j] != begins[j].Keyword {
					t.Fatalf("suggest %q = %q, want %q first", p, got.Suggestions, begins[j].Keyword)
				}
			}
			for _, s := range got.Suggestions[n:] {
				if !strings.Contains(" "+s+" ", " "+p+" ") {
					t.Fatalf("suggest %q answered %q, which does not hold it as words", p, s)
				}
			}
		}
	})

	t.Run("changes and CSV", func(t *testing.T) {
		var kws []string
		for i := 0; i < 100; i++ {
			kws = append(kws, recs[i*len(recs)/100].Keyword)
		}
		body, _ := json.Marshal(map[string]any{"country": "us", "keywords": kws})
		req, _ := http.NewRequest("POST", base+"/v1/keywords", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "text/csv")
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		rows, err := csv.NewReader(bytes.NewReader(raw)).ReadAll()
		if err != nil || len(rows) != 101 || resp.StatusCode != 200 {
			t.Fatalf("CSV: %v, %d rows, status %d", err, len(rows), resp.StatusCode)
		}
		col := map[string]int{}
		for i, h := range rows[0] {
			col[h] = i
		}
		changes := 0
		for i, row := range rows[1:] {
			r := rec[kws[i]]
			if row[col["keyword"]] != r.Keyword || row[col["volume"]] != optInt(r.Volume) ||
				row[col["yoy"]] != optChange(r.YoYChange) || row[col["three_month"]] != optChange(r.ThreeMonthChange) {
				t.Fatalf("row %q, want the lake's %+v", row, r)
			}
			if r.YoYChange != nil || r.ThreeMonthChange != nil {
				changes++
			}
		}
		if changes == 0 {
			t.Error("no sampled keyword has a change; the sample export should state them")
		}
	})
}

func isRuneBoundary(s string, i int) bool { return i == len(s) || i == 0 || s[i]&0xC0 != 0x80 }

func optInt(p *int64) string {
	if p == nil {
		return ""
	}
	return fmt.Sprint(*p)
}

func optChange(p *float64) string {
	switch {
	case p == nil:
		return ""
	case math.IsInf(*p, 1):
		return "inf"
	}
	return fmt.Sprint(*p)
}

// getSuggest asks for suggestions, waiting out the per-client limit (10 a
// second) when the loop outruns it.
func getSuggest(tb testing.TB, u string, v any) {
	tb.Helper()
	// The suggestions' rate limiter refills within a second: poll until
	// it lets the request through.
	var resp *http.Response
	if !testservers.Poll(5*time.Second, func() bool {
		var err error
		if resp, err = http.Get(u); err != nil {
			tb.Fatal(err)
		}
		if resp.StatusCode == http.StatusTooManyRequests {
			resp.Body.Close()
			return false
		}
		return true
	}) {
		tb.Fatalf("GET %s: still limited after 5s", u)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		tb.Fatalf("GET %s: %s", u, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		tb.Fatal(err)
	}
}
