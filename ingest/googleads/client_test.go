package googleads

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kwdata/kwdata/ingest/internal/money"
	"github.com/kwdata/kwdata/kw"
)

func us(tb testing.TB) kw.Country {
	tb.Helper()
	c, ok := kw.LookupCountry("us")
	if !ok {
		tb.Fatal("US is not a supported country")
	}
	return c
}

func TestHistoricalMetricsMapsRecordedResponse(t *testing.T) {
	f := newFakeAds(t)
	f.push(reply{200, "historical_metrics.json"})
	c, _ := newTestClient(t, f.config(), Options{})
	got, err := c.HistoricalMetrics(context.Background(), us(t),
		[]string{"Running Shoes", "running shoe", "trail  running shoes", "marathon plan", "obscure thing"})
	if err != nil {
		t.Fatal(err)
	}
	runningShoes := kw.KeywordRecord{
		Volume: i64(301000), CPCMicros: i64(1230000), Competition: f64(0.87), CompetitionLevel: "HIGH",
		BidLowMicros: i64(450000), BidHighMicros: i64(2130000), Source: "googleads",
		Monthly: []kw.MonthlySearches{{Month: "2025-11", Searches: i64(201000)}, {Month: "2025-12", Searches: i64(246000)}, {Month: "2026-01", Searches: i64(368000)}},
	}
	shoe, shoes := runningShoes, runningShoes
	shoe.Keyword, shoes.Keyword = "running shoe", "running shoes"
	want := []kw.KeywordRecord{
		// UNSPECIFIED competition and absent index and bids are empty.
		{Keyword: "marathon plan", Volume: i64(90), Source: "googleads"},
		// A close variant gets the record of the result that covers it.
		shoe,
		shoes,
		// No averageCpcMicros: the midpoint of the bids, rounded half up;
		// the month without monthlySearches has no value, not 0.
		{Keyword: "trail running shoes", Volume: i64(40500), CPCMicros: i64(1200001), Competition: f64(0.5),
			CompetitionLevel: "MEDIUM", BidLowMicros: i64(600000), BidHighMicros: i64(1800001), Source: "googleads",
			Monthly: []kw.MonthlySearches{{Month: "2026-01", Searches: i64(49500)}, {Month: "2026-02"}}},
	}
	if !reflect.DeepEqual(got, want) {
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(want)
		t.Errorf("records:\n got %s\nwant %s", gj, wj)
	}
}

func TestHistoricalMetricsRequestShape(t *testing.T) {
	f := newFakeAds(t)
	c, _ := newTestClient(t, f.config(), Options{})
	de, _ := kw.LookupCountry("de")
	if _, err := c.HistoricalMetrics(context.Background(), de, []string{"laufschuhe"}); err != nil {
		t.Fatal(err)
	}
	if len(f.bodies) != 1 {
		t.Fatalf("fake saw %d requests, want 1", len(f.bodies))
	}
	body := f.bodies[0]
	checks := map[string]any{
		"keywords":                 []any{"laufschuhe"},
		"geoTargetConstants":       []any{"geoTargetConstants/2276"},
		"language":                 "languageConstants/1001",
		"keywordPlanNetwork":       "GOOGLE_SEARCH",
		"historicalMetricsOptions": map[string]any{"includeAverageCpc": true},
	}
	for k, want := range checks {
		if !reflect.DeepEqual(body[k], want) {
			t.Errorf("body[%q] = %#v, want %#v", k, body[k], want)
		}
	}
	h := f.headers[0]
	for k, want := range map[string]string{
		"Authorization": "Bearer ya29.fake-1", "Developer-Token": testDevToken,
		"Login-Customer-Id": testLoginCustomer, "Content-Type": "application/json",
	} {
		if got := h.Get(k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
}

func TestOptionalHeadersLeftOutWhenUnset(t *testing.T) {
	var seen []string
	f := newFakeAds(t)
	cfg := f.config()
	cfg.LoginCustomerID, cfg.DeveloperToken = "", ""
	c, _ := newTestClient(t, cfg, Options{})
	// The fake refuses requests without the headers (403), which is the
	// fail-fast path; the headers it saw are what matters here.
	_, err := c.HistoricalMetrics(context.Background(), us(t), []string{"shoes"})
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatus != 403 {
		t.Fatalf("err = %v, want the fake's 403", err)
	}
	for k := range f.headers[0] {
		seen = append(seen, strings.ToLower(k))
	}
	if slices.Contains(seen, "login-customer-id") || slices.Contains(seen, "developer-token") {
		t.Errorf("unset headers were sent: %v", seen)
	}
}

func TestCloseVariantsAndDuplicates(t *testing.T) {
	f := newFakeAds(t)
	c, _ := newTestClient(t, f.config(), Options{})
	got, err := c.HistoricalMetrics(context.Background(), us(t),
		[]string{"car", "CARS", "cars ", "unknown thing", "bike", strings.Repeat("x", 81)})
	if err != nil {
		t.Fatal(err)
	}
	if b := f.seenBatches(); len(b) != 1 || !slices.Equal(b[0], []string{"bike", "car", "cars", "unknown thing"}) {
		t.Fatalf("requested %v, want one sorted, normalized, deduplicated batch", b)
	}
	var names []string
	for _, r := range got {
		names = append(names, r.Keyword)
	}
	if !slices.Equal(names, []string{"bike", "car", "cars"}) {
		t.Fatalf("keywords %v, want bike car cars", names)
	}
	if kw.Deref(got[1].Volume) != genVolume("cars") || kw.Deref(got[2].Volume) != genVolume("cars") {
		t.Errorf("car and cars volumes %d, %d; want both %d from the merged result", kw.Deref(got[1].Volume), kw.Deref(got[2].Volume), genVolume("cars"))
	}
}

func TestMatchResultsKeepsLargestVolume(t *testing.T) {
	results := []historicalResult{
		{Text: "shoe", KeywordMetrics: &keywordMetrics{AvgMonthlySearches: optInt64{100, true}}},
		{Text: "shoes", CloseVariants: []string{"Shoe"}, KeywordMetrics: &keywordMetrics{AvgMonthlySearches: optInt64{500, true}}},
		{Text: "SHOE", KeywordMetrics: &keywordMetrics{AvgMonthlySearches: optInt64{500, true}, CompetitionIndex: optInt64{1, true}}},
	}
	got := matchResults([]string{"shoe", "shoes"}, results)
	if len(got) != 2 || kw.Deref(got[0].Volume) != 500 || kw.Deref(got[1].Volume) != 500 {
		t.Fatalf("got %+v, want shoe and shoes with volume 500", got)
	}
	if got[0].Competition != nil {
		t.Errorf("tie kept the later result (competition %v); want the first", got[0].Competition)
	}
}

func TestRetries(t *testing.T) {
	tests := []struct {
		name       string
		script     []reply
		wantSleeps []time.Duration
		wantErr    func(error) bool
		requests   int
	}{
		{"429 with retryDelay", []reply{{429, "error_quota_retry_delay.json"}}, []time.Duration{30 * time.Second}, nil, 2},
		{"429 with Retry in N seconds only", []reply{{429, "error_quota_message_only.json"}}, []time.Duration{7 * time.Second}, nil, 2},
		{"429 without a hint backs off", []reply{{429, "error_quota_no_hint.json"}, {429, "error_quota_no_hint.json"}, {429, "error_quota_no_hint.json"}},
			[]time.Duration{time.Second, 2 * time.Second, 4 * time.Second}, nil, 4},
		{"5xx then success", []reply{{503, "error_unavailable.json"}, {500, "error_internal.json"}},
			[]time.Duration{time.Second, 2 * time.Second}, nil, 3},
		{"401 fails fast", []reply{{401, "error_unauthenticated.json"}}, nil, func(err error) bool {
			var e *APIError
			return errors.As(err, &e) && e.HTTPStatus == 401 && strings.Contains(err.Error(), "Oauth token is invalid.")
		}, 1},
		{"403 fails fast", []reply{{403, "error_permission_denied.json"}}, nil, func(err error) bool {
			return strings.Contains(err.Error(), "apply for Basic or Standard access") && strings.Contains(err.Error(), "DEVELOPER_TOKEN_NOT_APPROVED")
		}, 1},
		{"400 fails fast", []reply{{400, "error_invalid_argument.json"}}, nil, func(err error) bool {
			return strings.Contains(err.Error(), "Too many elements for given field.")
		}, 1},
		{"daily quota stops", []reply{{429, "error_quota_daily.json"}}, nil, func(err error) bool {
			var q *QuotaExhaustedError
			return errors.Is(err, ErrQuotaExhausted) && errors.As(err, &q) && q.RetryAfter == 40591*time.Second &&
				q.Err.RateName == "Number of operations for basic access"
		}, 1},
		{"5xx forever gives up", slices.Repeat([]reply{{503, "error_unavailable.json"}}, 6),
			[]time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second}, func(err error) bool {
				return strings.Contains(err.Error(), "after 6 attempts") && strings.Contains(err.Error(), "currently unavailable")
			}, 6},
		{"quota forever becomes QuotaExhaustedError", slices.Repeat([]reply{{429, "error_quota_retry_delay.json"}}, 6),
			slices.Repeat([]time.Duration{30 * time.Second}, 5), func(err error) bool { return errors.Is(err, ErrQuotaExhausted) }, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAds(t)
			f.push(tt.script...)
			c, clock := newTestClient(t, f.config(), Options{})
			_, err := c.HistoricalMetrics(context.Background(), us(t), []string{"shoes"})
			if tt.wantErr == nil && err != nil {
				t.Fatalf("err = %v, want success", err)
			}
			if tt.wantErr != nil && (err == nil || !tt.wantErr(err)) {
				t.Fatalf("err = %v, not the expected error", err)
			}
			if got := clock.retrySleeps(); !slices.Equal(got, tt.wantSleeps) {
				t.Errorf("retry delays %v, want %v", got, tt.wantSleeps)
			}
			if f.requests != tt.requests {
				t.Errorf("fake saw %d requests, want %d", f.requests, tt.requests)
			}
		})
	}
}

func TestPacingSpacesRequests(t *testing.T) {
	f := newFakeAds(t)
	cfg := f.config()
	cfg.RequestsPerSecond = 2
	clock := newFakeClock()
	stamps := &stampTransport{clock: clock}
	c, err := New(cfg, Options{Now: clock.Now, Sleep: clock.Sleep, BatchSize: 2,
		HTTPClient: &http.Client{Transport: stamps}})
	if err != nil {
		t.Fatal(err)
	}
	var kws []string
	for i := range 10 {
		kws = append(kws, fmt.Sprintf("keyword %02d", i))
	}
	if _, err := c.HistoricalMetrics(context.Background(), us(t), kws); err != nil {
		t.Fatal(err)
	}
	// The currency query comes first and is paced like the rest.
	if len(stamps.at) != 6 {
		t.Fatalf("%d requests, want the currency query and 5 batches", len(stamps.at))
	}
	for i := 1; i < len(stamps.at); i++ {
		if gap := stamps.at[i].Sub(stamps.at[i-1]); gap < 500*time.Millisecond {
			t.Errorf("requests %d and %d are %v apart, want ≥ 500ms at 2 requests/s", i-1, i, gap)
		}
	}
}

func TestResumeAfterInterruption(t *testing.T) {
	f := newFakeAds(t)
	dir := t.TempDir()
	var kws []string
	for i := range 12 {
		kws = append(kws, fmt.Sprintf("kw %02d", i))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c1, _ := newTestClient(t, f.config(), Options{CheckpointDir: dir, BatchSize: 3,
		Progress: func(done, total int) {
			if done == 2 {
				cancel() // interrupted after two of four batches
			}
		}})
	if _, err := c1.HistoricalMetrics(ctx, us(t), kws); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	for _, name := range []string{"batch-00000.json", "batch-00001.json"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("checkpoint %s missing: %v", name, err)
		}
	}
	c2, _ := newTestClient(t, f.config(), Options{CheckpointDir: dir, BatchSize: 3})
	got, err := c2.HistoricalMetrics(context.Background(), us(t), kws)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 12 {
		t.Fatalf("%d records after resume, want 12", len(got))
	}
	seen := map[string]int{}
	for _, b := range f.seenBatches() {
		seen[strings.Join(b, ",")]++
	}
	if len(seen) != 4 {
		t.Errorf("fake saw %d distinct batches, want 4", len(seen))
	}
	for b, n := range seen {
		if n > 1 {
			t.Errorf("batch %q requested %d times", b, n)
		}
	}
	// A fresh run over the same checkpoint requests nothing at all.
	before := f.requests
	c3, _ := newTestClient(t, f.config(), Options{CheckpointDir: dir, BatchSize: 3})
	again, err := c3.HistoricalMetrics(context.Background(), us(t), kws)
	if err != nil || !reflect.DeepEqual(again, got) || f.requests != before {
		t.Errorf("re-run: err %v, equal %v, new requests %d", err, reflect.DeepEqual(again, got), f.requests-before)
	}
}

func TestDailyQuotaStopsWithResumableCheckpoint(t *testing.T) {
	f := newFakeAds(t)
	dir := t.TempDir()
	kws := []string{"a1", "a2", "b1", "b2", "c1", "c2"}
	c, clock := newTestClient(t, f.config(), Options{CheckpointDir: dir, BatchSize: 2})
	// The first batch is answered; the second hits the daily bucket.
	first := true
	c.opt.Progress = func(done, total int) {
		if first {
			first = false
			f.push(reply{429, "error_quota_daily.json"})
		}
	}
	_, err := c.HistoricalMetrics(context.Background(), us(t), kws)
	var q *QuotaExhaustedError
	if !errors.As(err, &q) {
		t.Fatalf("err = %v, want *QuotaExhaustedError", err)
	}
	if q.BatchesDone != 1 || q.BatchesTotal != 3 || q.RetryAfter != 40591*time.Second {
		t.Errorf("quota error %+v, want 1 of 3 batches done and a 40591s delay", q)
	}
	if s := clock.retrySleeps(); len(s) != 0 {
		t.Errorf("client slept %v instead of stopping", s)
	}
	c2, _ := newTestClient(t, f.config(), Options{CheckpointDir: dir, BatchSize: 2})
	got, err := c2.HistoricalMetrics(context.Background(), us(t), kws)
	if err != nil || len(got) != 6 {
		t.Fatalf("resume: %d records, err %v", len(got), err)
	}
	if n := len(f.seenBatches()); n != 3 {
		t.Errorf("fake answered %d batches, want 3 (none twice)", n)
	}
}

func TestCheckpointIgnoresOtherKeywords(t *testing.T) {
	f := newFakeAds(t)
	dir := t.TempDir()
	c, _ := newTestClient(t, f.config(), Options{CheckpointDir: dir, BatchSize: 2})
	if _, err := c.HistoricalMetrics(context.Background(), us(t), []string{"a", "b"}); err != nil {
		t.Fatal(err)
	}
	got, err := c.HistoricalMetrics(context.Background(), us(t), []string{"a", "c"})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.seenBatches()) != 2 || got[1].Keyword != "c" {
		t.Errorf("a changed batch reused the old checkpoint: batches %v, records %+v", f.seenBatches(), got)
	}
	os.WriteFile(filepath.Join(dir, "batch-00000.json"), []byte("{not json"), 0o644)
	if _, err := c.HistoricalMetrics(context.Background(), us(t), []string{"a", "c"}); err != nil || len(f.seenBatches()) != 3 {
		t.Errorf("a damaged checkpoint should cost one request: err %v, batches %d", err, len(f.seenBatches()))
	}
}

func TestTokenCachedWhileValid(t *testing.T) {
	f := newFakeAds(t)
	c, _ := newTestClient(t, f.config(), Options{BatchSize: 1})
	if _, err := c.HistoricalMetrics(context.Background(), us(t), []string{"a", "b", "c", "d", "e"}); err != nil {
		t.Fatal(err)
	}
	if f.requests != 5 || len(f.tokens) != 1 {
		t.Errorf("%d API requests used %d token refreshes, want 5 and 1", f.requests, len(f.tokens))
	}
}

func TestTokenRefreshedWhenExpired(t *testing.T) {
	f := newFakeAds(t)
	f.tokenTTL = 1 // inside oauth2's expiry margin: stale at once
	c, _ := newTestClient(t, f.config(), Options{BatchSize: 1})
	if _, err := c.HistoricalMetrics(context.Background(), us(t), []string{"a", "b", "c"}); err != nil {
		t.Fatal(err)
	}
	if n := f.requests + f.searches; len(f.tokens) != n || n != 4 {
		t.Errorf("%d refreshes for %d requests with expiring tokens, want 4 each (the currency query and 3 batches)", len(f.tokens), n)
	}
}

func TestRevokedRefreshTokenFailsFast(t *testing.T) {
	f := newFakeAds(t)
	f.tokenStatus = 400
	c, clock := newTestClient(t, f.config(), Options{})
	_, err := c.HistoricalMetrics(context.Background(), us(t), []string{"a"})
	if err == nil || !strings.Contains(err.Error(), "refresh_token") || !strings.Contains(err.Error(), "invalid_grant") {
		t.Fatalf("err = %v, want a refresh failure naming the cause", err)
	}
	if f.requests != 0 || len(clock.retrySleeps()) != 0 {
		t.Errorf("%d API requests and sleeps %v after a refused refresh", f.requests, clock.retrySleeps())
	}
}

func TestKeywordIdeasPaginates(t *testing.T) {
	f := newFakeAds(t)
	c, _ := newTestClient(t, f.config(), Options{IdeasPageSize: 3})
	got, err := c.KeywordIdeas(context.Background(), us(t), []string{"Running Shoes"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"running shoes", "best running shoes", "trail running shoes", "running shoes for women"}
	if !slices.Equal(got, want) {
		t.Errorf("ideas %q, want %q", got, want)
	}
	if len(f.ideaBodies) != 2 || f.ideaBodies[1].PageToken != "CAEQAxoCCAE" ||
		f.ideaBodies[0].PageSize != f.ideaBodies[1].PageSize || !slices.Equal(f.ideaBodies[0].Seeds, []string{"running shoes"}) {
		t.Errorf("idea requests %+v", f.ideaBodies)
	}
	recs, err := c.KeywordIdeaRecords(context.Background(), us(t), []string{"running shoes"}, 2)
	if err != nil || len(recs) != 2 || kw.Deref(recs[0].Volume) != 301000 || kw.Deref(recs[0].CPCMicros) != 1290000 || kw.Deref(recs[1].Competition) != 1 {
		t.Errorf("records %+v, err %v", recs, err)
	}
}

func TestKeywordIdeasChunksSeeds(t *testing.T) {
	f := newFakeAds(t)
	c, _ := newTestClient(t, f.config(), Options{})
	var seeds []string
	for i := range 45 {
		seeds = append(seeds, fmt.Sprintf("seed %d", i))
	}
	if _, err := c.KeywordIdeas(context.Background(), us(t), seeds, 0); err != nil {
		t.Fatal(err)
	}
	var sizes []int
	for _, b := range f.ideaBodies {
		if b.PageToken == "" {
			sizes = append(sizes, len(b.Seeds))
		}
	}
	if !slices.Equal(sizes, []int{20, 20, 5}) {
		t.Errorf("seed groups %v, want 20 20 5", sizes)
	}
}

func TestNewRejectsIncompleteConfig(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"no refresh token", func(c *Config) { c.RefreshToken = "" }, "refresh_token"},
		{"no customer", func(c *Config) { c.CustomerID = "" }, "customer_id"},
		{"letters in customer", func(c *Config) { c.CustomerID = "12a" }, "digits"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{CustomerID: "1", ClientID: "i", ClientSecret: "s", RefreshToken: "r"}
			tt.edit(&cfg)
			if _, err := New(cfg, Options{}); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want mention of %q", err, tt.want)
			}
		})
	}
}

func TestDecodeErrorShapes(t *testing.T) {
	tests := []struct {
		fixture   string
		quota     bool
		delay     time.Duration
		hasDelay  bool
		requestID string
	}{
		{"error_quota_retry_delay.json", true, 30 * time.Second, true, "Zk3yQm1cTn2xP0aL7bR4sw"},
		{"error_quota_message_only.json", true, 7 * time.Second, true, "aQ8vLr2mKp0sYt4wEn6uXg"},
		{"error_quota_no_hint.json", true, 0, false, ""},
		{"error_quota_daily.json", true, 40591 * time.Second, true, "xN_KaZRHZuU6Rlgt3cM2uQ"},
		{"error_unauthenticated.json", false, 0, false, "r7TqU2wVx9yZa1bC3dE5fG"},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			e := decodeError(429, readFixture(t, tt.fixture))
			if e.Quota != tt.quota || e.RetryDelay != tt.delay || e.HasRetryDelay != tt.hasDelay || e.RequestID != tt.requestID {
				t.Errorf("got quota %v delay %v/%v request %q", e.Quota, e.RetryDelay, e.HasRetryDelay, e.RequestID)
			}
		})
	}
	if e := decodeError(502, []byte("<html>bad gateway</html>")); !strings.Contains(e.Error(), "bad gateway") {
		t.Errorf("non-JSON error body lost: %v", e)
	}
}

func TestExpandUniverse(t *testing.T) {
	tests := []struct {
		name     string
		keywords []string
		maxNew   int
		want     []string
		requests int
	}{
		{"off", []string{"Running Shoes", "hiking boots"}, 0, []string{"running shoes", "hiking boots"}, 0},
		{"listed ideas are not new", []string{"running shoes", "trail running shoes"}, 10,
			[]string{"running shoes", "trail running shoes", "best running shoes", "running shoes for women"}, 2},
		{"stops at maxNew", []string{"Running  Shoes", "running shoes"}, 1, []string{"running shoes", "best running shoes"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAds(t)
			c, _ := newTestClient(t, f.config(), Options{IdeasPageSize: 3})
			got, err := c.ExpandUniverse(context.Background(), us(t), tt.keywords, tt.maxNew)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("universe %q, want %q", got, tt.want)
			}
			if len(f.ideaBodies) != tt.requests {
				t.Errorf("%d idea requests, want %d", len(f.ideaBodies), tt.requests)
			}
		})
	}
}

// TestAccountCurrency reads the account's currency before the first
// metrics request and holds money as USD micros: a USD account as is, an
// account in another currency converted with Config.USDRate, and refused
// without one.
func TestAccountCurrency(t *testing.T) {
	tests := []struct {
		name     string
		currency string
		rate     float64
		wantErr  string
		// bids and CPC of "running shoes" and of "trail running shoes"
		// (whose CPC is the midpoint of its converted bids)
		shoes, trail [3]int64
	}{
		{name: "USD", currency: "USD",
			shoes: [3]int64{450000, 2130000, 1230000}, trail: [3]int64{600000, 1800001, 1200001}},
		{name: "USD ignores a rate", currency: "USD", rate: 1.08,
			shoes: [3]int64{450000, 2130000, 1230000}, trail: [3]int64{600000, 1800001, 1200001}},
		{name: "EUR without a rate is refused", currency: "EUR", wantErr: "reports amounts in EUR, not USD; set googleads.usd_rate"},
		{name: "EUR with a rate", currency: "EUR", rate: 1.08,
			// 1800001 × 1.08 = 1944001.08; midpoint (648000 + 1944001 + 1) / 2.
			shoes: [3]int64{486000, 2300400, 1328400}, trail: [3]int64{648000, 1944001, 1296001}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAds(t)
			f.currency = tt.currency
			f.push(reply{200, "historical_metrics.json"})
			cfg := f.config()
			cfg.USDRate = tt.rate
			c, _ := newTestClient(t, cfg, Options{})
			got, err := c.HistoricalMetrics(context.Background(), us(t), []string{"running shoes", "trail running shoes"})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to say %q", err, tt.wantErr)
				}
				if f.requests != 0 {
					t.Errorf("%d metrics requests after the refusal, want none", f.requests)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if f.searches != 1 {
				t.Errorf("%d currency queries, want 1", f.searches)
			}
			money := func(r kw.KeywordRecord) [3]int64 {
				return [3]int64{kw.Deref(r.BidLowMicros), kw.Deref(r.BidHighMicros), kw.Deref(r.CPCMicros)}
			}
			if len(got) != 2 || money(got[0]) != tt.shoes || money(got[1]) != tt.trail {
				t.Errorf("records %+v, want bids and CPC %v and %v", got, tt.shoes, tt.trail)
			}
		})
	}
}

// TestAccountCurrencyAskedOnce asks for the currency once per client, and
// converts keyword idea records as well.
func TestAccountCurrencyAskedOnce(t *testing.T) {
	f := newFakeAds(t)
	f.currency = "EUR"
	cfg := f.config()
	cfg.USDRate = 1.08
	c, _ := newTestClient(t, cfg, Options{BatchSize: 1, IdeasPageSize: 3})
	if _, err := c.HistoricalMetrics(context.Background(), us(t), []string{"a", "b", "c"}); err != nil {
		t.Fatal(err)
	}
	recs, err := c.KeywordIdeaRecords(context.Background(), us(t), []string{"running shoes"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	// 450000 and 2130000 EUR micros; the CPC is the USD midpoint.
	if len(recs) != 1 || kw.Deref(recs[0].BidLowMicros) != 486000 || kw.Deref(recs[0].BidHighMicros) != 2300400 || kw.Deref(recs[0].CPCMicros) != 1393200 {
		t.Errorf("idea records %+v, want USD amounts", recs)
	}
	if f.searches != 1 {
		t.Errorf("%d currency queries for 4 requests, want 1", f.searches)
	}
}

// TestToUSDRoundsHalfUp converts with the rate as the decimal it prints
// as, so halves are exact and round up.
func TestToUSDRoundsHalfUp(t *testing.T) {
	tests := []struct {
		micros int64
		rate   string
		want   int64
	}{
		{50, "1.15", 58}, // 57.5 exactly; in float64 it is 57.49999999999999
		{5, "0.1", 1},
		{3, "0.5", 2},
		{1800001, "1.08", 1944001},
		{0, "1.08", 0},
	}
	for _, tt := range tests {
		f, _ := strconv.ParseFloat(tt.rate, 64)
		rate, err := money.NewRate(f)
		if err != nil {
			t.Fatal(err)
		}
		m := &keywordMetrics{AverageCpcMicros: optInt64{tt.micros, true}}
		if err := (&accountCurrency{code: "EUR", rate: &rate}).toUSD(m); err != nil || m.AverageCpcMicros.V != tt.want {
			t.Errorf("%d × %s = %d (err %v), want %d", tt.micros, tt.rate, m.AverageCpcMicros.V, err, tt.want)
		}
	}
	m := &keywordMetrics{AverageCpcMicros: optInt64{math.MaxInt64, true}}
	two, _ := money.NewRate(2)
	if err := (&accountCurrency{code: "EUR", rate: &two}).toUSD(m); err == nil {
		t.Error("an amount past int64 converted without an error")
	}
}

// TestExpandUniverseResume saves the expansion of a date in the checkpoint:
// a re-run with the same list gets the same universe without asking for
// ideas again, a changed list or limit expands again, and a daily quota
// stop during expansion is a *QuotaExhaustedError a re-run recovers from.
func TestExpandUniverseResume(t *testing.T) {
	f := newFakeAds(t)
	dir := t.TempDir()
	list := []string{"running shoes", "trail running shoes"}
	expand := func(keywords []string, maxNew int) ([]string, error) {
		c, _ := newTestClient(t, f.config(), Options{CheckpointDir: dir, IdeasPageSize: 3})
		return c.ExpandUniverse(context.Background(), us(t), keywords, maxNew)
	}

	f.push(reply{429, "error_quota_daily.json"})
	var q *QuotaExhaustedError
	if _, err := expand(list, 10); !errors.As(err, &q) || q.RetryAfter != 40591*time.Second {
		t.Fatalf("err = %v, want the daily quota stop", err)
	}
	first, err := expand(list, 10)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"running shoes", "trail running shoes", "best running shoes", "running shoes for women"}
	if !slices.Equal(first, want) {
		t.Fatalf("universe %q, want %q", first, want)
	}
	asked := len(f.ideaBodies)
	again, err := expand([]string{"Running Shoes", "trail running shoes"}, 10)
	if err != nil || !slices.Equal(again, first) || len(f.ideaBodies) != asked {
		t.Errorf("re-run: %q, err %v, %d more idea requests; want the saved universe and none", again, err, len(f.ideaBodies)-asked)
	}
	for _, tc := range []struct {
		keywords []string
		maxNew   int
	}{
		{[]string{"running shoes"}, 10},
		{list, 1},
	} {
		asked := len(f.ideaBodies)
		if _, err := expand(tc.keywords, tc.maxNew); err != nil || len(f.ideaBodies) == asked {
			t.Errorf("%q up to %d: err %v, %d idea requests; want a new expansion", tc.keywords, tc.maxNew, err, len(f.ideaBodies)-asked)
		}
	}
}

// i64 and f64 are the nullable numbers of records and entries.
func i64(v int64) *int64     { return &v }
func f64(v float64) *float64 { return &v }

// TestConfigWithDefaults fills every unset field with its documented
// default and keeps every set one, so a configuration file and a client
// built in code cannot disagree on a default.
func TestConfigWithDefaults(t *testing.T) {
	set := Config{Endpoint: "http://fake", APIVersion: "v22", TokenURL: "http://fake/token", RequestsPerSecond: 2.5}
	for _, tc := range []struct {
		name string
		in   Config
		want Config
	}{
		{"zero", Config{}, Config{Endpoint: DefaultEndpoint, APIVersion: DefaultAPIVersion, TokenURL: DefaultTokenURL, RequestsPerSecond: DefaultRequestsPerSecond}},
		{"negative pace", Config{RequestsPerSecond: -1}, Config{Endpoint: DefaultEndpoint, APIVersion: DefaultAPIVersion, TokenURL: DefaultTokenURL, RequestsPerSecond: DefaultRequestsPerSecond}},
		{"set", set, set},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.in.WithDefaults(); got != tc.want {
				t.Errorf("WithDefaults() = %+v, want %+v", got, tc.want)
			}
		})
	}
}
