package serve

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/kwdata/kwdata/serve/agent"
	"github.com/kwdata/kwdata/serve/web"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// startMCP serves a demo server on 127.0.0.1 and returns it with the URL of
// its MCP endpoint.
func startMCP(tb testing.TB) (*demoServer, string) {
	tb.Helper()
	ds := newDemoServer(tb)
	hs := httptest.NewServer(ds)
	tb.Cleanup(hs.Close)
	return ds, hs.URL + "/mcp"
}

// headerTransport adds fields to every request of an MCP client.
type headerTransport struct {
	header http.Header
	base   http.RoundTripper
}

func (t *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.header {
		r.Header[k] = v
	}
	return t.base.RoundTrip(r)
}

// connectMCP connects the official Go SDK client to endpoint, speaking
// version (the SDK's choice when empty).
func connectMCP(tb testing.TB, endpoint string, header http.Header, version string) (*mcp.ClientSession, error) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "kwdata-test", Version: "1.0.0"}, &mcp.ClientOptions{
		Logger: slog.New(slog.DiscardHandler),
	})
	transport := &mcp.StreamableClientTransport{
		Endpoint:   endpoint,
		HTTPClient: &http.Client{Timeout: 10 * time.Second, Transport: &headerTransport{header: header, base: http.DefaultTransport}},
		MaxRetries: -1,
	}
	var opts *mcp.ClientSessionOptions
	if version != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := client.Connect(ctx, transport, opts)
	if err == nil {
		tb.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

// toolText is the text of the first content of a tool result.
func toolText(tb testing.TB, res *mcp.CallToolResult) string {
	tb.Helper()
	if len(res.Content) == 0 {
		tb.Fatalf("tool result without content: %+v", res)
	}
	text, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		tb.Fatalf("content %T", res.Content[0])
	}
	return text.Text
}

func TestMCPWithGoSDKClient(t *testing.T) {
	for _, version := range append([]string{""}, mcp.SupportedProtocolVersions()...) {
		name := version
		if name == "" {
			name = "sdk-default"
		}
		t.Run(name, func(t *testing.T) {
			ds, endpoint := startMCP(t)
			cs, err := connectMCP(t, endpoint, http.Header{"Authorization": {"Bearer kw_test"}}, version)
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			res := cs.InitializeResult()
			want := version
			if want == "" {
				want = mcp.SupportedProtocolVersions()[0] // the server speaks the client's newest
			}
			if res.ProtocolVersion != want || res.ServerInfo.Name != "kwdata" || res.Capabilities.Tools == nil ||
				!strings.Contains(res.Instructions, "keyword_lookup") {
				t.Errorf("initialize result %+v", res)
			}
			ctx := context.Background()
			// Revision 2026-07-28 dropped ping.
			if res.ProtocolVersion < "2026-07-28" {
				if err := cs.Ping(ctx, nil); err != nil {
					t.Errorf("ping: %v", err)
				}
			}
			tools, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatalf("tools/list: %v", err)
			}
			var names []string
			for _, tool := range tools.Tools {
				names = append(names, tool.Name)
				if tool.OutputSchema == nil || tool.InputSchema == nil {
					t.Errorf("tool %s lacks a schema", tool.Name)
				}
			}
			if strings.Join(names, ",") != "intent_group,keyword_explore,keyword_lookup,keyword_lookup_bulk,register_request_code,register_verify" {
				t.Errorf("tools %v", names)
			}

			out, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "keyword_lookup",
				Arguments: map[string]any{"keyword": "  Running SHOES ", "country": "US"}})
			if err != nil {
				t.Fatalf("tools/call: %v", err)
			}
			if out.IsError {
				t.Fatalf("tool error: %s", toolText(t, out))
			}
			// The structured content is the document GET /v1/keyword
			// answers, byte for byte once both are decoded.
			get := do(t, ds, "GET", "/v1/keyword?q=running+shoes", nil)
			var want200 any
			if err := json.Unmarshal(get.Body.Bytes(), &want200); err != nil || get.Code != 200 {
				t.Fatalf("GET /v1/keyword: %d %s", get.Code, get.Body)
			}
			if mustJSON(out.StructuredContent) != mustJSON(want200) {
				t.Errorf("structuredContent\n%s\nis not the GET /v1/keyword document\n%s", mustJSON(out.StructuredContent), get.Body)
			}
			sc := out.StructuredContent.(map[string]any)
			if sc["keyword"] != "running shoes" || sc["country"] != "US" || len(sc["related"].([]any)) != 10 {
				t.Errorf("structuredContent %v", sc)
			}
			var fromText any
			if err := json.Unmarshal([]byte(toolText(t, out)), &fromText); err != nil || mustJSON(fromText) != mustJSON(sc) {
				t.Errorf("text content is not the structured content: %v\n%s", err, toolText(t, out))
			}

			bulk, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "keyword_lookup_bulk",
				Arguments: map[string]any{"keywords": []string{"running shoe", "running sandals", ""}}})
			if err != nil || bulk.IsError {
				t.Fatalf("bulk: %v %+v", err, bulk)
			}
			results := bulk.StructuredContent.(map[string]any)["results"].([]any)
			var statuses []float64
			for _, r := range results {
				statuses = append(statuses, r.(map[string]any)["status"].(float64))
			}
			if mustJSON(statuses) != "[200,404,400]" {
				t.Errorf("bulk statuses %v", statuses)
			}

			// Every POST carries the key and checks it first, reserving
			// nothing (admits of 0); then one single lookup and one bulk
			// reservation of 2 (the empty keyword is not counted), one
			// GET /v1/keyword of 1.
			ds.access.mu.Lock()
			defer ds.access.mu.Unlock()
			var reserved []int
			checks := 0
			for _, n := range ds.access.admits {
				if n != 0 {
					reserved = append(reserved, n)
				} else {
					checks++
				}
			}
			if mustJSON(reserved) != "[1,1,2]" || mustJSON(ds.access.committed) != "[1,1,2]" || checks < 4 {
				t.Errorf("admits %v committed %v", ds.access.admits, ds.access.committed)
			}
		})
	}
}

func TestMCPQuotaExhaustedIsToolError(t *testing.T) {
	ds, endpoint := startMCP(t)
	cs, err := connectMCP(t, endpoint, nil, "2025-06-18")
	if err != nil {
		t.Fatal(err)
	}
	ds.access.mu.Lock()
	ds.access.err = &QuotaError{Policy: "daily", Quota: 20, Requested: 1, RetryAfter: 19*time.Hour + 30*time.Minute}
	ds.access.mu.Unlock()
	out, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "keyword_lookup",
		Arguments: map[string]any{"keyword": "running shoes"}})
	if err != nil {
		t.Fatalf("a used-up allowance must be a tool error, not a protocol error: %v", err)
	}
	if !out.IsError || out.StructuredContent != nil {
		t.Fatalf("result %+v", out)
	}
	text := toolText(t, out)
	// The clock is 2026-11-22 04:30 UTC; 19h30m later is 2026-11-23 00:00.
	for _, want := range []string{"The daily allowance of 20 lookups for this address is used up; it renews in 19h 30m (at 2026-11-23T00:00:00Z).", "call register_request_code"} {
		if !strings.Contains(text, want) {
			t.Errorf("tool error %q lacks %q", text, want)
		}
	}
	ds.access.mu.Lock()
	if len(ds.access.committed) != 0 {
		t.Errorf("a refused call was counted: %v", ds.access.committed)
	}
	ds.access.err = nil
	ds.access.mu.Unlock()

	out, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "keyword_lookup",
		Arguments: map[string]any{"keyword": "running sandals"}})
	if err != nil || !out.IsError {
		t.Fatalf("unknown keyword: %v %+v", err, out)
	}
	ds.access.mu.Lock()
	defer ds.access.mu.Unlock()
	if mustJSON(ds.access.committed) != "[1]" {
		t.Errorf("an unknown keyword was not counted: %v", ds.access.committed)
	}
}

// TestMCPNotFoundNamesKeyword: the tool error of an unknown keyword says
// what GET /v1/keyword says, naming the normalized keyword and the country.
func TestMCPNotFoundNamesKeyword(t *testing.T) {
	ds, endpoint := startMCP(t)
	cs, err := connectMCP(t, endpoint, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ keyword, country, query string }{
		{"  Running SANDALS ", "", "q=running+sandals"},
		{"laufschuhe extra", "de", "q=laufschuhe+extra&country=de"},
	} {
		out, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "keyword_lookup",
			Arguments: map[string]any{"keyword": tt.keyword, "country": tt.country}})
		if err != nil || !out.IsError {
			t.Fatalf("%q: %v %+v", tt.keyword, err, out)
		}
		w := do(t, ds, "GET", "/v1/keyword?"+tt.query, nil)
		var p web.ProblemDoc
		if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil || w.Code != 404 {
			t.Fatalf("GET: %d %s", w.Code, w.Body)
		}
		if text := toolText(t, out); text != p.Detail {
			t.Errorf("tool error %q, GET /v1/keyword says %q", text, p.Detail)
		}
	}
}

func TestMCPErrorsWithGoSDKClient(t *testing.T) {
	_, endpoint := startMCP(t)
	cs, err := connectMCP(t, endpoint, nil, "2025-06-18")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		args any
		tool string
	}{
		{"unknown tool", map[string]any{"keyword": "x"}, "keyword_lookupz"},
		{"missing keyword", map[string]any{"country": "us"}, "keyword_lookup"},
		{"keyword not a string", map[string]any{"keyword": 42}, "keyword_lookup"},
		{"unknown argument", map[string]any{"keyword": "x", "limit": 3}, "keyword_lookup"},
		{"keyword too long", map[string]any{"keyword": strings.Repeat("a", 81)}, "keyword_lookup"},
		{"unsupported country", map[string]any{"keyword": "x", "country": "zz"}, "keyword_lookup"},
		{"no keywords", map[string]any{"keywords": []string{}}, "keyword_lookup_bulk"},
		{"too many keywords", map[string]any{"keywords": make([]string, 101)}, "keyword_lookup_bulk"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tt.tool, Arguments: tt.args})
			var werr *jsonrpc.Error
			if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams {
				t.Errorf("err = %v, want JSON-RPC error -32602", err)
			}
		})
	}
}

func TestMCPOriginRefusedForGoSDKClient(t *testing.T) {
	_, endpoint := startMCP(t)
	if _, err := connectMCP(t, endpoint, http.Header{"Origin": {"https://evil.example"}}, "2025-06-18"); err == nil {
		t.Fatal("a client with a foreign Origin connected")
	}
}

func TestMCPInvalidKeyRefusesGoSDKClient(t *testing.T) {
	ds, endpoint := startMCP(t)
	ds.access.err = ErrInvalidKey
	for _, version := range []string{"", "2025-06-18"} {
		if _, err := connectMCP(t, endpoint, http.Header{"Authorization": {"Bearer nope"}}, version); err == nil {
			t.Errorf("version %q: a client with an invalid key connected", version)
		}
	}
	ds.access.mu.Lock()
	defer ds.access.mu.Unlock()
	if len(ds.access.committed) != 0 {
		t.Errorf("a refused request counted: %v", ds.access.committed)
	}
}

// TestMCPBehindLoopbackProxy: a reverse proxy on the same machine forwards
// the public Host to a loopback address; the SDK's own rebinding guard
// would refuse every such request, so it is off and the Origin rule guards.
func TestMCPBehindLoopbackProxy(t *testing.T) {
	_, endpoint := startMCP(t)
	for _, tt := range []struct {
		origin string
		want   int
	}{
		{"", 200},
		{"https://kwdata.example.com", 403},
	} {
		r, err := http.NewRequest("POST", endpoint, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		if err != nil {
			t.Fatal(err)
		}
		r.Host = "kwdata.example.com"
		r.Header.Set("Content-Type", "application/json")
		if tt.origin != "" {
			r.Header.Set("Origin", tt.origin)
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("Origin %q: status %d, want %d", tt.origin, resp.StatusCode, tt.want)
		}
	}
}

// mcpPost sends one raw JSON-RPC body to POST /mcp.
func mcpPost(tb testing.TB, h http.Handler, body string, header http.Header) *httptest.ResponseRecorder {
	tb.Helper()
	r := httptest.NewRequest("POST", "/mcp", strings.NewReader(body))
	r.Host = "kwdata.example"
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		r.Header[k] = v
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// revokingAccess accepts every key when asked only to authenticate, and
// refuses it as invalid when a lookup is to be counted: a key revoked
// between the check of a POST and its tool call.
type revokingAccess struct{ fakeAccess }

func (a *revokingAccess) Admit(ctx context.Context, r *http.Request, client netip.Addr, n int) (Ticket, error) {
	if n > 0 {
		return nil, ErrInvalidKey
	}
	return a.fakeAccess.Admit(ctx, r, client, n)
}

// TestMCPRaw checks what the SDK client never sends: the HTTP-level rules
// kwdata adds around the SDK, and its answers to malformed messages.
func TestMCPRaw(t *testing.T) {
	const ping = `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	const call = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"keyword_lookup","arguments":{"keyword":"running shoes"}}}`
	tests := []struct {
		name       string
		body       string
		header     http.Header
		setup      func(ds *demoServer)
		wantStatus int
		wantCode   int    // JSON-RPC error code; 0 for a result
		wantInBody string // a substring of the answer
		problem    string // the code of a problem document
	}{
		{name: "ping", body: `{"jsonrpc":"2.0","id":"a","method":"ping"}`, wantStatus: 200, wantInBody: `{"jsonrpc":"2.0","id":"a","result":{}}`},
		{name: "initialize 2025-03-26", body: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`,
			wantStatus: 200, wantInBody: `"protocolVersion":"2025-03-26"`},
		{name: "tool call without initialize", body: call, wantStatus: 200, wantInBody: `"structuredContent":{"keyword":"running shoes"`},
		{name: "notification", body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, wantStatus: 202},
		{name: "client response", body: `{"jsonrpc":"2.0","id":9,"result":{}}`, wantStatus: 202},
		{name: "empty keyword", body: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"keyword_lookup","arguments":{"keyword":"  "}}}`,
			wantStatus: 200, wantCode: -32602, wantInBody: `"data":{"code":"missing_q"}`},
		{name: "arguments missing", body: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"keyword_lookup"}}`, wantStatus: 200, wantCode: -32602},

		// One message per POST: batches are refused whole, whatever they hold.
		{name: "batch", body: `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/list"}]`, wantStatus: 400, problem: CodeInvalidBody, wantInBody: "batch"},
		{name: "batch of one", body: " \n\t[" + ping + "]", wantStatus: 400, problem: CodeInvalidBody},
		{name: "batch of notifications", body: `[{"jsonrpc":"2.0","method":"notifications/initialized"}]`, wantStatus: 400, problem: CodeInvalidBody},
		{name: "batch of 2025-03-26", body: `[` + ping + `]`, header: http.Header{"Mcp-Protocol-Version": {"2025-03-26"}}, wantStatus: 400, problem: CodeInvalidBody},
		{name: "empty batch", body: `[]`, wantStatus: 400, problem: CodeInvalidBody},

		// Malformed messages: a problem document with the SDK's words.
		{name: "parse error", body: `{"jsonrpc":`, wantStatus: 400, problem: CodeInvalidBody, wantInBody: "malformed"},
		{name: "empty body", body: ``, wantStatus: 400, problem: CodeInvalidBody},
		{name: "not an object", body: `"ping"`, wantStatus: 400, problem: CodeInvalidBody},
		{name: "wrong version", body: `{"jsonrpc":"1.0","id":1,"method":"ping"}`, wantStatus: 400, problem: CodeInvalidBody},
		{name: "null id", body: `{"jsonrpc":"2.0","id":null,"method":"ping"}`, wantStatus: 400, problem: CodeInvalidBody},
		{name: "object id", body: `{"jsonrpc":"2.0","id":{},"method":"ping"}`, wantStatus: 400, problem: CodeInvalidBody},
		{name: "unknown method", body: `{"jsonrpc":"2.0","id":7,"method":"nope/nope"}`, wantStatus: 400, problem: CodeInvalidBody, wantInBody: "nope/nope"},
		{name: "initialize without params", body: `{"jsonrpc":"2.0","id":1,"method":"initialize"}`, wantStatus: 400, problem: CodeInvalidBody},
		{name: "huge body", body: `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", agent.MaxMCPBody) + `"}}`, wantStatus: 413, problem: CodeBodyTooLarge},
		{name: "form body", body: ping, header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, wantStatus: 415, problem: CodeInvalidBody},
		{name: "no Accept", body: ping, header: http.Header{"Accept": nil}, wantStatus: 200},
		{name: "Accept without JSON", body: ping, header: http.Header{"Accept": {"text/html"}}, wantStatus: 400, problem: CodeInvalidBody},
		{name: "unsupported protocol header", body: ping, header: http.Header{"Mcp-Protocol-Version": {"2024-01-01"}}, wantStatus: 400, problem: CodeInvalidBody, wantInBody: "2025-06-18"},

		// The Origin rule (mcp_origin_test.go has the whole table).
		{name: "origin matching host (DNS rebinding)", body: ping, header: http.Header{"Origin": {"https://kwdata.example"}}, wantStatus: 403, problem: CodeForbiddenOrigin},
		{name: "localhost origin", body: ping, header: http.Header{"Origin": {"http://localhost:6274"}}, wantStatus: 200},

		// A bad key is refused on every message, not only on tools/call.
		{name: "invalid key", body: call, header: http.Header{"Authorization": {"Bearer nope"}},
			setup: func(ds *demoServer) { ds.access.err = ErrInvalidKey }, wantStatus: 401, problem: CodeInvalidKey},
		{name: "invalid key on initialize", body: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`,
			header: http.Header{"Authorization": {"Bearer nope"}}, setup: func(ds *demoServer) { ds.access.err = ErrInvalidKey }, wantStatus: 401, problem: CodeInvalidKey},
		{name: "invalid key on ping", body: ping,
			header: http.Header{"X-Api-Key": {"nope"}}, setup: func(ds *demoServer) { ds.access.err = ErrInvalidKey }, wantStatus: 401, problem: CodeInvalidKey},
		{name: "invalid key on tools/list", body: `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
			header: http.Header{"Authorization": {"Bearer nope"}}, setup: func(ds *demoServer) { ds.access.err = ErrInvalidKey }, wantStatus: 401, problem: CodeInvalidKey},
		{name: "invalid key on a notification", body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			header: http.Header{"Authorization": {"Bearer nope"}}, setup: func(ds *demoServer) { ds.access.err = ErrInvalidKey }, wantStatus: 401, problem: CodeInvalidKey},
		{name: "invalid key on a batch", body: `[` + ping + `]`,
			header: http.Header{"Authorization": {"Bearer nope"}}, setup: func(ds *demoServer) { ds.access.err = ErrInvalidKey }, wantStatus: 401, problem: CodeInvalidKey},
		{name: "key revoked before the tool call", body: call, header: http.Header{"Authorization": {"Bearer kw_revoked"}},
			setup: func(ds *demoServer) {
				ds.Server = New(Options{Index: ds.index, Access: &revokingAccess{}, Logger: slog.New(slog.DiscardHandler)})
			}, wantStatus: 401, problem: CodeInvalidKey},
		{name: "no key is not checked", body: ping, setup: func(ds *demoServer) { ds.access.err = ErrInvalidKey }, wantStatus: 200},

		{name: "no index", body: call, setup: func(ds *demoServer) { ds.index.OK = false }, wantStatus: 200, wantInBody: `"isError":true`},
		{name: "internal failure", body: call, setup: func(ds *demoServer) { ds.index.Err = errors.New("disk on fire") }, wantStatus: 200, wantCode: -32603},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := newDemoServer(t)
			if tt.setup != nil {
				tt.setup(ds)
			}
			w := mcpPost(t, ds, tt.body, tt.header)
			if w.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", w.Code, tt.wantStatus, w.Body)
			}
			body := w.Body.String()
			if strings.Contains(body, "disk on fire") {
				t.Errorf("the cause reached the client: %s", body)
			}
			if tt.wantInBody != "" && !strings.Contains(body, tt.wantInBody) {
				t.Errorf("answer %s lacks %s", body, tt.wantInBody)
			}
			switch {
			case w.Code == 202:
				if body != "" {
					t.Errorf("202 with a body: %q", body)
				}
				return
			case tt.problem != "":
				checkProblem(t, w, tt.problem)
				return
			}
			var resp struct {
				JSONRPC string              `json:"jsonrpc"`
				ID      json.RawMessage     `json:"id"`
				Error   *struct{ Code int } `json:"error"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &resp); err != nil || resp.JSONRPC != "2.0" || resp.ID == nil {
				t.Fatalf("not a JSON-RPC answer: %v %s", err, body)
			}
			switch {
			case tt.wantCode == 0 && resp.Error != nil:
				t.Errorf("error %+v", resp.Error)
			case tt.wantCode != 0 && (resp.Error == nil || resp.Error.Code != tt.wantCode):
				t.Errorf("answer %s, want error %d", body, tt.wantCode)
			}
		})
	}
}

// TestMCPCountsThroughAccess: a tool call counts like the HTTP lookup it
// stands for, and the RateLimit fields of the count reach the HTTP answer.
func TestMCPCountsThroughAccess(t *testing.T) {
	tests := []struct {
		name      string
		args      string
		tool      string
		committed string
	}{
		{"found", `{"keyword":"running shoes"}`, "keyword_lookup", "[1]"},
		{"not found", `{"keyword":"running sandals"}`, "keyword_lookup", "[1]"},
		{"bulk", `{"keywords":["running shoes","running sandals","","x"]}`, "keyword_lookup_bulk", "[3]"},
		{"bulk of invalid keywords", `{"keywords":["",""]}`, "keyword_lookup_bulk", "null"},
		{"bad arguments", `{"keyword":""}`, "keyword_lookup", "null"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := newDemoServer(t)
			w := mcpPost(t, ds, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+tt.tool+`","arguments":`+tt.args+`}}`, nil)
			if w.Code != 200 {
				t.Fatalf("status %d: %s", w.Code, w.Body)
			}
			ds.access.mu.Lock()
			defer ds.access.mu.Unlock()
			if got := mustJSON(ds.access.committed); got != tt.committed {
				t.Errorf("committed %s, want %s", got, tt.committed)
			}
			if counted := tt.committed != "null"; (w.Header().Get("RateLimit") != "") != counted {
				t.Errorf("RateLimit %q on an answer that counted %s", w.Header().Get("RateLimit"), tt.committed)
			}
		})
	}
}

func TestMCPOtherMethodsAre405(t *testing.T) {
	ds := newDemoServer(t)
	for _, m := range []string{"GET", "DELETE", "PUT"} {
		w := do(t, ds, m, "/mcp", http.Header{"Accept": {"text/event-stream"}})
		if w.Code != 405 || w.Header().Get("Allow") != "POST" {
			t.Errorf("%s /mcp: status %d Allow %q", m, w.Code, w.Header().Get("Allow"))
		}
	}
}

func TestMCPToolsListGolden(t *testing.T) {
	ds := newDemoServer(t)
	w := mcpPost(t, ds, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, nil)
	if w.Code != 200 {
		t.Fatalf("status %d", w.Code)
	}
	golden(t, "mcp_tools_list.json", w.Body.Bytes())
}

// FuzzMCPRequest posts arbitrary bodies to the MCP endpoint: never a 500,
// never a panic, and always a JSON answer (a JSON-RPC message or a problem
// document), an event stream, or an empty 202.
func FuzzMCPRequest(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"keyword_lookup","arguments":{"keyword":"running shoes","country":"us"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"keyword_lookup_bulk","arguments":{"keywords":["a","running shoes",""]}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true}}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":2,"result":{}}]`,
		`{"jsonrpc":"2.0","id":1e400,"method":"ping"}`, `[]`, `[[]]`, `null`, `{`, "\xff", `{"id":-0}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"keyword_lookup","arguments":{"keyword":"\ud800"}}}`,
	} {
		f.Add(seed)
	}
	ds := newDemoServer(f)
	ds.Server.Log = slog.New(slog.DiscardHandler)
	f.Fuzz(func(t *testing.T, body string) {
		w := mcpPost(t, ds, body, nil)
		ct := w.Header().Get("Content-Type")
		switch {
		case w.Code >= 500:
			t.Fatalf("status %d for %q: %s", w.Code, body, w.Body)
		case w.Code == 202:
			if w.Body.Len() != 0 {
				t.Fatalf("202 with a body for %q", body)
			}
		case ct == "text/event-stream":
		case !json.Valid(w.Body.Bytes()):
			t.Fatalf("answer to %q is not JSON: %q", body, w.Body)
		}
	})
}

// toolResult is the result of tools/call as a test reads it.
type toolResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
}

// brokenBody fails after its first bytes, as a body does whose client sent
// a bad chunk or fewer bytes than its Content-Length.
type brokenBody struct{ sent bool }

func (b *brokenBody) Read(p []byte) (int, error) {
	if b.sent {
		return 0, io.ErrUnexpectedEOF
	}
	b.sent = true
	return copy(p, `{"jsonrpc":"2.0","id":1,`), nil
}

// TestMCPBrokenBody: a body the client breaks is the client's fault, a
// 400, never a 500; a client that is gone gets nothing and counts apart.
func TestMCPBrokenBody(t *testing.T) {
	ds := newDemoServer(t)
	r := httptest.NewRequest("POST", "/mcp", &brokenBody{})
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	ds.ServeHTTP(w, r)
	if w.Code != 400 {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	checkProblem(t, w, CodeInvalidBody)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r = httptest.NewRequestWithContext(ctx, "POST", "/mcp", &brokenBody{})
	r.Header.Set("Content-Type", "application/json")
	w = httptest.NewRecorder()
	ds.ServeHTTP(w, r)
	if w.Code != web.StatusClientClosed {
		t.Errorf("client gone: status %d, want %d", w.Code, web.StatusClientClosed)
	}
	if strings.Contains(ds.log.String(), "level=ERROR") {
		t.Errorf("a broken body was logged as an error:\n%s", ds.log)
	}
}

// TestMCPRegisterTools: an agent signs its user up with the two tools;
// refusals are tool errors the model can read and relay.
func TestMCPRegisterTools(t *testing.T) {
	ds := newDemoServer(t)
	call := func(name, args string) (text string, isError bool) {
		t.Helper()
		w := mcpPost(t, ds, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"`+name+`","arguments":`+args+`}}`, nil)
		var a struct {
			Result *struct {
				IsError bool
				Content []struct{ Text string }
			}
		}
		if err := json.Unmarshal(w.Body.Bytes(), &a); err != nil || a.Result == nil || len(a.Result.Content) == 0 {
			t.Fatalf("%s: %d %s", name, w.Code, w.Body)
		}
		return a.Result.Content[0].Text, a.Result.IsError
	}
	text, isErr := call("register_request_code", `{"email": "Ada@Example.com"}`)
	if isErr || !strings.Contains(text, `"status":"code_sent"`) || !strings.Contains(text, "register_verify") {
		t.Errorf("register_request_code: %s", text)
	}
	if len(ds.mailer.sent) != 1 || !strings.Contains(ds.mailer.sent[0].Text, "424242") {
		t.Fatalf("mail %+v", ds.mailer.sent)
	}
	text, isErr = call("register_verify", `{"email": "ada@example.com", "code": "424242"}`)
	if isErr || !strings.Contains(text, `"key":"kw_live_`) {
		t.Errorf("register_verify: %s", text)
	}
	ds.registrar.err = ErrCodeInvalid
	if text, isErr = call("register_verify", `{"email": "ada@example.com", "code": "1"}`); !isErr || !strings.Contains(text, "POST /v1/register") {
		t.Errorf("a wrong code: %v %s", isErr, text)
	}
	if text, isErr = call("register_request_code", `{"email": "nope"}`); !isErr || !strings.Contains(text, "not valid") {
		t.Errorf("a bad address: %v %s", isErr, text)
	}
	ds.registrar.err = nil
	ds.mailer.err = errors.New("smtp down")
	if text, isErr = call("register_request_code", `{"email": "ada@example.com"}`); !isErr || strings.Contains(text, "smtp down") {
		t.Errorf("mail down: %v %s", isErr, text)
	}
}
