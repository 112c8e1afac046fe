package serve

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

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

// connectMCP connects the official Go SDK client to endpoint.
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

func TestMCPWithGoSDKClient(t *testing.T) {
	for _, version := range []string{"", "2025-06-18", "2025-03-26"} {
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
				want = "2025-11-25" // the SDK probes a newer version, then falls back
			}
			if res.ProtocolVersion != want || res.ServerInfo.Name != "kwdata" || res.Capabilities.Tools == nil {
				t.Errorf("initialize result %+v", res)
			}
			ctx := context.Background()
			if err := cs.Ping(ctx, nil); err != nil {
				t.Errorf("ping: %v", err)
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
			if strings.Join(names, ",") != "keyword_lookup,keyword_lookup_bulk" {
				t.Errorf("tools %v", names)
			}

			out, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "keyword_lookup",
				Arguments: map[string]any{"keyword": "  Running SHOES ", "country": "US"}})
			if err != nil {
				t.Fatalf("tools/call: %v", err)
			}
			if out.IsError {
				t.Fatalf("tool error: %+v", out.Content)
			}
			sc, ok := out.StructuredContent.(map[string]any)
			if !ok {
				t.Fatalf("structuredContent %T %v", out.StructuredContent, out.StructuredContent)
			}
			if sc["keyword"] != "running shoes" || sc["country"] != "US" || sc["volume"] != float64(301000) ||
				sc["cpc"] != 1.23 || sc["competition"] != 0.87 || sc["updated"] != "2026-11-21" ||
				len(sc["trend"].([]any)) != 12 || len(sc["related"].([]any)) != 10 {
				t.Errorf("structuredContent %v", sc)
			}
			first := sc["related"].([]any)[0].(map[string]any)
			if first["keyword"] != "running shoe" || first["overlap"] != "16/20" || first["same_intent"] != true {
				t.Errorf("related[0] = %v", first)
			}
			text, ok := out.Content[0].(*mcp.TextContent)
			if !ok {
				t.Fatalf("content %T", out.Content[0])
			}
			var fromText map[string]any
			if err := json.Unmarshal([]byte(text.Text), &fromText); err != nil || mustJSON(fromText) != mustJSON(sc) {
				t.Errorf("text content is not the structured content: %v\n%s", err, text.Text)
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

			// Two single lookups and one bulk reservation of 2 (the empty
			// keyword is not counted).
			ds.access.mu.Lock()
			defer ds.access.mu.Unlock()
			// Every POST carries the key and checks it first, reserving
			// nothing (admits of 0).
			var reserved []int
			for _, n := range ds.access.admits {
				if n != 0 {
					reserved = append(reserved, n)
				}
			}
			if mustJSON(reserved) != "[1,2]" || mustJSON(ds.access.committed) != "[1,2]" || len(ds.access.admits) < 5 {
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
	text := out.Content[0].(*mcp.TextContent).Text
	// The clock is 2026-11-22 04:30 UTC; 19h30m later is 2026-11-23 00:00.
	for _, want := range []string{"The daily allowance of 20 lookups for this address is used up; it renews in 19h 30m (at 2026-11-23T00:00:00Z).", "POST /v1/register"} {
		if !strings.Contains(text, want) {
			t.Errorf("tool error %q lacks %q", text, want)
		}
	}
	if len(ds.access.committed) != 0 {
		t.Errorf("a refused call was counted: %v", ds.access.committed)
	}

	ds.access.err = nil
	out, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "keyword_lookup",
		Arguments: map[string]any{"keyword": "running sandals"}})
	if err != nil || !out.IsError || !strings.Contains(out.Content[0].(*mcp.TextContent).Text, "no data") {
		t.Errorf("unknown keyword: %v %+v", err, out)
	}
	if mustJSON(ds.access.committed) != "[1]" {
		t.Errorf("an unknown keyword was not counted: %v", ds.access.committed)
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
		{"too many keywords", map[string]any{"keywords": make([]string, 101)}, "keyword_lookup_bulk"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tt.tool, Arguments: tt.args})
			var werr *jsonrpc.Error
			if !errors.As(err, &werr) || werr.Code != -32602 {
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

func TestMCPRaw(t *testing.T) {
	tests := []struct {
		name       string
		body       string
		header     http.Header
		setup      func(ds *demoServer)
		wantStatus int
		wantCode   int    // JSON-RPC error code; 0 for a result
		wantInBody string // a substring of the answer
	}{
		{name: "ping", body: `{"jsonrpc":"2.0","id":"a","method":"ping"}`, wantStatus: 200, wantInBody: `{"jsonrpc":"2.0","id":"a","result":{}}`},
		{name: "initialize newest", body: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`,
			wantStatus: 200, wantInBody: `"protocolVersion":"2025-11-25"`},
		{name: "initialize 2025-03-26", body: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`,
			wantStatus: 200, wantInBody: `"protocolVersion":"2025-03-26"`},
		{name: "initialize unknown version gets newest", body: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-01-01","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`,
			wantStatus: 200, wantInBody: `"protocolVersion":"2025-11-25"`},
		{name: "initialize without params", body: `{"jsonrpc":"2.0","id":1,"method":"initialize"}`, wantStatus: 200, wantCode: -32602},
		{name: "unknown method", body: `{"jsonrpc":"2.0","id":7,"method":"resources/list"}`, wantStatus: 200, wantCode: -32601, wantInBody: `"id":7`},
		{name: "params not an object", body: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":[1]}`, wantStatus: 200, wantCode: -32602},
		{name: "tools/call without name", body: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{}}`, wantStatus: 200, wantCode: -32602},
		{name: "arguments missing", body: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"keyword_lookup"}}`, wantStatus: 200, wantCode: -32602},
		{name: "empty keyword", body: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"keyword_lookup","arguments":{"keyword":"  "}}}`,
			wantStatus: 200, wantCode: -32602, wantInBody: `"data":{"code":"missing_q"}`},
		{name: "notification", body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, wantStatus: 202},
		{name: "client response", body: `{"jsonrpc":"2.0","id":9,"result":{}}`, wantStatus: 202},
		{name: "batch", body: `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":2,"method":"nope"}]`,
			wantStatus: 200, wantInBody: `[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"error":{"code":-32601`},
		{name: "batch of notifications", body: `[{"jsonrpc":"2.0","method":"notifications/initialized"}]`, wantStatus: 202},
		{name: "empty batch", body: `[]`, wantStatus: 400, wantCode: -32600},
		{name: "parse error", body: `{"jsonrpc":`, wantStatus: 400, wantCode: -32700, wantInBody: `"id":null`},
		{name: "not an object", body: `"ping"`, wantStatus: 400, wantCode: -32600},
		{name: "wrong version", body: `{"jsonrpc":"1.0","id":1,"method":"ping"}`, wantStatus: 200, wantCode: -32600},
		{name: "null id", body: `{"jsonrpc":"2.0","id":null,"method":"ping"}`, wantStatus: 200, wantCode: -32600},
		{name: "object id", body: `{"jsonrpc":"2.0","id":{},"method":"ping"}`, wantStatus: 200, wantCode: -32600},
		{name: "no method", body: `{"jsonrpc":"2.0","id":1}`, wantStatus: 200, wantCode: -32600},
		{name: "origin matching host (DNS rebinding)", body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, header: http.Header{"Origin": {"https://kwdata.example"}}, wantStatus: 403},
		{name: "localhost origin", body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, header: http.Header{"Origin": {"http://localhost:6274"}}, wantStatus: 200},
		{name: "loopback origin", body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, header: http.Header{"Origin": {"http://127.0.0.1:3000"}}, wantStatus: 200},
		{name: "foreign origin", body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, header: http.Header{"Origin": {"https://kwdata.example.evil.test"}}, wantStatus: 403},
		{name: "null origin", body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, header: http.Header{"Origin": {"null"}}, wantStatus: 403},
		{name: "old protocol header", body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, header: http.Header{"Mcp-Protocol-Version": {"2024-11-05"}}, wantStatus: 400},
		{name: "future protocol header", body: `{"jsonrpc":"2.0","id":1,"method":"server/discover"}`, header: http.Header{"Mcp-Protocol-Version": {"2099-01-01"}}, wantStatus: 200, wantCode: -32601},
		{name: "invalid key", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"keyword_lookup","arguments":{"keyword":"running shoes"}}}`,
			header: http.Header{"Authorization": {"Bearer nope"}}, setup: func(ds *demoServer) { ds.access.err = ErrInvalidKey }, wantStatus: 401},
		// A bad key is refused on every method, not only on tools/call.
		{name: "invalid key on initialize", body: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`,
			header: http.Header{"Authorization": {"Bearer nope"}}, setup: func(ds *demoServer) { ds.access.err = ErrInvalidKey }, wantStatus: 401},
		{name: "invalid key on ping", body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`,
			header: http.Header{"X-Api-Key": {"nope"}}, setup: func(ds *demoServer) { ds.access.err = ErrInvalidKey }, wantStatus: 401},
		{name: "invalid key on tools/list", body: `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
			header: http.Header{"Authorization": {"Bearer nope"}}, setup: func(ds *demoServer) { ds.access.err = ErrInvalidKey }, wantStatus: 401},
		{name: "invalid key on a notification", body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			header: http.Header{"Authorization": {"Bearer nope"}}, setup: func(ds *demoServer) { ds.access.err = ErrInvalidKey }, wantStatus: 401},
		{name: "no key is not checked", body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`,
			setup: func(ds *demoServer) { ds.access.err = ErrInvalidKey }, wantStatus: 200},
		{name: "no index", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"keyword_lookup","arguments":{"keyword":"running shoes"}}}`,
			setup: func(ds *demoServer) { ds.index.ok = false }, wantStatus: 200, wantInBody: `"isError":true`},
		{name: "internal failure", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"keyword_lookup","arguments":{"keyword":"running shoes"}}}`,
			setup: func(ds *demoServer) { ds.index.err = errors.New("disk on fire") }, wantStatus: 200, wantCode: -32603},
		{name: "huge body", body: `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 2<<20) + `"}}`, wantStatus: 413},
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
			switch {
			case w.Code == 202:
				if body != "" {
					t.Errorf("202 with a body: %q", body)
				}
				return
			case w.Code >= 400 && tt.wantCode == 0:
				var p problemDoc
				if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil || p.Status != w.Code {
					t.Errorf("not a problem document: %s", body)
				}
				return
			}
			if tt.wantInBody != "" && !strings.Contains(body, tt.wantInBody) {
				t.Errorf("answer %s lacks %s", body, tt.wantInBody)
			}
			var resp struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Error   *rpcError       `json:"error"`
			}
			if strings.HasPrefix(body, "[") {
				return
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

func TestMCPGetIs405(t *testing.T) {
	ds := newDemoServer(t)
	w := do(t, ds, "GET", "/mcp", http.Header{"Accept": {"text/event-stream"}})
	if w.Code != 405 || w.Header().Get("Allow") != "POST" {
		t.Errorf("GET /mcp: status %d Allow %q", w.Code, w.Header().Get("Allow"))
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
// never a panic, and always a JSON answer or an empty 202.
func FuzzMCPRequest(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"keyword_lookup","arguments":{"keyword":"running shoes","country":"us"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"keyword_lookup_bulk","arguments":{"keywords":["a","running shoes",""]}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":2,"result":{}}]`,
		`{"jsonrpc":"2.0","id":1e400,"method":"ping"}`, `[]`, `[[]]`, `null`, `{`, "\xff", `{"id":-0}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"keyword_lookup","arguments":{"keyword":"\ud800"}}}`,
	} {
		f.Add(seed)
	}
	ds := newDemoServer(f)
	ds.Server.log = slog.New(slog.DiscardHandler)
	f.Fuzz(func(t *testing.T, body string) {
		w := mcpPost(t, ds, body, nil)
		switch {
		case w.Code >= 500:
			t.Fatalf("status %d for %q: %s", w.Code, body, w.Body)
		case w.Code == 202:
			if w.Body.Len() != 0 {
				t.Fatalf("202 with a body for %q", body)
			}
		case !json.Valid(w.Body.Bytes()):
			t.Fatalf("answer to %q is not JSON: %q", body, w.Body)
		}
	})
}
