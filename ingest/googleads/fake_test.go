package googleads

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The fake below speaks the documented REST wire format of the keyword
// planning service and of Google's OAuth2 token endpoint, on 127.0.0.1.
// It checks what a real server would reject (missing headers, wrong field
// names, more than 10,000 keywords) and answers either from a script of
// recorded-style fixtures or with generated results.

const (
	testCustomer      = "1234567890"
	testLoginCustomer = "9876543210"
	testDevToken      = "dev-token-abc"
	testClientID      = "client-id.apps.googleusercontent.com"
	testClientSecret  = "client-secret"
	testRefreshToken  = "1//refresh-token"
)

// reply is one scripted answer: an HTTP status and a testdata file.
type reply struct {
	status  int
	fixture string
}

type fakeAds struct {
	tb  testing.TB
	srv *httptest.Server

	mu          sync.Mutex
	script      []reply      // answered first, in order, by the API methods
	tokenTTL    int          // expires_in of minted tokens, seconds
	tokenStatus int          // non-zero: the token endpoint fails with it
	tokens      []string     // access tokens minted, in order
	batches     [][]string   // keywords of every successful historical request
	requests    int          // API requests of any outcome
	ideaBodies  []ideasProbe // decoded GenerateKeywordIdeas requests
	headers     []http.Header
	bodies      []map[string]any
	currency    string // customer.currency_code the account reports; default USD
	searches    int    // GoogleAdsService.Search requests, not in requests
}

type ideasProbe struct {
	Seeds     []string
	PageSize  int
	PageToken string
}

func newFakeAds(tb testing.TB) *fakeAds {
	tb.Helper()
	f := &fakeAds{tb: tb, tokenTTL: 3600, currency: "USD"}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /token", f.token)
	mux.HandleFunc("POST /v22/customers/{rest...}", f.api)
	f.srv = httptest.NewServer(mux) // listens on 127.0.0.1
	tb.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAds) push(rs ...reply) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.script = append(f.script, rs...)
}

func (f *fakeAds) config() Config {
	return Config{
		Endpoint: f.srv.URL, APIVersion: "v22", CustomerID: "123-456-7890",
		LoginCustomerID: "987-654-3210", TokenURL: f.srv.URL + "/token",
		ClientID: testClientID, ClientSecret: testClientSecret,
		RefreshToken: testRefreshToken, DeveloperToken: testDevToken,
		RequestsPerSecond: 1000,
	}
}

func (f *fakeAds) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if f.tokenStatus != 0 {
		w.WriteHeader(f.tokenStatus)
		io.WriteString(w, `{"error": "invalid_grant", "error_description": "Token has been expired or revoked."}`)
		return
	}
	if r.Form.Get("grant_type") != "refresh_token" || r.Form.Get("refresh_token") != testRefreshToken ||
		r.Form.Get("client_id") != testClientID || r.Form.Get("client_secret") != testClientSecret {
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error": "invalid_request", "error_description": "bad refresh request"}`)
		return
	}
	tok := fmt.Sprintf("ya29.fake-%d", len(f.tokens)+1)
	f.tokens = append(f.tokens, tok)
	json.NewEncoder(w).Encode(map[string]any{
		"access_token": tok, "expires_in": f.tokenTTL, "token_type": "Bearer",
		"scope": "https://www.googleapis.com/auth/adwords",
	})
}

func (f *fakeAds) api(w http.ResponseWriter, r *http.Request) {
	rest := r.PathValue("rest")
	customer, method, ok := strings.Cut(rest, ":")
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	// GoogleAdsService.Search lives under customers/{id}/googleAds; it is
	// not a keyword planning method and does not take scripted answers.
	search := method == "search" && strings.HasSuffix(customer, "/googleAds")
	if search {
		customer = strings.TrimSuffix(customer, "/googleAds")
		f.searches++
	} else {
		f.requests++
	}
	f.headers = append(f.headers, r.Header.Clone())
	if !search {
		var generic map[string]any
		json.Unmarshal(body, &generic)
		f.bodies = append(f.bodies, generic)
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")

	// What the real service checks before anything else.
	last := ""
	if len(f.tokens) > 0 {
		last = f.tokens[len(f.tokens)-1]
	}
	if !ok || customer != testCustomer {
		f.write(w, reply{404, ""})
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+last {
		f.write(w, reply{401, "error_unauthenticated.json"})
		return
	}
	if r.Header.Get("developer-token") != testDevToken || r.Header.Get("login-customer-id") != testLoginCustomer {
		f.write(w, reply{403, "error_permission_denied.json"})
		return
	}
	if search {
		f.answerSearch(w, body)
		return
	}
	if len(f.script) > 0 {
		rep := f.script[0]
		f.script = f.script[1:]
		if rep.status/100 != 2 {
			f.write(w, rep)
			return
		}
		if method == "generateKeywordHistoricalMetrics" {
			f.batches = append(f.batches, f.keywordsOf(body))
		}
		f.write(w, rep)
		return
	}
	switch method {
	case "generateKeywordHistoricalMetrics":
		kws := f.keywordsOf(body)
		if len(kws) > MaxKeywordsPerRequest {
			f.write(w, reply{400, "error_invalid_argument.json"})
			return
		}
		f.batches = append(f.batches, kws)
		json.NewEncoder(w).Encode(generate(kws))
	case "generateKeywordIdeas":
		var req struct {
			KeywordSeed struct{ Keywords []string } `json:"keywordSeed"`
			PageSize    int                         `json:"pageSize"`
			PageToken   string                      `json:"pageToken"`
		}
		json.Unmarshal(body, &req)
		f.ideaBodies = append(f.ideaBodies, ideasProbe{req.KeywordSeed.Keywords, req.PageSize, req.PageToken})
		switch req.PageToken {
		case "":
			f.write(w, reply{200, "keyword_ideas_page1.json"})
		case "CAEQAxoCCAE":
			f.write(w, reply{200, "keyword_ideas_page2.json"})
		default:
			f.write(w, reply{400, "error_invalid_argument.json"})
		}
	default:
		f.write(w, reply{404, ""})
	}
}

// answerSearch answers the account currency query the way
// GoogleAdsService.Search does: one row with the customer's resource name
// and the selected field, and the field mask.
func (f *fakeAds) answerSearch(w http.ResponseWriter, body []byte) {
	var req struct {
		Query string `json:"query"`
	}
	json.Unmarshal(body, &req)
	if req.Query != "SELECT customer.currency_code FROM customer" {
		f.write(w, reply{400, "error_invalid_argument.json"})
		return
	}
	json.NewEncoder(w).Encode(map[string]any{
		"results": []any{map[string]any{"customer": map[string]any{
			"resourceName": "customers/" + testCustomer, "currencyCode": f.currency,
		}}},
		"fieldMask": "customer.currencyCode",
	})
}

func (f *fakeAds) keywordsOf(body []byte) []string {
	var req struct {
		Keywords []string `json:"keywords"`
	}
	json.Unmarshal(body, &req)
	return req.Keywords
}

func (f *fakeAds) write(w http.ResponseWriter, rep reply) {
	w.WriteHeader(rep.status)
	if rep.fixture == "" {
		io.WriteString(w, `{"error": {"code": 404, "message": "Method not found.", "status": "NOT_FOUND"}}`)
		return
	}
	w.Write(readFixture(f.tb, rep.fixture))
}

func readFixture(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		tb.Fatalf("cannot read fixture: %v", err)
	}
	return b
}

// generate answers like the service: a keyword and its plural "s" form are
// close variants merged into one result under the plural; keywords holding
// "unknown" have no data and are left out. Metrics derive from a hash of
// the text so tests can recompute them.
func generate(keywords []string) map[string]any {
	in := map[string]bool{}
	for _, k := range keywords {
		in[k] = true
	}
	var results []any
	for _, k := range keywords {
		if strings.Contains(k, "unknown") || (in[k+"s"]) {
			continue // merged into the plural's result
		}
		res := map[string]any{"text": k, "keywordMetrics": genMetrics(k)}
		if base := strings.TrimSuffix(k, "s"); base != k && in[base] {
			res["closeVariants"] = []string{base, k}
		}
		results = append(results, res)
	}
	return map[string]any{"results": results}
}

func genVolume(k string) int64 {
	h := fnv.New32a()
	h.Write([]byte(k))
	return int64(h.Sum32()%100000) + 10
}

func genMetrics(k string) map[string]any {
	v := genVolume(k)
	s := func(n int64) string { return strconv.FormatInt(n, 10) }
	return map[string]any{
		"avgMonthlySearches":     s(v),
		"competition":            []string{"LOW", "MEDIUM", "HIGH"}[v%3],
		"competitionIndex":       s(v % 101),
		"lowTopOfPageBidMicros":  s(v * 10),
		"highTopOfPageBidMicros": s(v * 30),
		"monthlySearchVolumes": []any{
			map[string]any{"year": "2026", "month": "FEBRUARY", "monthlySearches": s(v + 1)},
			map[string]any{"year": "2026", "month": "JANUARY", "monthlySearches": s(v)},
		},
	}
}

func (f *fakeAds) seenBatches() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.batches)
}

// fakeClock is the injected clock: Sleep records the delay and moves time
// forward instead of waiting.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 11, 21, 3, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	return nil
}

// retrySleeps are the recorded delays longer than the pacing interval of
// the test configs (1 ms at 1,000 requests a second).
func (c *fakeClock) retrySleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []time.Duration
	for _, d := range c.sleeps {
		if d > time.Millisecond {
			out = append(out, d)
		}
	}
	return out
}

// stampTransport records the fake clock's time at every API request.
type stampTransport struct {
	clock *fakeClock
	mu    sync.Mutex
	at    []time.Time
}

func (s *stampTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.Contains(r.URL.Path, "/customers/") {
		s.mu.Lock()
		s.at = append(s.at, s.clock.Now())
		s.mu.Unlock()
	}
	return http.DefaultTransport.RoundTrip(r)
}

func newTestClient(tb testing.TB, cfg Config, opt Options) (*Client, *fakeClock) {
	tb.Helper()
	clock := newFakeClock()
	if opt.Now == nil {
		opt.Now = clock.Now
	}
	if opt.Sleep == nil {
		opt.Sleep = clock.Sleep
	}
	c, err := New(cfg, opt)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	return c, clock
}
