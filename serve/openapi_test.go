package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/schema_validation"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/serve/api"
	"github.com/kwdata/kwdata/serve/web"
)

// exampleCase is one response example of openapi.json and the request that
// produces it from the demo fixture.
type exampleCase struct {
	// loc names the example: "METHOD /path STATUS name" for an operation's
	// response, "#Component name" for a shared response in
	// components.responses.
	loc    string
	method string
	target string
	body   string
	header http.Header
	// reqExample names the request-body example the body must equal: ""
	// for none, "-" for the single "example" of the request body.
	reqExample string
	setup      func(ds *demoServer)
}

func keywordsBody(n int) string {
	kws := make([]string, n)
	for i := range kws {
		kws[i] = fmt.Sprintf("keyword %d", i)
	}
	b, _ := json.Marshal(api.BulkRequest{Country: "us", Keywords: kws})
	return string(b)
}

var exampleCases = []exampleCase{
	{loc: "GET /v1/keyword 200 running_shoes", method: "GET", target: "/v1/keyword?q=running+shoes&country=us"},
	{loc: "GET /v1/keyword 200 no_values", method: "GET", target: "/v1/keyword?q=airgun&country=us"},
	{loc: "GET /v1/keyword 400 missing_q", method: "GET", target: "/v1/keyword"},
	{loc: "GET /v1/keyword 400 unsupported_country", method: "GET", target: "/v1/keyword?q=running+shoes&country=xx"},
	{loc: "GET /v1/keyword 404 keyword_not_found", method: "GET", target: "/v1/keyword?q=running+sandals&country=us"},
	{loc: "GET /v1/keyword 404 country_not_indexed", method: "GET", target: "/v1/keyword?q=running+shoes&country=fr"},
	{loc: "#InvalidKey invalid_key", method: "GET", target: "/v1/keyword?q=running+shoes",
		header: http.Header{"Authorization": {"Bearer kw_revoked"}},
		setup:  func(ds *demoServer) { ds.access.err = fmt.Errorf("cannot find key: %w", ErrInvalidKey) }},
	{loc: "#QuotaExhausted quota_exhausted", method: "GET", target: "/v1/keyword?q=running+shoes",
		setup: func(ds *demoServer) {
			ds.access.err = &QuotaError{Policy: "daily", Quota: 20, Remaining: 0, Requested: 1, RetryAfter: 70200 * time.Second, Header: http.Header{
				"Ratelimit":        {`"daily";r=0;t=70200`},
				"Ratelimit-Policy": {`"daily";q=20;w=86400`},
			}}
		}},
	{loc: "#IndexUnavailable index_unavailable", method: "GET", target: "/v1/keyword?q=running+shoes",
		setup: func(ds *demoServer) { ds.index.OK = false }},
	{loc: "#IndexUnavailable index_damaged", method: "GET", target: "/v1/keyword?q=running+shoes",
		setup: func(ds *demoServer) {
			ds.index.Err = fmt.Errorf("cannot read US %q from index build b: %w: checksum mismatch", "running shoes", kw.ErrIndexDamaged)
		}},
	{loc: "#IndexUnavailable access_unavailable", method: "GET", target: "/v1/keyword?q=running+shoes",
		setup: func(ds *demoServer) {
			ds.access.err = fmt.Errorf("cannot count the lookup: %w: dial tcp 10.0.0.5:6379: connection refused", ErrAccessUnavailable)
		}},
	{loc: "GET /v1/intent 200 running_shoe", method: "GET", target: "/v1/intent?q=running+shoe&country=us"},
	{loc: "GET /v1/intent 404 keyword_not_found", method: "GET", target: "/v1/intent?q=running+sandals&country=us"},
	{loc: "GET /v1/intent 400 missing_q", method: "GET", target: "/v1/intent"},
	{loc: "GET /v1/intent 400 unsupported_country", method: "GET", target: "/v1/intent?q=running+shoes&country=xx"},
	{loc: "GET /v1/explore 200 running_shoes", method: "GET", target: "/v1/explore?q=running+shoes&country=us&limit=3"},
	{loc: "GET /v1/explore 200 groups", method: "GET", target: "/v1/explore?q=running&country=us&limit=3&group=intent"},
	{loc: "GET /v1/explore 200 truncated", method: "GET", target: "/v1/explore?q=running+shoes&country=us&limit=3",
		setup: func(ds *demoServer) {
			ds.Server = New(Options{Index: ds.index, Access: &quotaAccess{quota: 500, used: 498}, Now: ds.Now})
		}},
	{loc: "GET /v1/explore 400 invalid_parameter", method: "GET", target: "/v1/explore?q=running&min_cpc=abc"},
	{loc: "GET /v1/explore 503 explore_unavailable", method: "GET", target: "/v1/explore?q=running",
		setup: func(ds *demoServer) { ds.index.NoExplorer = true }},
	{loc: "GET /v1/suggest 200 running", method: "GET", target: "/v1/suggest?q=Running&country=us"},
	{loc: "GET /v1/suggest 400 missing_q", method: "GET", target: "/v1/suggest"},
	{loc: "GET /v1/suggest 400 unsupported_country", method: "GET", target: "/v1/suggest?q=running+shoes&country=xx"},
	{loc: "POST /v1/keywords 200 mixed", method: "POST", target: "/v1/keywords", reqExample: "-",
		body: `{"country": "us", "keywords": ["running shoes", "Trail Running Shoes", "running sandals", ""]}`},
	{loc: "POST /v1/keywords 400 too_many_keywords", method: "POST", target: "/v1/keywords", body: keywordsBody(101)},
	{loc: "POST /v1/keywords 400 invalid_body", method: "POST", target: "/v1/keywords", body: `{"country": "us", "keywords": "running shoes"}`},
	{loc: "POST /v1/keywords 429 quota_exhausted", method: "POST", target: "/v1/keywords",
		body: `{"country": "us", "keywords": ["running shoes", "running shoe", "best running shoes", "running sneakers"]}`,
		setup: func(ds *demoServer) {
			ds.access.err = &QuotaError{Policy: "daily", Quota: 20, Remaining: 3, Requested: 4, RetryAfter: 3600 * time.Second, Header: http.Header{
				"Ratelimit":        {`"daily";r=3;t=3600`},
				"Ratelimit-Policy": {`"daily";q=20;w=86400`},
			}}
		}},
	{loc: "GET /v1/countries 200 countries", method: "GET", target: "/v1/countries"},
	{loc: "POST /v1/register 202 code_sent", method: "POST", target: "/v1/register", reqExample: "-", body: `{"email": "ada@example.com"}`},
	{loc: "POST /v1/register 400 invalid_email", method: "POST", target: "/v1/register", body: `{"email": "ada at example.com"}`},
	{loc: "POST /v1/register 415 not_json", method: "POST", target: "/v1/register", body: `{"email": "ada@example.com"}`,
		header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}},
	{loc: "POST /v1/register 429 too_many_registrations", method: "POST", target: "/v1/register", body: `{"email": "ada@example.com"}`,
		setup: func(ds *demoServer) {
			ds.registrar.err = &TooManyRegistrationsError{RetryAfter: 5 * time.Hour, Limit: 3}
		}},
	{loc: "POST /v1/register 503 mail_unavailable", method: "POST", target: "/v1/register", body: `{"email": "ada@example.com"}`,
		setup: func(ds *demoServer) { ds.mailer.err = errors.New("dial tcp: connection refused") }},
	{loc: "POST /v1/register/verify 201 created", method: "POST", target: "/v1/register/verify", reqExample: "-", body: `{"email": "ada@example.com", "code": "424242"}`},
	{loc: "POST /v1/register/verify 400 invalid_code", method: "POST", target: "/v1/register/verify", body: `{"email": "ada@example.com", "code": "111111"}`,
		setup: func(ds *demoServer) { ds.registrar.err = fmt.Errorf("cannot verify: %w", ErrCodeInvalid) }},
	{loc: "POST /v1/keys/rotate 201 rotated", method: "POST", target: "/v1/keys/rotate",
		header: http.Header{"Authorization": {"Bearer kw_live_7f3a7f3a7f3a7f3a7f3a7f3a7f3a7f3a"}}},
	{loc: "POST /v1/keys/rotate 401 invalid_key", method: "POST", target: "/v1/keys/rotate",
		header: http.Header{"Authorization": {"Bearer kw_live_0000"}},
		setup:  func(ds *demoServer) { ds.registrar.err = fmt.Errorf("cannot rotate: %w", ErrInvalidKey) }},
	{loc: "POST /v1/billing/checkout 201 checkout", method: "POST", target: "/v1/billing/checkout",
		header: http.Header{"Authorization": {"Bearer kw_live_7f3a7f3a7f3a7f3a7f3a7f3a7f3a7f3a"}}},
	{loc: "POST /v1/billing/checkout 401 invalid_key", method: "POST", target: "/v1/billing/checkout"},
	{loc: "POST /v1/billing/checkout 501 billing_unavailable", method: "POST", target: "/v1/billing/checkout",
		header: http.Header{"Authorization": {"Bearer kw_live_7f3a7f3a7f3a7f3a7f3a7f3a7f3a7f3a"}},
		setup:  func(ds *demoServer) { ds.Server.Billing = nil }},
	{loc: "POST /v1/billing/portal 200 portal", method: "POST", target: "/v1/billing/portal",
		header: http.Header{"Authorization": {"Bearer kw_live_7f3a7f3a7f3a7f3a7f3a7f3a7f3a7f3a"}}},
	{loc: "POST /v1/billing/portal 409 no_subscription", method: "POST", target: "/v1/billing/portal",
		header: http.Header{"Authorization": {"Bearer kw_live_7f3a7f3a7f3a7f3a7f3a7f3a7f3a7f3a"}},
		setup:  func(ds *demoServer) { ds.billing.err = ErrNoSubscription }},
	{loc: "POST /v1/billing/webhook 200 received", method: "POST", target: "/v1/billing/webhook",
		body: `{"id": "evt_1", "object": "event", "type": "invoice.paid"}`, header: http.Header{"Stripe-Signature": {"t=1764000000,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd"}}},
	{loc: "POST /v1/billing/webhook 400 invalid_signature", method: "POST", target: "/v1/billing/webhook",
		body: `{"id": "evt_1", "object": "event", "type": "invoice.paid"}`, header: http.Header{"Stripe-Signature": {"t=1764000000,v1=00"}},
		setup: func(ds *demoServer) {
			ds.billing.err = fmt.Errorf("%w: no signatures found matching the expected signature", ErrBadSignature)
		}},
	{loc: "POST /mcp 200 initialize", method: "POST", target: "/mcp", reqExample: "initialize",
		body: `{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "example-agent", "version": "1.0.0"}}}`},
	{loc: "POST /mcp 200 tools_call", method: "POST", target: "/mcp", reqExample: "tools_call",
		body: `{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "keyword_lookup", "arguments": {"keyword": "laufschuhe", "country": "de"}}}`},
	{loc: "POST /mcp 400 batch", method: "POST", target: "/mcp",
		body: `[{"jsonrpc": "2.0", "id": 3, "method": "tools/list"}, {"jsonrpc": "2.0", "id": 4, "method": "ping"}]`},
	{loc: "POST /mcp 403 forbidden_origin", method: "POST", target: "/mcp", header: http.Header{"Origin": {"https://evil.example"}},
		body: `{"jsonrpc": "2.0", "id": 1, "method": "ping"}`},
}

// slug makes an example location into a file name.
func slug(loc string) string {
	return strings.Trim(regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(loc, "_"), "_")
}

// loadDoc parses the embedded OpenAPI document.
func loadDoc(tb testing.TB) map[string]any {
	tb.Helper()
	var doc map[string]any
	if err := json.Unmarshal(web.OpenAPIDoc, &doc); err != nil {
		tb.Fatalf("openapi.json is not JSON: %v", err)
	}
	return doc
}

// obj walks a path of keys through nested JSON objects.
func obj(v any, keys ...string) (map[string]any, bool) {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		v = m[k]
	}
	m, ok := v.(map[string]any)
	return m, ok
}

// docExamples returns every response example of the document by location,
// and every request-body example by "METHOD /path name".
func docExamples(tb testing.TB, doc map[string]any) (responses, requests map[string]any) {
	tb.Helper()
	responses, requests = map[string]any{}, map[string]any{}
	collect := func(prefix string, resp map[string]any) {
		content, _ := obj(resp, "content")
		for _, media := range content {
			exs, _ := obj(media, "examples")
			for name, ex := range exs {
				responses[prefix+" "+name] = ex.(map[string]any)["value"]
			}
			if _, ok := media.(map[string]any)["example"]; ok {
				tb.Errorf("%s: use named examples in responses, not example", prefix)
			}
		}
	}
	paths, _ := obj(doc, "paths")
	for path, item := range paths {
		for method, op := range item.(map[string]any) {
			m := strings.ToUpper(method)
			resps, _ := obj(op, "responses")
			for status, resp := range resps {
				if _, isRef := resp.(map[string]any)["$ref"]; isRef {
					continue
				}
				collect(fmt.Sprintf("%s %s %s", m, path, status), resp.(map[string]any))
			}
			content, _ := obj(op, "requestBody", "content")
			for _, media := range content {
				mm := media.(map[string]any)
				if ex, ok := mm["example"]; ok {
					requests[m+" "+path+" -"] = ex
				}
				exs, _ := obj(mm, "examples")
				for name, ex := range exs {
					requests[m+" "+path+" "+name] = ex.(map[string]any)["value"]
				}
			}
		}
	}
	comps, _ := obj(doc, "components", "responses")
	for name, resp := range comps {
		collect("#"+name, resp.(map[string]any))
	}
	return responses, requests
}

// runExample sends the request of an example case to a fresh demo server.
func runExample(tb testing.TB, ec exampleCase) (*demoServer, *httptest.ResponseRecorder, *http.Request) {
	tb.Helper()
	ds := newDemoServer(tb)
	if ec.setup != nil {
		ec.setup(ds)
	}
	var body io.Reader
	if ec.body != "" {
		body = strings.NewReader(ec.body)
	}
	r := httptest.NewRequest(ec.method, ec.target, body)
	if ec.body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	for k, v := range ec.header {
		r.Header[k] = v
	}
	w := httptest.NewRecorder()
	ds.ServeHTTP(w, r)
	return ds, w, httptest.NewRequest(ec.method, ec.target, strings.NewReader(ec.body))
}

// TestOpenAPIExamples runs the request behind every response example of the
// document and checks that the handler answers exactly the example, with
// the example's status. The answers are golden files too.
func TestOpenAPIExamples(t *testing.T) {
	doc := loadDoc(t)
	responses, requests := docExamples(t, doc)
	seen := map[string]bool{}
	for _, ec := range exampleCases {
		t.Run(slug(ec.loc), func(t *testing.T) {
			seen[ec.loc] = true
			want, ok := responses[ec.loc]
			if !ok {
				t.Fatalf("openapi.json has no example %q", ec.loc)
			}
			_, w, _ := runExample(t, ec)
			golden(t, "examples/"+slug(ec.loc)+".json", w.Body.Bytes())
			fields := strings.Fields(strings.TrimPrefix(ec.loc, "#"))
			if !strings.HasPrefix(ec.loc, "#") && fmt.Sprint(w.Code) != fields[2] {
				t.Errorf("status %d, the document says %s", w.Code, fields[2])
			}
			var got any
			if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
				t.Fatalf("answer is not JSON: %v: %s", err, w.Body)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("the handler answers\n%s\nbut the example in openapi.json is\n%s\n(paste testdata/golden/examples/%s.json into the document)",
					w.Body, mustJSON(want), slug(ec.loc))
			}
			if ec.reqExample != "" {
				fields := strings.Fields(ec.loc)
				key := fields[0] + " " + fields[1] + " " + ec.reqExample
				var sent any
				if err := json.Unmarshal([]byte(ec.body), &sent); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(sent, requests[key]) {
					t.Errorf("request example %q is %s, the test sends %s", key, mustJSON(requests[key]), ec.body)
				}
			}
		})
	}
	var missing []string
	for loc := range responses {
		if !seen[loc] {
			missing = append(missing, loc)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("examples of openapi.json that no test request produces: %q", missing)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestOpenAPIRoutes checks that the document describes exactly the routes
// the server registers, method by method (HEAD aside, which every GET
// route answers).
func TestOpenAPIRoutes(t *testing.T) {
	ds := newDemoServer(t)
	doc := loadDoc(t)
	paths, ok := obj(doc, "paths")
	if !ok {
		t.Fatal("openapi.json has no paths")
	}
	var registered, documented []string
	for path, rt := range ds.routes {
		for m := range rt.methods {
			if m != http.MethodHead {
				registered = append(registered, m+" "+path)
			}
		}
	}
	for path, item := range paths {
		for m := range item.(map[string]any) {
			documented = append(documented, strings.ToUpper(m)+" "+path)
		}
	}
	sort.Strings(registered)
	sort.Strings(documented)
	if !slices.Equal(registered, documented) {
		t.Errorf("routes and document differ:\nregistered %q\ndocumented %q", registered, documented)
	}
	if len(registered) < 13 {
		t.Errorf("only %d routes registered: %q", len(registered), registered)
	}
	// Every problem code the server can send is in the Problem schema.
	codes, _ := obj(doc, "components", "schemas", "Problem", "properties", "code")
	var enum []string
	for _, c := range codes["enum"].([]any) {
		enum = append(enum, c.(string))
	}
	for code := range web.Problems {
		if !slices.Contains(enum, code) {
			t.Errorf("problem code %s is missing from the Problem schema", code)
		}
	}
}

// TestOpenAPIValid validates the document against the OpenAPI 3.1 schema
// with libopenapi-validator, then validates the live answer of every
// example request against the document's schemas and headers.
func TestOpenAPIValid(t *testing.T) {
	doc, err := libopenapi.NewDocument(web.OpenAPIDoc)
	if err != nil {
		t.Fatalf("libopenapi cannot read openapi.json: %v", err)
	}
	if v := doc.GetVersion(); v != "3.1.0" {
		t.Errorf("version %q, want 3.1.0", v)
	}
	ok, errs := schema_validation.ValidateOpenAPIDocument(doc)
	for _, e := range errs {
		t.Errorf("openapi.json is not a valid OpenAPI 3.1 document: %s: %s", e.Message, e.Reason)
		for _, se := range e.SchemaValidationErrors {
			t.Errorf("  %s: %s", se.KeywordLocation+" "+se.FieldPath, se.Reason)
		}
	}
	if !ok && len(errs) == 0 {
		t.Error("openapi.json is not valid, without a reason")
	}
	if _, errs := doc.BuildV3Model(); errs != nil {
		t.Fatalf("cannot build the v3 model: %v", errs)
	}
	v, verrs := validator.NewValidator(doc)
	if len(verrs) > 0 {
		t.Fatalf("cannot build a validator: %v", verrs)
	}
	for _, ec := range exampleCases {
		_, w, req := runExample(t, ec)
		if ec.body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp := w.Result()
		resp.Request = req
		// The validator reads the body; hand it a fresh copy.
		resp.Body = io.NopCloser(bytes.NewReader(w.Body.Bytes()))
		if ok, errs := v.ValidateHttpResponse(req, resp); !ok {
			for _, e := range errs {
				t.Errorf("%s: answer does not match the document: %s: %s", ec.loc, e.Message, e.Reason)
				for _, se := range e.SchemaValidationErrors {
					t.Errorf("  %s: %s", se.KeywordLocation+" "+se.FieldPath, se.Reason)
				}
			}
		}
	}
}

// TestOpenAPIRateLimitHeaders checks that every response the server sends
// with rate-limit fields documents them: a client generated from the
// document must know that the page and the MCP endpoint send them too.
func TestOpenAPIRateLimitHeaders(t *testing.T) {
	doc := loadDoc(t)
	spent := func(ds *demoServer) {
		ds.access.err = &QuotaError{Policy: "daily", Quota: 20, Requested: 1, RetryAfter: time.Hour, Header: http.Header{
			"Ratelimit":        {`"daily";r=0;t=3600`},
			"Ratelimit-Policy": {`"daily";q=20;w=86400`},
		}}
	}
	for _, ec := range []exampleCase{
		{loc: "GET /v1/keyword 200", method: "GET", target: "/v1/keyword?q=running+shoes"},
		{loc: "GET /v1/keyword 404", method: "GET", target: "/v1/keyword?q=running+sandals"},
		{loc: "GET /v1/keyword 429", method: "GET", target: "/v1/keyword?q=running+shoes", setup: spent},
		{loc: "GET /keyword 200", method: "GET", target: "/keyword?q=running+shoes"},
		{loc: "GET /keyword 404", method: "GET", target: "/keyword?q=running+sandals"},
		{loc: "GET /keyword 429", method: "GET", target: "/keyword?q=running+shoes", setup: spent},
		{loc: "POST /v1/keywords 200", method: "POST", target: "/v1/keywords", body: `{"keywords": ["running shoes"]}`},
		{loc: "POST /v1/keywords 429", method: "POST", target: "/v1/keywords", body: `{"keywords": ["running shoes"]}`, setup: spent},
		{loc: "POST /mcp 200", method: "POST", target: "/mcp",
			body: `{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "keyword_lookup", "arguments": {"keyword": "running shoes"}}}`},
	} {
		t.Run(slug(ec.loc), func(t *testing.T) {
			_, w, _ := runExample(t, ec)
			f := strings.Fields(ec.loc)
			if fmt.Sprint(w.Code) != f[2] {
				t.Fatalf("status %d", w.Code)
			}
			if w.Header().Get("RateLimit") == "" || w.Header().Get("RateLimit-Policy") == "" {
				t.Fatalf("the answer carries no rate-limit fields: %v", w.Header())
			}
			resp, ok := obj(doc, "paths", f[1], strings.ToLower(f[0]), "responses", f[2])
			if !ok {
				t.Fatalf("openapi.json has no response %s", ec.loc)
			}
			if ref, ok := resp["$ref"].(string); ok {
				resp, _ = obj(doc, "components", "responses", strings.TrimPrefix(ref, "#/components/responses/"))
			}
			for _, name := range []string{"RateLimit", "RateLimit-Policy"} {
				if _, ok := obj(resp, "headers", name); !ok {
					t.Errorf("openapi.json: %s sends %s, but its headers do not list it", ec.loc, name)
				}
			}
		})
	}
}

func TestOpenAPIHandler(t *testing.T) {
	ds := newDemoServer(t)
	w := do(t, ds, "GET", "/v1/openapi.json", http.Header{"Origin": {"https://agent.example"}})
	if w.Code != 200 || w.Header().Get("Content-Type") != "application/json" || !bytes.Equal(w.Body.Bytes(), web.OpenAPIDoc) {
		t.Fatalf("status %d, Content-Type %q, %d bytes", w.Code, w.Header().Get("Content-Type"), w.Body.Len())
	}
	if w.Header().Get("Access-Control-Allow-Origin") != "*" {
		t.Error("the document is not readable from other origins")
	}
}

// TestMCPOutputSchemaIsOpenAPISchema checks that the tool's output schema
// is the KeywordRecord schema with its references resolved.
func TestMCPOutputSchemaIsOpenAPISchema(t *testing.T) {
	var s map[string]any
	if err := json.Unmarshal(web.OpenAPISchema("KeywordRecord"), &s); err != nil {
		t.Fatal(err)
	}
	if s["type"] != "object" || strings.Contains(mustJSON(s), "$ref") {
		t.Fatalf("schema %s", mustJSON(s))
	}
	items, _ := obj(s, "properties", "related", "items", "properties")
	if _, ok := items["overlap"]; !ok {
		t.Errorf("related items were not inlined: %s", mustJSON(s))
	}
	var bulk map[string]any
	if err := json.Unmarshal(web.OpenAPISchema("BulkResponse"), &bulk); err != nil || strings.Contains(mustJSON(bulk), "$ref") {
		t.Errorf("BulkResponse schema: %v %s", err, mustJSON(bulk))
	}
}

// TestOpenAPIValidatorCatchesMistakes proves that the validation above is
// not vacuous: a document without info, and an answer that breaks its
// schema, are both refused.
func TestOpenAPIValidatorCatchesMistakes(t *testing.T) {
	broken := bytes.Replace(web.OpenAPIDoc, []byte(`"info": {`), []byte(`"infox": {`), 1)
	doc, err := libopenapi.NewDocument(broken)
	if err != nil {
		t.Fatal(err)
	}
	if ok, _ := schema_validation.ValidateOpenAPIDocument(doc); ok {
		t.Error("a document without info passed validation")
	}

	doc, err = libopenapi.NewDocument(web.OpenAPIDoc)
	if err != nil {
		t.Fatal(err)
	}
	v, verrs := validator.NewValidator(doc)
	if len(verrs) > 0 {
		t.Fatal(verrs)
	}
	req := httptest.NewRequest("GET", "/v1/keyword?q=running+shoes", nil)
	w := httptest.NewRecorder()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(200)
	io.WriteString(w, `{"keyword":"running shoes","country":"us","volume":"many"}`)
	resp := w.Result()
	resp.Request = req
	if ok, _ := v.ValidateHttpResponse(req, resp); ok {
		t.Error("an answer that breaks the KeywordRecord schema passed validation")
	}
}
