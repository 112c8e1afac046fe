package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/kwdata/kwdata/kw"
)

// ProblemContentType is the media type of every error response (RFC 9457).
const ProblemContentType = "application/problem+json"

// ProblemTypePrefix makes a problem code into its "type" URI. It is relative
// so that it resolves against whatever host serves the API.
const ProblemTypePrefix = "/problems/"

// Machine-readable problem codes. Clients switch on these; their meaning
// never changes once published.
const (
	CodeMissingQ           = "missing_q"
	CodeQTooLong           = "q_too_long"
	CodeInvalidQ           = "invalid_q"
	CodeUnsupportedCountry = "unsupported_country"
	CodeCountryNotIndexed  = "country_not_indexed"
	CodeKeywordNotFound    = "keyword_not_found"
	CodeInvalidKey         = "invalid_key"
	CodeQuotaExhausted     = "quota_exhausted"
	CodeIndexUnavailable   = "index_unavailable"
	CodeNotReady           = "not_ready"
	CodeAccessUnavailable  = "access_unavailable"
	CodeMethodNotAllowed   = "method_not_allowed"
	CodeNotFound           = "not_found"
	CodeInternal           = "internal"
)

// ProblemInfo is the fixed title and the longer help text of a code.
type ProblemInfo struct{ Title, About string }

// Problems titles every problem code and explains it: the title of
// problem documents and the answer of GET /problems/{code}.
var Problems = map[string]ProblemInfo{
	CodeMissingQ:             {"Missing keyword", "The q parameter is absent or empty. Pass the keyword to look up, e.g. /v1/keyword?q=running+shoes."},
	CodeQTooLong:             {"Keyword too long", "After normalization a keyword may have at most 80 characters (any number of words); longer keywords are rejected, never truncated."},
	CodeInvalidQ:             {"Invalid keyword", "The keyword is not valid UTF-8, holds control characters, or (the q parameter) is not correctly percent-encoded."},
	CodeUnsupportedCountry:   {"Unsupported country", "The country parameter is not a supported ISO 3166-1 alpha-2 code. GET /v1/countries lists the supported ones."},
	CodeCountryNotIndexed:    {"No data for this country", "The country is supported, but the served index holds no keywords of it. GET /v1/countries lists every country with its keyword count; those with data come first. The lookup does not count against the allowance."},
	CodeKeywordNotFound:      {"Keyword not found", "The index has no data for this keyword in this country. The lookup still counts against the allowance."},
	CodeInvalidKey:           {"Invalid API key", "The API key is unknown or revoked. Requests with a bad key are refused, never answered as anonymous."},
	CodeQuotaExhausted:       {"Allowance used up", "The lookup allowance of this caller is used up. Retry after the number of seconds in the Retry-After header, or use an API key of a higher tier."},
	CodeIndexUnavailable:     {"Index unavailable", "No keyword index is loaded yet, or the served one cannot be read for this keyword and is being reloaded. Retry in a moment; GET /readyz reports when the server is ready."},
	CodeNotReady:             {"Not ready", "The server runs but cannot do its whole job, for example keep lookup counts because its data folder is gone. Its log says why."},
	CodeAccessUnavailable:    {"Access store unavailable", "The server cannot reach the shared store that holds keys, accounts and lookup counts, so it cannot answer this request just now; nothing was counted or changed. Retry after the seconds in the Retry-After header; lookups with a paid key the server already knows keep working."},
	CodeMethodNotAllowed:     {"Method not allowed", "The path exists but does not accept this method; the Allow header lists the methods it does accept."},
	CodeNotFound:             {"Not found", "No resource lives at this path. The API is under /v1/."},
	CodeInternal:             {"Internal error", "The server failed to answer. The failure has been logged; retrying may help."},
	CodeInvalidBody:          {"Invalid request body", "The request body is not the JSON document this endpoint expects. The OpenAPI document at /v1/openapi.json describes it."},
	CodeBodyTooLarge:         {"Request body too large", "The request body exceeds the size this endpoint accepts. Send fewer or shorter keywords."},
	CodeTooManyKeywords:      {"Too many keywords", "A bulk request may hold at most 100 keywords; split larger lists into several requests."},
	CodeInvalidEmail:         {"Invalid email address", "The email address is empty or not a valid address. Registration needs an address that can receive mail."},
	CodeTooManyRegistrations: {"Too many sign-up codes", "Too many sign-up codes were asked for today from this client address, or sent to this mailbox. Retry after the number of seconds in the Retry-After header, or use the latest code."},
	CodeForbiddenOrigin:      {"Forbidden origin", "The MCP endpoint refuses requests whose Origin is another site, which protects local servers from DNS rebinding. Call it from a program, not from a web page of another site."},
	CodeBillingUnavailable:   {"Billing is not available", "This server takes no payments; the paid tier is granted by its operator (kwdata keys set-tier)."},
	CodeNoSubscription:       {"No subscription", "This key's account has never subscribed to the paid tier; subscribe with POST /v1/billing/checkout first."},
	CodeInvalidSignature:     {"Invalid webhook signature", "The event's Stripe-Signature does not match the configured webhook secret, or is too old. Nothing was changed."},
	CodeInvalidCode:          {"Invalid sign-up code", "The code is wrong, used, expired (codes last 15 minutes) or was replaced by a newer one; after 3 wrong tries it stops working. Request a new code with POST /v1/register."},
	CodeMailUnavailable:      {"Mail cannot be sent", "The server could not send the sign-up code by mail just now. Retry in a few minutes."},
	CodeRateLimited:          {"Too many requests", "Suggestions are free but limited per client address to 10 a second. Retry after the seconds in the Retry-After header."},
}

// HTTPError is an error with the response a client should see. Handlers
// return it (or a plain error that the adapter classifies); the client sees
// Msg and Code, the log gets Err.
type HTTPError struct {
	Status int         // HTTP status code
	Code   string      // machine-readable problem code, e.g. CodeMissingQ
	Msg    string      // detail shown to the client: what went wrong and what to do next
	Err    error       // cause, logged and never shown; may be nil
	Header http.Header // extra response fields such as Allow or Retry-After; may be nil
}

// Error returns the client message followed by the cause.
func (e HTTPError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Msg, e.Err)
	}
	return e.Code + ": " + e.Msg
}

// Unwrap returns the cause.
func (e HTTPError) Unwrap() error { return e.Err }

// Error builds an HTTPError.
func Error(status int, code, msg string, err error) HTTPError {
	return HTTPError{Status: status, Code: code, Msg: msg, Err: err}
}

// ErrInvalidKey is returned by Access.Admit for an unknown or revoked API
// key (401 invalid_key). Wrap it to add a cause for the log.
var ErrInvalidKey = errors.New("API key is unknown or revoked")

// QuotaError is returned by Access.Admit when the caller's allowance cannot
// cover a request (429 quota_exhausted). It carries numbers only: the
// server words the refusal in one place (QuotaMessage), so a problem
// document, a bulk refusal and an MCP tool error say the same thing.
type QuotaError struct {
	Policy     string        // the allowance: "daily" (anonymous, per client address) or "monthly" (registered key)
	Quota      int64         // lookups per window; 0 if unknown
	Remaining  int64         // lookups left, fewer than Requested
	Requested  int64         // lookups the refused request needed
	RetryAfter time.Duration // until the allowance renews; sent as Retry-After in whole seconds, rounded up
	Header     http.Header   // extra response fields, e.g. RateLimit-Policy; may be nil
}

// Error describes the refusal for the log.
func (e *QuotaError) Error() string {
	return fmt.Sprintf("quota exhausted: %s allowance of %d lookups has %d left, %d asked, renews in %ds",
		e.Policy, e.Quota, e.Remaining, e.Requested, RetrySeconds(e.RetryAfter))
}

// Allowance policies of QuotaError.Policy, as the RateLimit fields name
// them.
const (
	policyDaily   = "daily"
	policyMonthly = "monthly"
)

// RetrySeconds is d in whole seconds, rounded up so that a client waiting
// that long finds the allowance renewed, and at least 1.
func RetrySeconds(d time.Duration) int64 {
	return max(int64((d+time.Second-1)/time.Second), 1)
}

// QuotaMessage words the refusal of qe for a client: which allowance, what
// is left, when it renews (in words, and at a clock time when at is not
// zero), and what to do besides waiting.
func QuotaMessage(qe *QuotaError, at time.Time) string {
	return QuotaStatus(qe, at, "this API key") + " " + quotaHint(qe)
}

// QuotaStatus is QuotaMessage without what to do: which allowance, what is
// left and when it renews. holder names whose monthly allowance it is
// ("this API key", "your account"), for a room that words the way out in
// its own terms.
func QuotaStatus(qe *QuotaError, at time.Time, holder string) string {
	allowance := "the lookup allowance"
	switch qe.Policy {
	case policyDaily:
		allowance = "the daily allowance"
	case policyMonthly:
		allowance = holder + "'s monthly allowance"
	}
	if qe.Quota > 0 {
		allowance += " of " + strconv.FormatInt(qe.Quota, 10) + " lookups"
	}
	if qe.Policy == policyDaily {
		allowance += " for this address"
	}
	renews := "it renews in " + HumanDuration(time.Duration(RetrySeconds(qe.RetryAfter))*time.Second)
	if !at.IsZero() {
		renews += " (at " + at.UTC().Format(time.RFC3339) + ")"
	}
	if qe.Remaining > 0 && qe.Requested > qe.Remaining {
		keywords := "keywords"
		if qe.Remaining == 1 {
			keywords = "keyword"
		}
		return fmt.Sprintf("This request needs %d lookups but %s has %d left; send at most %d %s, or wait: %s.",
			qe.Requested, allowance, qe.Remaining, qe.Remaining, keywords, renews)
	}
	return strings.ToUpper(allowance[:1]) + allowance[1:] + " is used up; " + renews + "."
}

// ProblemDoc is an RFC 9457 problem document. Field order is the order the
// client sees.
type ProblemDoc struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
	Code   string `json:"code"`
}

// Classify maps any error a handler returns to the response the client
// sees. It is the only place where error kinds become status codes.
func Classify(err error) HTTPError {
	var he HTTPError
	if errors.As(err, &he) {
		return he
	}
	var qe *QuotaError
	if errors.As(err, &qe) {
		h := http.Header{}
		for k, v := range qe.Header {
			h[k] = v
		}
		h.Set("Retry-After", strconv.FormatInt(RetrySeconds(qe.RetryAfter), 10))
		return HTTPError{Status: http.StatusTooManyRequests, Code: CodeQuotaExhausted, Msg: QuotaMessage(qe, time.Time{}), Err: err, Header: h}
	}
	var be *BodyError
	if errors.As(err, &be) {
		return HTTPError{Status: http.StatusBadRequest, Code: CodeInvalidBody, Msg: bodyErrorMsg(be.Reason), Err: err}
	}
	switch {
	case errors.Is(err, ErrInvalidKey):
		return HTTPError{Status: http.StatusUnauthorized, Code: CodeInvalidKey,
			Msg: "The API key is unknown or revoked; check the key, or send no key to use the anonymous allowance.", Err: err,
			Header: http.Header{"Www-Authenticate": {`Bearer realm="kwdata", error="invalid_token"`}}}
	case errors.Is(err, kw.ErrNoIndex):
		return HTTPError{Status: http.StatusServiceUnavailable, Code: CodeIndexUnavailable,
			Msg: "No keyword index is loaded yet; retry shortly.", Err: err,
			Header: http.Header{"Retry-After": {"30"}}}
	case errors.Is(err, kw.ErrIndexDamaged):
		// Not the keyword's fault, and not a bug: a file of the served
		// index is damaged, and the server is loading the published one
		// again.
		return HTTPError{Status: http.StatusServiceUnavailable, Code: CodeIndexUnavailable,
			Msg: "The keyword index cannot be read for this keyword right now and is being reloaded; retry shortly.", Err: err,
			Header: http.Header{"Retry-After": {"30"}}}
	case errors.Is(err, ErrAccessUnavailable):
		return HTTPError{Status: http.StatusServiceUnavailable, Code: CodeAccessUnavailable,
			Msg: "The server cannot reach its access store (keys, accounts and lookup counts) right now; nothing was counted or changed. Retry shortly.", Err: err,
			Header: http.Header{"Retry-After": {accessRetryAfter}}}
	case errors.Is(err, ErrNotReady):
		return HTTPError{Status: http.StatusServiceUnavailable, Code: CodeNotReady,
			Msg: "The server cannot keep lookup counts (its data folder is gone or replaced, or its shared access store does not answer); the server's log says what to do.", Err: err}
	case errors.Is(err, kw.ErrNotFound):
		return HTTPError{Status: http.StatusNotFound, Code: CodeKeywordNotFound,
			Msg: "The index has no data for this keyword in this country.", Err: err}
	case errors.Is(err, kw.ErrKeywordTooLong), errors.Is(err, kw.ErrKeywordEmpty), errors.Is(err, kw.ErrKeywordInvalid):
		return keywordProblem(err, inQuery)
	}
	return HTTPError{Status: http.StatusInternalServerError, Code: CodeInternal,
		Msg: "The server failed to answer this request; retrying may help.", Err: err}
}

// IndexUnavailable reports whether err only says that the index cannot
// answer (none loaded, or the served one damaged): a 503 the index has
// already logged or that readiness shows, not worth a line per request.
func IndexUnavailable(err error) bool {
	return errors.Is(err, kw.ErrNoIndex) || errors.Is(err, kw.ErrIndexDamaged)
}

// problemJSON is the problem document of he, without a trailing newline:
// the body of an error answer, and a bulk result's error.
func problemJSON(he HTTPError) []byte {
	info, ok := Problems[he.Code]
	if !ok {
		info.Title = http.StatusText(he.Status)
	}
	detail := he.Msg
	if detail == "" {
		detail = info.About
	}
	body, _ := json.Marshal(ProblemDoc{
		Type: ProblemTypePrefix + he.Code, Title: info.Title,
		Status: he.Status, Detail: detail, Code: he.Code,
	})
	return body
}

// WriteProblem writes the problem document of he.
func WriteProblem(w http.ResponseWriter, he HTTPError) {
	body := append(problemJSON(he), '\n')
	h := w.Header()
	for k, v := range he.Header {
		h[k] = v
	}
	h.Set("Content-Type", ProblemContentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h["Cache-Control"] = CacheControlPrivate // a refusal may be counted, or speak of the caller's allowance
	w.WriteHeader(he.Status)
	w.Write(body)
}

// Client messages shared by the handler and Classify.
const (
	missingQMsg = "q is empty; pass the keyword to look up, e.g. /v1/keyword?q=running+shoes."
	tooLongMsg  = "q is too long; a keyword may have at most 80 characters after normalization."
	invalidQMsg = "q is not valid UTF-8, holds control characters, or is not correctly percent-encoded; encode the keyword as UTF-8 text and percent-escape it."
)

// bodyErrorMsg tells a client whose body could not be read what to do.
func bodyErrorMsg(reason string) string {
	switch reason {
	case BodyIncomplete:
		return "The request body ended before its announced length; send it again, whole."
	case BodyTimeout:
		return fmt.Sprintf("The request body did not arrive within %s; send it again without pausing.", ReadTimeout)
	}
	return "The request body is not correctly framed (for example a bad chunk length); send it again with a valid Content-Length or chunked encoding."
}

// StatusClientClosed is recorded when the client cancels a request before
// the answer is ready.
const StatusClientClosed = 499

// IsClientGone reports whether err only says that the client went away, which
// is not worth an error log.
func IsClientGone(ctx context.Context, err error) bool {
	return ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded))
}

// CacheControlPrivate is the Cache-Control of every answer that is
// counted or depends on the caller's key: a shared cache in front of the
// server must neither answer it without counting nor hand it to another
// caller. Public documents set their own public caching instead.
var CacheControlPrivate = []string{"private, no-store"}

// QuotaMonthly reports whether qe refused a registered key's monthly
// allowance; any other refusal is treated as the anonymous daily one, whose
// remedy is a free key.
func QuotaMonthly(qe *QuotaError) bool { return qe.Policy == policyMonthly }

// quotaHint is what a refused caller can do besides waiting: register for
// a free key (anonymous) or upgrade it to the paid tier (registered).
func quotaHint(qe *QuotaError) string {
	if QuotaMonthly(qe) {
		return "Upgrade this API key to the paid tier (4.99 USD a month) for unlimited lookups."
	}
	return "A free API key (POST /v1/register) raises the allowance to 500 lookups a month; the paid tier is unlimited."
}
