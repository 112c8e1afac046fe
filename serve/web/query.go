package web

import (
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

// MaxRawQ bounds q before normalization, in bytes. Normalization may shrink
// text (runs of white space collapse), so the real limit is checked after
// it; this bound only keeps a megabyte of padding from costing a megabyte of
// NFKC work. No keyword within the limits comes close to it.
const MaxRawQ = 4096

// ParseKeywordQuery validates the query string of GET /v1/keyword and
// returns the normalized keyword and the country. Every failure is a 400
// HTTPError.
func ParseKeywordQuery(rawQuery string) (string, kw.Country, error) {
	rawQ, found, err := QueryValue(rawQuery, "q")
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
	code, _, err := QueryValue(rawQuery, "country")
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

// CountryIndexed refuses a lookup in a supported country of which the
// served index holds no keyword. The refusal is not counted: every keyword
// of that country would be a 404, and spending a visitor's allowance on a
// country without data tells them nothing about any keyword.
func CountryIndexed(info kw.IndexInfo, c kw.Country) error {
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

// QueryValue returns the first value of the parameter name in a raw query
// string, unescaped, without building the map that url.ParseQuery builds.
// An escape error is reported only for the wanted parameter; url.ParseQuery
// would silently drop it, and the client would get a misleading missing_q.
func QueryValue(rawQuery, name string) (value string, found bool, err error) {
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

// BufPool recycles the buffers of keyword answers, and those the answer
// cache compresses them in; most answers are a few hundred bytes to 2 KiB.
var BufPool = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

// maxPooledBuf keeps a rare huge answer from pinning memory in the pool.
const maxPooledBuf = 64 << 10

// PutBuf returns bp to BufPool unless it grew past maxPooledBuf.
func PutBuf(bp *[]byte) {
	if cap(*bp) <= maxPooledBuf {
		BufPool.Put(bp)
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

// ContentLength returns the Content-Length field value of an n-byte body.
func ContentLength(n int) []string {
	if n < len(contentLengths) {
		return contentLengths[n]
	}
	return []string{strconv.Itoa(n)}
}

// CountriesWithDataFirst lists every supported country, those the served
// index holds keywords of first, each group in the table's order, so a
// client reading from the top meets the countries it can look up.
func CountriesWithDataFirst(info kw.IndexInfo) []kw.Country {
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
