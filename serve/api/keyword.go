package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/serve/web"
)

// handleKeyword answers GET /v1/keyword?q=&country=.
func (s *API) handleKeyword(w http.ResponseWriter, r *http.Request) error {
	q, c, err := web.ParseKeywordQuery(r.URL.RawQuery)
	if err != nil {
		return err
	}
	info, ok := s.Index.Info()
	if !ok {
		return fmt.Errorf("cannot look up %q: %w", q, kw.ErrNoIndex)
	}
	if err := web.CountryIndexed(info, c); err != nil {
		return err
	}
	ctx := r.Context()
	t, err := s.Access.Admit(ctx, r, s.ClientAddr(r), 1)
	if err != nil {
		return fmt.Errorf("cannot admit lookup: %w", err)
	}
	defer t.Cancel() // a no-op once committed
	csv := wantsCSV(r)
	var cache *web.AnswerCache
	bp := web.BufPool.Get().(*[]byte)
	defer web.PutBuf(bp)
	if !csv {
		cache = s.Answers(info.Version)
		if body, ok := cache.Get(c.Code, q, (*bp)[:0]); ok {
			t.Commit(1, w.Header())
			writeKeywordJSON(w, r, body)
			return nil
		}
	}
	e, err := s.Index.Lookup(ctx, c.Code, q)
	if errors.Is(err, kw.ErrNotFound) {
		t.Commit(1, w.Header())
		return s.NotFound(ctx, q, c.Code, err)
	}
	if err != nil {
		return fmt.Errorf("cannot look up %q in %s: %w", q, c.Code, err)
	}
	t.Commit(1, w.Header())
	if csv {
		rows := [][]string{csvHeaderKeyword, keywordRow(q, &e, c.Code, web.DataDate(&e, info))}
		return writeCSVDownload(w, r, csvName("keyword", q, c.Code), writeCSV(rows))
	}

	buf := web.AppendKeywordJSON((*bp)[:0], &e, c.Code, web.DataDate(&e, info))
	*bp = buf[:0]
	writeKeywordJSON(w, r, buf)
	// Only an answer known to come from the cache's build may enter it: a
	// swap between Info and Lookup would otherwise file the new build's
	// answer under the old one, or the other way round.
	if cache != nil && e.DataDate == info.DataDate {
		if now, ok := s.Index.Info(); ok && now.Version == cache.Version() {
			cache.Put(c.Code, q, buf)
		}
	}
	return nil
}

// writeKeywordJSON writes a 200 answer of GET /v1/keyword (headers only
// for HEAD).
func writeKeywordJSON(w http.ResponseWriter, r *http.Request, body []byte) {
	h := w.Header()
	h["Content-Type"] = web.ContentTypeJSON
	h["Content-Length"] = web.ContentLength(len(body))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

// CountryJSON is one entry of GET /v1/countries.
type CountryJSON struct {
	Code      string `json:"code"`
	Name      string `json:"name"`
	Language  string `json:"language"`
	GeoTarget int64  `json:"geo_target"`
	Keywords  int    `json:"keywords"`
}

// CountriesJSON is the document of GET /v1/countries.
type CountriesJSON struct {
	Updated   string        `json:"updated,omitempty"` // data date; absent while no index is loaded
	Countries []CountryJSON `json:"countries"`
}

// handleCountries answers GET /v1/countries: every supported country with
// its Google Ads constants and its keyword count in the served index (0
// for a country the index lacks, and for all while none is loaded), those
// with keywords first.
func (s *API) handleCountries(w http.ResponseWriter, r *http.Request) error {
	info, ok := s.Index.Info()
	doc := CountriesJSON{}
	if ok {
		doc.Updated = info.DataDate
	} else {
		info = kw.IndexInfo{}
	}
	for _, c := range web.CountriesWithDataFirst(info) {
		doc.Countries = append(doc.Countries, CountryJSON{
			Code: c.Code, Name: c.Name, Language: c.LanguageCode,
			GeoTarget: c.GeoTarget, Keywords: info.Countries[c.Code],
		})
	}
	body, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("cannot encode countries: %w", err)
	}
	body = append(body, '\n')
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	w.Write(body)
	return nil
}
