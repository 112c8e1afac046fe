package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/kwdata/kwdata/kw"
)

// Problem codes of the bulk, registration and MCP endpoints.
const (
	CodeInvalidBody          = "invalid_body"
	CodeBodyTooLarge         = "body_too_large"
	CodeTooManyKeywords      = "too_many_keywords"
	CodeInvalidEmail         = "invalid_email"
	CodeTooManyRegistrations = "too_many_registrations"
	CodeForbiddenOrigin      = "forbidden_origin"
)

// MaxBulkKeywords is the most keywords one POST /v1/keywords request may
// hold (and one keyword_lookup_bulk tool call).
const MaxBulkKeywords = 100

// NormalizeInput validates and normalizes one keyword given in a JSON body
// or tool argument. Failures are 400 HTTPErrors with the same codes as the
// q parameter of GET /v1/keyword, worded for a "keyword" field.
func NormalizeInput(raw string) (string, error) { return normalizeKeyword(raw, inBody) }

// Where a keyword came from, for the wording of its refusal.
const (
	inQuery = false // the q parameter of a URL
	inBody  = true  // a field of a JSON body or a tool argument
)

// normalizeKeyword validates and normalizes a keyword: the one place a
// keyword is refused, whatever the route.
func normalizeKeyword(raw string, body bool) (string, error) {
	if len(raw) > MaxRawQ {
		return "", keywordProblem(kw.ErrKeywordTooLong, body) // too long to be worth normalizing
	}
	q, err := kw.NormalizeKeyword(raw)
	if err == nil && Unindexable(q) {
		err = errUnindexable
	}
	if err != nil {
		return "", keywordProblem(err, body)
	}
	return q, nil
}

// keywordProblem maps a keyword's refusal (a kw.ErrKeyword* error, or
// errUnindexable) to its 400, worded for the q parameter or a body field.
func keywordProblem(err error, body bool) HTTPError {
	he := HTTPError{Status: http.StatusBadRequest, Err: err}
	// detail is what NormalizeKeyword measured ("81 characters, at most
	// 80"); empty when the raw input was refused before.
	detail := strings.TrimPrefix(err.Error(), kw.ErrKeywordTooLong.Error()+": ")
	if detail == err.Error() {
		detail = ""
	}
	switch {
	case errors.Is(err, kw.ErrKeywordEmpty):
		he.Code, he.Msg = CodeMissingQ, missingQMsg
		if body {
			he.Msg = "The keyword is empty; pass the keyword to look up, e.g. \"running shoes\"."
		}
	case errors.Is(err, kw.ErrKeywordTooLong):
		he.Code = CodeQTooLong
		switch {
		case body && detail != "":
			he.Msg = fmt.Sprintf("The keyword is too long (%s); shorten it to at most %d characters.", detail, kw.MaxKeywordChars)
		case body:
			he.Msg = fmt.Sprintf("The keyword is too long; a keyword may have at most %d characters after normalization.", kw.MaxKeywordChars)
		case detail != "":
			he.Msg = fmt.Sprintf("q is too long after normalization (%s); shorten it to at most %d characters.", detail, kw.MaxKeywordChars)
		default:
			he.Msg = tooLongMsg
		}
	case errors.Is(err, errUnindexable) && body:
		he.Code, he.Msg = CodeInvalidQ, "The keyword holds control characters or bytes that are not UTF-8; send it as plain UTF-8 text."
	case body:
		he.Code, he.Msg = CodeInvalidQ, "The keyword is not valid UTF-8; send it as UTF-8 text."
	default:
		he.Code, he.Msg = CodeInvalidQ, invalidQMsg
	}
	return he
}

// errUnindexable is the cause of an invalid_q for a keyword that
// normalizes but could never be in the index.
var errUnindexable = errors.New("keyword holds control characters or U+FFFD")

// Unindexable reports whether a normalized keyword holds what ingest
// refuses and so no index holds: a control character, or U+FFFD, which
// only undecodable input produces (encoding/json turns invalid UTF-8 and
// lone surrogates inside a body into it). Looking such a keyword up could
// only answer a counted 404.
func Unindexable(q string) bool {
	for i := 0; i < len(q); i++ {
		switch c := q[i]; {
		case c < 0x20 || c == 0x7f:
			return true
		case c >= utf8.RuneSelf:
			return strings.ContainsFunc(q[i:], func(r rune) bool { return r == utf8.RuneError || unicode.IsControl(r) })
		}
	}
	return false
}

// CountryInput resolves a country code given in a JSON body or tool
// argument; empty means DefaultCountry.
func CountryInput(code string) (kw.Country, error) {
	if code == "" {
		code = DefaultCountry
	}
	c, ok := kw.LookupCountry(code)
	if !ok {
		return kw.Country{}, unsupportedCountry(code, nil)
	}
	return c, nil
}

// LookupOne answers one already validated lookup the way GET /v1/keyword
// does: it refuses while no index is loaded, reserves one lookup with
// Access, and counts it when the answer is a record or a not-found. The
// rate-limit fields of a counted lookup go to h. The error is what Classify
// understands: kw.ErrNotFound (counted), kw.ErrNoIndex, ErrInvalidKey,
// *QuotaError, or an internal failure.
func (s *Core) LookupOne(ctx context.Context, r *http.Request, c kw.Country, q string, h http.Header) (kw.Entry, kw.IndexInfo, error) {
	info, ok := s.Index.Info()
	if !ok {
		return kw.Entry{}, info, fmt.Errorf("cannot look up %q: %w", q, kw.ErrNoIndex)
	}
	if err := CountryIndexed(info, c); err != nil {
		return kw.Entry{}, info, err
	}
	t, err := s.Access.Admit(ctx, r, s.ClientAddr(r), 1)
	if err != nil {
		return kw.Entry{}, info, fmt.Errorf("cannot admit lookup: %w", err)
	}
	defer t.Cancel() // a no-op once committed
	e, err := s.Index.Lookup(ctx, c.Code, q)
	switch {
	case errors.Is(err, kw.ErrNotFound):
		t.Commit(1, h)
		return kw.Entry{}, info, fmt.Errorf("cannot find %q in %s: %w", q, c.Code, err)
	case err != nil:
		return kw.Entry{}, info, fmt.Errorf("cannot look up %q in %s: %w", q, c.Code, err)
	}
	t.Commit(1, h)
	return e, info, nil
}

// QuotaReset returns when the allowance behind a *QuotaError renews and how
// long that is from now, rounded up to whole seconds (as Retry-After is).
func (s *Core) QuotaReset(qe *QuotaError) (time.Time, time.Duration) {
	d := time.Duration(RetrySeconds(qe.RetryAfter)) * time.Second
	return s.Now().UTC().Add(d).Truncate(time.Second), d
}

// HumanDuration writes d as "40s", "12m", "5h", "5h 3m", "3d" or "3d 4h",
// rounded up to the last unit shown, so that "renews in" is never early.
func HumanDuration(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%ds", max((d+time.Second-1)/time.Second, 0))
	}
	if d < 48*time.Hour {
		m := int64((d + time.Minute - 1) / time.Minute)
		switch {
		case m < 60:
			return fmt.Sprintf("%dm", m)
		case m%60 == 0:
			return fmt.Sprintf("%dh", m/60)
		}
		return fmt.Sprintf("%dh %dm", m/60, m%60)
	}
	h := int64((d + time.Hour - 1) / time.Hour)
	if h%24 == 0 {
		return fmt.Sprintf("%dd", h/24)
	}
	return fmt.Sprintf("%dd %dh", h/24, h%24)
}

// DataDate is the data date to show with e: the date of the build e came
// from, so an answer never mixes two builds during a swap; info's date for
// an index that does not report it.
func DataDate(e *kw.Entry, info kw.IndexInfo) string {
	if e.DataDate != "" {
		return e.DataDate
	}
	return info.DataDate
}
