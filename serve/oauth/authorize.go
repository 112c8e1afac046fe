package oauth

import (
	"context"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// authParams are the parameters of an authorization request the approval
// form carries over, in the order they appear in it.
var authParams = []string{"response_type", "client_id", "redirect_uri", "state", "code_challenge", "code_challenge_method", "resource", "scope"}

// maxState bounds the state a client asks us to return.
const maxState = 1000

// authRequest is a checked authorization request.
type authRequest struct {
	client      Client
	cimd        bool // the client is a client ID metadata document
	redirectURI string
	state       string
	challenge   string
	scope       string
}

// authError is a refused authorization request. Before the client and
// its redirect_uri are verified it is shown as a page (redirect false);
// after, it goes back to the client by redirect (RFC 6749 §4.1.2.1).
type authError struct {
	redirect bool
	status   int // of the page
	code     string
	desc     string
}

func pageError(status int, desc string) *authError {
	return &authError{status: status, desc: desc}
}

// checkAuthorize checks an authorization request's parameters.
func (s *Server) checkAuthorize(ctx context.Context, v url.Values) (authRequest, *authError) {
	for _, k := range authParams {
		if len(v[k]) > 1 {
			return authRequest{}, pageError(http.StatusBadRequest, k+" is given more than once; send each parameter once.")
		}
	}
	var req authRequest
	id := v.Get("client_id")
	switch {
	case id == "":
		return req, pageError(http.StatusBadRequest, "client_id is missing; the agent that sent you here must name itself.")
	case strings.HasPrefix(id, "https://"):
		c, err := s.clients.fetch(ctx, id)
		if err != nil {
			s.log.Warn("client document refused", "client_id", id, "err", err)
			return req, pageError(http.StatusBadRequest, "The agent's client document cannot be used: "+err.Error()+".")
		}
		req.client, req.cimd = c, true
	default:
		c, err := s.cfg.Store.Client(ctx, id)
		if errors.Is(err, ErrNotFound) {
			return req, pageError(http.StatusBadRequest, "client_id "+clip(id)+" is unknown or its registration expired; let the agent register again.")
		}
		if err != nil {
			s.log.Error("cannot read client", "client_id", id, "err", err)
			return req, pageError(http.StatusInternalServerError, "Cannot read the agent's registration now; try again in a minute.")
		}
		req.client = c
	}
	req.redirectURI = v.Get("redirect_uri")
	if req.redirectURI == "" {
		return req, pageError(http.StatusBadRequest, "redirect_uri is missing; the agent must name where to return.")
	}
	if !slices.ContainsFunc(req.client.RedirectURIs, func(reg string) bool { return redirectMatches(reg, req.redirectURI) }) {
		return req, pageError(http.StatusBadRequest, "redirect_uri "+clip(req.redirectURI)+" is not registered for this agent; nothing was sent to it.")
	}
	// From here on the client and the way back to it are verified.
	req.state = v.Get("state")
	if len(req.state) > maxState {
		req.state = ""
		return req, &authError{redirect: true, code: "invalid_request", desc: "state is longer than 1000 bytes"}
	}
	if rt := v.Get("response_type"); rt != "code" {
		return req, &authError{redirect: true, code: "unsupported_response_type", desc: "response_type must be code"}
	}
	req.challenge = v.Get("code_challenge")
	if v.Get("code_challenge_method") != "S256" || !validChallenge(req.challenge) {
		return req, &authError{redirect: true, code: "invalid_request", desc: "PKCE is required: send code_challenge (43 characters) with code_challenge_method=S256"}
	}
	if res := v.Get("resource"); res != s.cfg.Resource {
		return req, &authError{redirect: true, code: "invalid_target", desc: "resource must be " + s.cfg.Resource}
	}
	if slices.Contains(strings.Fields(v.Get("scope")), scopeOfflineAccess) {
		req.scope = scopeOfflineAccess
	}
	return req, nil
}

// clip shortens what a client sent before it is shown back.
func clip(s string) string {
	if len(s) > 100 {
		return s[:100] + "…"
	}
	return s
}

// fail answers a refused authorization request.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, req authRequest, e *authError) {
	if !e.redirect {
		s.page(w, r, e.status, "Sign-in request refused", e.desc)
		return
	}
	s.log.Info("authorization refused", "client_id", req.client.ID, "error", e.code, "why", e.desc)
	s.back(w, r, req, url.Values{"error": {e.code}, "error_description": {e.desc}})
}

// back redirects to the client's redirect_uri with params, state and iss.
func (s *Server) back(w http.ResponseWriter, r *http.Request, req authRequest, params url.Values) {
	u, _ := url.Parse(req.redirectURI) // checked by checkRedirectURI
	q := u.Query()
	for k, v := range params {
		q[k] = v
	}
	if req.state != "" {
		q.Set("state", req.state)
	}
	q.Set("iss", s.cfg.Issuer)
	u.RawQuery = q.Encode()
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	http.Redirect(w, r, u.String(), http.StatusSeeOther)
}

// authorize is GET /oauth/authorize: it checks the request, sends a
// browser that is not signed in to the sign-in page (which returns it
// here) and shows the approval page. A GET never approves.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	req, e := s.checkAuthorize(r.Context(), r.URL.Query())
	if e != nil {
		s.fail(w, r, req, e)
		return
	}
	account, ok := s.cfg.SignedIn(r)
	if !ok {
		http.Redirect(w, r, s.cfg.SignInURL(r.URL.RequestURI()), http.StatusSeeOther)
		return
	}
	s.consent(w, r, req, account, r.URL.Query())
}

var consentTemplate = template.Must(template.New("consent").Parse(`<h1>Allow {{.Name}} to use kwdata?</h1>
<p><strong>{{.Name}}</strong> {{if .CIMD}}(described at <strong>{{.Host}}</strong>){{else}}(a self-registered agent; its name is not verified){{end}} asks to search keyword data as you, with your account's plan and quota.</p>
<p>On approval you go back to <strong>{{.Back}}</strong>. Its access renews while it is used and ends after 30 days without use.</p>
<form method="post" action="{{.Action}}">
{{range .Fields}}<input type="hidden" name="{{.Name}}" value="{{.Value}}">
{{end}}<button type="submit" name="decision" value="approve">Allow</button>
<button type="submit" name="decision" value="deny">Deny</button>
</form>
`))

type field struct{ Name, Value string }

// consent shows the approval page.
func (s *Server) consent(w http.ResponseWriter, r *http.Request, req authRequest, account string, v url.Values) {
	name := req.client.Name
	if name == "" {
		name = "An unnamed agent"
	}
	cid, _ := url.Parse(req.client.ID)
	back, _ := url.Parse(req.redirectURI)
	data := struct {
		Name, Host, Back, Action string
		CIMD                     bool
		Fields                   []field
	}{Name: name, CIMD: req.cimd, Back: back.Host, Action: PathAuthorize}
	if req.cimd {
		data.Host = cid.Host
	}
	for _, k := range authParams {
		if val := v.Get(k); val != "" {
			data.Fields = append(data.Fields, field{k, val})
		}
	}
	var b strings.Builder
	if err := consentTemplate.Execute(&b, data); err != nil {
		s.log.Error("cannot render approval page", "err", err)
		s.page(w, r, http.StatusInternalServerError, "Cannot show the approval", "Try again in a minute.")
		return
	}
	s.log.Debug("approval shown", "client_id", req.client.ID, "account", account)
	s.render(w, r, http.StatusOK, "Allow "+name+"?", template.HTML(b.String()))
}

// maxApproval bounds the approval form.
const maxApproval = 16 << 10

// approve is POST /oauth/authorize, the approval form. The router wraps
// it in the cross-origin check, so a page elsewhere cannot approve in the
// signed-in browser's name.
func (s *Server) approve(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxApproval)
	if err := r.ParseForm(); err != nil {
		s.page(w, r, http.StatusBadRequest, "Sign-in request refused", "The approval form cannot be read; open the agent's sign-in link again.")
		return
	}
	v := r.PostForm
	req, e := s.checkAuthorize(r.Context(), v)
	if e != nil {
		s.fail(w, r, req, e)
		return
	}
	account, ok := s.cfg.SignedIn(r)
	if !ok {
		q := url.Values{}
		for _, k := range authParams {
			if val := v.Get(k); val != "" {
				q.Set(k, val)
			}
		}
		http.Redirect(w, r, s.cfg.SignInURL(PathAuthorize+"?"+q.Encode()), http.StatusSeeOther)
		return
	}
	switch v.Get("decision") {
	case "approve":
	case "deny":
		s.log.Info("authorization denied", "client_id", req.client.ID, "account", account)
		s.back(w, r, req, url.Values{"error": {"access_denied"}, "error_description": {"the person denied the request"}})
		return
	default:
		s.page(w, r, http.StatusBadRequest, "Sign-in request refused", "Choose Allow or Deny on the approval page.")
		return
	}
	code, err := s.cfg.Store.NewCode(r.Context(), CodeGrant{
		Grant:       Grant{Account: account, ClientID: req.client.ID, Resource: s.cfg.Resource, Scope: req.scope},
		RedirectURI: req.redirectURI,
		Challenge:   req.challenge,
	})
	if err != nil {
		s.log.Error("cannot store authorization code", "client_id", req.client.ID, "err", err)
		s.back(w, r, req, url.Values{"error": {"server_error"}, "error_description": {"cannot issue a code now; try again in a minute"}})
		return
	}
	s.log.Info("authorization approved", "client_id", req.client.ID, "account", account)
	s.back(w, r, req, url.Values{"code": {code}})
}
