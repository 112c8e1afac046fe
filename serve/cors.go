package serve

import "net/http"

// corsPrefix is the part of the site that browser-based clients of any
// origin may call: the JSON API. Its answers never depend on cookies, so
// allowing every origin (without credentials) exposes nothing a program
// could not fetch anyway; API keys travel in request fields the page sets.
const corsPrefix = "/v1/"

// CORS field values.
const (
	corsAllowHeaders  = "Authorization, X-API-Key, Content-Type"
	corsExposeHeaders = "RateLimit, RateLimit-Policy, Retry-After, WWW-Authenticate"
	corsMaxAge        = "86400"
)

// Shared values of the fields every answer under corsPrefix carries. They
// are assigned to the header map directly (the names are already
// canonical), which spares the hot path a canonicalization and a slice
// allocation per field; Header.Set and Add replace or copy these slices,
// never write into them.
var (
	corsAnyOrigin   = []string{"*"}
	corsExposeValue = []string{corsExposeHeaders}
	nosniffValue    = []string{"nosniff"}
	contentTypeJSON = []string{"application/json"}
)

// setCORS marks an answer under corsPrefix as readable by any origin. It
// is set on every answer under corsPrefix, whether or not the request
// carries Origin: some answers are cacheable (GET /v1/openapi.json), and a
// cache that stored an answer made for a program, without the fields,
// would hand it to browsers that then refuse to read it. Since the fields
// never depend on the request, the answer needs no "Vary: Origin".
func setCORS(h http.Header) {
	h["Access-Control-Allow-Origin"] = corsAnyOrigin
	h["Access-Control-Expose-Headers"] = corsExposeValue
}

// preflight answers an OPTIONS request under corsPrefix: the methods of the
// route and the request fields a client may send.
func preflight(w http.ResponseWriter, allow string) {
	h := w.Header()
	h.Set("Access-Control-Allow-Methods", allow)
	h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
	h.Set("Access-Control-Max-Age", corsMaxAge)
	h.Set("Allow", allow+", OPTIONS")
	h.Del("Access-Control-Expose-Headers") // meaningful on actual answers only
	w.WriteHeader(http.StatusNoContent)
}
