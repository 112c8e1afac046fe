package serve

import (
	"net/http"
	"strings"
)

// corsShared reports whether pages of any origin may call method on path:
// every GET (and HEAD) of the JSON API, and the bulk lookup, which
// browser-based agents use to look up many keywords at once. Their answers
// never depend on cookies, so allowing every origin (without credentials)
// exposes nothing a program could not fetch anyway; API keys travel in
// request fields the page sets. POST /v1/register is left out: shared, it
// would let any web page make its visitors' browsers register keys for
// addresses of the page's choosing.
func corsShared(method, path string) bool {
	switch method {
	case http.MethodGet, http.MethodHead:
		return strings.HasPrefix(path, "/v1/")
	case http.MethodPost:
		return path == "/v1/keywords"
	}
	return false
}

// CORS field values.
const (
	corsAllowHeaders  = "Authorization, X-API-Key, Content-Type"
	corsExposeHeaders = "RateLimit, RateLimit-Policy, Retry-After, WWW-Authenticate"
	corsMaxAge        = "86400"
)

// Shared values of the fields every answer of a shared route carries. They
// are assigned to the header map directly (the names are already
// canonical), which spares the hot path a canonicalization and a slice
// allocation per field; Header.Set and Add replace or copy these slices,
// never write into them.
var (
	corsAnyOrigin   = []string{"*"}
	corsExposeValue = []string{corsExposeHeaders}
	nosniffValue    = []string{"nosniff"}
)

// setCORS marks an answer of a shared route as readable by any origin. It
// is set on every answer of such a route, whether or not the request
// carries Origin: some answers are cacheable (GET /v1/openapi.json), and a
// cache that stored an answer made for a program, without the fields,
// would hand it to browsers that then refuse to read it. Since the fields
// never depend on the request, the answer needs no "Vary: Origin".
func setCORS(h http.Header) {
	h["Access-Control-Allow-Origin"] = corsAnyOrigin
	h["Access-Control-Expose-Headers"] = corsExposeValue
}

// preflight answers an OPTIONS request to a shared route: the methods
// pages may use on it (methods) and the request fields a client may send.
func preflight(w http.ResponseWriter, methods, allow string) {
	h := w.Header()
	h.Set("Access-Control-Allow-Methods", methods)
	h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
	h.Set("Access-Control-Max-Age", corsMaxAge)
	h.Set("Allow", allow+", OPTIONS")
	h.Del("Access-Control-Expose-Headers") // meaningful on actual answers only
	w.WriteHeader(http.StatusNoContent)
}
