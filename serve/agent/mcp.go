package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/serve/web"
)

// The MCP endpoint (POST /mcp) is the official Go SDK's Streamable HTTP
// server, stateless (no session id; every POST stands alone) and answering
// JSON rather than event streams. It speaks every protocol revision the SDK
// does. kwdata wraps it in what the SDK does not know about: the Origin
// rule, the API key check on every request, bounds on what one request may
// cost, problem documents for refusals at the HTTP level, and the two tools,
// which count lookups through the same Access path as GET /v1/keyword and
// return the very document it returns.
//
// What one POST may cost is settled before the SDK sees it:
//
//   - the body is at most MaxMCPBody bytes and is read before any work;
//   - it holds one JSON-RPC message: batches, which the 2025-06-18
//     revision removed, are refused, so one POST is one answer;
//   - at most mcpSlots() POSTs are inside the SDK at once, so a flood of
//     costly requests queues instead of taking every core and the memory of
//     a thousand answers at a time;
//   - the answer is at most MaxMCPAnswer bytes, enforced as it is written.
//
// With one message of at most 64 KiB, the largest answers are a
// keyword_lookup_bulk of 100 keywords (each record is bounded by the API's
// limits: 80-character keywords, 12 months, 10 related) and error messages that
// quote the request; TestMCPAnswerBound measures both against the bound.

// MaxMCPBody bounds the body of POST /mcp: one JSON-RPC message. A
// keyword_lookup_bulk call of 100 keywords of 80 characters, each one
// written as \u escapes, takes under 50 KiB.
const MaxMCPBody = 64 << 10

// MaxMCPAnswer is the most bytes one answer of POST /mcp may hold. The
// largest answer a request can cause is far below it (see
// TestMCPAnswerBound); an answer beyond it is a server bug, refused rather
// than sent.
const MaxMCPAnswer = 4 << 20

// mcpAbout is what the server is for, and mcpToolsText its tools: the
// start of both sets of instructions.
const (
	mcpAbout = "kwdata answers keyword search data: monthly search volume, cost per click (USD), " +
		"competition, a 12-month trend, the keyword's intent group and its 10 related keywords by search-result overlap. "
	mcpToolsText = "Tools: keyword_lookup looks up one keyword in one country (an ISO 3166-1 alpha-2 code, default us); " +
		"keyword_lookup_bulk looks up 1 to 100 keywords of one country at once; " +
		"intent_group lists the keywords that share a keyword's search intent; " +
		"keyword_explore finds the keywords holding some words, filtered and sorted, a page at a time (each keyword returned counts as a lookup). "
)

// mcpInstructions tells a model on POST /mcp what the server is for, every
// tool, and what a lookup costs; and, when agents can sign in (signIn is
// the URL of the sign-in endpoint), where to connect to do so.
func mcpInstructions(signIn string) string {
	t := mcpAbout + mcpToolsText +
		"register_request_code and register_verify get your user a free API key by a code mailed to them. " +
		"Each lookup counts against the caller's allowance: 20 a day without a key, 500 a month with a free key " +
		"(send it as a Bearer token), unlimited on the paid tier."
	if signIn != "" {
		t += " A client that can sign its user in (OAuth) connects to " + signIn +
			" instead, and its lookups count on the user's account."
	}
	return t
}

// mcpSignedInInstructions tells a model on POST /mcp/oauth the same, for a
// client signed in as an account: there is no key to get.
const mcpSignedInInstructions = mcpAbout + mcpToolsText +
	"You are signed in as your user's kwdata account: each lookup counts on it, 500 a month on the free tier, " +
	"unlimited on the paid tier, which your user subscribes to on the site's account page."

// mcpEndpoint is the SDK handler of POST /mcp and what bounds it.
type mcpEndpoint struct {
	handler http.Handler
	slots   chan struct{} // one token per POST inside the SDK
	waiting atomic.Int64  // POSTs waiting for a slot; tests wait on it
}

// newMCPEndpoint builds the SDK servers with kwdata's tools: one for
// POST /mcp, and one for requests of a signed-in account (POST
// /mcp/oauth), which lacks the sign-up tools: a key would be of no use to
// a client that already acts as the account.
func (s *Agent) newMCPEndpoint() *mcpEndpoint {
	sdkLog := slog.New(quietHandler{s.Log.Handler()}).With("component", "mcp")
	anon := s.newMCPServer(sdkLog, mcpInstructions(s.signIn), true)
	signedIn := s.newMCPServer(sdkLog, mcpSignedInInstructions, false)
	pick := func(r *http.Request) *mcp.Server {
		if _, ok := web.AccountFrom(r.Context()); ok {
			return signedIn
		}
		return anon
	}
	return &mcpEndpoint{
		handler: mcp.NewStreamableHTTPHandler(pick,
			&mcp.StreamableHTTPOptions{
				Stateless:           true,
				JSONResponse:        true,
				Logger:              sdkLog,
				MaxRequestBodyBytes: MaxMCPBody,
				// The SDK refuses a request reaching a loopback address with
				// another Host, against DNS rebinding; behind a reverse proxy
				// on the same machine that is every request. checkOrigin
				// covers rebinding instead: the browser's Origin is what a
				// rebinding page cannot choose.
				DisableLocalhostProtection: true,
			}),
		slots: make(chan struct{}, mcpSlots()),
	}
}

// newMCPServer builds one SDK server: the tools (the sign-up ones only
// when signup), with instructions.
func (s *Agent) newMCPServer(sdkLog *slog.Logger, instructions string, signup bool) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "kwdata", Title: "kwdata keyword data", Version: "1.0.0"},
		&mcp.ServerOptions{
			Instructions: instructions,
			Logger:       sdkLog,
			// Tools only: no logging, and a tool list that never changes.
			Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
		})
	for _, t := range mcpTools {
		if !signup && strings.HasPrefix(t.Name, "register_") {
			continue
		}
		var h mcp.ToolHandler
		switch t.Name {
		case "keyword_lookup":
			h = s.toolKeywordLookup
		case "keyword_lookup_bulk":
			h = s.toolKeywordLookupBulk
		case "intent_group":
			h = s.toolIntentGroup
		case "keyword_explore":
			h = s.toolKeywordExplore
		case "register_request_code":
			h = s.toolRegisterRequestCode
		case "register_verify":
			h = s.toolRegisterVerify
		}
		srv.AddTool(t, h)
	}
	return srv
}

// mcpSlots is how many POST /mcp requests may be inside the SDK at once:
// half the cores the process may use, at least one. The costliest request
// (keyword_lookup_bulk over 100 large records) is tens of milliseconds of
// CPU, almost all of it encoding the answer; were every core busy with
// them, a lookup would wait for the scheduler to preempt one, and a flood
// of them would take GET /v1/keyword from a millisecond to a second
// (BenchmarkMCPFlood). With the slots, the other half of the cores stays
// free for everything else.
func mcpSlots() int { return max(1, runtime.GOMAXPROCS(0)/2) }

// mcpCall is what a tool handler needs of the HTTP request it runs for:
// the request (its API key and client address) and the fields of the
// answer. The SDK runs tools on goroutines of its own, hence the lock.
type mcpCall struct {
	r *http.Request

	mu      sync.Mutex
	header  http.Header // RateLimit fields of counted lookups
	refusal error       // an invalid API key met by a tool: the POST is refused whole
}

type mcpCallKey struct{}

// setHeader adds the fields a Ticket set on h to the answer.
func (c *mcpCall) setHeader(h http.Header) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, v := range h {
		c.header[k] = v
	}
}

// handleMCP answers POST /mcp.
func (s *Agent) handleMCP(w http.ResponseWriter, r *http.Request) error {
	if err := s.checkOrigin(r); err != nil {
		return err
	}
	body, err := web.ReadBody(r, MaxMCPBody)
	if err != nil {
		var he web.HTTPError
		if errors.As(err, &he) {
			return err
		}
		if ctxErr := r.Context().Err(); ctxErr != nil {
			// The client is gone; whatever the read said, nobody reads
			// the answer.
			return fmt.Errorf("cannot read an MCP request body: %w (%w)", ctxErr, err)
		}
		return web.HTTPError{Status: http.StatusBadRequest, Code: web.CodeInvalidBody,
			Msg: "The request body could not be read to its end; send it again.", Err: err}
	}
	if r.Header["Authorization"] != nil || r.Header["X-Api-Key"] != nil {
		// A bad key is refused whatever the POST asks (initialize, ping,
		// tools/list), so a client learns that its key is wrong when it
		// connects, not at its first tool call. Checking counts nothing.
		t, err := s.Access.Admit(r.Context(), r, s.ClientAddr(r), 0)
		if err != nil {
			return fmt.Errorf("cannot check the API key of an MCP request: %w", err)
		}
		t.Cancel()
	}
	if b := bytes.TrimLeft(body, " \t\r\n"); len(b) > 0 && b[0] == '[' {
		return web.HTTPError{Status: http.StatusBadRequest, Code: web.CodeInvalidBody,
			Msg: "The body is a JSON-RPC batch; send one message per POST (protocol revision 2025-06-18 removed batches)."}
	}

	call := &mcpCall{header: http.Header{}}
	r2 := r.WithContext(context.WithValue(r.Context(), mcpCallKey{}, call))
	call.r = r2
	r2.Body = io.NopCloser(bytes.NewReader(body))
	r2.ContentLength = int64(len(body))
	if len(r.Header.Values("Accept")) == 0 {
		// No Accept means any media type (RFC 9110 §12.5.1); the SDK
		// wants the two the transport uses named.
		r2.Header = r.Header.Clone()
		r2.Header.Set("Accept", "application/json, text/event-stream")
	}
	ans, err := s.mcp.serve(r2)
	if err != nil {
		return err
	}

	call.mu.Lock()
	refusal := call.refusal
	call.mu.Unlock()
	switch {
	case refusal != nil:
		return refusal
	case ans.over:
		return fmt.Errorf("cannot send an MCP answer of more than %d bytes", MaxMCPAnswer)
	case ans.status >= 400 && !strings.HasPrefix(ans.header.Get("Content-Type"), "application/json"):
		// The SDK refuses in plain text; kwdata refuses in problem
		// documents, with the SDK's words as the detail.
		return sdkRefusal(ans.status, ans.body.Bytes())
	}
	h := w.Header()
	for k, v := range ans.header {
		h[k] = v
	}
	call.mu.Lock()
	for k, v := range call.header {
		h[k] = v
	}
	call.mu.Unlock()
	h["Cache-Control"] = web.CacheControlPrivate // whatever the SDK said: tool calls are counted
	h.Set("Content-Length", strconv.Itoa(ans.body.Len()))
	if ans.status == 0 {
		ans.status = http.StatusOK
	}
	w.WriteHeader(ans.status)
	w.Write(ans.body.Bytes())
	return nil
}

// serve runs the SDK on r once a slot is free and returns its answer. The
// slot is given back before the answer is sent, so a client that reads
// slowly holds no slot; the answer then waits in the socket buffers.
func (ep *mcpEndpoint) serve(r *http.Request) (*mcpAnswer, error) {
	ep.waiting.Add(1)
	select {
	case ep.slots <- struct{}{}:
		ep.waiting.Add(-1)
		defer func() { <-ep.slots }()
	case <-r.Context().Done():
		ep.waiting.Add(-1)
		return nil, fmt.Errorf("cannot start an MCP request: %w", r.Context().Err())
	}
	ans := &mcpAnswer{header: http.Header{}}
	ep.handler.ServeHTTP(ans, r)
	return ans, nil
}

// sdkRefusal turns a plain-text refusal of the SDK into an HTTPError.
func sdkRefusal(status int, text []byte) web.HTTPError {
	msg := strings.TrimSpace(strings.ToValidUTF8(string(text), "\uFFFD"))
	msg = strings.TrimPrefix(msg, "Bad Request: ")
	if len(msg) > 300 {
		cut := 300
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + "…"
	}
	if msg != "" && !strings.HasSuffix(msg, ".") && !strings.HasSuffix(msg, "…") {
		msg += "."
	}
	code := web.CodeInvalidBody
	switch status {
	case http.StatusRequestEntityTooLarge:
		code = web.CodeBodyTooLarge
	case http.StatusNotFound:
		code = web.CodeNotFound
	case http.StatusMethodNotAllowed:
		code = web.CodeMethodNotAllowed
	}
	if status < 400 || status >= 500 {
		// A plain-text 5xx is the SDK failing, not the client.
		return web.HTTPError{Status: http.StatusInternalServerError, Code: web.CodeInternal,
			Msg: "The server failed to answer this request; retrying may help.", Err: errors.New(msg)}
	}
	return web.HTTPError{Status: status, Code: code, Msg: "The MCP request was refused: " + msg}
}

// mcpAnswer holds the SDK's answer until it is complete, so that kwdata
// can replace a refusal, add the RateLimit fields a tool set, and give the
// length. It stops keeping bytes beyond MaxMCPAnswer. It has no Flush and no
// Unwrap on purpose: nothing reaches the client before the answer is
// complete and checked.
type mcpAnswer struct {
	header http.Header
	status int
	body   bytes.Buffer
	over   bool
}

func (a *mcpAnswer) Header() http.Header { return a.header }

func (a *mcpAnswer) WriteHeader(code int) {
	if a.status == 0 {
		a.status = code
	}
}

func (a *mcpAnswer) Write(p []byte) (int, error) {
	if a.status == 0 {
		a.status = http.StatusOK
	}
	if a.over || a.body.Len()+len(p) > MaxMCPAnswer {
		a.over = true
		return 0, errors.New("the MCP answer exceeds its bound")
	}
	return a.body.Write(p)
}

// quietHandler logs the SDK's Info lines at Debug: a stateless server
// connects and ends a session on every request, and says so.
type quietHandler struct{ slog.Handler }

func (h quietHandler) Enabled(ctx context.Context, l slog.Level) bool {
	if l < slog.LevelWarn {
		l = slog.LevelDebug
	}
	return h.Handler.Enabled(ctx, l)
}

func (h quietHandler) Handle(ctx context.Context, rec slog.Record) error {
	if rec.Level < slog.LevelWarn {
		rec.Level = slog.LevelDebug
	}
	return h.Handler.Handle(ctx, rec)
}

func (h quietHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return quietHandler{h.Handler.WithAttrs(as)}
}

func (h quietHandler) WithGroup(name string) slog.Handler {
	return quietHandler{h.Handler.WithGroup(name)}
}

// checkOrigin refuses browser requests from other sites (403), which
// protects the endpoint from DNS rebinding: a page of evil.example whose name
// is made to resolve to this server sends Host and Origin both
// evil.example, so matching the Origin against Host proves nothing.
// Programs send no Origin and may call; so may pages on a loopback host
// (localhost, 127.0.0.0/8, ::1), which only the machine itself can serve,
// and pages of the origins in Options.AllowedOrigins.
func (s *Agent) checkOrigin(r *http.Request) error {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return nil
	}
	if u, err := web.ParseOrigin(origin); err == nil && (loopbackHost(u.Hostname()) || s.origins[u.String()]) {
		return nil
	}
	if len(origin) > 64 {
		origin = origin[:64] + "…"
	}
	return web.HTTPError{Status: http.StatusForbidden, Code: web.CodeForbiddenOrigin,
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

// toolCall returns the HTTP side of a tool call.
func toolCall(ctx context.Context) (*mcpCall, error) {
	call, ok := ctx.Value(mcpCallKey{}).(*mcpCall)
	if !ok {
		// Only handleMCP runs the SDK; a call without it is a wiring bug.
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "Internal error: the tool call has no HTTP request."}
	}
	return call, nil
}

// keywordArgs reads the arguments of a tool that takes one keyword and a
// country (keyword_lookup, intent_group): the keyword normalized, the
// country looked up, or the tool error a bad argument is.
func (s *Agent) keywordArgs(req *mcp.CallToolRequest) (string, kw.Country, error) {
	var a struct {
		Keyword *string `json:"keyword"`
		Country string  `json:"country"`
	}
	if err := decodeArgs(req.Params.Arguments, &a); err != nil {
		return "", kw.Country{}, badArgs(err)
	}
	if a.Keyword == nil {
		return "", kw.Country{}, badArgs(errors.New(`"keyword" is required`))
	}
	q, err := web.NormalizeInput(*a.Keyword)
	if err != nil {
		return "", kw.Country{}, badArgs(err)
	}
	c, err := s.countryArg(a.Country)
	if err != nil {
		return "", kw.Country{}, err
	}
	return q, c, nil
}

// toolKeywordLookup is the keyword_lookup tool: GET /v1/keyword as a tool.
func (s *Agent) toolKeywordLookup(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	call, err := toolCall(ctx)
	if err != nil {
		return nil, err
	}
	q, c, err := s.keywordArgs(req)
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	e, info, err := s.LookupOne(ctx, call.r, c, q, h)
	call.setHeader(h)
	if errors.Is(err, kw.ErrNotFound) {
		// The words of the 404 problem of GET /v1/keyword, which name the
		// keyword and the country.
		return toolError(s.NotFound(ctx, q, c.Code, err).Msg), nil
	}
	if err != nil {
		return s.lookupFailure(call, c, err)
	}
	doc := web.AppendKeywordJSON(nil, &e, c.Code, web.DataDate(&e, info))
	return toolDocument(doc), nil
}

// toolKeywordLookupBulk is the keyword_lookup_bulk tool: POST /v1/keywords
// as a tool.
func (s *Agent) toolKeywordLookupBulk(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	call, err := toolCall(ctx)
	if err != nil {
		return nil, err
	}
	var a struct {
		Keywords []string `json:"keywords"`
		Country  string   `json:"country"`
	}
	if err := decodeArgs(req.Params.Arguments, &a); err != nil {
		return nil, badArgs(err)
	}
	switch {
	case len(a.Keywords) == 0:
		return nil, badArgs(errors.New(`"keywords" must hold 1 to 100 keywords`))
	case len(a.Keywords) > web.MaxBulkKeywords:
		return nil, badArgs(fmt.Errorf(`"keywords" holds %d keywords; send at most %d per call`, len(a.Keywords), web.MaxBulkKeywords))
	}
	c, err := s.countryArg(a.Country)
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	items, info, err := s.BulkLookup(call.r, c, a.Keywords, h)
	call.setHeader(h)
	if err != nil {
		return s.lookupFailure(call, c, err)
	}
	return toolDocument(web.AppendBulkJSON(nil, items, c.Code, info)), nil
}

// decodeArgs decodes tool arguments strictly: an unknown argument is an
// error, as an unknown field of a bulk body is.
func decodeArgs(args json.RawMessage, v any) error {
	if len(args) == 0 || string(args) == "null" {
		return errors.New("arguments are missing")
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errors.New("arguments do not match the tool's input schema (" + web.JSONErrorText(err) + ")")
	}
	return nil
}

// badArgs is the JSON-RPC error of arguments a tool cannot take: invalid
// params, with the problem code of the matching HTTP error as data.
func badArgs(err error) *jsonrpc.Error {
	var he web.HTTPError
	if errors.As(err, &he) {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Invalid params: " + he.Msg,
			Data: json.RawMessage(`{"code":` + strconv.Quote(he.Code) + `}`)}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Invalid params: " + err.Error()}
}

// toolDocument is a successful tool result: the JSON document of the
// matching HTTP answer, as structured content and, for clients that read
// only text, as its text.
func toolDocument(doc []byte) *mcp.CallToolResult {
	doc = bytes.TrimSuffix(doc, []byte("\n"))
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: string(doc)}},
		StructuredContent: json.RawMessage(doc),
	}
}

// toolError is a failed tool call: the model reads the text and may act
// on it (retry later, fix the spelling).
func toolError(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: msg}}, IsError: true}
}

// countryArg reads the country argument of a lookup tool: the country,
// or the invalid-params error of an unsupported code, which names the
// countries to use instead of an HTTP route.
func (s *Agent) countryArg(code string) (kw.Country, error) {
	c, err := web.CountryInput(code)
	if err == nil {
		return c, nil
	}
	if len(code) > 16 {
		code = code[:16] + "…"
	}
	return kw.Country{}, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
		Message: fmt.Sprintf("Invalid params: country %q is not supported; pass an ISO 3166-1 alpha-2 code. %s", code, s.countriesText()),
		Data:    json.RawMessage(`{"code":"` + web.CodeUnsupportedCountry + `"}`)}
}

// countriesText names the countries the served index holds keywords of.
func (s *Agent) countriesText() string {
	info, ok := s.Index.Info()
	if !ok {
		return "No index is loaded yet; retry in a minute."
	}
	var b strings.Builder
	for _, c := range web.CountriesWithDataFirst(info) {
		n := info.Countries[c.Code]
		if n <= 0 {
			break
		}
		if b.Len() == 0 {
			b.WriteString("Countries with data: ")
		} else {
			b.WriteString(", ")
		}
		unit := "keywords"
		if n == 1 {
			unit = "keyword"
		}
		fmt.Fprintf(&b, "%s (%s, %d %s)", strings.ToLower(c.Code), c.Name, n, unit)
	}
	if b.Len() == 0 {
		return "The served index holds no keywords yet."
	}
	b.WriteString(".")
	return b.String()
}

// lookupFailure is toolFailure for a lookup in country c: a country
// without data is answered with the countries that have some, not with
// the route that lists them.
func (s *Agent) lookupFailure(call *mcpCall, c kw.Country, err error) (*mcp.CallToolResult, error) {
	var he web.HTTPError
	if errors.As(err, &he) && he.Code == web.CodeCountryNotIndexed {
		return toolError(fmt.Sprintf("The index holds no keywords of %s (%s) yet; this call was not counted. %s",
			c.Name, strings.ToLower(c.Code), s.countriesText())), nil
	}
	return s.toolFailure(call, err)
}

// quotaText words a refused allowance for a model: the refusal of
// web.QuotaStatus, then what to do in MCP terms, which depend on who the
// caller is (a signed-in account, an API key, an address).
func (s *Agent) quotaText(r *http.Request, qe *web.QuotaError, reset time.Time) string {
	page := s.BaseURL(r) + "/account"
	if _, ok := web.AccountFrom(r.Context()); ok {
		return web.QuotaStatus(qe, reset, "your account") + " Your user can subscribe to the paid tier " +
			"(4.99 USD a month, unlimited lookups) on their account page, " + page + "; it applies at your next call."
	}
	if web.QuotaMonthly(qe) {
		return web.QuotaStatus(qe, reset, "this API key") + " Your user can upgrade this key to the paid tier " +
			"(4.99 USD a month, unlimited lookups) on their account page, " + page + "."
	}
	t := web.QuotaStatus(qe, reset, "this API key") + " For 500 lookups a month, ask your user for their email address " +
		"and call register_request_code, then register_verify with the mailed code, to get a free API key"
	if s.signIn != "" {
		t += "; or, if your client can sign its user in (OAuth), connect to " + s.signIn +
			" and the lookups count on the user's account"
	}
	return t + ". The paid tier is unlimited."
}

// toolFailure turns a failed lookup into a tool error the model can read,
// a JSON-RPC internal error, or (invalid key) a refusal of the whole POST.
func (s *Agent) toolFailure(call *mcpCall, err error) (*mcp.CallToolResult, error) {
	var qe *web.QuotaError
	if errors.As(err, &qe) {
		// The words of the 429 problem, with the clock time of the reset
		// too: a model has no Retry-After field to read.
		reset, _ := s.QuotaReset(qe)
		return toolError(s.quotaText(call.r, qe, reset)), nil
	}
	he := web.Classify(err)
	switch {
	case he.Status == http.StatusUnauthorized:
		// The key was revoked after handleMCP checked it: the POST is
		// refused whole, like every POST with a bad key.
		call.mu.Lock()
		call.refusal = err
		call.mu.Unlock()
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: he.Msg}
	case he.Status < 500, he.Status == http.StatusServiceUnavailable:
		return toolError(he.Msg), nil
	}
	s.Log.Error("tool call failed", "err", err)
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "Internal error: the lookup failed; retrying may help."}
}

// mcpTools are the tools. Their output schemas are the record schemas of
// the OpenAPI document, so the two descriptions cannot drift apart.
var mcpTools = []*mcp.Tool{
	{
		Name:  "keyword_lookup",
		Title: "Keyword lookup",
		Description: "Look up one keyword in one country: monthly search volume, CPC in USD, competition (0-1), " +
			"the data date, its intent group, a 12-month trend (oldest first) and up to 10 related keywords " +
			"(overlap n/20 of shared top-20 search results). Counts as one lookup.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"keyword":{"type":"string","minLength":1,"description":"The keyword, e.g. \"running shoes\". Case and spacing do not matter; at most 80 characters."},` +
			`"country":{"type":"string","default":"us","description":"ISO 3166-1 alpha-2 country code, either case, e.g. \"us\", \"gb\", \"de\"."}},` +
			`"required":["keyword"],"additionalProperties":false}`),
		OutputSchema: web.OpenAPISchema("KeywordRecord"),
		Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(false), IdempotentHint: true},
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
		OutputSchema: web.OpenAPISchema("BulkResponse"),
		Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(false), IdempotentHint: true},
	},
	{
		Name:  "intent_group",
		Title: "Intent group",
		Description: "The intent group of a keyword in one country: the keywords that share its search intent (at least 8 of " +
			"20 top results in common with the group's leader, volumes within a factor of 2), with the leader, the group's " +
			"size and summed volume, and up to 100 members by volume, each with volume, CPC and overlap n/20 with the " +
			"leader. Use it to cluster keywords into one page or ad group. Counts as one lookup.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"keyword":{"type":"string","minLength":1,"description":"Any keyword of the group, e.g. \"running shoes\". Case and spacing do not matter; at most 80 characters."},` +
			`"country":{"type":"string","default":"us","description":"ISO 3166-1 alpha-2 country code, either case."}},` +
			`"required":["keyword"],"additionalProperties":false}`),
		OutputSchema: web.OpenAPISchema("IntentGroup"),
		Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(false), IdempotentHint: true},
	},
	keywordExploreTool,
	{
		Name:  "register_request_code",
		Title: "Ask for a free API key",
		Description: "First step of getting a free API key (500 lookups a month) for your user: mails an 8-digit one-time code " +
			"to the email address your user gives. Ask the user for the code from that mail (it works for 15 minutes), " +
			"then call register_verify. The answer is the same whether or not the address already has a key; " +
			"for one that has, the code gets a replacement key for the same account.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"email":{"type":"string","format":"email","maxLength":254,"description":"Your user's email address; they must be able to read its mail."}},` +
			`"required":["email"],"additionalProperties":false}`),
		OutputSchema: web.OpenAPISchema("CodeSent"),
		Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: false, OpenWorldHint: new(true), IdempotentHint: false, DestructiveHint: new(false)},
	},
	{
		Name:  "register_verify",
		Title: "Get the API key with the mailed code",
		Description: "Second step: trades the code from the mail for the API key, shown only in this answer. " +
			"Give it to your user to keep, and send it as a Bearer token from then on.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"email":{"type":"string","format":"email","maxLength":254,"description":"The address the code was sent to."},` +
			`"code":{"type":"string","maxLength":16,"description":"The 8 digits from the mail."}},` +
			`"required":["email","code"],"additionalProperties":false}`),
		OutputSchema: web.OpenAPISchema("RegisterResponse"),
		Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: false, OpenWorldHint: new(false), IdempotentHint: false, DestructiveHint: new(false)},
	},
}

// toolSignupFailure turns a refused sign-up step into a tool error in the
// words of the matching problem document, or an internal error.
func (s *Agent) toolSignupFailure(call *mcpCall, err error) (*mcp.CallToolResult, error) {
	var he web.HTTPError
	if errors.As(err, &he) && he.Status < 500 || errors.As(err, &he) && he.Code == web.CodeMailUnavailable {
		return toolError(he.Msg), nil
	}
	return s.toolFailure(call, err)
}

// toolRegisterRequestCode is the register_request_code tool: POST
// /v1/register as a tool.
func (s *Agent) toolRegisterRequestCode(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	call, err := toolCall(ctx)
	if err != nil {
		return nil, err
	}
	if s.Registrar == nil {
		return toolError("This server does not issue API keys; ask its operator for one."), nil
	}
	var a struct {
		Email string `json:"email"`
	}
	if err := decodeArgs(req.Params.Arguments, &a); err != nil {
		return nil, badArgs(err)
	}
	email, err := web.CheckEmail(a.Email)
	if err != nil {
		return s.toolSignupFailure(call, err)
	}
	if email, err = s.SendCode(call.r, email); err != nil {
		return s.toolSignupFailure(call, err)
	}
	doc, err := json.Marshal(web.CodeSentResponse{Status: "code_sent", Email: email, ExpiresIn: int64(web.CodeTTL / time.Second),
		Next: "Ask your user for the 8-digit code mailed to " + email + ", then call register_verify with it."})
	if err != nil {
		return nil, err
	}
	return toolDocument(doc), nil
}

// toolRegisterVerify is the register_verify tool: POST
// /v1/register/verify as a tool.
func (s *Agent) toolRegisterVerify(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	call, err := toolCall(ctx)
	if err != nil {
		return nil, err
	}
	if s.Registrar == nil {
		return toolError("This server does not issue API keys; ask its operator for one."), nil
	}
	var a struct {
		Email string `json:"email"`
		Code  string `json:"code"`
	}
	if err := decodeArgs(req.Params.Arguments, &a); err != nil {
		return nil, badArgs(err)
	}
	email, err := web.CheckEmail(a.Email)
	if err != nil {
		return s.toolSignupFailure(call, err)
	}
	code := strings.TrimSpace(a.Code)
	if code == "" || len(code) > 16 {
		return s.toolSignupFailure(call, web.RegisterError(web.ErrCodeInvalid))
	}
	key, err := s.Registrar.VerifySignup(call.r.Context(), email, code)
	if err != nil {
		return s.toolSignupFailure(call, web.RegisterError(err))
	}
	doc, err := json.Marshal(web.RegisterResponse{Key: key, Tier: "registered"})
	if err != nil {
		return nil, err
	}
	return toolDocument(doc), nil
}

// toolIntentGroup is the intent_group tool: GET /v1/intent as a tool.
func (s *Agent) toolIntentGroup(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	call, err := toolCall(ctx)
	if err != nil {
		return nil, err
	}
	q, c, err := s.keywordArgs(req)
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	g, _, _, err := s.LookupGroup(ctx, call.r, c, q, h)
	call.setHeader(h)
	if err != nil {
		if errors.Is(err, kw.ErrNotFound) || errors.Is(err, web.ErrNoGroup) {
			return toolError(s.IntentError(ctx, q, c, err).(web.HTTPError).Msg), nil
		}
		return s.lookupFailure(call, c, err)
	}
	return toolDocument(web.AppendIntentJSON(nil, &g, q)), nil
}
