package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kwdata/kwdata/kw"
)

// exploreDoc is the JSON answer of GET /v1/explore, both shapes.
type exploreDoc struct {
	Q       string `json:"q"`
	Country string `json:"country"`
	Mode    string `json:"mode"`
	Total   *int64 `json:"total"`
	Results []struct {
		Keyword     string   `json:"keyword"`
		Volume      *int64   `json:"volume"`
		CPC         *float64 `json:"cpc"`
		Competition *float64 `json:"competition"`
		Intent      string   `json:"intent"`
	} `json:"results"`
	TotalGroups *int64 `json:"total_groups"`
	Groups      []struct {
		Intent         string   `json:"intent"`
		MembersMatched int64    `json:"members_matched"`
		Volume         int64    `json:"volume"`
		Top            []string `json:"top"`
	} `json:"groups"`
	NextCursor       *string `json:"next_cursor"`
	TruncatedByQuota bool    `json:"truncated_by_quota"`
}

func getExplore(tb testing.TB, h http.Handler, query string, header http.Header) (*httptest.ResponseRecorder, exploreDoc) {
	tb.Helper()
	w := do(tb, h, "GET", "/v1/explore?"+query, header)
	var doc exploreDoc
	if w.Code == 200 && !strings.HasPrefix(w.Header().Get("Content-Type"), "text/csv") {
		dec := json.NewDecoder(w.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&doc); err != nil {
			tb.Fatalf("%s: not an explore answer: %v", query, err)
		}
	}
	return w, doc
}

// TestExploreAnswer: the exact JSON of a page, in the shape, with
// cpc in USD cents and competition in hundredths as the keyword answer
// writes them; the cursor walks the rest without a gap or a duplicate.
func TestExploreAnswer(t *testing.T) {
	ts := newTestServer(t)
	w := do(t, ts, "GET", "/v1/explore?q=Shoes&country=us&limit=2", nil)
	if w.Code != 200 {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	var doc exploreDoc
	json.Unmarshal(w.Body.Bytes(), &doc)
	if doc.NextCursor == nil {
		t.Fatalf("no next_cursor: %s", w.Body)
	}
	want := `{"q":"shoes","country":"US","mode":"terms","total":5,"results":[` +
		`{"keyword":"running shoes","volume":301000,"cpc":1.23,"competition":0.87,"intent":"running shoes"},` +
		`{"keyword":"trail shoes","volume":49500,"cpc":1.24,"competition":0.5,"intent":"running shoes"}],` +
		`"next_cursor":"` + *doc.NextCursor + `"}` + "\n"
	if w.Body.String() != want {
		t.Errorf("answer\n%s\nwant\n%s", w.Body, want)
	}
	if cc := w.Header().Get("Cache-Control"); !strings.Contains(cc, "private") {
		t.Errorf("Cache-Control %q: a counted answer must be private", cc)
	}
	got := []string{"running shoes", "trail shoes"}
	for cursor := *doc.NextCursor; cursor != ""; {
		_, page := getExplore(t, ts, "q=shoes&country=us&limit=2&cursor="+url.QueryEscape(cursor), nil)
		if *page.Total != 5 {
			t.Errorf("total %d on a later page, want 5", *page.Total)
		}
		for _, r := range page.Results {
			got = append(got, r.Keyword)
		}
		cursor = ""
		if page.NextCursor != nil {
			cursor = *page.NextCursor
		}
		if len(got) > 10 {
			t.Fatalf("cursor walk does not end: %q", got)
		}
	}
	wantAll := []string{"running shoes", "trail shoes", "cheap shoes", "free shoes", `shoes "<b>" & más`}
	if strings.Join(got, "|") != strings.Join(wantAll, "|") {
		t.Errorf("walked %q, want %q", got, wantAll)
	}

	// A keyword without numbers: nulls, never 0.
	_, doc = getExplore(t, ts, "q=airgun", nil)
	if len(doc.Results) != 1 || doc.Results[0].Volume != nil || doc.Results[0].CPC != nil || doc.Results[0].Competition != nil || doc.Country != "US" {
		t.Errorf("airgun (no numbers, default country): %+v", doc)
	}
}

// TestExploreGroups: group=intent answers one row per intent group with
// the summed volume of its matched members and the top members.
func TestExploreGroups(t *testing.T) {
	ts := newTestServer(t)
	w := do(t, ts, "GET", "/v1/explore?q=shoes&country=us&group=intent&limit=2", nil)
	if w.Code != 200 {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	var doc exploreDoc
	json.Unmarshal(w.Body.Bytes(), &doc)
	want := `{"q":"shoes","country":"US","total_groups":4,"groups":[` +
		`{"intent":"running shoes","members_matched":2,"volume":350500,"top":["running shoes","trail shoes"]},` +
		`{"intent":"cheap shoes","members_matched":1,"volume":1000,"top":["cheap shoes"]}],` +
		`"next_cursor":"` + *doc.NextCursor + `"}` + "\n"
	if w.Body.String() != want {
		t.Errorf("answer\n%s\nwant\n%s", w.Body, want)
	}
	if got := ts.access.committed; len(got) != 1 || got[0] != 2 {
		t.Errorf("committed %v, want [2]: each group counts as one lookup", got)
	}
}

// TestExploreCounting: each row returned counts as one lookup, after the
// key is authenticated; an empty page and a bad request count nothing.
func TestExploreCounting(t *testing.T) {
	for _, tc := range []struct {
		query             string
		admits, committed string
	}{
		{"q=shoes&limit=3", "[0 3]", "[3]"},
		{"q=shoes&min_volume=1000000", "[0]", "[0]"}, // an empty page is free
		{"q=shoes&limit=0", "[]", "[]"},              // refused before Access
		{"q=shoes&country=de", "[0]", "[0]"},         // no match in DE
		{"q=shoes&country=fr", "[]", "[]"},           // not indexed
		{"q=shoes&sort=cpc&order=asc&limit=50", "[0 5]", "[5]"},
	} {
		ts := newTestServer(t)
		w := do(t, ts, "GET", "/v1/explore?"+tc.query, nil)
		if a, c := fmt.Sprint(ts.access.admits), fmt.Sprint(ts.access.committed); a != tc.admits || c != tc.committed {
			t.Errorf("%s: status %d, admits %s committed %s, want %s %s", tc.query, w.Code, a, c, tc.admits, tc.committed)
		}
	}
}

// TestExploreBadKey: a refused key learns nothing, not even the total,
// and the index is not asked.
func TestExploreBadKey(t *testing.T) {
	ts := newTestServer(t)
	ts.access.err = fmt.Errorf("key: %w", ErrInvalidKey)
	w := do(t, ts, "GET", "/v1/explore?q=shoes", http.Header{"Authorization": {"Bearer nope"}})
	if w.Code != 401 || strings.Contains(w.Body.String(), "total") {
		t.Errorf("bad key: %d %s, want 401", w.Code, w.Body)
	}
	if ts.index.Explores != 0 {
		t.Errorf("index asked %d times for a bad key", ts.index.Explores)
	}
}

// TestExploreBadParameters: each bad parameter is a 400 that names it,
// and nothing is counted.
func TestExploreBadParameters(t *testing.T) {
	for _, tc := range []struct{ query, code, names string }{
		{"q=", "invalid_parameter", "q is empty"},
		{"country=us", "invalid_parameter", "q is empty"},
		{"q=shoes&country=zz", "unsupported_country", `"zz"`},
		{"q=shoes&mode=fuzzy", "invalid_parameter", "mode"},
		{"q=shoes&country=tr&mode=questions", "invalid_parameter", "mode"},
		{"q=shoes&min_volume=-1", "invalid_parameter", "min_volume"},
		{"q=shoes&min_cpc=1.0000001", "invalid_parameter", "min_cpc"},
		{"q=shoes&max_competition=2", "invalid_parameter", "max_competition"},
		{"q=shoes&min_words=3&max_words=2", "invalid_parameter", "min_words"},
		{"q=shoes&include=a+b", "invalid_parameter", "include"},
		{"q=shoes&sort=price", "invalid_parameter", "sort"},
		{"q=shoes&order=up", "invalid_parameter", "order"},
		{"q=shoes&limit=1001", "invalid_parameter", "limit"},
		{"q=shoes&group=country", "invalid_parameter", "group"},
		{"q=shoes&cursor=abc", "invalid_parameter", "cursor"},
		{"q=shoes&limit=1&limit=2", "invalid_parameter", "limit"},
		{"q=%zz", "invalid_parameter", "percent-encoded"},
	} {
		ts := newTestServer(t)
		w := do(t, ts, "GET", "/v1/explore?"+tc.query, nil)
		var p struct{ Code, Detail string }
		json.Unmarshal(w.Body.Bytes(), &p)
		if w.Code != 400 || p.Code != tc.code || !strings.Contains(p.Detail, tc.names) {
			t.Errorf("%s: %d %s, want 400 %s naming %q", tc.query, w.Code, w.Body, tc.code, tc.names)
		}
		if len(ts.access.admits) != 0 {
			t.Errorf("%s: admitted %v; a bad request must not reach Access", tc.query, ts.access.admits)
		}
	}
	// A cursor of another query is refused, not read as this one's.
	ts := newTestServer(t)
	_, doc := getExplore(t, ts, "q=shoes&limit=1", nil)
	w := do(t, ts, "GET", "/v1/explore?q=shoes&limit=1&sort=cpc&cursor="+url.QueryEscape(*doc.NextCursor), nil)
	if w.Code != 400 || !strings.Contains(w.Body.String(), "cursor") {
		t.Errorf("another query's cursor: %d %s, want 400 naming cursor", w.Code, w.Body)
	}
}

// TestExploreUnavailable: a build without the explorer's tables is a 503
// that tells the operator to rebuild, and counts nothing.
func TestExploreUnavailable(t *testing.T) {
	ts := newTestServer(t)
	ts.index.NoExplorer = true
	w := do(t, ts, "GET", "/v1/explore?q=shoes", nil)
	if w.Code != 503 || !strings.Contains(w.Body.String(), `"code":"explore_unavailable"`) || !strings.Contains(w.Body.String(), "kwdata build-index") {
		t.Errorf("no explorer tables: %d %s, want 503 explore_unavailable naming kwdata build-index", w.Code, w.Body)
	}
	if len(ts.access.committed) != 0 {
		t.Errorf("committed %v for an unavailable explorer", ts.access.committed)
	}
}

// TestExploreCSV: format=csv and Accept: text/csv answer the page as CSV,
// with the next cursor in a header.
func TestExploreCSV(t *testing.T) {
	ts := newTestServer(t)
	for _, h := range []struct {
		query  string
		header http.Header
	}{{"q=shoes&limit=2&format=csv", nil}, {"q=shoes&limit=2", http.Header{"Accept": {"text/csv"}}}} {
		w := do(t, ts, "GET", "/v1/explore?"+h.query, h.header)
		rows := readCSV(t, w)
		got := fmt.Sprint(rows)
		want := "[[keyword volume cpc competition intent] [running shoes 301000 1.23 0.87 running shoes] [trail shoes 49500 1.24 0.5 running shoes]]"
		if got != want {
			t.Errorf("%s: %s, want %s", h.query, got, want)
		}
		if w.Header().Get("Kwdata-Next-Cursor") == "" {
			t.Errorf("%s: no Kwdata-Next-Cursor", h.query)
		}
	}
	w := do(t, ts, "GET", "/v1/explore?q=shoes&limit=1&group=intent&format=csv", nil)
	if got := fmt.Sprint(readCSV(t, w)); got != "[[intent members_matched volume top] [running shoes 2 350500 running shoes | trail shoes]]" {
		t.Errorf("grouped CSV: %s", got)
	}
}

// quotaAccess is an Access with a registered key's monthly allowance:
// it refuses what it cannot cover with a *QuotaError saying what is
// left, as the access store does.
type quotaAccess struct {
	mu        sync.Mutex
	quota     int64
	used      int64
	reserved  int64
	requested []int
}

func (a *quotaAccess) Admit(ctx context.Context, r *http.Request, client netip.Addr, n int) (Ticket, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.requested = append(a.requested, n)
	left := a.quota - a.used - a.reserved
	if n > 0 && int64(n) > left {
		return nil, &QuotaError{Policy: "monthly", Quota: a.quota, Remaining: left, Requested: int64(n), RetryAfter: 48 * time.Hour}
	}
	a.reserved += int64(n)
	return &quotaTicket{a: a, n: int64(n)}, nil
}

type quotaTicket struct {
	a    *quotaAccess
	n    int64
	done bool
}

func (t *quotaTicket) Commit(counted int, h http.Header) {
	t.a.mu.Lock()
	defer t.a.mu.Unlock()
	if t.done {
		return
	}
	t.done = true
	t.a.reserved -= t.n
	t.a.used += int64(counted)
	h.Set("RateLimit-Policy", fmt.Sprintf(`"monthly";q=%d;w=2592000`, t.a.quota))
	h.Set("RateLimit", fmt.Sprintf(`"monthly";r=%d;t=172800`, t.a.quota-t.a.used))
}

func (t *quotaTicket) Cancel() {
	t.a.mu.Lock()
	defer t.a.mu.Unlock()
	if !t.done {
		t.done = true
		t.a.reserved -= t.n
	}
}

// TestExploreQuota: a registered key with 3 lookups left asking for a
// page of 5 gets 3 rows, says so, and the RateLimit fields show nothing
// left; its cursor continues after the third row once the allowance
// renews. With nothing left the answer is the usual 429.
func TestExploreQuota(t *testing.T) {
	ts := newTestServer(t)
	qa := &quotaAccess{quota: 500, used: 497}
	ts.Server = New(Options{Index: ts.index, Access: qa, Now: ts.Now})
	key := http.Header{"Authorization": {"Bearer kwd_near_its_limit"}}

	w, doc := getExplore(t, ts, "q=shoes&limit=5", key)
	if w.Code != 200 {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	if len(doc.Results) != 3 || !doc.TruncatedByQuota || *doc.Total != 5 || doc.NextCursor == nil {
		t.Fatalf("3 left, page of 5: %s", w.Body)
	}
	if rl := w.Header().Get("RateLimit"); rl != `"monthly";r=0;t=172800` {
		t.Errorf("RateLimit %q, want r=0", rl)
	}
	if qa.used != 500 {
		t.Errorf("used %d, want 500", qa.used)
	}

	w, _ = getExplore(t, ts, "q=shoes&limit=5&cursor="+url.QueryEscape(*doc.NextCursor), key)
	var p struct{ Code string }
	json.Unmarshal(w.Body.Bytes(), &p)
	if w.Code != 429 || p.Code != "quota_exhausted" || w.Header().Get("Retry-After") == "" {
		t.Errorf("nothing left: %d %s, want 429 quota_exhausted with Retry-After", w.Code, w.Body)
	}
	// An empty page stays free with nothing left.
	if w, _ := getExplore(t, ts, "q=shoes&min_volume=99999999", key); w.Code != 200 {
		t.Errorf("empty page with nothing left: %d %s, want 200", w.Code, w.Body)
	}

	qa.used = 0 // the month renews
	_, rest := getExplore(t, ts, "q=shoes&limit=5&cursor="+url.QueryEscape(*doc.NextCursor), key)
	var got []string
	for _, r := range rest.Results {
		got = append(got, r.Keyword)
	}
	if want := []string{"free shoes", `shoes "<b>" & más`}; fmt.Sprint(got) != fmt.Sprint(want) || rest.TruncatedByQuota || rest.NextCursor != nil {
		t.Errorf("after the cut: %q (truncated %v), want %q to the end", got, rest.TruncatedByQuota, want)
	}

	// Grouped pages are cut the same way.
	qa.used = 499
	_, g := getExplore(t, ts, "q=shoes&group=intent", key)
	if len(g.Groups) != 1 || !g.TruncatedByQuota || g.NextCursor == nil {
		t.Errorf("1 left, grouped: %+v", g)
	}
	qa.used = 0
	_, g2 := getExplore(t, ts, "q=shoes&group=intent&cursor="+url.QueryEscape(*g.NextCursor), key)
	if len(g2.Groups) != 3 || g2.Groups[0].Intent != "cheap shoes" {
		t.Errorf("grouped after the cut: %+v", g2)
	}
}

// TestExploreQuotaRace: when another request spends the allowance between
// the refusal and the retry, the page shrinks again rather than failing;
// the retries are bounded.
func TestExploreQuotaRace(t *testing.T) {
	ts := newTestServer(t)
	ra := &racingAccess{quotaAccess: quotaAccess{quota: 10, used: 6}}
	ts.Server = New(Options{Index: ts.index, Access: ra, Now: ts.Now})
	w, doc := getExplore(t, ts, "q=shoes", nil)
	if w.Code != 200 || len(doc.Results) != 3 || !doc.TruncatedByQuota {
		t.Errorf("status %d %s, want 3 rows: the fourth went to another request", w.Code, w.Body)
	}
	if fmt.Sprint(ra.requested) != "[0 5 4 3]" {
		t.Errorf("requested %v, want [0 5 4 3]", ra.requested)
	}
}

// racingAccess spends one lookup of the allowance on the first refusal,
// as a concurrent request would.
type racingAccess struct {
	quotaAccess
	raced bool
}

func (a *racingAccess) Admit(ctx context.Context, r *http.Request, client netip.Addr, n int) (Ticket, error) {
	t, err := a.quotaAccess.Admit(ctx, r, client, n)
	var qe *QuotaError
	if errors.As(err, &qe) && !a.raced {
		a.raced = true
		a.mu.Lock()
		a.used++
		a.mu.Unlock()
	}
	return t, err
}

// TestMCPKeywordExplore: the keyword_explore tool answers the JSON of
// GET /v1/explore, 25 rows by default, each counted; a bad argument is
// invalid params naming it; a key near its limit gets the cut page.
func TestMCPKeywordExplore(t *testing.T) {
	call := func(ts http.Handler, args string) (map[string]any, string) {
		t.Helper()
		w := mcpPost(t, ts, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"keyword_explore","arguments":`+args+`}}`, nil)
		if w.Code != 200 {
			t.Fatalf("%s: status %d: %s", args, w.Code, w.Body)
		}
		var resp struct {
			Result struct {
				StructuredContent json.RawMessage `json:"structuredContent"`
				IsError           bool            `json:"isError"`
			} `json:"result"`
			Error *struct{ Message string } `json:"error"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &resp); err != nil {
			t.Fatal(err)
		}
		if resp.Error != nil {
			return nil, resp.Error.Message
		}
		var doc map[string]any
		json.Unmarshal(resp.Result.StructuredContent, &doc)
		return doc, string(resp.Result.StructuredContent)
	}

	ds := newDemoServer(t)
	_, text := call(ds, `{"q":"Running","min_cpc":1.2,"exclude":["best"],"sort":"cpc","order":"asc"}`)
	api := do(t, ds, "GET", "/v1/explore?q=running&min_cpc=1.2&exclude=best&sort=cpc&order=asc&limit=25", nil)
	if text+"\n" != api.Body.String() {
		t.Errorf("tool answers\n%s\nthe API\n%s", text, api.Body)
	}
	if !strings.Contains(text, `"results":[{`) {
		t.Errorf("no results: %s", text)
	}

	// 30 matching keywords: the default page is 25, each counted.
	ds = newDemoServer(t)
	for i := range 30 {
		ds.index.Add(kwEntry(fmt.Sprintf("red widget %02d", i), int64(1000+i)))
	}
	ds.index.IndexInfo.Countries["US"] += 30
	doc, text := call(ds, `{"q":"widget"}`)
	if n := len(doc["results"].([]any)); n != 25 || doc["total"].(float64) != 30 || doc["next_cursor"] == nil {
		t.Errorf("default page: %d rows of %v: %s", n, doc["total"], text)
	}
	if c := ds.access.committed; len(c) == 0 || c[len(c)-1] != 25 {
		t.Errorf("committed %v, want 25 last", c)
	}

	for _, bad := range []struct{ args, names string }{
		{`{"q":"widget","min_cpc":1.0000001}`, "min_cpc"},
		{`{"q":"widget","limit":0}`, "limit"},
		{`{"q":"widget","sort":"price"}`, "sort"},
		{`{"q":"widget","colour":"red"}`, "colour"},
		{`{"country":"us"}`, "q"},
	} {
		if doc, msg := call(ds, bad.args); doc != nil || !strings.Contains(msg, "Invalid params") || !strings.Contains(msg, bad.names) {
			t.Errorf("%s: %q, want invalid params naming %s", bad.args, msg, bad.names)
		}
	}

	ds.Server = New(Options{Index: ds.index, Access: &quotaAccess{quota: 500, used: 496}, Now: ds.Now})
	doc, text = call(ds, `{"q":"widget","limit":10}`)
	if n := len(doc["results"].([]any)); n != 4 || doc["truncated_by_quota"] != true {
		t.Errorf("4 left, page of 10: %s", text)
	}
}

func kwEntry(keyword string, volume int64) kw.Entry {
	return kw.Entry{Keyword: keyword, Country: "US", Volume: &volume, Intent: keyword}
}

// FuzzExplore sends arbitrary query strings to GET /v1/explore and to the
// /explore page: the API answers 200 with an explore answer or a 4xx
// problem, never a 500, and the page answers HTML of 200 or 400.
func FuzzExplore(f *testing.F) {
	for _, seed := range []string{
		"q=shoes", "q=shoes&limit=2&sort=cpc&order=asc", "q=shoes&group=intent", "q=%zz", "q=shoes&cursor=AQ",
		"q=shoes&min_cpc=1.5&max_cpc=0.1", "q=a&include=b,c&exclude=d", "q=shoes&prev=a.b&cursor=x",
		"q=x&mode=questions&country=de", "q=shoes&limit=1&limit=2", "q=\xff", "q=shoes&min_competition=NaN",
	} {
		f.Add(seed)
	}
	ts := newTestServer(f)
	ts.index.PanicOn = ""
	ts.Server.Log = slog.New(slog.DiscardHandler)
	f.Fuzz(func(t *testing.T, raw string) {
		r := httptest.NewRequest("GET", "/v1/explore", nil)
		r.URL.RawQuery = raw
		w := httptest.NewRecorder()
		ts.ServeHTTP(w, r)
		switch {
		case w.Code == http.StatusOK:
			var doc exploreDoc
			if err := json.Unmarshal(w.Body.Bytes(), &doc); err != nil || doc.Country == "" {
				t.Fatalf("%q: not an explore answer: %s", raw, w.Body)
			}
		case w.Code >= 400 && w.Code < 500:
			var p struct{ Code string }
			if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil || p.Code == "" {
				t.Fatalf("%q: bad problem %s", raw, w.Body)
			}
		default:
			t.Fatalf("%q: status %d: %s", raw, w.Code, w.Body)
		}
		r = httptest.NewRequest("GET", "/explore", nil)
		r.URL.RawQuery = raw
		w = httptest.NewRecorder()
		ts.ServeHTTP(w, r)
		if w.Code >= 500 || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/html") {
			t.Fatalf("page %q: status %d %s", raw, w.Code, w.Header().Get("Content-Type"))
		}
	})
}
