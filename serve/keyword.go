package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/kwdata/kwdata/kw"
)

// DefaultCountry is the country of a lookup without a country parameter.
const DefaultCountry = "us"

// maxRawQ bounds q before normalization, in bytes. Normalization may shrink
// text (runs of white space collapse), so the real limit is checked after
// it; this bound only keeps a megabyte of padding from costing a megabyte of
// NFKC work. No keyword within the limits comes close to it.
const maxRawQ = 4096

// parseKeywordQuery validates the query string of GET /v1/keyword and
// returns the normalized keyword and the country. Every failure is a 400
// HTTPError.
func parseKeywordQuery(rawQuery string) (string, kw.Country, error) {
	rawQ, found, err := queryValue(rawQuery, "q")
	switch {
	case err != nil:
		return "", kw.Country{}, HTTPError{Status: http.StatusBadRequest, Code: CodeInvalidQ, Msg: invalidQMsg, Err: err}
	case !found || rawQ == "":
		return "", kw.Country{}, HTTPError{Status: http.StatusBadRequest, Code: CodeMissingQ, Msg: missingQMsg}
	}
	q, err := normalizeKeyword(rawQ, inQuery)
	if err != nil {
		return "", kw.Country{}, err
	}
	code, _, err := queryValue(rawQuery, "country")
	if err != nil {
		return "", kw.Country{}, unsupportedCountry(code, err)
	}
	if code == "" {
		code = DefaultCountry
	}
	c, ok := kw.LookupCountry(code)
	if !ok {
		return "", kw.Country{}, unsupportedCountry(code, nil)
	}
	return q, c, nil
}

// countryIndexed refuses a lookup in a supported country of which the
// served index holds no keyword. The refusal is not counted: every keyword
// of that country would be a 404, and spending a visitor's allowance on a
// country without data tells them nothing about any keyword.
func countryIndexed(info kw.IndexInfo, c kw.Country) error {
	if info.Countries[c.Code] > 0 {
		return nil
	}
	return HTTPError{Status: http.StatusNotFound, Code: CodeCountryNotIndexed,
		Msg: fmt.Sprintf("The index holds no keywords of %s (%s) yet; GET /v1/countries lists the countries with data first, with their keyword counts.", c.Name, c.Code)}
}

func unsupportedCountry(code string, err error) HTTPError {
	if len(code) > 16 {
		code = code[:16] + "…"
	}
	return HTTPError{Status: http.StatusBadRequest, Code: CodeUnsupportedCountry,
		Msg: fmt.Sprintf("country %q is not supported; pass an ISO 3166-1 alpha-2 code from GET /v1/countries, e.g. country=us.", code),
		Err: err}
}

// queryValue returns the first value of the parameter name in a raw query
// string, unescaped, without building the map that url.ParseQuery builds.
// An escape error is reported only for the wanted parameter; url.ParseQuery
// would silently drop it, and the client would get a misleading missing_q.
func queryValue(rawQuery, name string) (value string, found bool, err error) {
	for rawQuery != "" {
		var pair string
		pair, rawQuery, _ = strings.Cut(rawQuery, "&")
		key, val, _ := strings.Cut(pair, "=")
		if key != name {
			if !strings.ContainsAny(key, "%+") {
				continue
			}
			if k, err := url.QueryUnescape(key); err != nil || k != name {
				continue
			}
		}
		v, err := url.QueryUnescape(val)
		if err != nil {
			return "", true, fmt.Errorf("cannot unescape parameter %s: %w", name, err)
		}
		return v, true, nil
	}
	return "", false, nil
}

// bufPool recycles the buffers of keyword answers, and those the answer
// cache compresses them in; most answers are a few hundred bytes to 2 KiB.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

// maxPooledBuf keeps a rare huge answer from pinning memory in the pool.
const maxPooledBuf = 64 << 10

// putBuf returns bp to bufPool unless it grew past maxPooledBuf.
func putBuf(bp *[]byte) {
	if cap(*bp) <= maxPooledBuf {
		bufPool.Put(bp)
	}
}

// contentLengths holds the Content-Length field value of every answer size
// below 8 KiB (answers are a few hundred bytes to 2 KiB), made once, so an answer does not format and allocate
// its length (see the shared values in cors.go for why sharing is safe).
var contentLengths = func() [][]string {
	t := make([][]string, 8<<10)
	for n := range t {
		t[n] = []string{strconv.Itoa(n)}
	}
	return t
}()

// contentLength returns the Content-Length field value of an n-byte body.
func contentLength(n int) []string {
	if n < len(contentLengths) {
		return contentLengths[n]
	}
	return []string{strconv.Itoa(n)}
}

// handleKeyword answers GET /v1/keyword?q=&country=.
func (s *Server) handleKeyword(w http.ResponseWriter, r *http.Request) error {
	q, c, err := parseKeywordQuery(r.URL.RawQuery)
	if err != nil {
		return err
	}
	info, ok := s.index.Info()
	if !ok {
		return fmt.Errorf("cannot look up %q: %w", q, kw.ErrNoIndex)
	}
	if err := countryIndexed(info, c); err != nil {
		return err
	}
	ctx := r.Context()
	t, err := s.access.Admit(ctx, r, s.clientAddr(r), 1)
	if err != nil {
		return fmt.Errorf("cannot admit lookup: %w", err)
	}
	defer t.Cancel() // a no-op once committed
	csv := wantsCSV(r)
	var cache *answerCache
	bp := bufPool.Get().(*[]byte)
	defer putBuf(bp)
	if !csv {
		cache = s.answers(info.Version)
		if body, ok := cache.get(c.Code, q, (*bp)[:0]); ok {
			t.Commit(1, w.Header())
			writeKeywordJSON(w, r, body)
			return nil
		}
	}
	e, err := s.index.Lookup(ctx, c.Code, q)
	if errors.Is(err, kw.ErrNotFound) {
		t.Commit(1, w.Header())
		return s.notFound(ctx, q, c.Code, err)
	}
	if err != nil {
		return fmt.Errorf("cannot look up %q in %s: %w", q, c.Code, err)
	}
	t.Commit(1, w.Header())
	if csv {
		rows := [][]string{csvHeaderKeyword, keywordRow(q, &e, c.Code, dataDate(&e, info))}
		return writeCSVDownload(w, r, csvName("keyword", q, c.Code), writeCSV(rows))
	}

	buf := appendKeywordJSON((*bp)[:0], &e, c.Code, dataDate(&e, info))
	*bp = buf[:0]
	writeKeywordJSON(w, r, buf)
	// Only an answer known to come from the cache's build may enter it: a
	// swap between Info and Lookup would otherwise file the new build's
	// answer under the old one, or the other way round.
	if cache != nil && e.DataDate == info.DataDate {
		if now, ok := s.index.Info(); ok && now.Version == cache.version {
			cache.put(c.Code, q, buf)
		}
	}
	return nil
}

// writeKeywordJSON writes a 200 answer of GET /v1/keyword (headers only
// for HEAD).
func writeKeywordJSON(w http.ResponseWriter, r *http.Request, body []byte) {
	h := w.Header()
	h["Content-Type"] = contentTypeJSON
	h["Content-Length"] = contentLength(len(body))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

// countryJSON is one entry of GET /v1/countries.
type countryJSON struct {
	Code      string `json:"code"`
	Name      string `json:"name"`
	Language  string `json:"language"`
	GeoTarget int64  `json:"geo_target"`
	Keywords  int    `json:"keywords"`
}

// countriesJSON is the document of GET /v1/countries.
type countriesJSON struct {
	Updated   string        `json:"updated,omitempty"` // data date; absent while no index is loaded
	Countries []countryJSON `json:"countries"`
}

// countriesWithDataFirst lists every supported country, those the served
// index holds keywords of first, each group in the table's order, so a
// client reading from the top meets the countries it can look up.
func countriesWithDataFirst(info kw.IndexInfo) []kw.Country {
	all := kw.Countries()
	out := make([]kw.Country, 0, len(all))
	for _, c := range all {
		if info.Countries[c.Code] > 0 {
			out = append(out, c)
		}
	}
	for _, c := range all {
		if info.Countries[c.Code] == 0 {
			out = append(out, c)
		}
	}
	return out
}

// handleCountries answers GET /v1/countries: every supported country with
// its Google Ads constants and its keyword count in the served index (0
// for a country the index lacks, and for all while none is loaded), those
// with keywords first.
func (s *Server) handleCountries(w http.ResponseWriter, r *http.Request) error {
	info, ok := s.index.Info()
	doc := countriesJSON{}
	if ok {
		doc.Updated = info.DataDate
	} else {
		info = kw.IndexInfo{}
	}
	for _, c := range countriesWithDataFirst(info) {
		doc.Countries = append(doc.Countries, countryJSON{
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
