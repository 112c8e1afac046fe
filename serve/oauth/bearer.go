package oauth

import (
	"context"
	"errors"
	"net/http"
	"strings"
)

// RequireToken guards the sign-in MCP endpoint: a request without a
// bearer token gets 401 and a WWW-Authenticate challenge naming the
// protected resource metadata (RFC 9728 §5.1), one whose token is
// unknown, expired, revoked or bound to another resource gets the same
// with error="invalid_token" (RFC 6750 §3.1), and one with a good token
// reaches next with its Grant in the context (GrantFrom).
func (s *Server) RequireToken(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, present := bearer(r)
		if !present {
			s.challenge(w, "", "")
			return
		}
		var g Grant
		err := ErrNotFound
		if tok != "" {
			g, err = s.cfg.Store.Token(r.Context(), tok)
		}
		switch {
		case errors.Is(err, ErrNotFound):
			s.challenge(w, "invalid_token", "the access token is unknown, expired or revoked; refresh it or sign in again")
			return
		case err != nil:
			s.log.Error("cannot check access token", "err", err)
			s.jsonError(w, http.StatusServiceUnavailable, "temporarily_unavailable", "cannot check the access token now; try again in a minute")
			return
		case g.Resource != s.cfg.Resource:
			s.log.Warn("access token for another resource", "resource", g.Resource, "client_id", g.ClientID)
			s.challenge(w, "invalid_token", "the access token is for another resource")
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), grantKey{}, g)))
	})
}

// bearer returns the token of an "Authorization: Bearer" header, and
// whether one was presented at all (a malformed header counts as
// presented, and is refused).
func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", false
	}
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", true
	}
	return strings.TrimSpace(tok), true
}

func (s *Server) challenge(w http.ResponseWriter, code, desc string) {
	c := `Bearer resource_metadata="` + s.resourceMeta + `"`
	if code != "" {
		c += `, error="` + code + `", error_description="` + desc + `"`
	}
	w.Header().Set("WWW-Authenticate", c)
	w.Header().Set("Access-Control-Expose-Headers", "WWW-Authenticate")
	s.jsonError(w, http.StatusUnauthorized, orDefault(code, "invalid_request"), orDefault(desc, "this endpoint requires an OAuth access token; the WWW-Authenticate header says where to get one"))
}

// orDefault returns a, or b when a is empty.
func orDefault(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
