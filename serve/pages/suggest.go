package pages

import (
	_ "embed"
	"net/http"

	"github.com/kwdata/kwdata/serve/web"
)

// Suggestions (GET /v1/suggest) answer keywords only, no numbers, and are
// not counted against the allowance; instead each client may ask
// SuggestRate times a second (a burst of as many), so that the index
// cannot be walked quickly through them. A 404 offers up to DidYouMean
// keywords the same way, uncounted.

// suggestScript is GET /suggest.js, the search box's suggestions.
//
//go:embed suggest.js
var suggestScript []byte

// handleSuggestScript answers GET /suggest.js.
func (s *Pages) handleSuggestScript(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Cache-Control", "public, max-age=3600")
	return web.WriteBody(w, r, []string{"text/javascript; charset=utf-8"}, suggestScript)
}
