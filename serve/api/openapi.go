package api

import (
	_ "embed"
	"net/http"
	"strconv"

	"github.com/kwdata/kwdata/serve/web"
)

// handleOpenAPI answers GET /v1/openapi.json.
func (s *API) handleOpenAPI(w http.ResponseWriter, r *http.Request) error {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(web.OpenAPIDoc)))
	h.Set("Cache-Control", "public, max-age=3600")
	w.WriteHeader(http.StatusOK)
	w.Write(web.OpenAPIDoc)
	return nil
}
