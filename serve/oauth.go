package serve

import (
	"embed"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/kwdata/kwdata/serve/oauth"
	"github.com/kwdata/kwdata/serve/web"
)

// newOAuthRoom returns the authorization server (serve/oauth) when there
// is an OAuth store and a public URL that can be its issuer: OAuth
// identifies the server by an absolute URL of scheme and host, which a
// relative-links server or one under a path prefix does not have.
// Otherwise it logs once why agent sign-in is off and returns nil.
func (s *Server) newOAuthRoom(opt Options) *oauth.Server {
	if opt.OAuth == nil {
		return nil
	}
	u, _ := url.Parse(s.PublicURL) // checked by ParsePublicURL
	if s.PublicURL == "" || (u.Path != "" && u.Path != "/") {
		s.Log.Warn("agent sign-in is off: OAuth needs the server's public URL as its issuer, scheme and host only; "+
			"start the server with --public-url https://HOST (no path) to turn it on",
			slog.String("public_url", s.PublicURL))
		return nil
	}
	room, err := oauth.New(oauth.Config{
		Issuer:     s.PublicURL,
		Resource:   s.PublicURL + oauth.ResourcePath,
		Store:      opt.OAuth,
		SignedIn:   s.SignedIn,
		SignInURL:  signInURL,
		Page:       s.oauthPage,
		ClientAddr: s.ClientAddr,
		Now:        s.Now,
		Logger:     s.Log,
	})
	if err != nil {
		s.Log.Error("agent sign-in is off: the authorization server cannot start", slog.Any("err", err))
		return nil
	}
	return room
}

// mountOAuth mounts the authorization server's routes and the sign-in MCP
// endpoint POST /mcp/oauth; with room nil, they answer 404.
func (s *Server) mountOAuth(room *oauth.Server) {
	if room == nil {
		return
	}
	for _, rt := range room.Routes() {
		s.handle(rt.Method+" "+rt.Path, plain(rt.Handler))
	}
	s.handle("POST "+oauth.ResourcePath, private(signedInMCP(room, s.agent.ServeMCP)))
}

// signInURL is where the authorization endpoint sends a person who is not
// signed in: the account page, which signs them in and returns to next.
func signInURL(next string) string { return "/account?next=" + url.QueryEscape(next) }

// plain adapts a handler of the authorization server, which writes its
// own answers (RFC 6749 JSON errors, pages), to the router, which then
// only measures and logs it.
func plain(h http.Handler) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		h.ServeHTTP(w, r)
		return nil
	}
}

// signedInMCP answers the MCP endpoint h for requests whose access token
// the authorization server accepts, as the token's account: every tool
// call counts on it, its tier read live. Other requests get 401 and the
// challenge that starts the sign-in.
func signedInMCP(room *oauth.Server, h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		var err error
		room.RequireToken(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			g, ok := oauth.GrantFrom(r.Context())
			if !ok || g.Account == "" {
				// RequireToken passes only requests with a grant; one
				// without is a wiring bug, never an anonymous call.
				err = web.HTTPError{Status: http.StatusInternalServerError, Code: web.CodeInternal,
					Msg: "The server failed to answer this request; retrying may help."}
				return
			}
			err = h(w, r.WithContext(web.WithAccount(r.Context(), g.Account)))
		})).ServeHTTP(w, r)
		return err
	}
}

//go:embed templates/oauth.html
var oauthFS embed.FS

// oauthTemplate frames the authorization server's pages (sign-in
// approval, refusals) in the site's layout.
var oauthTemplate = web.ParsePages(oauthFS, "oauth")["oauth"]

// oauthPage renders a page of the authorization server in the site's
// layout. The approval form redirects to the agent's own address, which
// a form-action 'self' policy would stop in browsers that apply it to the
// redirect after a form: the page's policy leaves form-action out.
func (s *Server) oauthPage(w http.ResponseWriter, r *http.Request, status int, title string, body template.HTML) error {
	d := s.NewPage(r, title+" · kwdata", web.FormData{Country: strings.ToUpper(web.DefaultCountry)})
	d.Acct = body
	return web.RenderPage(cspWriter{w}, r, status, "oauth", oauthTemplate, d)
}

// oauthCSP is web.PageCSP without form-action.
var oauthCSP = strings.Replace(web.PageCSP, " form-action 'self';", "", 1)

// cspWriter puts oauthCSP in place of the page policy as the answer
// begins.
type cspWriter struct{ http.ResponseWriter }

func (w cspWriter) WriteHeader(code int) {
	w.Header().Set("Content-Security-Policy", oauthCSP)
	w.ResponseWriter.WriteHeader(code)
}
