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

// setCORS marks an answer under corsPrefix as readable by any origin.
func setCORS(h http.Header) {
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
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
