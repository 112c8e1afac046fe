package oauth

import (
	"encoding/json"
	"fmt"
	"html"
	"html/template"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"
)

// harness is the authorization server on a loopback httptest server, with
// a protected endpoint at /mcp/oauth that answers the grant's account.
type harness struct {
	t     testing.TB
	ts    *httptest.Server
	srv   *Server
	store *memStore
	clock *clock
	// browser sends no cookies and follows no redirects.
	browser *http.Client
}

const testAccount = "acct_alice"

func newHarness(t testing.TB, tweak func(*Config)) *harness {
	t.Helper()
	h := &harness{t: t, clock: newClock()}
	h.store = newMemStore(h.clock.Now)
	mux := http.NewServeMux()
	h.ts = httptest.NewServer(mux)
	t.Cleanup(h.ts.Close)
	cfg := Config{
		Issuer: h.ts.URL,
		Store:  h.store,
		SignedIn: func(r *http.Request) (string, bool) {
			c, err := r.Cookie("session")
			if err != nil || c.Value != "alice" {
				return "", false
			}
			return testAccount, true
		},
		SignInURL: func(next string) string { return "/signin?next=" + url.QueryEscape(next) },
		Page: func(w http.ResponseWriter, r *http.Request, status int, title string, body template.HTML) error {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.WriteHeader(status)
			_, err := fmt.Fprintf(w, "<!doctype html><title>%s</title><main>%s</main>", template.HTMLEscapeString(title), body)
			return err
		},
		Now: h.clock.Now,
	}
	if tweak != nil {
		tweak(&cfg)
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.srv = srv
	srv.Mount(mux)
	mux.Handle("/mcp/oauth", srv.RequireToken(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g, ok := GrantFrom(r.Context())
		if !ok {
			http.Error(w, "no grant in context", http.StatusInternalServerError)
			return
		}
		io.WriteString(w, g.Account)
	})))
	h.browser = &http.Client{
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       10 * time.Second,
	}
	return h
}

// register registers a public client through RFC 7591 and returns its id.
func (h *harness) register(redirects ...string) string {
	h.t.Helper()
	status, body := h.postJSON("/oauth/register", map[string]any{
		"redirect_uris": redirects, "client_name": "Test Agent",
		"token_endpoint_auth_method": "none", "grant_types": []string{"authorization_code", "refresh_token"},
	})
	if status != http.StatusCreated {
		h.t.Fatalf("register: %d %v", status, body)
	}
	return body["client_id"].(string)
}

func (h *harness) postJSON(path string, v any) (int, map[string]any) {
	h.t.Helper()
	b, _ := json.Marshal(v)
	resp, err := h.browser.Post(h.ts.URL+path, "application/json", strings.NewReader(string(b)))
	if err != nil {
		h.t.Fatal(err)
	}
	return decodeJSON(h.t, resp)
}

func decodeJSON(t testing.TB, resp *http.Response) (int, map[string]any) {
	t.Helper()
	defer resp.Body.Close()
	var m map[string]any
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s %s: %d, not JSON: %q", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode, b)
	}
	return resp.StatusCode, m
}

// authParams are the parameters of a valid authorization request.
func (h *harness) authParams(clientID, redirect, verifier string) url.Values {
	return url.Values{
		"response_type":         {"code"},
		"client_id":             {clientID},
		"redirect_uri":          {redirect},
		"state":                 {"st-123"},
		"code_challenge":        {oauth2.S256ChallengeFromVerifier(verifier)},
		"code_challenge_method": {"S256"},
		"resource":              {h.ts.URL + "/mcp/oauth"},
		"scope":                 {"offline_access"},
	}
}

// get sends a signed-in (or anonymous) browser GET.
func (h *harness) get(path string, signedIn bool) *http.Response {
	h.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, h.ts.URL+path, nil)
	if signedIn {
		req.AddCookie(&http.Cookie{Name: "session", Value: "alice"})
	}
	resp, err := h.browser.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp
}

var hiddenField = regexp.MustCompile(`<input type="hidden" name="([a-z_]+)" value="([^"]*)">`)

// consent opens the authorization URL as a signed-in browser and returns
// the approval form's fields, failing unless the consent page shows.
func (h *harness) consent(authURL string) url.Values {
	h.t.Helper()
	u, err := url.Parse(authURL)
	if err != nil {
		h.t.Fatal(err)
	}
	resp := h.get(u.RequestURI(), true)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		h.t.Fatalf("GET %s: %d %s", u.Path, resp.StatusCode, body)
	}
	form := url.Values{}
	for _, m := range hiddenField.FindAllStringSubmatch(string(body), -1) {
		form.Set(m[1], html.UnescapeString(m[2]))
	}
	if form.Get("client_id") == "" {
		h.t.Fatalf("consent page has no approval form: %s", body)
	}
	return form
}

// approve posts the approval form from origin and returns the response.
func (h *harness) approve(form url.Values, origin string) *http.Response {
	h.t.Helper()
	form.Set("decision", "approve")
	req, _ := http.NewRequest(http.MethodPost, h.ts.URL+"/oauth/authorize", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", origin)
	req.AddCookie(&http.Cookie{Name: "session", Value: "alice"})
	resp, err := h.browser.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp
}

// code runs the browser part of the flow and returns the code.
func (h *harness) code(clientID, redirect, verifier string) string {
	h.t.Helper()
	q := h.authParams(clientID, redirect, verifier)
	resp := h.approve(h.consent(h.ts.URL+"/oauth/authorize?"+q.Encode()), h.ts.URL)
	resp.Body.Close()
	loc := redirectTo(h.t, resp)
	if loc.Query().Get("code") == "" {
		h.t.Fatalf("approval redirected without a code: %s", loc)
	}
	return loc.Query().Get("code")
}

func redirectTo(t testing.TB, resp *http.Response) *url.URL {
	t.Helper()
	if resp.StatusCode != http.StatusSeeOther && resp.StatusCode != http.StatusFound {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s %s: %d, want a redirect: %s", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode, b)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// token posts a token request.
func (h *harness) token(form url.Values) (int, map[string]any) {
	h.t.Helper()
	resp, err := h.browser.PostForm(h.ts.URL+"/oauth/token", form)
	if err != nil {
		h.t.Fatal(err)
	}
	if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
		h.t.Errorf("token endpoint Cache-Control = %q, want no-store", cc)
	}
	return decodeJSON(h.t, resp)
}

func (h *harness) exchange(clientID, redirect, verifier, code string) (int, map[string]any) {
	h.t.Helper()
	return h.token(url.Values{
		"grant_type": {"authorization_code"}, "client_id": {clientID}, "redirect_uri": {redirect},
		"code": {code}, "code_verifier": {verifier}, "resource": {h.ts.URL + "/mcp/oauth"},
	})
}

// call calls the protected endpoint with an access token and returns the
// status, the body and the WWW-Authenticate header.
func (h *harness) call(access string) (int, string, string) {
	h.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, h.ts.URL+"/mcp/oauth", nil)
	if access != "" {
		req.Header.Set("Authorization", "Bearer "+access)
	}
	resp, err := h.browser.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header.Get("WWW-Authenticate")
}

// tokens runs the whole flow for a fresh client and returns its id and
// the token response.
func (h *harness) tokens() (string, map[string]any) {
	h.t.Helper()
	const redirect = "http://127.0.0.1:8976/callback"
	id := h.register(redirect)
	verifier := oauth2.GenerateVerifier()
	status, body := h.exchange(id, redirect, verifier, h.code(id, redirect, verifier))
	if status != http.StatusOK {
		h.t.Fatalf("token: %d %v", status, body)
	}
	return id, body
}
