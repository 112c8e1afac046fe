package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"

	"github.com/kwdata/kwdata/kw"
)

// JSONErrorText shortens a decoding error to what a client can act on. The
// messages of encoding/json name Go types ("Go struct field
// bulkRequest.keywords of type string"), which mean nothing to a client.
func JSONErrorText(err error) string {
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

// BulkItem is one keyword of a bulk request on its way to the answer.
type BulkItem struct {
	Query string // as the client sent it
	Q     string // normalized; empty when invalid
	Entry kw.Entry
	Err   error // nil for a record
}

// BulkLookup looks up keywords of one country for POST /v1/keywords and
// the keyword_lookup_bulk tool. Valid keywords are reserved with Access up
// front, so the request is refused whole (a *QuotaError, 429) when the
// allowance cannot cover it; invalid keywords are neither reserved nor
// counted, and neither are lookups that fail inside the server. With no
// valid keyword the key is still authenticated (Admit of 0 lookups). The
// rate-limit fields of the counted lookups go to h.
func (s *Core) BulkLookup(r *http.Request, c kw.Country, keywords []string, h http.Header) ([]BulkItem, kw.IndexInfo, error) {
	items := make([]BulkItem, len(keywords))
	valid := 0
	for i, raw := range keywords {
		items[i].Query = raw
		items[i].Q, items[i].Err = NormalizeInput(raw)
		if items[i].Err == nil {
			valid++
		}
	}
	info, ok := s.Index.Info()
	if !ok {
		return nil, info, fmt.Errorf("cannot answer a bulk request: %w", kw.ErrNoIndex)
	}
	if err := CountryIndexed(info, c); err != nil {
		return nil, info, err // every keyword shares the country: refuse the request whole
	}
	ctx := r.Context()
	if valid == 0 {
		// Nothing to count, but an unknown or revoked key still gets its
		// 401: reserve nothing, only authenticate.
		t, err := s.Access.Admit(ctx, r, s.ClientAddr(r), 0)
		if err != nil {
			return nil, info, fmt.Errorf("cannot admit a bulk request without valid keywords: %w", err)
		}
		t.Cancel()
		return items, info, nil
	}
	t, err := s.Access.Admit(ctx, r, s.ClientAddr(r), valid)
	if err != nil {
		// A *QuotaError says how many lookups are left (see QuotaMessage).
		return nil, info, fmt.Errorf("cannot admit a bulk request of %d lookups: %w", valid, err)
	}
	defer t.Cancel() // a no-op once committed
	counted := 0
	for i := range items {
		it := &items[i]
		if it.Err != nil {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, info, fmt.Errorf("cannot finish a bulk request: %w", err)
		}
		it.Entry, it.Err = s.Index.Lookup(ctx, c.Code, it.Q)
		switch {
		case it.Err == nil:
			counted++
		case errors.Is(it.Err, kw.ErrNotFound):
			counted++
			it.Err = s.NotFound(ctx, it.Q, c.Code, it.Err)
		case IndexUnavailable(it.Err):
			// Logged once by the index and counted in the metrics.
		default:
			s.Log.Warn("bulk lookup failed", "country", c.Code, "keyword", it.Q, "err", it.Err)
		}
	}
	t.Commit(counted, h)
	return items, info, nil
}

// AppendBulkJSON appends the answer of a bulk request:
//
//	{"country":"US","updated":"2026-11-21","results":[
//	  {"query":"running shoes","status":200,"record":{...}},
//	  {"query":"x","status":404,"error":{problem document}}]}
//
// Each record carries the data date of the build it came from (DataDate),
// since an index swap may land between two lookups of one request; the
// top-level updated is the newest of them, or info's date without records.
func AppendBulkJSON(dst []byte, items []BulkItem, country string, info kw.IndexInfo) []byte {
	updated := ""
	for i := range items {
		if it := &items[i]; it.Err == nil {
			updated = max(updated, DataDate(&it.Entry, info))
		}
	}
	if updated == "" {
		updated = info.DataDate
	}
	dst = append(dst, `{"country":`...)
	dst = AppendString(dst, country)
	dst = append(dst, `,"updated":`...)
	dst = AppendString(dst, updated)
	dst = append(dst, `,"results":[`...)
	for i := range items {
		it := &items[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"query":`...)
		dst = AppendString(dst, it.Query)
		if it.Err == nil {
			dst = append(dst, `,"status":200,"record":`...)
			dst = AppendKeywordJSON(dst, &it.Entry, country, DataDate(&it.Entry, info))
			dst = bytes.TrimSuffix(dst, []byte("\n"))
		} else {
			he := Classify(it.Err)
			dst = append(dst, `,"status":`...)
			dst = strconv.AppendInt(dst, int64(he.Status), 10)
			dst = append(dst, `,"error":`...)
			dst = append(dst, problemJSON(he)...)
		}
		dst = append(dst, '}')
	}
	return append(dst, "]}\n"...)
}
