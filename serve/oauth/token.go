package oauth

import (
	"errors"
	"net/http"
	"net/url"
	"time"
)

// maxTokenRequest bounds a token request body.
const maxTokenRequest = 16 << 10

// tokenResponse is an RFC 6749 §5.1 success.
type tokenResponse struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	RefreshToken string `json:"refresh_token"`
	Scope        string `json:"scope,omitempty"`
}

// token is POST /oauth/token: the authorization_code and refresh_token
// grants for public clients. Errors are RFC 6749 §5.2 JSON, never
// cached.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	allowAnyOrigin(w)
	w.Header().Set("Pragma", "no-cache")
	r.Body = http.MaxBytesReader(w, r.Body, maxTokenRequest)
	if err := r.ParseForm(); err != nil {
		s.jsonError(w, http.StatusBadRequest, "invalid_request", "the body must be application/x-www-form-urlencoded and under 16 KB")
		return
	}
	v := r.PostForm
	for k, vals := range v {
		if len(vals) > 1 {
			s.jsonError(w, http.StatusBadRequest, "invalid_request", k+" is given more than once")
			return
		}
	}
	clientID := v.Get("client_id")
	if id, secret, ok := r.BasicAuth(); ok {
		// Public clients have no secret; accept the id from Basic only
		// when it is not contradicted and carries none. Basic carries
		// it form-encoded (RFC 6749 §2.3.1): a CIMD client_id is a URL.
		id, err := url.QueryUnescape(id)
		if err != nil || secret != "" || (clientID != "" && clientID != id) {
			w.Header().Set("WWW-Authenticate", `Basic realm="kwdata"`)
			s.jsonError(w, http.StatusUnauthorized, "invalid_client", "clients are public and have no secret; send client_id in the body")
			return
		}
		clientID = id
	}
	if clientID == "" {
		s.jsonError(w, http.StatusBadRequest, "invalid_request", "client_id is missing")
		return
	}
	if res := v.Get("resource"); res != "" && res != s.cfg.Resource {
		s.jsonError(w, http.StatusBadRequest, "invalid_target", "resource must be "+s.cfg.Resource)
		return
	}
	switch gt := v.Get("grant_type"); gt {
	case "authorization_code":
		s.codeGrant(w, r, clientID)
	case "refresh_token":
		s.refreshGrant(w, r, clientID)
	case "":
		s.jsonError(w, http.StatusBadRequest, "invalid_request", "grant_type is missing; use authorization_code or refresh_token")
	default:
		s.jsonError(w, http.StatusBadRequest, "unsupported_grant_type", "grant_type "+clip(gt)+" is not supported; use authorization_code or refresh_token")
	}
}

func (s *Server) codeGrant(w http.ResponseWriter, r *http.Request, clientID string) {
	v := r.PostForm
	code := v.Get("code")
	if code == "" {
		s.jsonError(w, http.StatusBadRequest, "invalid_request", "code is missing")
		return
	}
	// The code is taken before it is checked: whatever goes wrong below,
	// it has been presented and will not work again.
	cg, err := s.cfg.Store.TakeCode(r.Context(), code)
	switch {
	case errors.Is(err, ErrReused):
		s.log.Warn("authorization code presented twice; its tokens are revoked", "client_id", clientID)
		s.jsonError(w, http.StatusBadRequest, "invalid_grant", "the code was already used; the tokens issued from it are revoked, start the sign-in again")
		return
	case errors.Is(err, ErrNotFound):
		s.jsonError(w, http.StatusBadRequest, "invalid_grant", "the code is unknown, used or expired; codes work once, within a minute")
		return
	case err != nil:
		s.serverError(w, "cannot redeem code", err)
		return
	}
	switch {
	case cg.ClientID != clientID:
		s.log.Warn("code presented by another client", "client_id", clientID, "code_client", cg.ClientID)
		s.jsonError(w, http.StatusBadRequest, "invalid_grant", "the code was issued to another client")
		return
	case v.Get("redirect_uri") != cg.RedirectURI:
		s.jsonError(w, http.StatusBadRequest, "invalid_grant", "redirect_uri must repeat the authorization request's")
		return
	case !verifyPKCE(v.Get("code_verifier"), cg.Challenge):
		s.log.Warn("wrong PKCE verifier", "client_id", clientID)
		s.jsonError(w, http.StatusBadRequest, "invalid_grant", "code_verifier does not match the code_challenge")
		return
	case cg.Resource != s.cfg.Resource:
		s.jsonError(w, http.StatusBadRequest, "invalid_target", "the code is for another resource")
		return
	}
	t, err := s.cfg.Store.NewTokens(r.Context(), cg.Grant, code)
	if err != nil {
		s.serverError(w, "cannot issue tokens", err)
		return
	}
	s.log.Info("tokens issued", "client_id", clientID, "account", cg.Account)
	s.tokens(w, t, cg.Grant)
}

func (s *Server) refreshGrant(w http.ResponseWriter, r *http.Request, clientID string) {
	rt := r.PostForm.Get("refresh_token")
	if rt == "" {
		s.jsonError(w, http.StatusBadRequest, "invalid_request", "refresh_token is missing")
		return
	}
	t, g, err := s.cfg.Store.Refresh(r.Context(), rt, clientID)
	switch {
	case errors.Is(err, ErrReused):
		s.log.Warn("refresh token presented twice; its chain is revoked", "client_id", clientID)
		s.jsonError(w, http.StatusBadRequest, "invalid_grant", "the refresh token was already used; every token of its sign-in is revoked, sign in again")
		return
	case errors.Is(err, ErrNotFound):
		s.jsonError(w, http.StatusBadRequest, "invalid_grant", "the refresh token is unknown, expired, revoked or not this client's; sign in again")
		return
	case err != nil:
		s.serverError(w, "cannot refresh", err)
		return
	}
	s.tokens(w, t, g)
}

func (s *Server) tokens(w http.ResponseWriter, t Tokens, g Grant) {
	expiresIn := int64(t.AccessExpires.Sub(s.cfg.Now()).Round(time.Second) / time.Second)
	writeJSON(w, http.StatusOK, tokenResponse{
		AccessToken:  t.Access,
		TokenType:    "Bearer",
		ExpiresIn:    max(expiresIn, 0),
		RefreshToken: t.Refresh,
		Scope:        g.Scope,
	})
}

func (s *Server) serverError(w http.ResponseWriter, what string, err error) {
	s.log.Error(what, "err", err)
	s.jsonError(w, http.StatusInternalServerError, "server_error", what+" now; try again in a minute")
}
