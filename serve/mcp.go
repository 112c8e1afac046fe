package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// The MCP endpoint (POST /mcp) speaks the Model Context Protocol's
// Streamable HTTP transport in its simplest form: stateless (no session
// id), one JSON answer per POST (no event streams), no server-initiated
// messages, so GET /mcp is 405. It is written by hand because the protocol
// surface is four methods, and a hand-written loop keeps counting and
// errors on the same path as GET /v1/keyword.

// mcpVersions are the MCP protocol versions the endpoint speaks, newest
// first. initialize answers with the client's version when it is one of
// them, else with the newest.
var mcpVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26"}

// maxMCPBody bounds the body of POST /mcp.
const maxMCPBody = 1 << 20

// JSON-RPC 2.0 error codes.
const (
	rpcParseError     = -32700
	rpcInvalidRequest = -32600
	rpcMethodNotFound = -32601
	rpcInvalidParams  = -32602
	rpcInternalError  = -32603
)

// rpcMessage is one JSON-RPC message from the client: a request (method and
// id), a notification (method, no id) or a response (result or error).
type rpcMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

// rpcResponse is the endpoint's answer to one request.
type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// decodeMCP splits a POST /mcp body into its messages. A body is one
// message or, as the 2025-03-26 revision allows, a non-empty array of them.
// A body that is not JSON, or not objects, is a parse or invalid-request
// error for the whole POST.
func decodeMCP(body []byte) (msgs []rpcMessage, batch bool, rerr *rpcError) {
	body = bytes.TrimSpace(body)
	if !json.Valid(body) {
		return nil, false, &rpcError{Code: rpcParseError, Message: "Parse error: the body is not valid JSON."}
	}
	if len(body) > 0 && body[0] == '[' {
		var raws []json.RawMessage
		if err := json.Unmarshal(body, &raws); err != nil || len(raws) == 0 {
			return nil, true, &rpcError{Code: rpcInvalidRequest, Message: "Invalid Request: a batch must be a non-empty array of JSON-RPC messages."}
		}
		msgs = make([]rpcMessage, len(raws))
		for i, raw := range raws {
			if err := json.Unmarshal(raw, &msgs[i]); err != nil {
				msgs[i] = rpcMessage{JSONRPC: "invalid"} // answered with an invalid-request error
			}
		}
		return msgs, true, nil
	}
	var m rpcMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, false, &rpcError{Code: rpcInvalidRequest, Message: "Invalid Request: the body must be a JSON-RPC 2.0 message object."}
	}
	return []rpcMessage{m}, false, nil
}

// validID reports whether a request id is a string or a number; MCP
// forbids null.
func validID(id json.RawMessage) bool {
	if len(id) == 0 {
		return false
	}
	switch c := id[0]; {
	case c == '"':
		var s string
		return json.Unmarshal(id, &s) == nil
	case c == '-' || '0' <= c && c <= '9':
		var n json.Number
		return json.Unmarshal(id, &n) == nil
	}
	return false
}

// handleMCP answers POST /mcp.
func (s *Server) handleMCP(w http.ResponseWriter, r *http.Request) error {
	if err := s.checkOrigin(r); err != nil {
		return err
	}
	if v := r.Header.Get("Mcp-Protocol-Version"); v != "" && !slices.Contains(mcpVersions, v) && v < mcpVersions[0] {
		// A version newer than any known is let through, so that a client
		// may probe with it and fall back when the method is unknown.
		return HTTPError{Status: http.StatusBadRequest, Code: CodeInvalidBody,
			Msg: fmt.Sprintf("MCP-Protocol-Version %q is not supported; this server speaks %s.", v, strings.Join(mcpVersions, ", "))}
	}
	body, err := readBody(r, maxMCPBody)
	if err != nil {
		return err
	}
	msgs, batch, rerr := decodeMCP(body)
	if rerr != nil {
		return writeRPC(w, http.StatusBadRequest, rpcResponse{JSONRPC: "2.0", ID: json.RawMessage("null"), Error: rerr})
	}
	if r.Header["Authorization"] != nil || r.Header["X-Api-Key"] != nil {
		// A bad key is refused whatever the POST asks (initialize, ping,
		// tools/list), so a client learns that its key is wrong when it
		// connects, not at its first tool call. Checking counts nothing.
		t, err := s.access.Admit(r.Context(), r, s.clientAddr(r), 0)
		if err != nil {
			return fmt.Errorf("cannot check the API key of an MCP request: %w", err)
		}
		t.Cancel()
	}
	var answers []rpcResponse
	for i := range msgs {
		resp, answer, err := s.mcpMessage(w, r, &msgs[i])
		if err != nil {
			return err // an HTTP-level refusal, such as an invalid API key
		}
		if answer {
			answers = append(answers, resp)
		}
	}
	switch {
	case len(answers) == 0:
		// Only notifications and responses: accepted, nothing to say.
		w.Header().Set("Content-Length", "0")
		w.WriteHeader(http.StatusAccepted)
		return nil
	case batch:
		return writeRPC(w, http.StatusOK, answers)
	}
	return writeRPC(w, http.StatusOK, answers[0])
}

// writeRPC writes a JSON-RPC answer.
func writeRPC(w http.ResponseWriter, status int, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("cannot encode a JSON-RPC answer: %w", err)
	}
	body = append(body, '\n')
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(body)
	return nil
}

// checkOrigin refuses browser requests from other sites (403), which
// protects the endpoint from DNS rebinding: a page of evil.example whose name
// is made to resolve to this server sends Host and Origin both
// evil.example, so matching the Origin against Host proves nothing.
// Programs send no Origin and may call; so may pages on a loopback host
// (localhost, 127.0.0.0/8, ::1), which only the machine itself can serve,
// and pages of the origins in Options.AllowedOrigins.
func (s *Server) checkOrigin(r *http.Request) error {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return nil
	}
	if u, err := parseOrigin(origin); err == nil && (loopbackHost(u.Hostname()) || s.origins[u.String()]) {
		return nil
	}
	if len(origin) > 64 {
		origin = origin[:64] + "…"
	}
	return HTTPError{Status: http.StatusForbidden, Code: CodeForbiddenOrigin,
		Msg: fmt.Sprintf("Origin %q may not call this MCP endpoint; call it from a program (no Origin) or from a page on localhost.", origin)}
}

// loopbackHost reports whether host (no port, no brackets) names the
// machine itself.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}

// CanonicalOrigin checks that s is a web origin, "scheme://host[:port]"
// with scheme http or https (as --allowed-origin takes them), and returns
// it in the form Options.AllowedOrigins compares.
func CanonicalOrigin(s string) (string, error) {
	u, err := parseOrigin(strings.TrimSpace(s))
	if err != nil {
		return "", err
	}
	return u.String(), nil
}

// parseOrigin parses a web origin, "scheme://host[:port]" with scheme http
// or https, and returns it lower-cased with the scheme's default port
// dropped, so equal origins compare equal as strings.
func parseOrigin(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, err
	}
	u.Scheme, u.Host = strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return nil, fmt.Errorf("%q is not an origin; use scheme://host[:port], e.g. https://kwdata.example.com", s)
	}
	if p := u.Port(); (u.Scheme == "http" && p == "80") || (u.Scheme == "https" && p == "443") {
		u.Host = strings.TrimSuffix(u.Host, ":"+p)
	}
	u.Path = ""
	return u, nil
}

// mcpMessage handles one message. answer is false for notifications and
// client responses, which get no answer. A non-nil error refuses the whole
// POST at the HTTP level.
func (s *Server) mcpMessage(w http.ResponseWriter, r *http.Request, m *rpcMessage) (resp rpcResponse, answer bool, err error) {
	resp = rpcResponse{JSONRPC: "2.0", ID: m.ID}
	fail := func(code int, msg string, data any) (rpcResponse, bool, error) {
		resp.Result, resp.Error = nil, &rpcError{Code: code, Message: msg, Data: data}
		return resp, true, nil
	}
	if m.JSONRPC != "2.0" {
		resp.ID = json.RawMessage("null")
		return fail(rpcInvalidRequest, `Invalid Request: "jsonrpc" must be "2.0".`, nil)
	}
	if m.Method == "" {
		if m.ID != nil && (m.Result != nil || m.Error != nil) {
			return resp, false, nil // a response to a request this server never sends
		}
		if !validID(m.ID) {
			resp.ID = json.RawMessage("null")
		}
		return fail(rpcInvalidRequest, `Invalid Request: "method" is missing.`, nil)
	}
	if m.ID == nil {
		return resp, false, nil // a notification, e.g. notifications/initialized
	}
	if !validID(m.ID) {
		resp.ID = json.RawMessage("null")
		return fail(rpcInvalidRequest, `Invalid Request: "id" must be a string or a number.`, nil)
	}
	if len(m.Params) > 0 && m.Params[0] != '{' && string(m.Params) != "null" {
		return fail(rpcInvalidParams, `Invalid params: "params" must be an object.`, nil)
	}
	switch m.Method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		if err := unmarshalParams(m.Params, &p); err != nil || p.ProtocolVersion == "" {
			return fail(rpcInvalidParams, `Invalid params: initialize needs "protocolVersion", "capabilities" and "clientInfo".`, nil)
		}
		v := mcpVersions[0]
		if slices.Contains(mcpVersions, p.ProtocolVersion) {
			v = p.ProtocolVersion
		}
		resp.Result = map[string]any{
			"protocolVersion": v,
			"capabilities":    map[string]any{"tools": map[string]any{"listChanged": false}},
			"serverInfo":      map[string]any{"name": "kwdata", "title": "kwdata keyword data", "version": "1.0.0"},
			"instructions":    mcpInstructions,
		}
	case "ping":
		resp.Result = struct{}{}
	case "tools/list":
		resp.Result = map[string]any{"tools": mcpTools}
	case "tools/call":
		var p struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if err := unmarshalParams(m.Params, &p); err != nil || p.Name == "" {
			return fail(rpcInvalidParams, `Invalid params: tools/call needs "name" and "arguments".`, nil)
		}
		result, rerr, err := s.callTool(w, r, p.Name, p.Arguments)
		if err != nil {
			return resp, true, err
		}
		if rerr != nil {
			return fail(rerr.Code, rerr.Message, rerr.Data)
		}
		resp.Result = result
	default:
		return fail(rpcMethodNotFound, fmt.Sprintf("Method not found: %q; this server answers initialize, ping, tools/list and tools/call.", truncate(m.Method, 64)), nil)
	}
	return resp, true, nil
}

func unmarshalParams(params json.RawMessage, v any) error {
	if len(params) == 0 || string(params) == "null" {
		return errors.New("no params")
	}
	return json.Unmarshal(params, v)
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// toolResult is the result of tools/call.
type toolResult struct {
	Content           []toolContent   `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError"`
}

type toolContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// toolError is a failed tool call: the model reads the text and may act
// on it (retry later, fix the spelling).
func toolError(msg string) toolResult {
	return toolResult{Content: []toolContent{{Type: "text", Text: msg}}, IsError: true}
}

// callTool runs a tool. Bad arguments are a JSON-RPC error (rerr); a
// lookup that cannot be answered (unknown keyword, allowance used up, no
// index) is a tool error the model can read; an invalid API key refuses
// the POST (err, 401).
func (s *Server) callTool(w http.ResponseWriter, r *http.Request, name string, args json.RawMessage) (toolResult, *rpcError, error) {
	badArgs := func(err error) *rpcError {
		var he HTTPError
		if errors.As(err, &he) {
			return &rpcError{Code: rpcInvalidParams, Message: "Invalid params: " + he.Msg, Data: map[string]string{"code": he.Code}}
		}
		return &rpcError{Code: rpcInvalidParams, Message: "Invalid params: " + err.Error()}
	}
	decode := func(v any) error {
		if len(args) == 0 || string(args) == "null" {
			return errors.New("arguments are missing")
		}
		dec := json.NewDecoder(bytes.NewReader(args))
		dec.DisallowUnknownFields()
		if err := dec.Decode(v); err != nil {
			return errors.New("arguments do not match the tool's input schema (" + jsonErrorText(err) + ")")
		}
		return nil
	}
	switch name {
	case "keyword_lookup":
		var a struct {
			Keyword *string `json:"keyword"`
			Country string  `json:"country"`
		}
		if err := decode(&a); err != nil {
			return toolResult{}, badArgs(err), nil
		}
		if a.Keyword == nil {
			return toolResult{}, badArgs(errors.New(`"keyword" is required`)), nil
		}
		q, err := normalizeInput(*a.Keyword)
		if err != nil {
			return toolResult{}, badArgs(err), nil
		}
		c, err := countryInput(a.Country)
		if err != nil {
			return toolResult{}, badArgs(err), nil
		}
		e, info, err := s.lookupOne(r.Context(), r, c, q, w.Header())
		if err != nil {
			return s.toolFailure(err)
		}
		doc := appendKeywordJSON(nil, &e, c.Code, dataDate(&e, info))
		doc = bytes.TrimSuffix(doc, []byte("\n"))
		return toolResult{Content: []toolContent{{Type: "text", Text: string(doc)}}, StructuredContent: doc}, nil, nil
	case "keyword_lookup_bulk":
		var a struct {
			Keywords []string `json:"keywords"`
			Country  string   `json:"country"`
		}
		if err := decode(&a); err != nil {
			return toolResult{}, badArgs(err), nil
		}
		switch {
		case len(a.Keywords) == 0:
			return toolResult{}, badArgs(errors.New(`"keywords" must hold 1 to 100 keywords`)), nil
		case len(a.Keywords) > MaxBulkKeywords:
			return toolResult{}, badArgs(fmt.Errorf(`"keywords" holds %d keywords; send at most %d per call`, len(a.Keywords), MaxBulkKeywords)), nil
		}
		c, err := countryInput(a.Country)
		if err != nil {
			return toolResult{}, badArgs(err), nil
		}
		items, info, err := s.bulkLookup(r, c, a.Keywords, w.Header())
		if err != nil {
			return s.toolFailure(err)
		}
		doc := appendBulkJSON(nil, items, c.Code, info)
		doc = bytes.TrimSuffix(doc, []byte("\n"))
		return toolResult{Content: []toolContent{{Type: "text", Text: string(doc)}}, StructuredContent: doc}, nil, nil
	}
	return toolResult{}, &rpcError{Code: rpcInvalidParams,
		Message: fmt.Sprintf("Unknown tool %q; tools/list names the tools (keyword_lookup, keyword_lookup_bulk).", truncate(name, 64))}, nil
}

// toolFailure turns a failed lookup into a tool error, a JSON-RPC internal
// error, or (invalid key) an HTTP refusal.
func (s *Server) toolFailure(err error) (toolResult, *rpcError, error) {
	var qe *QuotaError
	if errors.As(err, &qe) {
		// The words of the 429 problem, with the clock time of the reset
		// too: a model has no Retry-After field to read.
		reset, _ := s.quotaReset(qe)
		return toolError(quotaMessage(qe, reset)), nil, nil
	}
	he := classify(err)
	switch {
	case he.Status == http.StatusUnauthorized:
		return toolResult{}, nil, err
	case he.Status == http.StatusNotFound, he.Status == http.StatusServiceUnavailable, he.Status < 500:
		return toolError(he.Msg), nil, nil
	}
	s.log.Error("tool call failed", "err", err)
	return toolResult{}, &rpcError{Code: rpcInternalError, Message: "Internal error: the lookup failed; retrying may help."}, nil
}

// mcpInstructions tells a model what the server is for.
const mcpInstructions = "kwdata answers keyword search data: monthly search volume, cost per click (USD), " +
	"competition, a 12-month trend, the keyword's intent group and its 10 related keywords by search-result overlap. " +
	"Call keyword_lookup with a keyword and an ISO 3166-1 alpha-2 country (default us). " +
	"Each call counts as one lookup against the caller's allowance: 20 a day without a key, 500 a month with a free key " +
	"(send it as a Bearer token), unlimited on the paid tier."

// mcpTool is one entry of tools/list.
type mcpTool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema"`
	Annotations  map[string]any  `json:"annotations"`
}

// mcpTools are the tools. Their output schemas are the record schemas of
// the OpenAPI document, so the two descriptions cannot drift apart.
var mcpTools = []mcpTool{
	{
		Name:  "keyword_lookup",
		Title: "Keyword lookup",
		Description: "Look up one keyword in one country: monthly search volume, CPC in USD, competition (0-1), " +
			"the data date, its intent group, a 12-month trend (oldest first) and up to 10 related keywords " +
			"(overlap n/20 of shared top-20 search results). Counts as one lookup.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"keyword":{"type":"string","minLength":1,"description":"The keyword, e.g. \"running shoes\". Case and spacing do not matter; at most 80 characters and 10 words."},` +
			`"country":{"type":"string","default":"us","description":"ISO 3166-1 alpha-2 country code, either case, e.g. \"us\", \"gb\", \"de\". GET /v1/countries lists them."}},` +
			`"required":["keyword"],"additionalProperties":false}`),
		OutputSchema: openAPISchema("KeywordRecord"),
		Annotations:  map[string]any{"readOnlyHint": true, "openWorldHint": false, "idempotentHint": true},
	},
	{
		Name:  "keyword_lookup_bulk",
		Title: "Bulk keyword lookup",
		Description: "Look up 1 to 100 keywords of one country at once. Results come in request order, each with " +
			"the record or its own error. Counts one lookup per valid keyword; refused whole when the allowance cannot cover it.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"keywords":{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":100,"description":"The keywords, in the order the results should come."},` +
			`"country":{"type":"string","default":"us","description":"ISO 3166-1 alpha-2 country code, either case."}},` +
			`"required":["keywords"],"additionalProperties":false}`),
		OutputSchema: openAPISchema("BulkResponse"),
		Annotations:  map[string]any{"readOnlyHint": true, "openWorldHint": false, "idempotentHint": true},
	},
}
