package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Paths the server answers. The protected resource metadata path is
// derived from Config.Resource.
const (
	// PathAuthServerMeta is the RFC 8414 metadata document.
	PathAuthServerMeta = "/.well-known/oauth-authorization-server"
	// PathRegister is RFC 7591 dynamic client registration.
	PathRegister = "/oauth/register"
	// PathAuthorize is the authorization endpoint and its approval form.
	PathAuthorize = "/oauth/authorize"
	// PathToken is the token endpoint.
	PathToken = "/oauth/token"
	// ResourcePath is the path of the sign-in MCP endpoint, the protected
	// resource.
	ResourcePath = "/mcp/oauth"
)

// scopeOfflineAccess is the one scope kwdata knows: clients ask for it to
// get refresh tokens (they always get one).
const scopeOfflineAccess = "offline_access"

// Config configures the authorization server. Fields marked required
// must be set; the others document their default.
type Config struct {
	// Issuer is the public URL of the site (scheme and host, no path):
	// the issuer identifier and the base of every endpoint. Required.
	Issuer string
	// Resource is the protected resource tokens are bound to. Default:
	// Issuer + "/mcp/oauth".
	Resource string
	// Store keeps clients, codes and tokens. Required.
	Store Store
	// SignedIn returns the account of the browser's session, if any.
	// Required.
	SignedIn func(*http.Request) (account string, ok bool)
	// SignInURL returns where to send a browser that is not signed in;
	// the sign-in page returns it to next afterwards. next is always a
	// path and query of the authorization endpoint on this origin, and
	// the sign-in page should follow nothing else. Required.
	SignInURL func(next string) string
	// Page renders body (the approval form or an error) in the site's
	// layout with the given status. Default: a bare HTML page.
	Page func(w http.ResponseWriter, r *http.Request, status int, title string, body template.HTML) error
	// ClientAddr returns the address a request comes from, for the
	// registration allowance. Default: the address of r.RemoteAddr.
	ClientAddr func(*http.Request) netip.Addr
	// Fetch fetches client ID metadata documents. Default:
	// NewFetchClient(FetchOptions{}), which never connects to a private
	// address. Only tests pass another.
	Fetch *http.Client
	// Now is the clock of the document cache and of expires_in (the
	// Store keeps its own for expiry). Default: time.Now.
	Now func() time.Time
	// Logger receives what was refused and why. Default: discard.
	Logger *slog.Logger
}

// Route is one endpoint of the server, for the composing server's
// router.
type Route struct {
	Method  string // GET, POST or OPTIONS
	Path    string // an exact path, no pattern
	Handler http.Handler
}

// Server is kwdata's OAuth 2.1 authorization server for MCP clients.
type Server struct {
	cfg          Config
	log          *slog.Logger
	clients      *clientDocs
	origin       *http.CrossOriginProtection
	resourceMeta string // URL of the protected resource metadata
	asMeta       []byte
	prMeta       []byte
}

// New checks cfg, fills in its defaults and returns the server.
func New(cfg Config) (*Server, error) {
	iss, err := url.Parse(cfg.Issuer)
	if err != nil || (iss.Scheme != "https" && iss.Scheme != "http") || iss.Host == "" || (iss.Path != "" && iss.Path != "/") || iss.RawQuery != "" || iss.Fragment != "" {
		return nil, fmt.Errorf("cannot start the authorization server: issuer %q must be the site's public URL, scheme and host only", cfg.Issuer)
	}
	cfg.Issuer = strings.TrimSuffix(cfg.Issuer, "/")
	if cfg.Resource == "" {
		cfg.Resource = cfg.Issuer + ResourcePath
	}
	res, err := url.Parse(cfg.Resource)
	if err != nil || !strings.HasPrefix(cfg.Resource, cfg.Issuer+"/") || res.RawQuery != "" || res.Fragment != "" {
		return nil, fmt.Errorf("cannot start the authorization server: resource %q must be a URL on the issuer %s", cfg.Resource, cfg.Issuer)
	}
	switch {
	case cfg.Store == nil:
		return nil, errors.New("cannot start the authorization server: Config.Store is nil")
	case cfg.SignedIn == nil || cfg.SignInURL == nil:
		return nil, errors.New("cannot start the authorization server: Config.SignedIn and Config.SignInURL are required")
	}
	if cfg.Page == nil {
		cfg.Page = barePage
	}
	if cfg.ClientAddr == nil {
		cfg.ClientAddr = remoteAddr
	}
	if cfg.Fetch == nil {
		cfg.Fetch = NewFetchClient(FetchOptions{})
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		cfg:          cfg,
		log:          cfg.Logger.With("component", "oauth"),
		clients:      &clientDocs{http: cfg.Fetch, now: cfg.Now, cache: map[string]cachedDoc{}, slots: make(chan struct{}, maxFetches)},
		origin:       http.NewCrossOriginProtection(),
		resourceMeta: cfg.Issuer + "/.well-known/oauth-protected-resource" + res.EscapedPath(),
	}
	// Behind a proxy the Host header may not be the public host.
	if err := s.origin.AddTrustedOrigin(cfg.Issuer); err != nil {
		return nil, fmt.Errorf("cannot start the authorization server: %w", err)
	}
	s.origin.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.log.Warn("approval refused: cross-origin", "origin", r.Header.Get("Origin"))
		s.page(w, r, http.StatusForbidden, "Approval refused",
			"This approval did not come from "+cfg.Issuer+"'s own page. Open the sign-in link of your agent again.")
	}))
	s.asMeta, err = json.Marshal(authServerMeta{AuthServerMeta: oauthex.AuthServerMeta{
		Issuer:                                     cfg.Issuer,
		AuthorizationEndpoint:                      cfg.Issuer + PathAuthorize,
		TokenEndpoint:                              cfg.Issuer + PathToken,
		RegistrationEndpoint:                       cfg.Issuer + PathRegister,
		ScopesSupported:                            []string{scopeOfflineAccess},
		ResponseTypesSupported:                     []string{"code"},
		ResponseModesSupported:                     []string{"query"},
		GrantTypesSupported:                        []string{"authorization_code", "refresh_token"},
		TokenEndpointAuthMethodsSupported:          []string{"none"},
		CodeChallengeMethodsSupported:              []string{"S256"},
		ClientIDMetadataDocumentSupported:          true,
		AuthorizationResponseIssParameterSupported: true,
	}})
	if err != nil {
		return nil, fmt.Errorf("cannot encode authorization server metadata: %w", err)
	}
	s.prMeta, err = json.Marshal(oauthex.ProtectedResourceMetadata{
		Resource:               cfg.Resource,
		AuthorizationServers:   []string{cfg.Issuer},
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "kwdata MCP (sign-in)",
	})
	if err != nil {
		return nil, fmt.Errorf("cannot encode protected resource metadata: %w", err)
	}
	return s, nil
}

// authServerMeta leaves out jwks_uri, which oauthex always writes: the
// tokens are opaque, there is no key set to publish.
type authServerMeta struct {
	oauthex.AuthServerMeta
	JWKSURI string `json:"jwks_uri,omitempty"`
}

// ResourceMetadataURL returns the URL of the RFC 9728 document of the
// sign-in endpoint, as the WWW-Authenticate challenge names it.
func (s *Server) ResourceMetadataURL() string { return s.resourceMeta }

// Routes returns the endpoints to mount. There is no root
// /.well-known/oauth-protected-resource: by RFC 9728 it would describe
// the whole origin, which is not an OAuth-protected resource (/mcp and
// the API take API keys or nothing); clients find the path document from
// the WWW-Authenticate challenge, or by the path insertion MCP asks them
// to try first.
//
// CORS: the metadata documents, registration and the token endpoint
// allow any origin, since browser-based MCP clients call them from their
// own origin and none of them reads cookies (public clients prove
// themselves with PKCE). The authorization endpoint is navigated to, not
// fetched, and has no CORS.
func (s *Server) Routes() []Route {
	res, _ := url.Parse(s.resourceMeta)
	return []Route{
		{http.MethodGet, PathAuthServerMeta, s.document(s.asMeta)},
		{http.MethodOptions, PathAuthServerMeta, http.HandlerFunc(preflight)},
		{http.MethodGet, res.Path, s.document(s.prMeta)},
		{http.MethodOptions, res.Path, http.HandlerFunc(preflight)},
		{http.MethodPost, PathRegister, http.HandlerFunc(s.register)},
		{http.MethodOptions, PathRegister, http.HandlerFunc(preflight)},
		{http.MethodGet, PathAuthorize, http.HandlerFunc(s.authorize)},
		{http.MethodPost, PathAuthorize, s.origin.Handler(http.HandlerFunc(s.approve))},
		{http.MethodPost, PathToken, http.HandlerFunc(s.token)},
		{http.MethodOptions, PathToken, http.HandlerFunc(preflight)},
	}
}

// Mount registers Routes on mux with method patterns.
func (s *Server) Mount(mux *http.ServeMux) {
	for _, rt := range s.Routes() {
		mux.Handle(rt.Method+" "+rt.Path, rt.Handler)
	}
}

func (s *Server) document(b []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		allowAnyOrigin(w)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "public, max-age=3600")
		w.Write(b)
	})
}

func allowAnyOrigin(w http.ResponseWriter) {
	w.Header().Set("Access-Control-Allow-Origin", "*")
}

func preflight(w http.ResponseWriter, r *http.Request) {
	allowAnyOrigin(w)
	w.Header().Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
	w.Header().Set("Access-Control-Allow-Headers", "Authorization, Content-Type, MCP-Protocol-Version")
	w.Header().Set("Access-Control-Max-Age", "86400")
	w.WriteHeader(http.StatusNoContent)
}

func remoteAddr(r *http.Request) netip.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// jsonError writes an RFC 6749 §5.2 error.
func (s *Server) jsonError(w http.ResponseWriter, status int, code, desc string) {
	writeJSON(w, status, map[string]string{"error": code, "error_description": desc})
}

var bareTemplate = template.Must(template.New("page").Parse(
	`<!doctype html><html lang="en"><meta charset="utf-8"><meta name="viewport" content="width=device-width"><title>{{.Title}}</title><main>{{.Body}}</main></html>`))

func barePage(w http.ResponseWriter, _ *http.Request, status int, title string, body template.HTML) error {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	return bareTemplate.Execute(w, struct {
		Title string
		Body  template.HTML
	}{title, body})
}

var messageTemplate = template.Must(template.New("msg").Parse(`<h1>{{.Title}}</h1><p>{{.Text}}</p>`))

// page renders a one-paragraph page: what went wrong and what to do.
func (s *Server) page(w http.ResponseWriter, r *http.Request, status int, title, text string) {
	var b strings.Builder
	messageTemplate.Execute(&b, struct{ Title, Text string }{title, text})
	s.render(w, r, status, title, template.HTML(b.String()))
}

func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, title string, body template.HTML) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "frame-ancestors 'none'")
	h.Set("Referrer-Policy", "no-referrer")
	if err := s.cfg.Page(w, r, status, title, body); err != nil {
		s.log.Error("cannot render page", "title", title, "err", err)
	}
}

type grantKey struct{}

// GrantFrom returns the grant RequireToken put in the request context.
func GrantFrom(ctx context.Context) (Grant, bool) {
	g, ok := ctx.Value(grantKey{}).(Grant)
	return g, ok
}
