package oauth

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"
)

// Each test here is an attack on the authorization server and what it
// must answer.

const cb = "http://127.0.0.1:8976/callback"

func wantOAuthError(t *testing.T, status int, body map[string]any, wantStatus int, wantErr string) {
	t.Helper()
	if status != wantStatus || body["error"] != wantErr {
		t.Fatalf("got %d %v, want %d error=%s", status, body, wantStatus, wantErr)
	}
	if _, ok := body["access_token"]; ok {
		t.Fatalf("an error response carries an access token: %v", body)
	}
}

func TestAttackWrongVerifier(t *testing.T) {
	h := newHarness(t, nil)
	id := h.register(cb)
	verifier := oauth2.GenerateVerifier()
	code := h.code(id, cb, verifier)
	status, body := h.exchange(id, cb, oauth2.GenerateVerifier(), code)
	wantOAuthError(t, status, body, http.StatusBadRequest, "invalid_grant")
	// Nor does a missing verifier pass.
	code = h.code(id, cb, verifier)
	status, body = h.exchange(id, cb, "", code)
	wantOAuthError(t, status, body, http.StatusBadRequest, "invalid_grant")
}

func TestAttackReusedCode(t *testing.T) {
	h := newHarness(t, nil)
	id := h.register(cb)
	verifier := oauth2.GenerateVerifier()
	code := h.code(id, cb, verifier)
	status, first := h.exchange(id, cb, verifier, code)
	if status != http.StatusOK {
		t.Fatalf("first exchange: %d %v", status, first)
	}
	if s, _, _ := h.call(first["access_token"].(string)); s != http.StatusOK {
		t.Fatalf("the fresh token does not work: %d", s)
	}
	status, body := h.exchange(id, cb, verifier, code)
	wantOAuthError(t, status, body, http.StatusBadRequest, "invalid_grant")
	// Someone else may hold the code: what it issued stops working.
	if s, _, _ := h.call(first["access_token"].(string)); s != http.StatusUnauthorized {
		t.Errorf("access token issued from a reused code: %d, want 401", s)
	}
	status, body = h.token(url.Values{"grant_type": {"refresh_token"}, "client_id": {id}, "refresh_token": {first["refresh_token"].(string)}})
	wantOAuthError(t, status, body, http.StatusBadRequest, "invalid_grant")
}

func TestAttackExpiredCode(t *testing.T) {
	h := newHarness(t, nil)
	id := h.register(cb)
	verifier := oauth2.GenerateVerifier()
	code := h.code(id, cb, verifier)
	h.clock.Advance(CodeTTL + time.Second)
	status, body := h.exchange(id, cb, verifier, code)
	wantOAuthError(t, status, body, http.StatusBadRequest, "invalid_grant")
}

func TestAttackWrongRedirectURI(t *testing.T) {
	h := newHarness(t, nil)
	id := h.register(cb)
	verifier := oauth2.GenerateVerifier()
	// At the authorization endpoint: a page, never a redirect to it.
	for _, evil := range []string{"https://evil.example/cb", "http://127.0.0.1:8976/other", ""} {
		resp := h.get("/oauth/authorize?"+h.authParams(id, evil, verifier).Encode(), true)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" || !strings.Contains(string(b), "redirect_uri") {
			t.Errorf("redirect_uri %q: %d Location %q %s", evil, resp.StatusCode, resp.Header.Get("Location"), b)
		}
	}
	// An unknown client is a page too.
	resp := h.get("/oauth/authorize?"+h.authParams("c_unknown", cb, verifier).Encode(), true)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" {
		t.Errorf("unknown client: %d Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	// At the token endpoint: the redirect_uri must repeat the request's.
	code := h.code(id, cb, verifier)
	status, body := h.exchange(id, "http://127.0.0.1:9999/callback", verifier, code)
	wantOAuthError(t, status, body, http.StatusBadRequest, "invalid_grant")
	// And the code is for its own client only.
	other := h.register(cb)
	code = h.code(id, cb, verifier)
	status, body = h.exchange(other, cb, verifier, code)
	wantOAuthError(t, status, body, http.StatusBadRequest, "invalid_grant")
}

func TestLoopbackRedirectAnyPort(t *testing.T) {
	h := newHarness(t, nil)
	id := h.register("http://127.0.0.1/callback")
	verifier := oauth2.GenerateVerifier()
	const presented = "http://127.0.0.1:54321/callback"
	code := h.code(id, presented, verifier)
	status, body := h.exchange(id, presented, verifier, code)
	if status != http.StatusOK {
		t.Fatalf("loopback redirect on another port: %d %v", status, body)
	}
}

func TestAttackOtherResource(t *testing.T) {
	h := newHarness(t, nil)
	id := h.register(cb)
	verifier := oauth2.GenerateVerifier()
	// Asking for another resource (or none) is refused at the
	// authorization endpoint, by redirect since client and redirect_uri
	// are verified.
	for _, res := range []string{"https://other.example/mcp", h.ts.URL + "/mcp", ""} {
		q := h.authParams(id, cb, verifier)
		q.Set("resource", res)
		resp := h.get("/oauth/authorize?"+q.Encode(), true)
		resp.Body.Close()
		got := redirectTo(t, resp).Query()
		if got.Get("error") != "invalid_target" || got.Get("state") != "st-123" || got.Get("iss") != h.ts.URL {
			t.Errorf("resource %q: redirected with %v", res, got)
		}
	}
	// At the token endpoint.
	code := h.code(id, cb, verifier)
	status, body := h.token(url.Values{
		"grant_type": {"authorization_code"}, "client_id": {id}, "redirect_uri": {cb},
		"code": {code}, "code_verifier": {verifier}, "resource": {"https://other.example/mcp"},
	})
	wantOAuthError(t, status, body, http.StatusBadRequest, "invalid_target")
	// A token the store holds for another resource does not open this one.
	tok, err := h.store.NewTokens(t.Context(), Grant{Account: testAccount, ClientID: id, Resource: "https://other.example/mcp"}, "x")
	if err != nil {
		t.Fatal(err)
	}
	status, _, www := h.call(tok.Access)
	if status != http.StatusUnauthorized || !strings.Contains(www, `error="invalid_token"`) {
		t.Fatalf("token for another resource: %d %q", status, www)
	}
}

func TestAttackExpiredAccessToken(t *testing.T) {
	h := newHarness(t, nil)
	_, body := h.tokens()
	access := body["access_token"].(string)
	if body["expires_in"] != float64(AccessTTL/time.Second) || body["token_type"] != "Bearer" {
		t.Errorf("token response = %v", body)
	}
	if s, _, _ := h.call(access); s != http.StatusOK {
		t.Fatalf("fresh token: %d", s)
	}
	h.clock.Advance(AccessTTL + time.Second)
	status, _, www := h.call(access)
	if status != http.StatusUnauthorized || !strings.Contains(www, `error="invalid_token"`) || !strings.Contains(www, "resource_metadata=") {
		t.Fatalf("expired token: %d %q", status, www)
	}
	// Garbage is refused the same way.
	if status, _, www = h.call("nonsense"); status != http.StatusUnauthorized || !strings.Contains(www, `error="invalid_token"`) {
		t.Fatalf("unknown token: %d %q", status, www)
	}
}

func TestRefreshRotationAndReuse(t *testing.T) {
	h := newHarness(t, nil)
	id, first := h.tokens()
	refresh := func(rt string) (int, map[string]any) {
		return h.token(url.Values{"grant_type": {"refresh_token"}, "client_id": {id}, "refresh_token": {rt}, "resource": {h.ts.URL + "/mcp/oauth"}})
	}
	status, second := refresh(first["refresh_token"].(string))
	if status != http.StatusOK || second["refresh_token"] == first["refresh_token"] || second["refresh_token"] == nil {
		t.Fatalf("refresh: %d %v", status, second)
	}
	if s, body, _ := h.call(second["access_token"].(string)); s != http.StatusOK || body != testAccount {
		t.Fatalf("refreshed token: %d %q", s, body)
	}
	// Another client cannot use the refresh token.
	other := h.register(cb)
	status, body := h.token(url.Values{"grant_type": {"refresh_token"}, "client_id": {other}, "refresh_token": {second["refresh_token"].(string)}})
	wantOAuthError(t, status, body, http.StatusBadRequest, "invalid_grant")
	// The old refresh token is refused, and its reuse revokes the chain.
	status, body = refresh(first["refresh_token"].(string))
	wantOAuthError(t, status, body, http.StatusBadRequest, "invalid_grant")
	if s, _, _ := h.call(second["access_token"].(string)); s != http.StatusUnauthorized {
		t.Errorf("access token of a revoked chain: %d, want 401", s)
	}
	status, body = refresh(second["refresh_token"].(string))
	wantOAuthError(t, status, body, http.StatusBadRequest, "invalid_grant")
}

func TestRegistration(t *testing.T) {
	h := newHarness(t, nil)
	for _, tc := range []struct {
		name string
		meta map[string]any
	}{
		{"plain http off loopback", map[string]any{"redirect_uris": []string{"http://app.example.com/cb"}}},
		{"custom scheme", map[string]any{"redirect_uris": []string{"myapp://cb"}}},
		{"no redirect_uris", map[string]any{"client_name": "x"}},
		{"implicit grant", map[string]any{"redirect_uris": []string{cb}, "grant_types": []string{"implicit"}}},
		{"token response type", map[string]any{"redirect_uris": []string{cb}, "response_types": []string{"token"}}},
		{"client_uri not https", map[string]any{"redirect_uris": []string{cb}, "client_uri": "javascript:alert(1)"}},
	} {
		status, body := h.postJSON("/oauth/register", tc.meta)
		if status != http.StatusBadRequest || (body["error"] != "invalid_redirect_uri" && body["error"] != "invalid_client_metadata") {
			t.Errorf("%s: %d %v", tc.name, status, body)
		}
	}
	resp, err := h.browser.Post(h.ts.URL+"/oauth/register", "application/json", strings.NewReader("{not json"))
	if err != nil {
		t.Fatal(err)
	}
	if status, body := decodeJSON(t, resp); status != http.StatusBadRequest || body["error"] != "invalid_client_metadata" {
		t.Errorf("bad JSON: %d %v", status, body)
	}
	if n := h.store.count("RegisterClient"); n != 0 {
		t.Errorf("refused registrations reached the store %d times", n)
	}
	// A public client gets no secret, whatever it asks for.
	status, body := h.postJSON("/oauth/register", map[string]any{"redirect_uris": []string{cb}, "token_endpoint_auth_method": "client_secret_basic"})
	if status != http.StatusCreated || body["client_secret"] != nil || body["token_endpoint_auth_method"] != "none" {
		t.Errorf("registration: %d %v", status, body)
	}
}

func TestAttackRegistrationAllowance(t *testing.T) {
	h := newHarness(t, nil)
	for i := 0; i < h.store.limit; i++ {
		h.register(cb)
	}
	status, body := h.postJSON("/oauth/register", map[string]any{"redirect_uris": []string{cb}})
	if status != http.StatusTooManyRequests || body["error"] == nil {
		t.Fatalf("registration over the allowance: %d %v", status, body)
	}
	// An unused registration expires.
	h.clock.Advance(ClientTTL + time.Minute)
	fresh := h.register(cb) // a new day: the allowance is back
	h.clock.Advance(ClientTTL + time.Minute)
	resp := h.get("/oauth/authorize?"+h.authParams(fresh, cb, oauth2.GenerateVerifier()).Encode(), true)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("an expired registration still authorizes: %d", resp.StatusCode)
	}
}

func TestAttackGetNeverApproves(t *testing.T) {
	h := newHarness(t, nil)
	id := h.register(cb)
	q := h.authParams(id, cb, oauth2.GenerateVerifier())
	q.Set("decision", "approve")
	resp := h.get("/oauth/authorize?"+q.Encode(), true)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Location") != "" {
		t.Fatalf("GET with decision=approve: %d Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if n := h.store.count("NewCode"); n != 0 {
		t.Fatalf("a GET issued %d codes", n)
	}
}

func TestAttackCrossOriginApproval(t *testing.T) {
	h := newHarness(t, nil)
	id := h.register(cb)
	form := h.consent(h.ts.URL + "/oauth/authorize?" + h.authParams(id, cb, oauth2.GenerateVerifier()).Encode())
	resp := h.approve(form, "https://evil.example")
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Location") != "" {
		t.Fatalf("approval from another origin: %d Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	// Nor does a signed-out POST approve.
	form.Set("decision", "approve")
	resp, err := h.browser.PostForm(h.ts.URL+"/oauth/authorize", form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("Location") != "" && redirectTo(t, resp).Query().Get("code") != "" {
		t.Fatal("a signed-out POST got a code")
	}
	if n := h.store.count("NewCode"); n != 0 {
		t.Fatalf("refused approvals issued %d codes", n)
	}
}

func TestAttackMissingPKCE(t *testing.T) {
	h := newHarness(t, nil)
	id := h.register(cb)
	for _, tc := range []struct{ name, method, challenge string }{
		{"plain", "plain", strings.Repeat("a", 43)},
		{"no method", "", oauth2.S256ChallengeFromVerifier(oauth2.GenerateVerifier())},
		{"no challenge", "S256", ""},
	} {
		q := h.authParams(id, cb, oauth2.GenerateVerifier())
		q.Set("code_challenge_method", tc.method)
		q.Set("code_challenge", tc.challenge)
		resp := h.get("/oauth/authorize?"+q.Encode(), true)
		resp.Body.Close()
		if got := redirectTo(t, resp).Query(); got.Get("error") != "invalid_request" || got.Get("code") != "" {
			t.Errorf("%s: redirected with %v", tc.name, got)
		}
	}
}

func TestAttackClientNameMarkup(t *testing.T) {
	h := newHarness(t, nil)
	status, body := h.postJSON("/oauth/register", map[string]any{
		"redirect_uris": []string{cb}, "client_name": `<script>alert(1)</script><a href="https://evil.example">`,
	})
	if status != http.StatusCreated {
		t.Fatalf("register: %d %v", status, body)
	}
	resp := h.get("/oauth/authorize?"+h.authParams(body["client_id"].(string), cb, oauth2.GenerateVerifier()).Encode(), true)
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || strings.Contains(string(page), "<script>") || strings.Contains(string(page), `<a href="https://evil`) {
		t.Fatalf("the client's name is markup on the approval page: %d %s", resp.StatusCode, page)
	}
}

func TestTokenRequestRefusals(t *testing.T) {
	h := newHarness(t, nil)
	id := h.register(cb)
	verifier := oauth2.GenerateVerifier()
	code := h.code(id, cb, verifier)
	post := func(form url.Values, user, pass string) (int, map[string]any) {
		req, _ := http.NewRequest(http.MethodPost, h.ts.URL+"/oauth/token", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := h.browser.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return decodeJSON(t, resp)
	}
	form := url.Values{"grant_type": {"authorization_code"}, "redirect_uri": {cb}, "code": {code}, "code_verifier": {verifier}}
	// A secret, or a Basic id that contradicts the body, is refused
	// before the code is touched.
	status, body := post(form, id, "guessed-secret")
	wantOAuthError(t, status, body, http.StatusUnauthorized, "invalid_client")
	withID := url.Values{"client_id": {"someone-else"}}
	for k, v := range form {
		withID[k] = v
	}
	status, body = post(withID, id, "")
	wantOAuthError(t, status, body, http.StatusUnauthorized, "invalid_client")
	status, body = post(url.Values{"grant_type": {"password"}, "client_id": {id}}, "", "")
	wantOAuthError(t, status, body, http.StatusBadRequest, "unsupported_grant_type")
	status, body = post(url.Values{"grant_type": {"authorization_code", "refresh_token"}, "client_id": {id}}, "", "")
	wantOAuthError(t, status, body, http.StatusBadRequest, "invalid_request")
	status, body = post(url.Values{"grant_type": {"authorization_code"}}, "", "")
	wantOAuthError(t, status, body, http.StatusBadRequest, "invalid_request")
	// The id in Basic with no secret is how a public client may send it.
	status, body = post(form, id, "")
	if status != http.StatusOK {
		t.Fatalf("client_id in Basic: %d %v", status, body)
	}
}
