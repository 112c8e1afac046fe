package api

import (
	"net/http"

	"github.com/kwdata/kwdata/serve/web"
)

// handleIntent answers GET /v1/intent?q=&country=.
func (s *API) handleIntent(w http.ResponseWriter, r *http.Request) error {
	q, c, err := web.ParseKeywordQuery(r.URL.RawQuery)
	if err != nil {
		return err
	}
	g, _, _, err := s.LookupGroup(r.Context(), r, c, q, w.Header())
	if err != nil {
		return s.IntentError(r.Context(), q, c, err)
	}
	if wantsCSV(r) {
		return writeCSVDownload(w, r, csvName("intent", q, c.Code), appendIntentCSV(&g))
	}
	return web.WriteBody(w, r, web.ContentTypeJSON, web.AppendIntentJSON(nil, &g, q))
}
