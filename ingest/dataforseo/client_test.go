package dataforseo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kwdata/kwdata/kw"
)

func us(tb testing.TB) kw.Country {
	tb.Helper()
	c, ok := kw.LookupCountry("US")
	if !ok {
		tb.Fatal("US is not supported")
	}
	return c
}

func TestFetchSERPsEndToEnd(t *testing.T) {
	f := newFakeDFS(t)
	f.readyAfter, f.perPoll = 1, 1 // one task becomes visible per poll
	var progress [][2]int
	c, clock := newTestClient(t, f.config(), Options{PollInterval: 15 * time.Second,
		Progress: func(done, total int) { progress = append(progress, [2]int{done, total}) }})
	got, stats, err := c.FetchSERPs(context.Background(), us(t),
		[]string{"Running  Shoes", "trail shoes", "bad invalid kw", "zzqx noresults", "running shoes", strings.Repeat("w", 81)})
	if err != nil {
		t.Fatal(err)
	}
	// Progress starts at nothing done, never goes back, and ends with
	// every wanted keyword done (collected or failed).
	if len(progress) < 3 || progress[0] != [2]int{0, 4} || progress[len(progress)-1] != [2]int{4, 4} {
		t.Errorf("progress %v, want from [0 4] to [4 4]", progress)
	}
	for i := 1; i < len(progress); i++ {
		if progress[i][0] < progress[i-1][0] || progress[i][1] != 4 {
			t.Errorf("progress goes back or changes total: %v", progress)
		}
	}
	// The recorded SERP: organic items only, by rank_group; the item
	// without a URL is skipped and the rest renumbered.
	wantShoes := []kw.SERPRow{
		{Keyword: "running shoes", Rank: 1, URL: "https://www.runnersworld.com/gear/best-running-shoes/", URLKey: "runnersworld.com/gear/best-running-shoes"},
		{Keyword: "running shoes", Rank: 2, URL: "https://www.nike.com/w/mens-running-shoes-37v7jznik1?utm_source=google", URLKey: "nike.com/w/mens-running-shoes-37v7jznik1"},
		{Keyword: "running shoes", Rank: 3, URL: "https://www.reddit.com/r/RunningShoeGeeks/", URLKey: "reddit.com/r/RunningShoeGeeks"},
		{Keyword: "running shoes", Rank: 4, URL: "https://www.brooksrunning.com:443/en_us/running-shoes/#top", URLKey: "brooksrunning.com/en_us/running-shoes"},
	}
	if !reflect.DeepEqual(got["running shoes"], wantShoes) {
		t.Errorf("running shoes rows:\n got %+v\nwant %+v", got["running shoes"], wantShoes)
	}
	trail := got["trail shoes"]
	if len(trail) != Depth || trail[0].Rank != 1 || trail[19].Rank != 20 || trail[19].URL != "https://site20.example/trail-shoes" {
		t.Errorf("trail shoes: %d rows, want the 20 first organic results ranked 1..20: %+v", len(trail), trail)
	}
	if len(got) != 2 {
		t.Errorf("SERPs for %d keywords, want 2", len(got))
	}
	want := FetchStats{Requested: 4, InvalidKeywords: 1, Posted: 3, Collected: 2, Failed: 2, SkippedURLs: 1,
		Failures: []TaskFailure{
			{Keyword: "bad invalid kw", Code: 40501, Message: "Invalid Field: 'keyword'."},
			{Keyword: "zzqx noresults", Code: 40102, Message: "No Search Results."},
		}}
	stats.Cost = 0
	if !reflect.DeepEqual(stats, want) {
		t.Errorf("stats:\n got %+v\nwant %+v", stats, want)
	}
	// Three tasks, one listed per poll: three polls, a PollInterval
	// between each two.
	if s := clock.sleeps; !slices.Equal(s, []time.Duration{15 * time.Second, 15 * time.Second}) {
		t.Errorf("sleeps %v, want two of 15s", s)
	}
	task := f.postBodies[0][0]
	for k, want := range map[string]any{"keyword": "running shoes", "location_code": float64(2840),
		"language_code": "en", "depth": float64(20), "tag": "kwdata/us/running shoes"} {
		if task[k] != want {
			t.Errorf("posted %s = %#v, want %#v", k, task[k], want)
		}
	}
}

func TestFetchSERPsPostsAtMost100Tasks(t *testing.T) {
	f := newFakeDFS(t)
	c, _ := newTestClient(t, f.config(), Options{})
	var kws []string
	for i := range 250 {
		kws = append(kws, fmt.Sprintf("keyword %03d", i))
	}
	got, stats, err := c.FetchSERPs(context.Background(), us(t), kws)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.postSizes, []int{100, 100, 50}) {
		t.Errorf("POST sizes %v, want 100 100 50", f.postSizes)
	}
	if len(got) != 250 || stats.Posted != 250 || stats.Collected != 250 {
		t.Errorf("%d SERPs, stats %+v", len(got), stats)
	}
}

func TestFetchSERPsBudget(t *testing.T) {
	f := newFakeDFS(t)
	cfg := f.config()
	cfg.MaxSERPsPerRun = 2
	c, _ := newTestClient(t, cfg, Options{})
	got, stats, err := c.FetchSERPs(context.Background(), us(t), []string{"a", "b", "c", "d", "e"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || stats.OverBudget != 3 || f.postSizes[0] != 2 || got["a"] == nil || got["b"] == nil {
		t.Errorf("budget 2: %d SERPs, stats %+v, posts %v", len(got), stats, f.postSizes)
	}
}

func TestFetchSERPsResumeDoesNotPayTwice(t *testing.T) {
	kws := []string{"alpha", "beta", "gamma"}
	tests := []struct {
		name string
		// between runs, before the re-run
		between func(t *testing.T, f *fakeDFS, dir string)
	}{
		{"ids in checkpoint", func(*testing.T, *fakeDFS, string) {}},
		{"ids lost, adopted by tag", func(t *testing.T, f *fakeDFS, dir string) {
			if err := os.Remove(filepath.Join(dir, "posted.jsonl")); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeDFS(t)
			f.readyAfter = 2
			dir := t.TempDir()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			c1, clock := newTestClient(t, f.config(), Options{CheckpointDir: dir})
			clock.onSleep = func(int) { cancel() } // interrupted while waiting
			_, stats1, err := c1.FetchSERPs(ctx, us(t), kws)
			if !errors.Is(err, context.Canceled) || stats1.Posted != 3 {
				t.Fatalf("first run: err %v, posted %d; want canceled after posting 3", err, stats1.Posted)
			}
			tt.between(t, f, dir)
			c2, _ := newTestClient(t, f.config(), Options{CheckpointDir: dir})
			got, stats, err := c2.FetchSERPs(context.Background(), us(t), kws)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 3 || stats.Posted != 0 || stats.Resumed != 3 {
				t.Errorf("re-run: %d SERPs, stats %+v; want 3 collected, none posted", len(got), stats)
			}
			for _, k := range kws {
				if n := f.postsOf(k); n != 1 {
					t.Errorf("%q posted %d times, want once", k, n)
				}
			}
			// A third run finds everything in the checkpoint.
			gets := f.gets
			c3, _ := newTestClient(t, f.config(), Options{CheckpointDir: dir})
			again, _, err := c3.FetchSERPs(context.Background(), us(t), kws)
			if err != nil || !reflect.DeepEqual(again, got) || f.gets != gets {
				t.Errorf("third run: err %v, same %v, extra task_get %d", err, reflect.DeepEqual(again, got), f.gets-gets)
			}
		})
	}
}

func TestFetchSERPsBoundedWait(t *testing.T) {
	f := newFakeDFS(t)
	f.never = true
	dir := t.TempDir()
	c, clock := newTestClient(t, f.config(), Options{CheckpointDir: dir, PollInterval: 20 * time.Second, MaxWait: time.Minute})
	got, stats, err := c.FetchSERPs(context.Background(), us(t), []string{"slow one", "slow two"})
	if !errors.Is(err, ErrTasksPending) {
		t.Fatalf("err = %v, want ErrTasksPending", err)
	}
	if len(got) != 0 || stats.Pending != 2 || stats.Posted != 2 {
		t.Errorf("%d SERPs, stats %+v", len(got), stats)
	}
	if !slices.Equal(clock.sleeps, []time.Duration{20 * time.Second, 20 * time.Second, 20 * time.Second}) {
		t.Errorf("sleeps %v, want 3×20s within a 1m wait", clock.sleeps)
	}
	f.mu.Lock()
	f.never = false
	f.mu.Unlock()
	c2, _ := newTestClient(t, f.config(), Options{CheckpointDir: dir})
	got, stats, err = c2.FetchSERPs(context.Background(), us(t), []string{"slow one", "slow two"})
	if err != nil || len(got) != 2 || stats.Posted != 0 || f.postsOf("slow one") != 1 {
		t.Errorf("re-run: err %v, %d SERPs, stats %+v", err, len(got), stats)
	}
}

func TestFetchSERPsRefusedRequests(t *testing.T) {
	tests := []struct {
		name   string
		setup  func(f *fakeDFS, cfg *Config)
		want   string
		sleeps int
	}{
		{"wrong password", func(f *fakeDFS, cfg *Config) { cfg.Password = "nope" }, "You are not authorized", 0},
		{"payment required", func(f *fakeDFS, cfg *Config) {
			f.push(pathTaskPost, scripted{402, "error_payment_required.json"})
		}, "Payment Required.", 0},
		{"internal error forever", func(f *fakeDFS, cfg *Config) {
			for range 5 {
				f.push(pathTaskPost, scripted{500, "error_internal.json"})
			}
		}, "giving up after 5 attempts", 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeDFS(t)
			cfg := f.config()
			tt.setup(f, &cfg)
			c, clock := newTestClient(t, cfg, Options{})
			_, _, err := c.FetchSERPs(context.Background(), us(t), []string{"shoes"})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if len(clock.sleeps) != tt.sleeps {
				t.Errorf("sleeps %v, want %d", clock.sleeps, tt.sleeps)
			}
		})
	}
}

// TestFetchSERPsRetriesTransientErrors waits out 5xx answers and HTTP 429s
// (also those whose body is a proxy's HTML page rather than the v3
// envelope), on the POST and on a GET, with the client's backoff.
func TestFetchSERPsRetriesTransientErrors(t *testing.T) {
	for _, tc := range []struct {
		name       string
		post, gets []scripted
	}{
		{"5xx", []scripted{{500, "error_internal.json"}},
			[]scripted{{200, "error_internal.json"}, {503, "error_internal.json"}}},
		{"429 without envelope", []scripted{{429, "error_rate_limited.html"}},
			[]scripted{{429, "error_rate_limited.html"}, {429, "error_rate_limited.html"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeDFS(t)
			f.push(pathTaskPost, tc.post...)
			f.push(pathTasksReady, tc.gets...)
			c, clock := newTestClient(t, f.config(), Options{})
			got, stats, err := c.FetchSERPs(context.Background(), us(t), []string{"shoes"})
			if err != nil || len(got) != 1 || stats.Posted != 1 || f.postsOf("shoes") != 1 {
				t.Fatalf("err %v, %d SERPs, stats %+v", err, len(got), stats)
			}
			want := []time.Duration{2 * time.Second, 2 * time.Second, 4 * time.Second}
			if !slices.Equal(clock.sleeps, want) {
				t.Errorf("sleeps %v, want %v", clock.sleeps, want)
			}
		})
	}
}

func TestOrganicRows(t *testing.T) {
	item := func(typ string, group, abs int, url string) serpItem {
		return serpItem{Type: typ, RankGroup: group, RankAbsolute: abs, URL: url}
	}
	var many []serpItem
	for i := 30; i >= 1; i-- {
		many = append(many, item("organic", i, i+5, fmt.Sprintf("https://s%02d.example/", i)))
	}
	tests := []struct {
		name    string
		items   []serpItem
		urls    []string
		skipped int
	}{
		{"types and order", []serpItem{
			item("paid", 1, 1, "https://ad.example/"), item("organic", 2, 5, "https://b.example/"),
			item("local_pack", 1, 2, "https://map.example/"), item("organic", 1, 3, "https://a.example/"),
		}, []string{"https://a.example/", "https://b.example/"}, 0},
		{"ties by rank_absolute", []serpItem{
			item("organic", 1, 4, "https://late.example/"), item("organic", 1, 2, "https://early.example/"),
		}, []string{"https://early.example/", "https://late.example/"}, 0},
		{"bad urls skipped and renumbered", []serpItem{
			item("organic", 1, 1, ""), item("organic", 2, 2, "http://"), item("organic", 3, 3, "https://ok.example/x"),
		}, []string{"https://ok.example/x"}, 2},
		{"rank_group past 20, zero or out of range dropped", []serpItem{
			item("organic", 21, 22, "https://r21.example/"), item("organic", 0, 1, "https://r0.example/"),
			item("organic", 1<<32+1, 2, "https://wrap.example/"), item("organic", -1, 3, "https://neg.example/"),
			item("organic", 20, 21, "https://r20.example/"), item("organic", 3, 4, "https://r3.example/"),
		}, []string{"https://r3.example/", "https://r20.example/"}, 0},
		{"a bad url in the top 20 is not replaced by rank 21", func() []serpItem {
			items := []serpItem{item("organic", 1, 1, "http://")}
			for i := 2; i <= 21; i++ {
				items = append(items, item("organic", i, i, fmt.Sprintf("https://s%02d.example/", i)))
			}
			return items
		}(), func() []string {
			var u []string
			for i := 2; i <= 20; i++ {
				u = append(u, fmt.Sprintf("https://s%02d.example/", i))
			}
			return u
		}(), 1},
		{"ties: at most 20", func() []serpItem {
			var items []serpItem
			for i := range 22 {
				items = append(items, item("organic", 1+i/2, i+1, fmt.Sprintf("https://t%02d.example/", i)))
			}
			return items
		}(), func() []string {
			var u []string
			for i := range 20 {
				u = append(u, fmt.Sprintf("https://t%02d.example/", i))
			}
			return u
		}(), 0},
		{"at most 20", many, func() []string {
			var u []string
			for i := 1; i <= 20; i++ {
				u = append(u, fmt.Sprintf("https://s%02d.example/", i))
			}
			return u
		}(), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows, skipped := organicRows([]serpResult{{Items: tt.items}})
			var urls []string
			for i, r := range rows {
				urls = append(urls, r.URL)
				if r.Rank != int32(i+1) {
					t.Errorf("row %d has rank %d", i, r.Rank)
				}
			}
			if !slices.Equal(urls, tt.urls) || skipped != tt.skipped {
				t.Errorf("urls %v skipped %d; want %v skipped %d", urls, skipped, tt.urls, tt.skipped)
			}
		})
	}
}

func TestPickRefresh(t *testing.T) {
	day := func(d int) time.Time { return time.Date(2026, 11, d, 0, 0, 0, 0, time.UTC) }
	last := map[string]time.Time{"old": day(1), "older": day(1), "new": day(20), "mid": day(10), "zero": {}}
	kws := []string{"new", "mid", "never-b", "old", "never-a", "older", "zero", "mid"}
	tests := []struct {
		budget int
		want   []string
	}{
		{0, nil},
		{2, []string{"never-a", "never-b"}},
		{4, []string{"never-a", "never-b", "zero", "old"}},
		{5, []string{"never-a", "never-b", "zero", "old", "older"}},
		{100, []string{"never-a", "never-b", "zero", "old", "older", "mid", "new"}},
	}
	for _, tt := range tests {
		if got := PickRefresh(kws, last, tt.budget); !slices.Equal(got, tt.want) {
			t.Errorf("budget %d: %v, want %v", tt.budget, got, tt.want)
		}
	}
	if !slices.Equal(kws, []string{"new", "mid", "never-b", "old", "never-a", "older", "zero", "mid"}) {
		t.Errorf("PickRefresh changed its input: %v", kws)
	}
}

func TestCheckpointSurvivesTornLine(t *testing.T) {
	dir := t.TempDir()
	s, _ := loadState(dir, "US")
	if err := s.addPosted("a", "id-a"); err != nil {
		t.Fatal(err)
	}
	// A crash in the middle of the next line.
	fh, _ := os.OpenFile(filepath.Join(dir, "posted.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	fh.WriteString(`{"country":"US","keyword":"b","i`)
	fh.Close()
	s, err := loadState(dir, "US")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.addPosted("c", "id-c"); err != nil {
		t.Fatal(err)
	}
	s, _ = loadState(dir, "US")
	if !reflect.DeepEqual(s.posted, map[string]string{"a": "id-a", "c": "id-c"}) {
		t.Errorf("posted after a torn line: %v", s.posted)
	}
	if other, _ := loadState(dir, "GB"); len(other.posted) != 0 {
		t.Errorf("another country's checkpoint leaked: %v", other.posted)
	}
}

func TestDecodeRecordedFixtures(t *testing.T) {
	post, err := decodeTaskPost(readFixture(t, "task_post_response.json"))
	if err != nil || len(post.Tasks) != 2 || post.Tasks[0].StatusCode != codeTaskCreated || post.Tasks[1].StatusCode != 40501 ||
		post.Tasks[0].Data.Tag != "kwdata/us/running shoes" {
		t.Errorf("task_post: %+v, %v", post, err)
	}
	ready, err := decodeTasksReady(readFixture(t, "tasks_ready_response.json"))
	if err != nil || len(ready.Tasks) != 1 || len(ready.Tasks[0].Result) != 1 || ready.Tasks[0].Result[0].ID != "11211530-0696-0066-0000-8f0635c0dc89" {
		t.Errorf("tasks_ready: %+v, %v", ready, err)
	}
	get, err := decodeTaskGet(readFixture(t, "task_get_advanced_response.json"))
	if err != nil || len(get.Tasks) != 1 || len(get.Tasks[0].Result) != 1 || len(get.Tasks[0].Result[0].Items) != 9 {
		t.Errorf("task_get: %+v, %v", get, err)
	}
}

func TestNewRejectsMissingCredentials(t *testing.T) {
	if _, err := New(Config{Login: "x"}, Options{}); err == nil || !strings.Contains(err.Error(), "password") {
		t.Errorf("err = %v, want a message naming login or password", err)
	}
	c, err := New(Config{Login: "x", Password: "y"}, Options{})
	if err != nil || c.Config().MaxSERPsPerRun != DefaultMaxSERPsPerRun || c.Config().MaxAgeDays != kw.DefaultSERPMaxAgeDays {
		t.Errorf("defaults not filled: %+v, %v", c.Config(), err)
	}
}

// TestAttempts keeps each keyword's last attempt across loads, leaves out
// attempts on or after the asked date, and stores keywords grouped by date.
func TestAttempts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "us")
	a, err := LoadAttempts(dir)
	if err != nil || len(a.Before("2026-11-21")) != 0 {
		t.Fatalf("a missing file: %v, %v; want an empty record", a.Before("2026-11-21"), err)
	}
	if err := a.Record("2026-11-01", []string{"b", "a", "c"}); err != nil {
		t.Fatal(err)
	}
	if err := a.Record("2026-11-05", []string{"c"}); err != nil {
		t.Fatal(err)
	}
	a, err = LoadAttempts(dir)
	if err != nil {
		t.Fatal(err)
	}
	day := func(d int) time.Time { return time.Date(2026, 11, d, 0, 0, 0, 0, time.UTC) }
	for _, tc := range []struct {
		date string
		want map[string]time.Time
	}{
		{"2026-11-01", map[string]time.Time{}},
		{"2026-11-05", map[string]time.Time{"a": day(1), "b": day(1)}},
		{"2026-11-06", map[string]time.Time{"a": day(1), "b": day(1), "c": day(5)}},
	} {
		if got := a.Before(tc.date); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Before(%s) = %v, want %v", tc.date, got, tc.want)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, AttemptsFile))
	if want := `{"version":1,"dates":{"2026-11-01":["a","b"],"2026-11-05":["c"]}}`; err != nil || string(b) != want {
		t.Errorf("file %s (err %v), want %s", b, err, want)
	}
	if err := os.WriteFile(filepath.Join(dir, AttemptsFile), []byte(`{"version":1,"dates":`), 0o644); err != nil {
		t.Fatal(err)
	}
	if a, err := LoadAttempts(dir); err != nil || len(a.Before("2027-01-01")) != 0 {
		t.Errorf("a torn file: %v, %v; want an empty record", a.Before("2027-01-01"), err)
	}
}

// TestConfigWithDefaults fills every unset field with its documented
// default (the SERP age is kw's) and keeps every set one.
func TestConfigWithDefaults(t *testing.T) {
	set := Config{Endpoint: "http://fake", Login: "l", Password: "p", MaxSERPsPerRun: 7, MaxAgeDays: 3}
	for _, tc := range []struct {
		name string
		in   Config
		want Config
	}{
		{"zero", Config{}, Config{Endpoint: DefaultEndpoint, MaxSERPsPerRun: DefaultMaxSERPsPerRun, MaxAgeDays: kw.DefaultSERPMaxAgeDays}},
		{"negative", Config{MaxSERPsPerRun: -1, MaxAgeDays: -1}, Config{Endpoint: DefaultEndpoint, MaxSERPsPerRun: DefaultMaxSERPsPerRun, MaxAgeDays: kw.DefaultSERPMaxAgeDays}},
		{"set", set, set},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.in.WithDefaults(); got != tc.want {
				t.Errorf("WithDefaults() = %+v, want %+v", got, tc.want)
			}
		})
	}
}
