package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/serve/web"
)

// MaxBulkBody bounds the body of POST /v1/keywords: 100 keywords at the raw
// length limit, with room for JSON escaping.
const MaxBulkBody = 1 << 20

// BulkRequest is the body of POST /v1/keywords.
type BulkRequest struct {
	Country  string   `json:"country"`
	Keywords []string `json:"keywords"`
}

// parseBulkRequest decodes and checks the body of a bulk request: one JSON
// object with only the known fields, at most MaxBulkKeywords keywords, at
// least one. Keywords themselves are validated one by one later, since a
// bad keyword is a per-keyword error, not a bad request. Every failure is a
// 400 (or 413) HTTPError.
func parseBulkRequest(body []byte) (BulkRequest, kw.Country, error) {
	var req BulkRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return req, kw.Country{}, web.HTTPError{Status: http.StatusBadRequest, Code: web.CodeInvalidBody,
			Msg: "The body is not a JSON object of the form {\"country\": \"us\", \"keywords\": [\"running shoes\"]} (" + web.JSONErrorText(err) + ").",
			Err: err}
	}
	if _, err := dec.Token(); err != io.EOF {
		return req, kw.Country{}, web.HTTPError{Status: http.StatusBadRequest, Code: web.CodeInvalidBody,
			Msg: "The body holds more than one JSON value; send exactly one object."}
	}
	switch {
	case req.Keywords == nil:
		return req, kw.Country{}, web.HTTPError{Status: http.StatusBadRequest, Code: web.CodeInvalidBody,
			Msg: "The body has no \"keywords\" list; send {\"country\": \"us\", \"keywords\": [\"running shoes\"]}."}
	case len(req.Keywords) == 0:
		return req, kw.Country{}, web.HTTPError{Status: http.StatusBadRequest, Code: web.CodeInvalidBody,
			Msg: "The \"keywords\" list is empty; send between 1 and 100 keywords."}
	case len(req.Keywords) > web.MaxBulkKeywords:
		return req, kw.Country{}, web.HTTPError{Status: http.StatusBadRequest, Code: web.CodeTooManyKeywords,
			Msg: fmt.Sprintf("The request holds %d keywords; send at most %d per request and split the rest.", len(req.Keywords), web.MaxBulkKeywords)}
	}
	c, err := web.CountryInput(req.Country)
	if err != nil {
		return req, kw.Country{}, err
	}
	return req, c, nil
}

// handleBulk answers POST /v1/keywords: up to 100 keywords of one country,
// answered in request order, each with its record or its own problem.
func (s *API) handleBulk(w http.ResponseWriter, r *http.Request) error {
	body, err := web.ReadBody(r, MaxBulkBody)
	if err != nil {
		return err
	}
	req, c, err := parseBulkRequest(body)
	if err != nil {
		return err
	}
	items, info, err := s.BulkLookup(r, c, req.Keywords, w.Header())
	if err != nil {
		return err
	}
	if wantsCSV(r) {
		return writeCSVDownload(w, r, fmt.Sprintf("kwdata-keywords-%s.csv", strings.ToLower(c.Code)), appendBulkCSV(items, c.Code, info))
	}
	buf := web.AppendBulkJSON(make([]byte, 0, 512*len(items)), items, c.Code, info)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(buf)))
	w.WriteHeader(http.StatusOK)
	w.Write(buf)
	return nil
}
