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
// is called only for requests that carry Origin, as every cross-origin
// request from a browser does: programs ignore the fields, and net/http
// copies and sorts every header of every answer, so two fields on each of
// the busiest answers cost measurable time. Answers are never made
// cacheable (they carry no validators or lifetimes, and counted ones
// differ per caller), so no cache can hand an answer made without the
// fields to a browser.
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
