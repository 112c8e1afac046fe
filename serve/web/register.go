package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// Registrar runs sign-up by email and key rotation (POST /v1/register,
// /v1/register/verify, /v1/keys/rotate). The access-tier package
// implements it.
type Registrar interface {
	// StartSignup makes a one-time code for email's mailbox, to be mailed.
	// client is the address the request comes from, for the per-address
	// limit. It returns an error wrapping ErrInvalidEmail, a
	// *TooManyRegistrationsError, or any other error for an internal
	// failure.
	StartSignup(ctx context.Context, email string, client netip.Addr) (Signup, error)
	// VerifySignup trades the code for a registered key, returned in clear
	// text (it is shown once and stored only as a hash); a mailbox that
	// holds a key gets it replaced. It returns an error wrapping
	// ErrInvalidEmail or ErrCodeInvalid, or any other error.
	VerifySignup(ctx context.Context, email, code string) (key string, err error)
	// RotateKey replaces an active key with a new one on the same account
	// (tier, subscription and this period's count move with it); the old
	// key stops working. An unknown or revoked key wraps ErrInvalidKey.
	RotateKey(ctx context.Context, key string) (newKey string, err error)
	// Account describes the account of an active key for its page; an
	// unknown or revoked key wraps ErrInvalidKey.
	Account(ctx context.Context, key string) (AccountInfo, error)
}

// AccountInfo is what the account page shows of one account.
type AccountInfo struct {
	KeyID, Email string
	// Tier is the tier the key counts as now: "registered" or "paid".
	Tier string
	// Used is the lookups counted this UTC month; Left what the monthly
	// allowance has left (registered only; -1 when unlimited).
	Used, Left int64
	// Quota is the monthly allowance of the registered tier.
	Quota int64
	// Renews is when the monthly allowance is whole again (registered),
	// or when the paid period ends (paid).
	Renews time.Time
	// SubStatus is the subscription's state as the payment provider says
	// it ("active", "past_due", "canceled"); empty if never subscribed.
	SubStatus string
	// HasCustomer is true once the account has subscribed, so the
	// billing portal has something to manage.
	HasCustomer bool
	// CancelAtPeriodEnd is true when the subscription ends at Renews
	// instead of renewing.
	CancelAtPeriodEnd bool
	// PaymentFailed is when the last charge failed, if no charge has
	// succeeded since; zero otherwise.
	PaymentFailed time.Time
	// NoKeyShown is true for an account made by signing in, whose API key
	// was never shown: the page offers to create one.
	NoKeyShown bool
}

// Signup is a one-time code to mail, from Registrar.StartSignup.
type Signup struct {
	Email    string    // the address asked for, as normalized; the answer names it
	To       string    // the address to mail: the account's own when the mailbox has one
	Code     string    // the code, in clear text only here
	Replaces bool      // the mailbox holds a key, which the code replaces
	Expires  time.Time // when the code stops working
}

// Mail is one message the server sends.
type Mail struct {
	To, Subject, Text string
}

// Mailer sends the server's mail (sign-up codes).
type Mailer interface {
	// SendMail delivers m or returns why it could not.
	SendMail(ctx context.Context, m Mail) error
}

// ErrInvalidEmail is returned by the Registrar for an address that is not
// a valid email address (400 invalid_email).
var ErrInvalidEmail = errors.New("email address is not valid")

// ErrCodeInvalid is returned by Registrar.VerifySignup for a code that is
// wrong, used, expired or never sent (400 invalid_code).
var ErrCodeInvalid = errors.New("sign-up code is not valid")

// TooManyRegistrationsError is returned by Registrar.StartSignup when the
// client address has asked for too many codes today, or the mailbox has
// been sent too many (429 too_many_registrations). It carries numbers
// only; the server words the refusal.
type TooManyRegistrationsError struct {
	RetryAfter time.Duration // until the address may register again; sent as Retry-After
	Limit      int64         // codes allowed a day; 0 if unknown
}

// Error describes the refusal for the log.
func (e *TooManyRegistrationsError) Error() string {
	return fmt.Sprintf("too many sign-up codes (%d a day); renews in %ds", e.Limit, RetrySeconds(e.RetryAfter))
}

// Problem codes of sign-up and the account endpoints.
const (
	CodeInvalidCode     = "invalid_code"
	CodeMailUnavailable = "mail_unavailable"
)

// MaxRegisterBody bounds the bodies of the sign-up and account endpoints.
const MaxRegisterBody = 4 << 10

// maxEmailLen is the longest address RFC 5321 allows in a forward path.
const maxEmailLen = 254

// RegisterRequest is the body of POST /v1/register.
type RegisterRequest struct {
	Email string `json:"email"`
}

// VerifyRequest is the body of POST /v1/register/verify.
type VerifyRequest struct {
	Email string `json:"email"`
	Code  string `json:"code"`
}

// RegisterResponse is the answer of POST /v1/register/verify and
// POST /v1/keys/rotate.
type RegisterResponse struct {
	Key  string `json:"key"`
	Tier string `json:"tier,omitempty"`
}

// CodeSentResponse is the answer of POST /v1/register.
type CodeSentResponse struct {
	Status    string `json:"status"`
	Email     string `json:"email"`
	ExpiresIn int64  `json:"expires_in"`
	Next      string `json:"next"`
}

// DecodeJSONBody reads a small JSON object body into v. Only
// application/json is accepted: a page of another site may send a form or
// a text/plain POST without asking first, while JSON makes the browser
// ask (a CORS preflight), which these routes never grant.
func DecodeJSONBody(r *http.Request, v any, example string) error {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		return HTTPError{Status: http.StatusUnsupportedMediaType, Code: CodeInvalidBody,
			Msg: "Send the body as JSON with Content-Type: application/json, e.g. " + example + "."}
	}
	body, err := ReadBody(r, MaxRegisterBody)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return HTTPError{Status: http.StatusBadRequest, Code: CodeInvalidBody,
			Msg: "The body is not a JSON object of the form " + example + " (" + JSONErrorText(err) + ").", Err: err}
	}
	if _, err := dec.Token(); err != io.EOF {
		return HTTPError{Status: http.StatusBadRequest, Code: CodeInvalidBody,
			Msg: "The body holds more than one JSON value; send exactly one object."}
	}
	return nil
}

// NoRegistrar is the refusal of a sign-up or key route on a server that
// issues no keys.
func (s *Core) NoRegistrar() error {
	return HTTPError{Status: http.StatusNotFound, Code: CodeNotFound,
		Msg: "This server does not issue API keys; ask its operator for one."}
}

// CheckEmail refuses what cannot be an address before the Registrar sees it.
func CheckEmail(raw string) (string, error) {
	email := strings.TrimSpace(raw)
	if email == "" || len(email) > maxEmailLen || !strings.Contains(email, "@") {
		return "", RegisterError(ErrInvalidEmail)
	}
	return email, nil
}

// CodeTTL is how long a code lasts, as the access store keeps it; the
// answer and the mail say it.
const CodeTTL = 15 * time.Minute

// SendCode starts a sign-up for email and mails its code; it returns the
// address as the Registrar normalized it.
func (s *Core) SendCode(r *http.Request, email string) (string, error) {
	su, err := s.Registrar.StartSignup(r.Context(), email, s.ClientAddr(r))
	if err != nil {
		return "", RegisterError(err)
	}
	if err := s.mailCode(r, signupMail(su, s.BaseURL(r))); err != nil {
		return "", err
	}
	return su.Email, nil
}

// mailCode sends a message that carries a code; a mail server that does
// not take it is the client's 503 mail_unavailable, to retry in a minute.
func (s *Core) mailCode(r *http.Request, m Mail) error {
	if err := s.Mailer.SendMail(r.Context(), m); err != nil {
		return HTTPError{Status: http.StatusServiceUnavailable, Code: CodeMailUnavailable,
			Msg: "The code could not be mailed just now; retry in a few minutes.", Err: err,
			Header: http.Header{"Retry-After": {"60"}}}
	}
	return nil
}

// signupMail words the message that carries a code.
func signupMail(su Signup, base string) Mail {
	var b strings.Builder
	fmt.Fprintf(&b, "Your kwdata code is %s\n\n", su.Code)
	if su.Replaces {
		b.WriteString("This address already holds a kwdata API key. Entering the code gets you a new key\n" +
			"for the same account (same tier, subscription and lookups this period), and the\n" +
			"key you have now stops working. If you still have it and did not ask for this,\n" +
			"ignore this mail: nothing changes.\n\n")
	} else {
		b.WriteString("Enter it to get your free API key (500 lookups a month). If you did not ask\n" +
			"for a key, ignore this mail: nothing happens.\n\n")
	}
	fmt.Fprintf(&b, "The code works for %d minutes, until %s UTC.\n", int(CodeTTL/time.Minute), su.Expires.UTC().Format("15:04"))
	fmt.Fprintf(&b, "Enter it at %s/register, or send\n  POST %s/v1/register/verify {\"email\": %q, \"code\": %q}\n", base, base, su.Email, su.Code)
	to := su.To
	if to == "" {
		to = su.Email
	}
	return Mail{To: to, Subject: "Your kwdata code: " + su.Code, Text: b.String()}
}

// RequestKey returns the API key of r: "Authorization: Bearer <key>", else
// X-API-Key.
func RequestKey(r *http.Request) string {
	if v := r.Header.Get("Authorization"); v != "" {
		scheme, token, _ := strings.Cut(strings.TrimSpace(v), " ")
		if !strings.EqualFold(scheme, "Bearer") {
			return ""
		}
		return strings.TrimSpace(token)
	}
	return strings.TrimSpace(r.Header.Get("X-API-Key"))
}

// WriteKey answers 201 with a key shown once.
func WriteKey(w http.ResponseWriter, key, tier string) error {
	w.Header()["Cache-Control"] = CacheControlPrivate // the key is shown once; no cache may keep it
	return WriteJSON(w, http.StatusCreated, RegisterResponse{Key: key, Tier: tier})
}

// WriteJSON answers status with v as JSON.
func WriteJSON(w http.ResponseWriter, status int, v any) error {
	out, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("cannot encode an answer: %w", err)
	}
	out = append(out, '\n')
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(out)))
	if h.Get("Cache-Control") == "" {
		h["Cache-Control"] = CacheControlPrivate
	}
	w.WriteHeader(status)
	w.Write(out)
	return nil
}

// RegisterError maps the failures of the Registrar to their answers.
func RegisterError(err error) error {
	var tm *TooManyRegistrationsError
	switch {
	case errors.As(err, &tm):
		secs := RetrySeconds(tm.RetryAfter)
		msg := "Too many sign-up codes were asked for today from this address or for this mailbox"
		if tm.Limit > 0 {
			msg = fmt.Sprintf("%d sign-up codes were asked for today from this address or for this mailbox, the most a day allows", tm.Limit)
		}
		msg += "; retry in " + HumanDuration(time.Duration(secs)*time.Second) + ", or use the latest code you were sent."
		return HTTPError{Status: http.StatusTooManyRequests, Code: CodeTooManyRegistrations, Msg: msg, Err: err,
			Header: http.Header{"Retry-After": {strconv.FormatInt(secs, 10)}}}
	case errors.Is(err, ErrInvalidEmail):
		return HTTPError{Status: http.StatusBadRequest, Code: CodeInvalidEmail,
			Msg: "The email address is not valid; send {\"email\": \"you@example.com\"} with an address that can receive mail.", Err: err}
	case errors.Is(err, ErrCodeInvalid):
		return HTTPError{Status: http.StatusBadRequest, Code: CodeInvalidCode,
			Msg: "The code is wrong, used or expired; check the latest mail, or ask for a new code with POST /v1/register.", Err: err}
	case errors.Is(err, ErrInvalidKey):
		return HTTPError{Status: http.StatusUnauthorized, Code: CodeInvalidKey,
			Msg: "The API key is not valid; check it, or get a new one by proving your email at POST /v1/register.", Err: err}
	}
	return fmt.Errorf("cannot complete the sign-up: %w", err)
}

// LogMailer is the Mailer of a server without SMTP: it writes each message
// to the log, so that a person running the demo can still read the code.
type LogMailer struct{ Logger *slog.Logger }

// SendMail logs m in full.
func (l LogMailer) SendMail(ctx context.Context, m Mail) error {
	l.Logger.Info("mail not sent (no --smtp-url); here it is", "to", m.To, "subject", m.Subject, "text", m.Text)
	return nil
}
