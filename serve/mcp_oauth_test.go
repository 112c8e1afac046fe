package serve_test

import (
	"context"
	"encoding/json"
	"html"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/kwdata/kwdata/internal/testservers"
	"github.com/kwdata/kwdata/serve"
	"github.com/kwdata/kwdata/serve/access"
	"github.com/kwdata/kwdata/serve/internal/servetest"
	"github.com/kwdata/kwdata/serve/mail"
	"github.com/kwdata/kwdata/serve/oauth"
	"github.com/kwdata/kwdata/serve/web"
)

// These tests drive the sign-in MCP endpoint end to end: the real router,
// the real access store (embedded Pebble) keeping sessions, OAuth clients,
// codes and tokens and counting lookups, and the Go SDK's own OAuth and
// MCP clients over loopback HTTP.

// oauthClock is the settable clock of the server and of the access store,
// so that a token can expire without waiting an hour.
type oauthClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *oauthClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *oauthClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// oauthEnv is a server with agent sign-in on a loopback port.
type oauthEnv struct {
	t     testing.TB
	url   string // the public URL, http://127.0.0.1:PORT
	store *access.Store
	clock *oauthClock
	// browser sends no cookies of its own and follows no redirects.
	browser *http.Client
	log     *strings.Builder
	logMu   *sync.Mutex
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// startOAuthServer serves the demo index with the embedded access store
// and agent sign-in at http://127.0.0.1:PORT; publicURL, when not empty,
// replaces that public URL (to see sign-in turned off).
func startOAuthServer(t testing.TB, publicURL string) *oauthEnv {
	t.Helper()
	return startOAuthServerMail(t, publicURL, nil)
}

// startOAuthServerMail is startOAuthServer with the server's mail going to
// mailer (nil: the log).
func startOAuthServerMail(t testing.TB, publicURL string, mailer serve.Mailer) *oauthEnv {
	t.Helper()
	clk := &oauthClock{t: time.Now().UTC().Truncate(time.Second)}
	st, err := access.Open(access.Options{Dir: t.TempDir(), Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	env := &oauthEnv{t: t, url: "http://" + ln.Addr().String(), store: st, clock: clk,
		browser: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
			Timeout: 20 * time.Second},
		log: &strings.Builder{}, logMu: &sync.Mutex{}}
	if publicURL == "" {
		publicURL = env.url
	}
	a := st.ForServer()
	h := serve.New(serve.Options{
		Index:     servetest.NewDemoIndex(t),
		Logger:    slog.New(slog.NewTextHandler(lockedWriter{env.logMu, env.log}, &slog.HandlerOptions{Level: slog.LevelInfo})),
		Now:       clk.Now,
		Access:    a,
		Registrar: a,
		Sessions:  a,
		OAuth:     st.ForOAuth(),
		Mailer:    mailer,
		PublicURL: publicURL,
	})
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return env
}

func (env *oauthEnv) logged() string {
	env.logMu.Lock()
	defer env.logMu.Unlock()
	return env.log.String()
}

// newAccount creates a registered account and returns its id.
func (env *oauthEnv) newAccount(email string) string {
	env.t.Helper()
	_, rec, err := env.store.CreateKey(context.Background(), access.Registered, email, time.Time{})
	if err != nil {
		env.t.Fatal(err)
	}
	return rec.ID
}

// do sends a request as a browser without cookies, or with the session
// cookie of session when it is not empty.
func (env *oauthEnv) do(method, target, session string, body io.Reader, header http.Header) *http.Response {
	env.t.Helper()
	if strings.HasPrefix(target, "/") {
		target = env.url + target
	}
	req, err := http.NewRequest(method, target, body)
	if err != nil {
		env.t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if session != "" {
		req.AddCookie(&http.Cookie{Name: web.SessionCookie(env.url), Value: session})
	}
	resp, err := env.browser.Do(req)
	if err != nil {
		env.t.Fatal(err)
	}
	return resp
}

// TestMCPOAuthRequiresToken: the sign-in endpoint answers nothing without a
// valid access token, and names where to get one; /mcp stays open.
func TestMCPOAuthRequiresToken(t *testing.T) {
	env := startOAuthServer(t, "")
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	challenge := `Bearer resource_metadata="` + env.url + `/.well-known/oauth-protected-resource/mcp/oauth"`
	for _, tc := range []struct {
		name, authz, wantErr string
	}{
		{"no token", "", ""},
		{"unknown token", "Bearer kwo_madeup", `error="invalid_token"`},
		{"API key sent as a token", "Bearer kwd_notanaccesstoken", `error="invalid_token"`},
		{"not a bearer", "Basic YTpi", `error="invalid_token"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}}
			if tc.authz != "" {
				h.Set("Authorization", tc.authz)
			}
			resp := env.do(http.MethodPost, "/mcp/oauth", "", strings.NewReader(initialize), h)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			www := resp.Header.Get("WWW-Authenticate")
			if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(www, challenge) || !strings.Contains(www, tc.wantErr) {
				t.Fatalf("POST /mcp/oauth: %d, WWW-Authenticate %q, body %s; want 401 and %s", resp.StatusCode, www, b, challenge)
			}
			if strings.Contains(string(b), "serverInfo") {
				t.Errorf("a refused request reached the MCP server: %s", b)
			}
		})
	}
	t.Run("resource metadata", func(t *testing.T) {
		resp := env.do(http.MethodGet, "/.well-known/oauth-protected-resource/mcp/oauth", "", nil, nil)
		var meta struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
		}
		json.NewDecoder(resp.Body).Decode(&meta)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || meta.Resource != env.url+"/mcp/oauth" || len(meta.AuthorizationServers) != 1 || meta.AuthorizationServers[0] != env.url {
			t.Errorf("protected resource metadata: %d %+v", resp.StatusCode, meta)
		}
	})
	t.Run("/mcp stays anonymous", func(t *testing.T) {
		resp := env.do(http.MethodPost, "/mcp", "", strings.NewReader(initialize),
			http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}})
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "serverInfo") {
			t.Errorf("POST /mcp anonymous: %d %s", resp.StatusCode, b)
		}
	})
}

// TestMCPOAuthOffWithoutIssuer: a public URL with a path cannot be an
// issuer; the server says once why agent sign-in is off, and /mcp/oauth
// is not there.
func TestMCPOAuthOffWithoutIssuer(t *testing.T) {
	env := startOAuthServer(t, "http://127.0.0.1:9/kwdata")
	resp := env.do(http.MethodPost, "/mcp/oauth", "", strings.NewReader("{}"), http.Header{"Content-Type": {"application/json"}})
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("POST /mcp/oauth without agent sign-in: %d, want 404", resp.StatusCode)
	}
	if n := strings.Count(env.logged(), "agent sign-in is off"); n != 1 {
		t.Errorf("the log says %d times that agent sign-in is off, want once:\n%s", n, env.logged())
	}
}

var hiddenField = regexp.MustCompile(`<input type="hidden" name="([a-z_]+)" value="([^"]*)">`)

// browse plays the person's browser for the SDK: it opens the
// authorization URL, is sent to the sign-in page, signs in as account (a
// session opened through the store), approves from the site's own origin
// and returns what the redirect carries.
func (env *oauthEnv) browse(account, redirect string) auth.AuthorizationCodeFetcher {
	return env.browseAs(func(ctx context.Context, next string) string {
		session, err := env.store.NewSession(ctx, account)
		if err != nil {
			env.t.Fatal(err)
		}
		return session
	}, redirect)
}

// browseByMail is browse with the person signing in as a person does: the
// email on the sign-in page, the code from the mail in Mailpit, and back
// to the authorization request through next.
func (env *oauthEnv) browseByMail(mp *testservers.Mailpit, email, redirect string) auth.AuthorizationCodeFetcher {
	return env.browseAs(func(ctx context.Context, next string) string {
		t := env.t
		form := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}, "Origin": {env.url}}
		resp := env.do(http.MethodGet, "/account?next="+url.QueryEscape(next), "", nil, nil)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `action="/account/signin"`) {
			t.Fatalf("the sign-in page: %d\n%s", resp.StatusCode, body)
		}
		v := url.Values{"email": {email}, "next": {next}}
		resp = env.do(http.MethodPost, "/account/signin", "", strings.NewReader(v.Encode()), form)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("POST /account/signin: %d", resp.StatusCode)
		}
		msg := mp.Last(t, email)
		code := mailCode.FindStringSubmatch(msg.Text)
		if code == nil {
			t.Fatalf("no code in the sign-in mail: %+v", msg)
		}
		v.Set("code", code[1])
		resp = env.do(http.MethodPost, "/account/signin/verify", "", strings.NewReader(v.Encode()), form)
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != next {
			t.Fatalf("POST /account/signin/verify: %d to %q, want back to %q", resp.StatusCode, resp.Header.Get("Location"), next)
		}
		for _, c := range resp.Cookies() {
			if c.Name == web.SessionCookie(env.url) && c.Value != "" {
				return c.Value
			}
		}
		t.Fatalf("signing in set no session cookie: %q", resp.Header.Values("Set-Cookie"))
		return ""
	}, redirect)
}

// browseAs plays the browser with signIn giving the session of the
// person once the authorization endpoint sent them to sign in.
func (env *oauthEnv) browseAs(signIn func(ctx context.Context, next string) string, redirect string) auth.AuthorizationCodeFetcher {
	return func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		t := env.t
		resp := env.do(http.MethodGet, args.URL, "", nil, nil)
		resp.Body.Close()
		loc := resp.Header.Get("Location")
		next, ok := strings.CutPrefix(loc, "/account?next=")
		if !ok || (resp.StatusCode != http.StatusSeeOther && resp.StatusCode != http.StatusFound) {
			t.Fatalf("GET the authorization URL signed out: %d to %q, want a redirect to /account?next=", resp.StatusCode, loc)
		}
		next, err := url.QueryUnescape(next)
		if err != nil || !strings.HasPrefix(next, "/oauth/authorize?") {
			t.Fatalf("sign-in next %q is not the authorization endpoint", next)
		}
		session := signIn(ctx, next)
		resp = env.do(http.MethodGet, next, session, nil, nil)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s signed in: %d %s", next, resp.StatusCode, body)
		}
		form := url.Values{}
		for _, m := range hiddenField.FindAllStringSubmatch(string(body), -1) {
			form.Set(m[1], html.UnescapeString(m[2]))
		}
		if form.Get("client_id") == "" || !strings.Contains(string(body), `class="brand"`) {
			t.Fatalf("the approval page is not in the site's layout or has no form: %s", body)
		}
		form.Set("decision", "approve")
		resp = env.do(http.MethodPost, "/oauth/authorize", session, strings.NewReader(form.Encode()),
			http.Header{"Content-Type": {"application/x-www-form-urlencoded"}, "Origin": {env.url}})
		resp.Body.Close()
		to, err := url.Parse(resp.Header.Get("Location"))
		if err != nil || resp.StatusCode != http.StatusSeeOther && resp.StatusCode != http.StatusFound ||
			to.Scheme+"://"+to.Host+to.Path != redirect {
			t.Fatalf("approval: %d to %q, want a redirect to %s", resp.StatusCode, resp.Header.Get("Location"), redirect)
		}
		q := to.Query()
		return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
	}
}

// connect signs the SDK client in as account through dynamic registration
// and a loopback redirect, and returns its MCP session on /mcp/oauth.
func (env *oauthEnv) connect(account string) (*mcp.ClientSession, *auth.AuthorizationCodeHandler) {
	env.t.Helper()
	return env.connectWith(env.browse(account, oauthRedirect))
}

// oauthRedirect is the test client's loopback redirect URI.
const oauthRedirect = "http://127.0.0.1:8976/callback"

// connectWith is connect with fetch playing the browser.
func (env *oauthEnv) connectWith(fetch auth.AuthorizationCodeFetcher) (*mcp.ClientSession, *auth.AuthorizationCodeHandler) {
	env.t.Helper()
	const redirect = oauthRedirect
	hc := &http.Client{Timeout: 20 * time.Second}
	handler, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{
			Metadata: &oauthex.ClientRegistrationMetadata{
				RedirectURIs: []string{redirect}, ClientName: "Go SDK agent",
				TokenEndpointAuthMethod: "none", GrantTypes: []string{"authorization_code", "refresh_token"},
			},
		},
		RedirectURL:              redirect,
		AuthorizationCodeFetcher: fetch,
		RequestRefreshToken:      true,
		Client:                   hc,
	})
	if err != nil {
		env.t.Fatal(err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "kwdata-oauth-test", Version: "1.0.0"},
		&mcp.ClientOptions{Logger: slog.New(slog.DiscardHandler)})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: env.url + "/mcp/oauth", HTTPClient: hc, OAuthHandler: handler, MaxRetries: -1,
	}, nil)
	if err != nil {
		env.t.Fatalf("connect to /mcp/oauth: %v", err)
	}
	env.t.Cleanup(func() { cs.Close() })
	return cs, handler
}

func lookup(tb testing.TB, cs *mcp.ClientSession, keyword string) (*mcp.CallToolResult, string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "keyword_lookup", Arguments: map[string]any{"keyword": keyword}})
	if err != nil {
		tb.Fatalf("keyword_lookup %q: %v", keyword, err)
	}
	var text string
	if len(res.Content) > 0 {
		if tc, ok := res.Content[0].(*mcp.TextContent); ok {
			text = tc.Text
		}
	}
	return res, text
}

// TestMCPOAuthSignInFlow: an agent signs its person in with the SDK's own
// OAuth client, then its lookups count on the account, beyond the
// anonymous allowance, and a tier set mid-conversation applies at the next
// call.
func TestMCPOAuthSignInFlow(t *testing.T) {
	env := startOAuthServer(t, "")
	ctx := context.Background()
	account := env.newAccount("ann@example.com")
	cs, _ := env.connect(account)

	if ins := cs.InitializeResult().Instructions; !strings.Contains(ins, "signed in") {
		t.Errorf("the instructions on /mcp/oauth do not say the agent is signed in: %q", ins)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		if !strings.Contains(cs.InitializeResult().Instructions, tool.Name) {
			t.Errorf("the instructions do not name the tool %s", tool.Name)
		}
	}
	if got := strings.Join(names, " "); got != "intent_group keyword_explore keyword_lookup keyword_lookup_bulk" {
		t.Errorf("tools of a signed-in agent: %s; want the lookups without the sign-up tools", got)
	}
	res0, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "keyword_lookup", Arguments: map[string]any{"keyword": "running shoes", "country": "fr"}})
	if err != nil || !res0.IsError {
		t.Fatalf("a country without data: %v %+v", err, res0)
	}
	if text := res0.Content[0].(*mcp.TextContent).Text; !strings.Contains(text, "Countries with data: ") || !strings.Contains(text, "us (United States, 17 keywords)") || strings.Contains(text, "/v1/") {
		t.Errorf("country_not_indexed for an agent: %q; want the countries with data, no HTTP route", text)
	}

	const calls = 25 // the anonymous allowance is 20 a day
	for i := range calls {
		res, text := lookup(t, cs, "running shoes")
		if res.IsError {
			t.Fatalf("call %d: tool error %q", i+1, text)
		}
	}
	rec, _, err := env.store.AccountByID(ctx, account)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Lookups != calls {
		t.Errorf("the account counts %d lookups after %d calls, want %d", rec.Lookups, calls, calls)
	}

	// The registered allowance is 500 a month: spend it through the store
	// (one bulk reservation), see the refusal name the way out in MCP
	// terms, then make the account paid mid-conversation.
	res, err := env.store.AdmitAccount(ctx, account, netip.MustParseAddr("127.0.0.1"), 500-calls)
	if err != nil {
		t.Fatal(err)
	}
	res.Commit(500-calls, http.Header{})
	r, text := lookup(t, cs, "running shoes")
	if !r.IsError || !strings.Contains(text, "monthly allowance") {
		t.Fatalf("after 500 lookups: %v %q, want the monthly allowance refused", r.IsError, text)
	}
	for _, bad := range []string{"POST /v1", "GET /v1", "API key"} {
		if strings.Contains(text, bad) {
			t.Errorf("the quota error of a signed-in agent speaks of %q: %q", bad, text)
		}
	}
	if err := env.store.SetTier(ctx, account, access.Paid, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if r, text := lookup(t, cs, "running shoes"); r.IsError {
		t.Fatalf("the paid tier did not apply at the next call: %q", text)
	}
}

// authCode runs the browser part of the flow for client id as the session's
// account and returns the code.
func (env *oauthEnv) authCode(session, id, redirect, verifier string) string {
	env.t.Helper()
	q := url.Values{
		"response_type": {"code"}, "client_id": {id}, "redirect_uri": {redirect}, "state": {"st-1"},
		"code_challenge": {oauth2.S256ChallengeFromVerifier(verifier)}, "code_challenge_method": {"S256"},
		"resource": {env.url + "/mcp/oauth"}, "scope": {"offline_access"},
	}
	resp := env.do(http.MethodGet, "/oauth/authorize?"+q.Encode(), session, nil, nil)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	form := url.Values{}
	for _, m := range hiddenField.FindAllStringSubmatch(string(body), -1) {
		form.Set(m[1], html.UnescapeString(m[2]))
	}
	if resp.StatusCode != http.StatusOK || form.Get("client_id") == "" {
		env.t.Fatalf("GET /oauth/authorize signed in: %d %s", resp.StatusCode, body)
	}
	form.Set("decision", "approve")
	resp = env.do(http.MethodPost, "/oauth/authorize", session, strings.NewReader(form.Encode()),
		http.Header{"Content-Type": {"application/x-www-form-urlencoded"}, "Origin": {env.url}})
	resp.Body.Close()
	to, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || to.Query().Get("code") == "" {
		env.t.Fatalf("approval: %d to %q, want a code", resp.StatusCode, resp.Header.Get("Location"))
	}
	return to.Query().Get("code")
}

// token posts form to the token endpoint and returns the status and the
// answer's fields.
func (env *oauthEnv) token(form url.Values) (int, map[string]any) {
	env.t.Helper()
	resp := env.do(http.MethodPost, "/oauth/token", "", strings.NewReader(form.Encode()),
		http.Header{"Content-Type": {"application/x-www-form-urlencoded"}})
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		env.t.Fatalf("token endpoint: %d, not JSON: %v", resp.StatusCode, err)
	}
	return resp.StatusCode, m
}

// mcpStatus is the status of an MCP initialize on /mcp/oauth with access.
func (env *oauthEnv) mcpStatus(access string) int {
	env.t.Helper()
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	resp := env.do(http.MethodPost, "/mcp/oauth", "", strings.NewReader(initialize), http.Header{
		"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}, "Authorization": {"Bearer " + access}})
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestMCPOAuthRefusals proves the authorization server's refusals again
// through the real router and the real access store: what the room's own
// tests prove on an in-memory store must hold on the one that ships.
func TestMCPOAuthRefusals(t *testing.T) {
	env := startOAuthServer(t, "")
	ctx := context.Background()
	account := env.newAccount("bob@example.com")
	session, err := env.store.NewSession(ctx, account)
	if err != nil {
		t.Fatal(err)
	}
	const redirect = "http://127.0.0.1:8976/callback"
	resp := env.do(http.MethodPost, "/oauth/register", "", strings.NewReader(`{"redirect_uris":["`+redirect+`"],"client_name":"Refusals","token_endpoint_auth_method":"none","grant_types":["authorization_code","refresh_token"]}`),
		http.Header{"Content-Type": {"application/json"}})
	var reg struct {
		ClientID string `json:"client_id"`
	}
	json.NewDecoder(resp.Body).Decode(&reg)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || reg.ClientID == "" {
		t.Fatalf("register: %d %+v", resp.StatusCode, reg)
	}
	id := reg.ClientID
	exchange := func(code, verifier, redirect string) (int, map[string]any) {
		return env.token(url.Values{"grant_type": {"authorization_code"}, "client_id": {id}, "code": {code},
			"code_verifier": {verifier}, "redirect_uri": {redirect}, "resource": {env.url + "/mcp/oauth"}})
	}
	refresh := func(tok string) (int, map[string]any) {
		return env.token(url.Values{"grant_type": {"refresh_token"}, "client_id": {id}, "refresh_token": {tok}})
	}
	wantGrantError := func(t *testing.T, status int, body map[string]any) {
		t.Helper()
		if status != http.StatusBadRequest || body["error"] != "invalid_grant" || body["access_token"] != nil {
			t.Errorf("token endpoint: %d %v, want 400 invalid_grant", status, body)
		}
	}
	tokens := func(t *testing.T) (string, string) {
		t.Helper()
		v := oauth2.GenerateVerifier()
		status, body := exchange(env.authCode(session, id, redirect, v), v, redirect)
		if status != http.StatusOK {
			t.Fatalf("exchange: %d %v", status, body)
		}
		return body["access_token"].(string), body["refresh_token"].(string)
	}

	t.Run("wrong verifier", func(t *testing.T) {
		code := env.authCode(session, id, redirect, oauth2.GenerateVerifier())
		status, body := exchange(code, oauth2.GenerateVerifier(), redirect)
		wantGrantError(t, status, body)
	})
	t.Run("wrong redirect_uri", func(t *testing.T) {
		v := oauth2.GenerateVerifier()
		status, body := exchange(env.authCode(session, id, redirect, v), v, "http://127.0.0.1:8976/elsewhere")
		wantGrantError(t, status, body)
	})
	t.Run("reused code revokes its tokens", func(t *testing.T) {
		v := oauth2.GenerateVerifier()
		code := env.authCode(session, id, redirect, v)
		status, body := exchange(code, v, redirect)
		if status != http.StatusOK {
			t.Fatalf("first exchange: %d %v", status, body)
		}
		access := body["access_token"].(string)
		if got := env.mcpStatus(access); got != http.StatusOK {
			t.Fatalf("the fresh token: %d", got)
		}
		status, body = exchange(code, v, redirect)
		wantGrantError(t, status, body)
		if got := env.mcpStatus(access); got != http.StatusUnauthorized {
			t.Errorf("a token of a reused code still works: %d", got)
		}
	})
	t.Run("token for another resource", func(t *testing.T) {
		// A token the store issued for the same account and client, but
		// bound to another server's endpoint.
		code := env.authCode(session, id, redirect, oauth2.GenerateVerifier())
		st := env.store.ForOAuth()
		cg, err := st.TakeCode(ctx, code)
		if err != nil {
			t.Fatal(err)
		}
		g := cg.Grant
		g.Resource = "http://127.0.0.1:1/mcp/oauth"
		tok, err := st.NewTokens(ctx, g, code)
		if err != nil {
			t.Fatal(err)
		}
		if got := env.mcpStatus(tok.Access); got != http.StatusUnauthorized {
			t.Errorf("a token bound to another resource: %d, want 401", got)
		}
	})
	t.Run("refresh rotation and reuse", func(t *testing.T) {
		access1, refresh1 := tokens(t)
		status, body := refresh(refresh1)
		if status != http.StatusOK || body["refresh_token"] == refresh1 {
			t.Fatalf("refresh: %d %v, want a new refresh token", status, body)
		}
		access2, refresh2 := body["access_token"].(string), body["refresh_token"].(string)
		if got := env.mcpStatus(access2); got != http.StatusOK {
			t.Fatalf("the refreshed token: %d", got)
		}
		status, body = refresh(refresh1)
		wantGrantError(t, status, body)
		for name, tok := range map[string]string{"first access token": access1, "refreshed access token": access2} {
			if got := env.mcpStatus(tok); got != http.StatusUnauthorized {
				t.Errorf("the %s works after its chain's refresh token came back: %d", name, got)
			}
		}
		status, body = refresh(refresh2)
		wantGrantError(t, status, body)
	})
	// Last: it moves the clock past every access token's life.
	t.Run("expired token", func(t *testing.T) {
		access, refresh1 := tokens(t)
		if got := env.mcpStatus(access); got != http.StatusOK {
			t.Fatalf("the fresh token: %d", got)
		}
		env.clock.Add(oauth.AccessTTL + time.Minute)
		if got := env.mcpStatus(access); got != http.StatusUnauthorized {
			t.Errorf("a token past its hour: %d, want 401", got)
		}
		status, body := refresh(refresh1)
		if status != http.StatusOK {
			t.Fatalf("refresh after the access token expired: %d %v", status, body)
		}
		if got := env.mcpStatus(body["access_token"].(string)); got != http.StatusOK {
			t.Errorf("the token refreshed after expiry: %d", got)
		}
	})
}

// TestMCPOAuthSignInByMail is the whole flow as an agent's person lives
// it: the SDK's OAuth client registers, the browser signs in with the
// code mailed through a real SMTP server (Mailpit) for an address that had
// no account, approves, and the agent's lookups go past the anonymous
// allowance, counted on the new account.
func TestMCPOAuthSignInByMail(t *testing.T) {
	mp := testservers.StartMailpit(t, false)
	sender, err := mail.NewSMTP("smtp://"+mp.SMTP, "", "kwdata <no-reply@kwdata.example>")
	if err != nil {
		t.Fatal(err)
	}
	env := startOAuthServerMail(t, "", sender)
	const email = "agent-user@example.com"
	cs, _ := env.connectWith(env.browseByMail(mp, email, oauthRedirect))
	const calls = 22 // past the anonymous 20 a day
	for i := range calls {
		if res, text := lookup(t, cs, "running shoes"); res.IsError {
			t.Fatalf("call %d: tool error %q", i+1, text)
		}
	}
	recs, err := env.store.ListKeys(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, rec := range recs {
		if rec.Email == email {
			found = true
			got, _, err := env.store.AccountByID(context.Background(), rec.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Lookups != calls || got.Tier != access.Registered {
				t.Errorf("the new account: %d lookups, tier %s; want %d, registered", got.Lookups, got.Tier, calls)
			}
		}
	}
	if !found {
		t.Errorf("signing in by mail made no account for %s", email)
	}
}
