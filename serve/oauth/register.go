package oauth

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Bounds of what a client may register.
const (
	maxRedirectURIs = 10
	maxClientName   = 200
	maxRegistration = 16 << 10 // bytes of a registration request
)

// checkMetadata applies the rules shared by registration and client ID
// metadata documents and returns c cleaned up: public clients only, the
// authorization code and refresh token grants only, and redirect URIs
// that pass checkRedirectURI.
func checkMetadata(c Client, authMethod string, grantTypes, responseTypes []string) (Client, error) {
	if len(c.RedirectURIs) == 0 {
		return Client{}, errors.New("redirect_uris is empty; list the URIs the code may be sent back to")
	}
	if len(c.RedirectURIs) > maxRedirectURIs {
		return Client{}, fmt.Errorf("redirect_uris lists %d URIs; at most %d are kept", len(c.RedirectURIs), maxRedirectURIs)
	}
	for _, r := range c.RedirectURIs {
		if err := checkRedirectURI(r); err != nil {
			return Client{}, &metadataError{code: "invalid_redirect_uri", err: err}
		}
	}
	switch authMethod {
	case "", "none", "client_secret_basic", "client_secret_post":
		// Secrets are never issued: every client is public and proves
		// itself with PKCE; a request for a secret gets "none" back.
	default:
		return Client{}, fmt.Errorf("token_endpoint_auth_method %.50q is not supported; use none (public client with PKCE)", authMethod)
	}
	for _, g := range grantTypes {
		if g != "authorization_code" && g != "refresh_token" {
			return Client{}, fmt.Errorf("grant_types has %.50q; only authorization_code and refresh_token are supported", g)
		}
	}
	for _, t := range responseTypes {
		if t != "code" {
			return Client{}, fmt.Errorf("response_types has %.50q; only code is supported", t)
		}
	}
	if len(c.Name) > maxClientName || !utf8.ValidString(c.Name) {
		return Client{}, fmt.Errorf("client_name is longer than %d bytes or not UTF-8", maxClientName)
	}
	if c.URI != "" {
		u, err := url.Parse(c.URI)
		if err != nil || u.Scheme != "https" || u.Host == "" || len(c.URI) > maxURI {
			return Client{}, fmt.Errorf("client_uri %.100q must be an https URL", c.URI)
		}
	}
	c.RedirectURIs = slices.Clone(c.RedirectURIs)
	return c, nil
}

// metadataError carries the RFC 7591 error code of a refused field.
type metadataError struct {
	code string
	err  error
}

func (e *metadataError) Error() string { return e.err.Error() }
func (e *metadataError) Unwrap() error { return e.err }

// register is POST /oauth/register: RFC 7591 dynamic registration of a
// public client, rate-limited per client address by the Store.
func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	allowAnyOrigin(w)
	var meta oauthex.ClientRegistrationMetadata
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxRegistration))
	if err := dec.Decode(&meta); err != nil {
		s.jsonError(w, http.StatusBadRequest, "invalid_client_metadata", "the body is not a JSON client metadata object: "+err.Error())
		return
	}
	c, err := checkMetadata(Client{Name: meta.ClientName, URI: meta.ClientURI, RedirectURIs: meta.RedirectURIs},
		meta.TokenEndpointAuthMethod, meta.GrantTypes, meta.ResponseTypes)
	if err != nil {
		code := "invalid_client_metadata"
		var me *metadataError
		if errors.As(err, &me) {
			code = me.code
		}
		s.jsonError(w, http.StatusBadRequest, code, err.Error())
		return
	}
	from := s.cfg.ClientAddr(r)
	c, err = s.cfg.Store.RegisterClient(r.Context(), c, from)
	if errors.Is(err, ErrTooManyClients) {
		w.Header().Set("Retry-After", "3600")
		s.jsonError(w, http.StatusTooManyRequests, "too_many_requests", "too many client registrations from this address today; reuse a registered client_id or try again tomorrow")
		return
	}
	if err != nil {
		s.log.Error("cannot register client", "from", from, "err", err)
		s.jsonError(w, http.StatusInternalServerError, "server_error", "cannot register the client now; try again later")
		return
	}
	s.log.Info("client registered", "client_id", c.ID, "name", c.Name, "from", from)
	resp := oauthex.ClientRegistrationResponse{
		ClientRegistrationMetadata: oauthex.ClientRegistrationMetadata{
			RedirectURIs:            c.RedirectURIs,
			TokenEndpointAuthMethod: "none",
			GrantTypes:              []string{"authorization_code", "refresh_token"},
			ResponseTypes:           []string{"code"},
			ClientName:              c.Name,
			ClientURI:               c.URI,
		},
		ClientID:         c.ID,
		ClientIDIssuedAt: c.Registered,
	}
	if meta.ApplicationType == "native" || meta.ApplicationType == "web" {
		resp.ApplicationType = meta.ApplicationType
	}
	writeJSON(w, http.StatusCreated, &resp)
}
