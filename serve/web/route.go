package web

import "net/http"

// HandlerFunc is a handler that returns its failure instead of writing
// it; the router renders the failure as a problem document (see
// Classify).
type HandlerFunc func(w http.ResponseWriter, r *http.Request) error

// Route is one route a room answers.
type Route struct {
	// Pattern is "METHOD /path"; a final "{name}" segment matches any rest
	// of the path. GET routes answer HEAD too.
	Pattern string
	// Handler answers the route.
	Handler HandlerFunc
	// Private marks every answer, refusals included, as
	// CacheControlPrivate: the answer is counted or depends on the
	// caller's key, so a shared cache must neither keep nor share it.
	Private bool
}

// ContentTypeJSON is the Content-Type of JSON answers, shared so that a
// handler assigns it to the header map without allocating (Header.Set
// and Add replace or copy such slices, never write into them).
var ContentTypeJSON = []string{"application/json"}

// WriteBody writes a complete 200 answer.
func WriteBody(w http.ResponseWriter, r *http.Request, contentType []string, body []byte) error {
	h := w.Header()
	h["Content-Type"] = contentType
	h["Content-Length"] = ContentLength(len(body))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
	return nil
}
