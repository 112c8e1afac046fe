package api

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/serve/web"
)

// handleExplore answers GET /v1/explore: the keywords holding some words,
// filtered and sorted, a page at a time, as JSON or CSV.
func (s *API) handleExplore(w http.ResponseWriter, r *http.Request) error {
	v, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return web.HTTPError{Status: http.StatusBadRequest, Code: web.CodeInvalidParameter,
			Msg: "The query string is not correctly percent-encoded; encode each parameter value (spaces as + or %20).", Err: err}
	}
	q, err := web.ParseExplore(v)
	if err != nil {
		return err
	}
	a, err := s.Explore(r, q, w.Header())
	if err != nil {
		return err
	}
	if wantsCSV(r) {
		h := w.Header()
		if a.Result.NextCursor != "" {
			h.Set("Kwdata-Next-Cursor", a.Result.NextCursor)
		}
		if a.TruncatedByQuota {
			h.Set("Kwdata-Truncated-By-Quota", "true")
		}
		return writeCSVDownload(w, r, csvName("explore", q.Q, q.Country), exploreCSV(&a))
	}
	return web.WriteBody(w, r, web.ContentTypeJSON, web.AppendExploreJSON(nil, &a))
}

// csvHeaderExplore and csvHeaderExploreGroups are the header rows of
// explore answers; a group's top members share one cell, separated by " | ".
var (
	csvHeaderExplore       = []string{"keyword", "volume", "cpc", "competition", "intent"}
	csvHeaderExploreGroups = []string{"intent", "members_matched", "volume", "top"}
)

// exploreCSV is the CSV of an explore page: a row per keyword, or per
// group with group=intent.
func exploreCSV(a *web.ExploreAnswer) []byte {
	if a.Query.GroupIntent {
		rows := [][]string{csvHeaderExploreGroups}
		for _, g := range a.Result.Groups {
			rows = append(rows, []string{g.Intent, strconv.FormatInt(g.MembersMatched, 10), strconv.FormatInt(g.Volume, 10), strings.Join(g.Top, " | ")})
		}
		return writeCSV(rows)
	}
	rows := [][]string{csvHeaderExplore}
	for i := range a.Result.Rows {
		rows = append(rows, exploreRowCSV(&a.Result.Rows[i]))
	}
	return writeCSV(rows)
}

func exploreRowCSV(row *kw.ExploreRow) []string {
	comp := ""
	if row.Competition != nil {
		comp = string(web.AppendHundredths(nil, web.CompetitionHundredths(*row.Competition)))
	}
	return []string{row.Keyword, csvInt(row.Volume), csvCents(row.CPCMicros), comp, row.Intent}
}
