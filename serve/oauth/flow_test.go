package oauth

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// sdkFetcher plays the browser for the Go SDK's OAuth client: it opens the
// authorization URL signed in, approves from the server's own origin and
// reads code, state and iss from the redirect.
func (h *harness) sdkFetcher(redirect string) auth.AuthorizationCodeFetcher {
	return func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		resp := h.approve(h.consent(args.URL), h.ts.URL)
		resp.Body.Close()
		loc := redirectTo(h.t, resp)
		if got := loc.Scheme + "://" + loc.Host + loc.Path; got != redirect {
			h.t.Errorf("redirected to %s, want %s", got, redirect)
		}
		q := loc.Query()
		return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
	}
}

// runSDK drives the SDK's authorization code handler from a 401 of the
// protected endpoint to a 200 that names the account.
func (h *harness) runSDK(cfg *auth.AuthorizationCodeHandlerConfig) {
	h.t.Helper()
	ctx := context.Background()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.ts.URL+"/mcp/oauth", nil)
	resp, err := h.ts.Client().Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusUnauthorized {
		h.t.Fatalf("anonymous call: %d, want 401", resp.StatusCode)
	}
	cfg.AuthorizationCodeFetcher = h.sdkFetcher(cfg.RedirectURL)
	cfg.RequestRefreshToken = true
	cfg.Client = h.ts.Client()
	handler, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := handler.Authorize(ctx, req, resp); err != nil {
		h.t.Fatalf("SDK authorization: %v", err)
	}
	src, err := handler.TokenSource(ctx)
	if err != nil || src == nil {
		h.t.Fatalf("no token source: %v", err)
	}
	tok, err := src.Token()
	if err != nil {
		h.t.Fatal(err)
	}
	if tok.RefreshToken == "" {
		h.t.Error("the token response carries no refresh token")
	}
	if tok.Expiry.IsZero() {
		h.t.Error("the token response has no expires_in")
	}
	status, body, _ := h.call(tok.AccessToken)
	if status != http.StatusOK || body != testAccount {
		h.t.Fatalf("protected call: %d %q, want 200 %q", status, body, testAccount)
	}
}

func TestFlowDynamicRegistration(t *testing.T) {
	h := newHarness(t, nil)
	const redirect = "http://127.0.0.1:8976/callback"
	h.runSDK(&auth.AuthorizationCodeHandlerConfig{
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{
			Metadata: &oauthex.ClientRegistrationMetadata{
				RedirectURIs: []string{redirect}, ClientName: "Go SDK test",
				TokenEndpointAuthMethod: "none", GrantTypes: []string{"authorization_code", "refresh_token"},
			},
		},
		RedirectURL: redirect,
	})
	if n := h.store.count("RegisterClient"); n != 1 {
		t.Errorf("RegisterClient called %d times, want 1", n)
	}
}

// clientDoc serves a client ID metadata document over TLS on loopback and
// returns its URL and a fetch client allowed to reach exactly it.
func clientDoc(t *testing.T, doc func(id string) any, header http.Header) (string, *httptest.Server, *http.Client) {
	t.Helper()
	var id string
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, v := range header {
			w.Header()[k] = v
		}
		if to := r.URL.Query().Get("redirect"); to != "" {
			http.Redirect(w, r, to, http.StatusFound)
			return
		}
		if r.URL.Path != "/client.json" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(doc(id))
	}))
	t.Cleanup(ts.Close)
	id = ts.URL + "/client.json"
	allowed := netip.MustParseAddrPort(strings.TrimPrefix(ts.URL, "https://"))
	roots := ts.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	fetch := NewFetchClient(FetchOptions{
		AllowAddr: func(ap netip.AddrPort) bool { return ap == allowed },
		RootCAs:   roots,
	})
	return id, ts, fetch
}

func cimdDoc(redirect string) func(string) any {
	return func(id string) any {
		return map[string]any{
			"client_id": id, "client_name": "CIMD Agent", "redirect_uris": []string{redirect},
			"token_endpoint_auth_method": "none", "grant_types": []string{"authorization_code", "refresh_token"},
		}
	}
}

func TestFlowClientIDMetadataDocument(t *testing.T) {
	const redirect = "http://127.0.0.1:8977/callback"
	id, _, fetch := clientDoc(t, cimdDoc(redirect), nil)
	h := newHarness(t, func(c *Config) { c.Fetch = fetch })
	h.runSDK(&auth.AuthorizationCodeHandlerConfig{
		ClientIDMetadataDocumentConfig: &auth.ClientIDMetadataDocumentConfig{URL: id},
		RedirectURL:                    redirect,
	})
	if n := h.store.count("RegisterClient"); n != 0 {
		t.Errorf("RegisterClient called %d times for a CIMD client, want 0", n)
	}
}

func TestMetadata(t *testing.T) {
	h := newHarness(t, nil)
	resp := h.get("/mcp/oauth", false)
	resp.Body.Close()
	want := `Bearer resource_metadata="` + h.ts.URL + `/.well-known/oauth-protected-resource/mcp/oauth"`
	if got := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != http.StatusUnauthorized || got != want {
		t.Fatalf("anonymous: %d %q, want 401 %q", resp.StatusCode, got, want)
	}

	var prm oauthex.ProtectedResourceMetadata
	getDoc(t, h, "/.well-known/oauth-protected-resource/mcp/oauth", &prm)
	if prm.Resource != h.ts.URL+"/mcp/oauth" || len(prm.AuthorizationServers) != 1 || prm.AuthorizationServers[0] != h.ts.URL {
		t.Errorf("protected resource metadata = %+v", prm)
	}
	var asm oauthex.AuthServerMeta
	raw := getDoc(t, h, "/.well-known/oauth-authorization-server", &asm)
	if asm.Issuer != h.ts.URL || asm.AuthorizationEndpoint != h.ts.URL+"/oauth/authorize" ||
		asm.TokenEndpoint != h.ts.URL+"/oauth/token" || asm.RegistrationEndpoint != h.ts.URL+"/oauth/register" ||
		strings.Join(asm.CodeChallengeMethodsSupported, ",") != "S256" ||
		!contains(asm.TokenEndpointAuthMethodsSupported, "none") ||
		!asm.ClientIDMetadataDocumentSupported || !asm.AuthorizationResponseIssParameterSupported {
		t.Errorf("authorization server metadata = %+v", asm)
	}
	if strings.Contains(raw, `"jwks_uri"`) {
		t.Errorf("metadata names an empty jwks_uri: %s", raw)
	}
	// The origin as a whole is not an OAuth-protected resource.
	resp = h.get("/.well-known/oauth-protected-resource", false)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("root protected resource document: %d, want 404", resp.StatusCode)
	}
	// Browser clients read the metadata and call the token endpoint
	// across origins.
	for _, path := range []string{"/.well-known/oauth-authorization-server", "/oauth/token", "/oauth/register"} {
		req, _ := http.NewRequest(http.MethodOptions, h.ts.URL+path, nil)
		req.Header.Set("Origin", "https://inspector.example")
		req.Header.Set("Access-Control-Request-Method", "POST")
		resp, err := h.browser.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("preflight %s: %d, allow-origin %q", path, resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func getDoc(t *testing.T, h *harness, path string, v any) string {
	t.Helper()
	resp := h.get(path, false)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("GET %s: %d (CORS %q) %s", path, resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"), b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return string(b)
}

func TestNotSignedInGoesToSignIn(t *testing.T) {
	h := newHarness(t, nil)
	const redirect = "http://127.0.0.1:8976/callback"
	id := h.register(redirect)
	path := "/oauth/authorize?" + h.authParams(id, redirect, strings.Repeat("v", 43)).Encode()
	resp := h.get(path, false)
	resp.Body.Close()
	loc := redirectTo(t, resp)
	if loc.Path != "/signin" || loc.Query().Get("next") != path {
		t.Fatalf("not signed in: redirected to %s, want /signin?next=%s", loc, path)
	}
	// Signed in, the same URL is the approval page naming the client.
	resp = h.get(path, true)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "Test Agent") || !strings.Contains(string(b), "127.0.0.1") {
		t.Fatalf("signed in: %d %s", resp.StatusCode, b)
	}
	if resp.Header.Get("X-Frame-Options") != "DENY" {
		t.Errorf("the approval page can be framed (X-Frame-Options %q)", resp.Header.Get("X-Frame-Options"))
	}
}

func TestDenyRedirectsAccessDenied(t *testing.T) {
	h := newHarness(t, nil)
	const redirect = "http://127.0.0.1:8976/callback"
	id := h.register(redirect)
	form := h.consent(h.ts.URL + "/oauth/authorize?" + h.authParams(id, redirect, strings.Repeat("v", 43)).Encode())
	form.Set("decision", "deny")
	req, _ := http.NewRequest(http.MethodPost, h.ts.URL+"/oauth/authorize", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(&http.Cookie{Name: "session", Value: "alice"})
	resp, err := h.browser.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	q := redirectTo(t, resp).Query()
	if q.Get("error") != "access_denied" || q.Get("state") != "st-123" || q.Get("iss") != h.ts.URL || q.Get("code") != "" {
		t.Fatalf("deny redirected with %v", q)
	}
}

func TestConsentNamesDocumentHost(t *testing.T) {
	id, ts, fetch := clientDoc(t, cimdDoc(cb), nil)
	h := newHarness(t, func(c *Config) { c.Fetch = fetch })
	q := h.authParams(id, cb, strings.Repeat("v", 43))
	resp := h.get("/oauth/authorize?"+q.Encode(), true)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	host := strings.TrimPrefix(ts.URL, "https://")
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "CIMD Agent") || !strings.Contains(string(b), "described at <strong>"+host) {
		t.Fatalf("approval page for a CIMD client: %d %s", resp.StatusCode, b)
	}
	// A signed-out approval goes to the sign-in page, which returns the
	// person to this same request.
	resp, err := h.browser.PostForm(h.ts.URL+"/oauth/authorize", h.consent(h.ts.URL+"/oauth/authorize?"+q.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc := redirectTo(t, resp)
	next, _ := url.Parse(loc.Query().Get("next"))
	if loc.Path != "/signin" || next.Path != PathAuthorize || next.Query().Get("client_id") != id || next.Query().Get("code_challenge") != q.Get("code_challenge") {
		t.Fatalf("signed-out approval: redirected to %s", loc)
	}
}
