package pages

import (
	_ "embed"
	"net/http"

	"github.com/kwdata/kwdata/serve/web"
)

// signedIn makes a counted page count on the account of the request's
// session, when it has one, exactly as the API counts that account's key;
// without one (or with one that ended) the view counts anonymously. The
// page itself stays the same for everyone: who is signed in shows only
// on the private account page.
func (s *Pages) signedIn(h web.HandlerFunc) web.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if acct, ok := s.SignedIn(r); ok {
			r = r.WithContext(web.WithAccount(r.Context(), acct))
		}
		return h(w, r)
	}
}

// favicon is the site's icon, GET /favicon.svg (and /favicon.ico, where
// browsers look without a link).
//
//go:embed favicon.svg
var favicon []byte

// handleFavicon answers GET /favicon.svg and /favicon.ico.
func (s *Pages) handleFavicon(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Cache-Control", "public, max-age=86400")
	return web.WriteBody(w, r, []string{"image/svg+xml"}, favicon)
}
