package serve

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Cache-Control values of the answers.
const (
	ccPrivate = "private, no-store" // counted or keyed: no shared cache may answer it
	ccNone    = ""
)

// TestCacheControl sends a request to every route the server registers and
// checks its Cache-Control: an answer that is counted, or that depends on
// the caller's key, says private, no-store, so that a shared cache in front
// of the server never answers it without counting (or hands one caller's
// answer to another); public documents keep their public caching.
func TestCacheControl(t *testing.T) {
	const key = "Bearer kw_live_7f3a7f3a7f3a7f3a7f3a7f3a7f3a7f3a"
	json := http.Header{"Content-Type": {"application/json"}}
	form := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}, "Origin": {"http://kwdata.example"}}
	mcpHeader := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}}
	tests := []struct {
		route        string // "METHOD /pattern" as registered
		target, body string
		header       http.Header
		want         string
	}{
		{"GET /v1/keyword", "/v1/keyword?q=running+shoes&country=us", "", nil, ccPrivate},
		{"GET /v1/keyword", "/v1/keyword?q=running+shoes&country=us&format=csv", "", nil, ccPrivate},
		{"GET /v1/keyword", "/v1/keyword?q=no+such+keyword&country=us", "", nil, ccPrivate}, // a counted 404
		{"GET /v1/keyword", "/v1/keyword?q=running+shoes&country=us", "", http.Header{"Authorization": {key}}, ccPrivate},
		{"GET /v1/intent", "/v1/intent?q=running+shoes&country=us", "", nil, ccPrivate},
		{"GET /v1/intent", "/v1/intent?q=running+shoes&country=us&format=csv", "", nil, ccPrivate},
		{"GET /v1/explore", "/v1/explore?q=running&country=us", "", nil, ccPrivate},
		{"GET /v1/explore", "/v1/explore?q=running&country=us&format=csv", "", nil, ccPrivate},
		{"POST /v1/keywords", "/v1/keywords", `{"keywords":["running shoes","nope"]}`, json, ccPrivate},
		{"POST /v1/keywords", "/v1/keywords", `{"keywords":["running shoes"]}`, http.Header{"Content-Type": {"application/json"}, "Accept": {"text/csv"}}, ccPrivate},
		{"POST /mcp", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"keyword_lookup","arguments":{"keyword":"running shoes"}}}`, mcpHeader, ccPrivate},
		{"POST /v1/register", "/v1/register", `{"email":"ada@example.com"}`, json, ccPrivate},
		{"POST /v1/register/verify", "/v1/register/verify", `{"email":"ada@example.com","code":"424242"}`, json, ccPrivate},
		{"POST /v1/keys/rotate", "/v1/keys/rotate", "", http.Header{"Authorization": {key}}, ccPrivate},
		{"POST /v1/billing/checkout", "/v1/billing/checkout", "", http.Header{"Authorization": {key}}, ccPrivate},
		{"POST /v1/billing/portal", "/v1/billing/portal", "", http.Header{"Authorization": {key}}, ccPrivate},
		{"POST /v1/billing/webhook", "/v1/billing/webhook", `{"id":"evt_1","object":"event","type":"invoice.paid"}`, http.Header{"Stripe-Signature": {"t=1,v1=00"}}, ccPrivate},
		{"GET /keyword", "/keyword?q=running+shoes&country=us", "", nil, ccPrivate},
		{"GET /intent", "/intent?q=running+shoes&country=us", "", nil, ccPrivate},
		{"GET /explore", "/explore?q=running&country=us", "", nil, ccPrivate},
		{"GET /explore", "/explore", "", nil, ccPrivate},
		{"GET /register", "/register", "", nil, ccPrivate},
		{"POST /register", "/register", "email=ada%40example.com", form, ccPrivate},
		{"POST /register/verify", "/register/verify", "email=ada%40example.com&code=424242", form, ccPrivate},
		{"GET /account", "/account", "", http.Header{"Cookie": {"kwdata_session=" + demoSession}}, ccPrivate},
		{"GET /account", "/account", "", nil, ccPrivate},
		{"POST /account/signin", "/account/signin", "email=ada%40example.com", form, ccPrivate},
		{"POST /account/signin/verify", "/account/signin/verify", "email=ada%40example.com&code=424242", form, ccPrivate},
		{"POST /account/login", "/account/login", "key=kw_live_7f3a7f3a7f3a7f3a7f3a7f3a7f3a7f3a", form, ccPrivate},
		{"POST /account/logout", "/account/logout", "", form, ccPrivate},
		{"POST /account/rotate", "/account/rotate", "", form, ccPrivate},
		{"POST /account/subscribe", "/account/subscribe", "", form, ccPrivate},
		{"POST /account/manage", "/account/manage", "", form, ccPrivate},
		// Public documents: the same for everyone.
		{"GET /", "/", "", nil, "public, max-age=300"},
		{"GET /v1/suggest", "/v1/suggest?q=runn&country=us", "", nil, "public, max-age=300"},
		{"GET /v1/countries", "/v1/countries", "", nil, ccNone},
		{"GET /v1/openapi.json", "/v1/openapi.json", "", nil, "public, max-age=3600"},
		{"GET /llms.txt", "/llms.txt", "", nil, ccNone},
		{"GET /suggest.js", "/suggest.js", "", nil, "public, max-age=3600"},
		{"GET /favicon.svg", "/favicon.svg", "", nil, "public, max-age=86400"},
		{"GET /favicon.ico", "/favicon.ico", "", nil, "public, max-age=86400"},
		{"GET /problems/{code}", "/problems/missing_q", "", nil, "no-store"},
		{"GET /healthz", "/healthz", "", nil, "no-store"},
		{"GET /readyz", "/readyz", "", nil, "no-store"},
		{"GET /metrics", "/metrics", "", nil, ccNone},
	}
	ds := newDemoServer(t)
	tested := map[string]bool{}
	for _, tt := range tests {
		tested[tt.route] = true
		for _, method := range []string{strings.Fields(tt.route)[0], http.MethodHead} {
			if method == http.MethodHead && !strings.HasPrefix(tt.route, "GET ") {
				continue
			}
			r := httptest.NewRequest(method, tt.target, strings.NewReader(tt.body))
			r.Host = "kwdata.example"
			for k, v := range tt.header {
				r.Header[k] = v
			}
			w := httptest.NewRecorder()
			ds.ServeHTTP(w, r)
			if w.Code == http.StatusNotFound && !strings.Contains(tt.target, "no+such") || w.Code == http.StatusMethodNotAllowed {
				t.Errorf("%s %s: status %d, the table is out of date: %s", method, tt.target, w.Code, w.Body)
				continue
			}
			if got := w.Header().Get("Cache-Control"); got != tt.want {
				t.Errorf("%s %s (status %d): Cache-Control %q, want %q", method, tt.target, w.Code, got, tt.want)
			}
		}
	}
	for path, rt := range ds.routes {
		for m := range rt.methods {
			if m != http.MethodHead && !tested[m+" "+path] {
				t.Errorf("route %s %s is not in the table", m, path)
			}
		}
	}
	// A refusal of a counted route is as private as its answer.
	ds.access.err = ErrInvalidKey
	w := do(t, ds, "GET", "/v1/keyword?q=running+shoes&country=us", http.Header{"Authorization": {key}})
	if w.Code != http.StatusUnauthorized || w.Header().Get("Cache-Control") != ccPrivate {
		t.Errorf("invalid key: status %d, Cache-Control %q, want 401 %q", w.Code, w.Header().Get("Cache-Control"), ccPrivate)
	}
}
