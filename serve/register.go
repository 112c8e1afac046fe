package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// Registrar issues API keys of the registered tier (POST /v1/register). The
// access-tier package implements it.
type Registrar interface {
	// Register creates the one active key of email and returns it in clear
	// text (it is shown once and stored only as a hash). client is the
	// address the request comes from, for the per-address limit. It
	// returns an error wrapping ErrInvalidEmail or ErrEmailTaken, a
	// *TooManyRegistrationsError, or any other error for an internal
	// failure.
	Register(ctx context.Context, email string, client netip.Addr) (key string, err error)
}

// ErrEmailTaken is returned by Registrar.Register when the email already
// holds an active key (409 email_taken).
var ErrEmailTaken = errors.New("email already holds an active API key")

// ErrInvalidEmail is returned by Registrar.Register for an address that is
// not a valid email address (400 invalid_email).
var ErrInvalidEmail = errors.New("email address is not valid")

// TooManyRegistrationsError is returned by Registrar.Register when the
// client address has registered too many keys today (429
// too_many_registrations).
// It carries numbers only; the server words the refusal.
type TooManyRegistrationsError struct {
	RetryAfter time.Duration // until the address may register again; sent as Retry-After
	Limit      int64         // registrations allowed per address and day; 0 if unknown
}

// Error describes the refusal for the log.
func (e *TooManyRegistrationsError) Error() string {
	return fmt.Sprintf("too many registrations from this address (%d a day); renews in %ds", e.Limit, retrySeconds(e.RetryAfter))
}

// maxRegisterBody bounds the body of POST /v1/register.
const maxRegisterBody = 4 << 10

// maxEmailLen is the longest address RFC 5321 allows in a forward path.
const maxEmailLen = 254

// registerRequest is the body of POST /v1/register.
type registerRequest struct {
	Email string `json:"email"`
}

// registerResponse is the answer of POST /v1/register.
type registerResponse struct {
	Key  string `json:"key"`
	Tier string `json:"tier"`
}

// handleRegister answers POST /v1/register: a new API key of the registered
// tier for an email address.
func (s *Server) handleRegister(w http.ResponseWriter, r *http.Request) error {
	if s.registrar == nil {
		return HTTPError{Status: http.StatusNotFound, Code: CodeNotFound,
			Msg: "This server does not issue API keys; ask its operator for one."}
	}
	// A page of another site may send a form or a text/plain POST without
	// asking first; only JSON makes the browser ask (a CORS preflight),
	// and this route never says yes, so no page can register keys through
	// its visitors' browsers.
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		return HTTPError{Status: http.StatusUnsupportedMediaType, Code: CodeInvalidBody,
			Msg: "Send the body as JSON with Content-Type: application/json, e.g. {\"email\": \"you@example.com\"}."}
	}
	body, err := readBody(r, maxRegisterBody)
	if err != nil {
		return err
	}
	var req registerRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return HTTPError{Status: http.StatusBadRequest, Code: CodeInvalidBody,
			Msg: "The body is not a JSON object of the form {\"email\": \"you@example.com\"} (" + jsonErrorText(err) + ").", Err: err}
	}
	if _, err := dec.Token(); err != io.EOF {
		return HTTPError{Status: http.StatusBadRequest, Code: CodeInvalidBody,
			Msg: "The body holds more than one JSON value; send exactly one object."}
	}
	email := strings.TrimSpace(req.Email)
	if email == "" || len(email) > maxEmailLen || !strings.Contains(email, "@") {
		return registerError(ErrInvalidEmail)
	}
	key, err := s.registrar.Register(r.Context(), email, s.clientAddr(r))
	if err != nil {
		return registerError(err)
	}
	out, err := json.Marshal(registerResponse{Key: key, Tier: "registered"})
	if err != nil {
		return fmt.Errorf("cannot encode a new key: %w", err)
	}
	out = append(out, '\n')
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(out)))
	h.Set("Cache-Control", "no-store") // the key is shown once; no cache may keep it
	w.WriteHeader(http.StatusCreated)
	w.Write(out)
	return nil
}

// registerError maps the failures of Registrar.Register to their answers.
func registerError(err error) error {
	var tm *TooManyRegistrationsError
	switch {
	case errors.As(err, &tm):
		secs := retrySeconds(tm.RetryAfter)
		msg := "This address has registered too many keys today"
		if tm.Limit > 0 {
			msg = fmt.Sprintf("This address has registered %d keys today, the most a day allows", tm.Limit)
		}
		msg += "; retry in " + humanDuration(time.Duration(secs)*time.Second) + ", or use the key you already have."
		return HTTPError{Status: http.StatusTooManyRequests, Code: CodeTooManyRegistrations, Msg: msg, Err: err,
			Header: http.Header{"Retry-After": {strconv.FormatInt(secs, 10)}}}
	case errors.Is(err, ErrEmailTaken):
		return HTTPError{Status: http.StatusConflict, Code: CodeEmailTaken,
			Msg: "This email address already holds an active API key; use that key, or ask the operator to revoke it first.", Err: err}
	case errors.Is(err, ErrInvalidEmail):
		return HTTPError{Status: http.StatusBadRequest, Code: CodeInvalidEmail,
			Msg: "The email address is not valid; send {\"email\": \"you@example.com\"} with an address that can receive mail.", Err: err}
	}
	return fmt.Errorf("cannot register a key: %w", err)
}
