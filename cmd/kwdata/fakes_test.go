package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
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

	"github.com/kwdata/kwdata/ingest"
	"github.com/kwdata/kwdata/kw"
)

// The fakes below speak the REST wire formats of the Google Ads keyword
// planning service (with Google's OAuth2 token endpoint) and of the
// DataForSEO SERP API, on 127.0.0.1. They answer from a corpus parsed out of
// the same planner export and SERP JSONL files that the file importers read,
// so a lake ingested through them can be compared with one ingested from the
// files.

// Credentials the fakes accept; tests hand them to the config through
// ${VARS} resolved by Main.Getenv. They hold characters that would change
// the structure of a YAML file if they were pasted into it unquoted.
const (
	fakeCustomer     = "1234567890"
	fakeClientID     = "client-id.apps.googleusercontent.com"
	fakeClientSecret = "s3cret: #not-a-comment"
	fakeRefreshToken = "1//0g-refresh-token"
	fakeDevToken     = "dev-token-abc"
	fakeDFSLogin     = "ops@example.com"
	fakeDFSPassword  = "pa$$word ${x} #1"
)

// fakeEnv is the environment the test configs read their secrets from.
func fakeEnv() map[string]string {
	return map[string]string{
		"GOOGLE_ADS_CLIENT_ID":       fakeClientID,
		"GOOGLE_ADS_CLIENT_SECRET":   fakeClientSecret,
		"GOOGLE_ADS_REFRESH_TOKEN":   fakeRefreshToken,
		"GOOGLE_ADS_DEVELOPER_TOKEN": fakeDevToken,
		"DATAFORSEO_LOGIN":           fakeDFSLogin,
		"DATAFORSEO_PASSWORD":        fakeDFSPassword,
	}
}

// runEnv runs kwdata with Getenv reading env, and fails the test on error.
func runEnv(tb testing.TB, env map[string]string, args ...string) string {
	tb.Helper()
	m, out, errb := testMain(tb)
	m.Getenv = func(k string) string { return env[k] }
	if err := m.Run(context.Background(), args); err != nil {
		tb.Fatalf("kwdata %s: %v\nstderr: %s", strings.Join(args, " "), err, errb)
	}
	return out.String()
}

// writeTestFile writes content to dir/name and returns the path.
func writeTestFile(tb testing.TB, dir, name, content string) string {
	tb.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		tb.Fatal(err)
	}
	return p
}

// sampleCorpus is one country's sample input, parsed with the file
// importers' own parsers.
type sampleCorpus struct {
	planner, serpFile string
	// records holds the record the planner import keeps for each keyword:
	// the largest volume among rows that normalize alike, the first on ties.
	records map[string]kw.KeywordRecord
	// keywords are the keys of records, sorted (byte order).
	keywords []string
	// months are every month that any record has searches for, oldest first.
	months []string
	// serps holds the last SERP line of each keyword.
	serps map[string][]kw.SERPRow
}

// newSampleCorpus writes a sample of n keywords for country us under dir
// and parses it.
func newSampleCorpus(tb testing.TB, dir string, n int, seed int) *sampleCorpus {
	tb.Helper()
	in := filepath.Join(dir, "in")
	run(tb, "sample", "--out", in, "--keywords", strconv.Itoa(n), "--countries", "us", "--seed", strconv.Itoa(seed))
	c := &sampleCorpus{
		planner:  filepath.Join(in, "us", "keyword-planner.csv"),
		serpFile: filepath.Join(in, "us", "serps.jsonl"),
		records:  map[string]kw.KeywordRecord{},
		serps:    map[string][]kw.SERPRow{},
	}
	f, err := os.Open(c.planner)
	if err != nil {
		tb.Fatal(err)
	}
	recs, _, err := ingest.ParsePlanner(f, c.planner, nil, nil)
	f.Close()
	if err != nil {
		tb.Fatalf("cannot parse the sample planner export: %v", err)
	}
	months := map[string]bool{}
	for _, r := range recs {
		if old, ok := c.records[r.Keyword]; !ok || kw.MoreVolume(r.Volume, old.Volume) {
			c.records[r.Keyword] = r
		}
		for _, m := range r.Monthly {
			months[m.Month] = true
		}
	}
	for k := range c.records {
		c.keywords = append(c.keywords, k)
	}
	slices.Sort(c.keywords)
	for m := range months {
		c.months = append(c.months, m)
	}
	slices.Sort(c.months)

	f, err = os.Open(c.serpFile)
	if err != nil {
		tb.Fatal(err)
	}
	_, err = ingest.ParseSERPJSONL(f, c.serpFile, "us", func(k string, rows []kw.SERPRow) { c.serps[k] = rows }, nil)
	f.Close()
	if err != nil {
		tb.Fatalf("cannot parse the sample SERP file: %v", err)
	}
	return c
}

// fakeAds is the Google Ads REST interface: the OAuth2 token endpoint,
// the account currency query, GenerateKeywordHistoricalMetrics and
// GenerateKeywordIdeas, answering for the keywords of a corpus.
type fakeAds struct {
	tb     testing.TB
	srv    *httptest.Server
	corpus *sampleCorpus

	mu       sync.Mutex
	currency string     // the account's currency_code; default USD
	searches int        // currency queries (GoogleAdsService.Search)
	tokens   []string   // access tokens minted
	versions []string   // API version of every request
	asked    [][]string // keywords of every request
	ideas    [][]string // seeds of every GenerateKeywordIdeas request
	// ideasQuota is the number of GenerateKeywordIdeas requests to answer
	// with the daily quota error before answering normally.
	ideasQuota int
}

func newFakeAds(tb testing.TB, c *sampleCorpus) *fakeAds {
	tb.Helper()
	f := &fakeAds{tb: tb, corpus: c, currency: "USD"}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /token", f.token)
	mux.HandleFunc("POST /{version}/customers/{customer}/googleAds:search", f.search)
	mux.HandleFunc("POST /{version}/customers/{rest}", f.historical)
	f.srv = httptest.NewServer(mux)
	tb.Cleanup(f.srv.Close)
	return f
}

// refuse answers a request the real service would refuse, and fails the
// test: the client under test sent something it should not have.
func (f *fakeAds) refuse(w http.ResponseWriter, status int, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	f.tb.Errorf("google ads fake: %s", msg)
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"code": status, "message": msg, "status": "INVALID_ARGUMENT",
	}})
}

func (f *fakeAds) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if r.Form.Get("grant_type") != "refresh_token" || r.Form.Get("refresh_token") != fakeRefreshToken ||
		r.Form.Get("client_id") != fakeClientID || r.Form.Get("client_secret") != fakeClientSecret {
		f.tb.Errorf("google ads fake: token request with form %v", r.Form)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error": "invalid_grant", "error_description": "Bad Request"}`)
		return
	}
	f.mu.Lock()
	tok := fmt.Sprintf("ya29.fake-%d", len(f.tokens)+1)
	f.tokens = append(f.tokens, tok)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"access_token": tok, "expires_in": 3599, "token_type": "Bearer",
		"scope": "https://www.googleapis.com/auth/adwords",
	})
}

// authorized checks the fields every Google Ads request carries, a minted
// access token and the developer token, and refuses the request otherwise.
func (f *fakeAds) authorized(w http.ResponseWriter, r *http.Request) bool {
	f.mu.Lock()
	minted := slices.Contains(f.tokens, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	f.mu.Unlock()
	switch {
	case !minted:
		f.refuse(w, http.StatusUnauthorized, "Authorization %q is no minted token", r.Header.Get("Authorization"))
		return false
	case r.Header.Get("developer-token") != fakeDevToken:
		f.refuse(w, http.StatusForbidden, "developer-token %q", r.Header.Get("developer-token"))
		return false
	}
	return true
}

// search answers the account currency query of GoogleAdsService.Search
// with one row, as the service does.
func (f *fakeAds) search(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Query string `json:"query"`
	}
	json.NewDecoder(r.Body).Decode(&req)
	f.mu.Lock()
	f.searches++
	currency := f.currency
	f.mu.Unlock()
	if r.PathValue("customer") != fakeCustomer || req.Query != "SELECT customer.currency_code FROM customer" {
		f.refuse(w, http.StatusBadRequest, "unexpected search of %s: %q", r.PathValue("customer"), req.Query)
		return
	}
	if !f.authorized(w, r) {
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	json.NewEncoder(w).Encode(map[string]any{
		"results": []any{map[string]any{"customer": map[string]any{
			"resourceName": "customers/" + fakeCustomer, "currencyCode": currency,
		}}},
		"fieldMask": "customer.currencyCode",
	})
}

func (f *fakeAds) historical(w http.ResponseWriter, r *http.Request) {
	customer, method, _ := strings.Cut(r.PathValue("rest"), ":")
	if customer != fakeCustomer || (method != "generateKeywordHistoricalMetrics" && method != "generateKeywordIdeas") {
		f.refuse(w, http.StatusNotFound, "unexpected path %s", r.URL.Path)
		return
	}
	if !f.authorized(w, r) {
		return
	}
	if method == "generateKeywordIdeas" {
		f.keywordIdeas(w, r)
		return
	}
	var req struct {
		Keywords           []string `json:"keywords"`
		GeoTargetConstants []string `json:"geoTargetConstants"`
		Language           string   `json:"language"`
		KeywordPlanNetwork string   `json:"keywordPlanNetwork"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		f.refuse(w, http.StatusBadRequest, "cannot decode request: %v", err)
		return
	}
	if !slices.Equal(req.GeoTargetConstants, []string{"geoTargetConstants/2840"}) ||
		req.Language != "languageConstants/1000" || req.KeywordPlanNetwork != "GOOGLE_SEARCH" ||
		len(req.Keywords) == 0 || len(req.Keywords) > 10_000 {
		f.refuse(w, http.StatusBadRequest, "request %+v is not one for US English, 1–10,000 keywords", req)
		return
	}
	f.mu.Lock()
	f.versions = append(f.versions, r.PathValue("version"))
	f.asked = append(f.asked, req.Keywords)
	f.mu.Unlock()

	// Results come in no particular order (here: reversed), and keywords
	// the planner knows nothing about are left out, as the service does.
	results := []any{}
	for _, k := range slices.Backward(req.Keywords) {
		if rec, ok := f.corpus.records[k]; ok {
			results = append(results, map[string]any{"text": k, "keywordMetrics": f.metrics(rec)})
		}
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	json.NewEncoder(w).Encode(map[string]any{"results": results})
}

// keywordIdeas answers GenerateKeywordIdeas with every keyword of the
// corpus, in reverse keyword order, on one page of at most pageSize ideas; or, while
// ideasQuota lasts, with the daily quota error, whose retry delay is hours.
func (f *fakeAds) keywordIdeas(w http.ResponseWriter, r *http.Request) {
	var req struct {
		KeywordSeed struct {
			Keywords []string `json:"keywords"`
		} `json:"keywordSeed"`
		PageSize int `json:"pageSize"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.KeywordSeed.Keywords) == 0 || len(req.KeywordSeed.Keywords) > 20 {
		f.refuse(w, http.StatusBadRequest, "keyword ideas request without 1–20 seeds (%v)", err)
		return
	}
	f.mu.Lock()
	quota := f.ideasQuota > 0
	if quota {
		f.ideasQuota--
	} else {
		f.ideas = append(f.ideas, req.KeywordSeed.Keywords)
	}
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	if quota {
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"error": {"code": 429, "message": "Resource has been exhausted (e.g. check quota).", "status": "RESOURCE_EXHAUSTED",
  "details": [{"@type": "type.googleapis.com/google.ads.googleads.v22.errors.GoogleAdsFailure",
    "errors": [{"errorCode": {"quotaError": "RESOURCE_EXHAUSTED"}, "message": "Too many requests. Retry in 40591 seconds.",
      "details": {"quotaErrorDetails": {"rateScope": "DEVELOPER", "rateName": "Number of operations for basic access", "retryDelay": "40591s"}}}],
    "requestId": "xN_KaZRHZuU6Rlgt3cM2uQ"}]}}`)
		return
	}
	results := []any{}
	for _, k := range slices.Backward(f.corpus.keywords) {
		if req.PageSize > 0 && len(results) == req.PageSize {
			break
		}
		results = append(results, map[string]any{"text": k, "keywordIdeaMetrics": f.metrics(f.corpus.records[k])})
	}
	json.NewEncoder(w).Encode(map[string]any{"results": results, "totalSize": strconv.Itoa(len(results))})
}

// ideaRequests returns the seeds of every answered GenerateKeywordIdeas
// request.
func (f *fakeAds) ideaRequests() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.ideas)
}

// metrics renders a planner record as KeywordPlanHistoricalMetrics: int64
// as decimal strings, enums by name, unknown values left out, and no
// averageCpcMicros, so that the cpc is the bid midpoint as in the planner
// import. A planner range volume goes out as its lower bound: the service
// has exact numbers, and the lower bound is what the planner import keeps.
func (f *fakeAds) metrics(rec kw.KeywordRecord) map[string]any {
	s := func(n int64) string { return strconv.FormatInt(n, 10) }
	m := map[string]any{"competition": "UNSPECIFIED"}
	if rec.Volume != nil {
		m["avgMonthlySearches"] = s(*rec.Volume)
	}
	if rec.CompetitionLevel != "" {
		m["competition"] = rec.CompetitionLevel
	}
	if rec.Competition != nil {
		m["competitionIndex"] = s(int64(math.Round(*rec.Competition * 100)))
	}
	switch low, high := rec.BidLowMicros, rec.BidHighMicros; {
	case low != nil && high != nil:
		if want := (*low + *high + 1) / 2; kw.Deref(rec.CPCMicros) != want {
			f.tb.Errorf("google ads fake: %q has cpc %d, not its bid midpoint %d; the API cannot express it",
				rec.Keyword, kw.Deref(rec.CPCMicros), want)
		}
		m["lowTopOfPageBidMicros"] = s(*low)
		m["highTopOfPageBidMicros"] = s(*high)
	case low != nil || high != nil:
		f.tb.Errorf("google ads fake: %q has one bid without the other", rec.Keyword)
	case rec.CPCMicros != nil:
		f.tb.Errorf("google ads fake: %q has a cpc without bids", rec.Keyword)
	}
	// Every month of the period, newest first; months the planner left
	// blank come without monthlySearches, which is how the service says
	// it has no figure.
	have := map[string]int64{}
	for _, v := range rec.Monthly {
		if v.Searches != nil {
			have[v.Month] = *v.Searches
		}
	}
	var months []any
	for _, month := range slices.Backward(f.corpus.months) {
		t, err := time.Parse("2006-01", month)
		if err != nil {
			f.tb.Fatalf("month %q: %v", month, err)
		}
		v := map[string]any{"year": s(int64(t.Year())), "month": strings.ToUpper(t.Month().String())}
		if n, ok := have[month]; ok {
			v["monthlySearches"] = s(n)
		}
		months = append(months, v)
	}
	if len(months) > 0 {
		m["monthlySearchVolumes"] = months
	}
	return m
}

func (f *fakeAds) requests() (versions []string, asked [][]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.versions), slices.Clone(f.asked)
}

// DataForSEO paths of the Google organic standard queue.
const (
	dfsTaskPost   = "/v3/serp/google/organic/task_post"
	dfsTasksReady = "/v3/serp/google/organic/tasks_ready"
	dfsTaskGet    = "/v3/serp/google/organic/task_get/advanced/"
)

// fakeDFS is the DataForSEO SERP API: task_post, tasks_ready and
// task_get/advanced behind HTTP Basic auth. Every task is ready as soon as
// it is posted, so the client's first poll (which comes before any sleep)
// collects everything and no test waits for a poll interval.
type fakeDFS struct {
	tb  testing.TB
	srv *httptest.Server
	// serp returns the organic results of a keyword; false completes the
	// task with 40102 "No Search Results".
	serp func(keyword string) ([]kw.SERPRow, bool)

	mu     sync.Mutex
	nextID int
	tasks  map[string]*dfsTask // by id
	order  []string            // task ids in posting order
	posts  []int               // tasks per task_post
	gets   int
}

type dfsTask struct {
	id, keyword, tag string
	collected        bool
}

func newFakeDFS(tb testing.TB, serp func(string) ([]kw.SERPRow, bool)) *fakeDFS {
	tb.Helper()
	f := &fakeDFS{tb: tb, serp: serp, tasks: map[string]*dfsTask{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+dfsTaskPost, f.taskPost)
	mux.HandleFunc("GET "+dfsTasksReady, f.tasksReady)
	mux.HandleFunc("GET "+dfsTaskGet+"{id}", f.taskGet)
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != fakeDFSLogin || p != fakeDFSPassword {
			f.tb.Errorf("dataforseo fake: %s %s without the right credentials", r.Method, r.URL.Path)
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"version": "0.1.20261118", "status_code": 40100, "status_message": "You are not authorized to access this resource.", "tasks": null}`)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	tb.Cleanup(f.srv.Close)
	return f
}

// dfsEnvelope wraps tasks in the v3 answer every endpoint gives.
func dfsEnvelope(tasks []any, cost float64) map[string]any {
	return map[string]any{
		"version": "0.1.20261118", "status_code": 20000, "status_message": "Ok.", "time": "0.0500 sec.",
		"cost": cost, "tasks_count": len(tasks), "tasks_error": 0, "tasks": tasks,
	}
}

func (f *fakeDFS) taskPost(w http.ResponseWriter, r *http.Request) {
	var req []struct {
		Keyword      string `json:"keyword"`
		LocationCode int64  `json:"location_code"`
		LanguageCode string `json:"language_code"`
		Depth        int    `json:"depth"`
		Tag          string `json:"tag"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req) == 0 || len(req) > 100 {
		f.tb.Errorf("dataforseo fake: task_post body is not an array of 1–100 tasks (%d, %v)", len(req), err)
		http.Error(w, "POST data must be a JSON array of at most 100 tasks", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.posts = append(f.posts, len(req))
	var tasks []any
	for _, t := range req {
		if t.LocationCode != 2840 || t.LanguageCode != "en" || t.Depth != 20 || t.Keyword == "" {
			f.tb.Errorf("dataforseo fake: task %+v is not a depth-20 US English task", t)
		}
		f.nextID++
		id := fmt.Sprintf("11211530-0696-0066-0000-%012x", f.nextID)
		f.tasks[id] = &dfsTask{id: id, keyword: t.Keyword, tag: t.Tag}
		f.order = append(f.order, id)
		tasks = append(tasks, map[string]any{
			"id": id, "status_code": 20100, "status_message": "Task Created.", "time": "0.0041 sec.",
			"cost": 0.0006, "result_count": 0, "path": []string{"v3", "serp", "google", "organic", "task_post"},
			"data": map[string]any{"api": "serp", "function": "task_post", "se": "google", "se_type": "organic",
				"keyword": t.Keyword, "location_code": t.LocationCode, "language_code": t.LanguageCode,
				"depth": t.Depth, "tag": t.Tag, "device": "desktop", "os": "windows"},
			"result": nil,
		})
	}
	json.NewEncoder(w).Encode(dfsEnvelope(tasks, 0.0006*float64(len(tasks))))
}

func (f *fakeDFS) tasksReady(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	list := []any{}
	for _, id := range f.order {
		t := f.tasks[id]
		if t.collected {
			continue
		}
		list = append(list, map[string]any{
			"id": id, "se": "google", "se_type": "organic", "date_posted": "2026-11-21 03:00:14 +00:00",
			"tag": t.tag, "endpoint_regular": "/v3/serp/google/organic/task_get/regular/" + id,
			"endpoint_advanced": dfsTaskGet + id, "endpoint_html": "/v3/serp/google/organic/task_get/html/" + id,
		})
	}
	json.NewEncoder(w).Encode(dfsEnvelope([]any{map[string]any{
		"id": "11211537-0696-0145-0000-b7f0a5d4e1c2", "status_code": 20000, "status_message": "Ok.",
		"cost": 0, "result_count": len(list), "path": []string{"v3", "serp", "google", "organic", "tasks_ready"},
		"data":   map[string]any{"api": "serp", "function": "tasks_ready", "se": "google", "se_type": "organic"},
		"result": list,
	}}, 0))
}

func (f *fakeDFS) taskGet(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gets++
	t, ok := f.tasks[id]
	if !ok {
		f.tb.Errorf("dataforseo fake: task_get of unknown task %s", id)
		json.NewEncoder(w).Encode(dfsEnvelope([]any{map[string]any{
			"id": id, "status_code": 40401, "status_message": "Task Not Found.", "result": nil,
		}}, 0))
		return
	}
	t.collected = true
	data := map[string]any{"api": "serp", "function": "task_get", "se": "google", "se_type": "organic",
		"keyword": t.keyword, "location_code": 2840, "language_code": "en", "depth": 20, "tag": t.tag}
	rows, ok := f.serp(t.keyword)
	if !ok {
		json.NewEncoder(w).Encode(dfsEnvelope([]any{map[string]any{
			"id": id, "status_code": 40102, "status_message": "No Search Results.", "cost": 0,
			"result_count": 0, "data": data, "result": nil,
		}}, 0))
		return
	}
	items := serpItems(t.keyword, rows)
	json.NewEncoder(w).Encode(dfsEnvelope([]any{map[string]any{
		"id": id, "status_code": 20000, "status_message": "Ok.", "cost": 0, "result_count": 1,
		"path": []string{"v3", "serp", "google", "organic", "task_get", "advanced", id}, "data": data,
		"result": []any{map[string]any{
			"keyword": t.keyword, "type": "organic", "se_domain": "google.com", "location_code": 2840,
			"language_code": "en", "check_url": "https://www.google.com/search?q=" + strings.ReplaceAll(t.keyword, " ", "+"),
			"datetime": "2026-11-21 03:01:02 +00:00", "spell": nil,
			"item_types":       []string{"paid", "featured_snippet", "organic", "people_also_ask"},
			"se_results_count": 1220000000, "items_count": len(items), "items": items,
		}},
	}}, 0))
}

// serpItems renders organic rows as SERP elements with rank_group set to
// their rank, between elements of other types that carry URLs of their own
// (an ad on top, a featured snippet, a "people also ask" box), all listed
// in reverse so that the client has to order by rank_group itself.
func serpItems(keyword string, rows []kw.SERPRow) []any {
	slug := strings.ReplaceAll(keyword, " ", "-")
	items := []any{map[string]any{"type": "paid", "rank_group": 1, "title": "Ad",
		"url": "https://ads.example/" + slug + "?gclid=x", "domain": "ads.example"}}
	for i, row := range rows {
		if i == 0 {
			items = append(items, map[string]any{"type": "featured_snippet", "rank_group": 1,
				"url": "https://snippet.example/" + slug, "domain": "snippet.example"})
		}
		items = append(items, map[string]any{"type": "organic", "rank_group": int(row.Rank),
			"title": "Result " + strconv.Itoa(int(row.Rank)), "url": row.URL, "domain": "example"})
		if i == 2 {
			items = append(items, map[string]any{"type": "people_also_ask", "rank_group": 1,
				"url": "https://paa.example/" + slug})
		}
	}
	for i, it := range items {
		it.(map[string]any)["rank_absolute"] = i + 1
	}
	slices.Reverse(items)
	return items
}

// postedSince returns the keywords of the tasks posted after the first n,
// and the number posted in all.
func (f *fakeDFS) postedSince(n int) ([]string, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, id := range f.order[n:] {
		out = append(out, f.tasks[id].keyword)
	}
	return out, len(f.order)
}

func (f *fakeDFS) postSizes() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.posts)
}
