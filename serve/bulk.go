package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/kwdata/kwdata/kw"
)

// maxBulkBody bounds the body of POST /v1/keywords: 100 keywords at the raw
// length limit, with room for JSON escaping.
const maxBulkBody = 1 << 20

// bulkRequest is the body of POST /v1/keywords.
type bulkRequest struct {
	Country  string   `json:"country"`
	Keywords []string `json:"keywords"`
}

// parseBulkRequest decodes and checks the body of a bulk request: one JSON
// object with only the known fields, at most MaxBulkKeywords keywords, at
// least one. Keywords themselves are validated one by one later, since a
// bad keyword is a per-keyword error, not a bad request. Every failure is a
// 400 (or 413) HTTPError.
func parseBulkRequest(body []byte) (bulkRequest, kw.Country, error) {
	var req bulkRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return req, kw.Country{}, HTTPError{Status: http.StatusBadRequest, Code: CodeInvalidBody,
			Msg: "The body is not a JSON object of the form {\"country\": \"us\", \"keywords\": [\"running shoes\"]} (" + jsonErrorText(err) + ").",
			Err: err}
	}
	if _, err := dec.Token(); err != io.EOF {
		return req, kw.Country{}, HTTPError{Status: http.StatusBadRequest, Code: CodeInvalidBody,
			Msg: "The body holds more than one JSON value; send exactly one object."}
	}
	switch {
	case req.Keywords == nil:
		return req, kw.Country{}, HTTPError{Status: http.StatusBadRequest, Code: CodeInvalidBody,
			Msg: "The body has no \"keywords\" list; send {\"country\": \"us\", \"keywords\": [\"running shoes\"]}."}
	case len(req.Keywords) == 0:
		return req, kw.Country{}, HTTPError{Status: http.StatusBadRequest, Code: CodeInvalidBody,
			Msg: "The \"keywords\" list is empty; send between 1 and 100 keywords."}
	case len(req.Keywords) > MaxBulkKeywords:
		return req, kw.Country{}, HTTPError{Status: http.StatusBadRequest, Code: CodeTooManyKeywords,
			Msg: fmt.Sprintf("The request holds %d keywords; send at most %d per request and split the rest.", len(req.Keywords), MaxBulkKeywords)}
	}
	c, err := countryInput(req.Country)
	if err != nil {
		return req, kw.Country{}, err
	}
	return req, c, nil
}

// jsonErrorText shortens a decoding error to what a client can act on. The
// messages of encoding/json name Go types ("Go struct field
// bulkRequest.keywords of type string"), which mean nothing to a client.
func jsonErrorText(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return "invalid JSON at byte " + strconv.FormatInt(se.Offset, 10)
	case errors.As(err, &te):
		if te.Field != "" {
			return fmt.Sprintf("field %q cannot be a JSON %s", te.Field, te.Value)
		}
		return "the body is a JSON " + te.Value + ", not an object"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the body is empty or cut short"
	}
	if m := unknownFieldRE.FindStringSubmatch(err.Error()); m != nil {
		return "unknown field " + m[1]
	}
	return "invalid JSON"
}

var unknownFieldRE = regexp.MustCompile(`unknown field ("[^"]*")`)

// bulkItem is one keyword of a bulk request on its way to the answer.
type bulkItem struct {
	query string // as the client sent it
	q     string // normalized; empty when invalid
	entry kw.Entry
	err   error // nil for a record
}

// handleBulk answers POST /v1/keywords: up to 100 keywords of one country,
// answered in request order, each with its record or its own problem.
func (s *Server) handleBulk(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r, maxBulkBody)
	if err != nil {
		return err
	}
	req, c, err := parseBulkRequest(body)
	if err != nil {
		return err
	}
	items, info, err := s.bulkLookup(r, c, req.Keywords, w.Header())
	if err != nil {
		return err
	}
	if wantsCSV(r) {
		return writeCSVDownload(w, r, fmt.Sprintf("kwdata-keywords-%s.csv", strings.ToLower(c.Code)), appendBulkCSV(items, c.Code, info))
	}
	buf := appendBulkJSON(make([]byte, 0, 512*len(items)), items, c.Code, info)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(buf)))
	w.WriteHeader(http.StatusOK)
	w.Write(buf)
	return nil
}

// bulkLookup looks up keywords of one country for POST /v1/keywords and
// the keyword_lookup_bulk tool. Valid keywords are reserved with Access up
// front, so the request is refused whole (a *QuotaError, 429) when the
// allowance cannot cover it; invalid keywords are neither reserved nor
// counted, and neither are lookups that fail inside the server. With no
// valid keyword the key is still authenticated (Admit of 0 lookups). The
// rate-limit fields of the counted lookups go to h.
func (s *Server) bulkLookup(r *http.Request, c kw.Country, keywords []string, h http.Header) ([]bulkItem, kw.IndexInfo, error) {
	items := make([]bulkItem, len(keywords))
	valid := 0
	for i, raw := range keywords {
		items[i].query = raw
		items[i].q, items[i].err = normalizeInput(raw)
		if items[i].err == nil {
			valid++
		}
	}
	info, ok := s.index.Info()
	if !ok {
		return nil, info, fmt.Errorf("cannot answer a bulk request: %w", kw.ErrNoIndex)
	}
	if err := countryIndexed(info, c); err != nil {
		return nil, info, err // every keyword shares the country: refuse the request whole
	}
	ctx := r.Context()
	if valid == 0 {
		// Nothing to count, but an unknown or revoked key still gets its
		// 401: reserve nothing, only authenticate.
		t, err := s.access.Admit(ctx, r, s.clientAddr(r), 0)
		if err != nil {
			return nil, info, fmt.Errorf("cannot admit a bulk request without valid keywords: %w", err)
		}
		t.Cancel()
		return items, info, nil
	}
	t, err := s.access.Admit(ctx, r, s.clientAddr(r), valid)
	if err != nil {
		// A *QuotaError says how many lookups are left (see quotaMessage).
		return nil, info, fmt.Errorf("cannot admit a bulk request of %d lookups: %w", valid, err)
	}
	defer t.Cancel() // a no-op once committed
	counted := 0
	for i := range items {
		it := &items[i]
		if it.err != nil {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, info, fmt.Errorf("cannot finish a bulk request: %w", err)
		}
		it.entry, it.err = s.index.Lookup(ctx, c.Code, it.q)
		switch {
		case it.err == nil:
			counted++
		case errors.Is(it.err, kw.ErrNotFound):
			counted++
			it.err = s.notFound(ctx, it.q, c.Code, it.err)
		case indexUnavailable(it.err):
			// Logged once by the index and counted in the metrics.
		default:
			s.log.Warn("bulk lookup failed", "country", c.Code, "keyword", it.q, "err", it.err)
		}
	}
	t.Commit(counted, h)
	return items, info, nil
}

// appendBulkJSON appends the answer of a bulk request:
//
//	{"country":"US","updated":"2026-11-21","results":[
//	  {"query":"running shoes","status":200,"record":{...}},
//	  {"query":"x","status":404,"error":{problem document}}]}
//
// Each record carries the data date of the build it came from (dataDate),
// since an index swap may land between two lookups of one request; the
// top-level updated is the newest of them, or info's date without records.
func appendBulkJSON(dst []byte, items []bulkItem, country string, info kw.IndexInfo) []byte {
	updated := ""
	for i := range items {
		if it := &items[i]; it.err == nil {
			updated = max(updated, dataDate(&it.entry, info))
		}
	}
	if updated == "" {
		updated = info.DataDate
	}
	dst = append(dst, `{"country":`...)
	dst = appendString(dst, country)
	dst = append(dst, `,"updated":`...)
	dst = appendString(dst, updated)
	dst = append(dst, `,"results":[`...)
	for i := range items {
		it := &items[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"query":`...)
		dst = appendString(dst, it.query)
		if it.err == nil {
			dst = append(dst, `,"status":200,"record":`...)
			dst = appendKeywordJSON(dst, &it.entry, country, dataDate(&it.entry, info))
			dst = bytes.TrimSuffix(dst, []byte("\n"))
		} else {
			he := classify(it.err)
			dst = append(dst, `,"status":`...)
			dst = strconv.AppendInt(dst, int64(he.Status), 10)
			dst = append(dst, `,"error":`...)
			dst = append(dst, problemJSON(he)...)
		}
		dst = append(dst, '}')
	}
	return append(dst, "]}\n"...)
}
