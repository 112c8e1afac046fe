package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"time"
)

// Sessions signs people in by email code and keeps their browser signed
// in with a server-side session. The access-tier package implements it,
// on the same store as the keys, so every server of a deployment knows
// every session.
type Sessions interface {
	// StartSignin makes a one-time code for email's mailbox, to be mailed
	// to Signup.To (the account's own address when the mailbox has one).
	// Errors as Registrar.StartSignup.
	StartSignin(ctx context.Context, email string, client netip.Addr) (Signup, error)
	// VerifySignin trades the code for the account of the mailbox, made
	// registered if the mailbox had none. It never changes an API key.
	// Errors as Registrar.VerifySignup.
	VerifySignin(ctx context.Context, email, code string) (account string, err error)
	// NewSession opens a session of account and returns its id, in clear
	// text only here.
	NewSession(ctx context.Context, account string) (string, error)
	// Session returns the account of a live session; an unknown, ended or
	// expired session, or one of a revoked account, wraps ErrNoSession.
	Session(ctx context.Context, id string) (account string, err error)
	// EndSession ends a session on every server.
	EndSession(ctx context.Context, id string) error
	// AccountByID describes an account for its page; a revoked or unknown
	// one wraps ErrInvalidKey.
	AccountByID(ctx context.Context, account string) (AccountInfo, error)
	// RotateAccountKey gives the account a new API key, returned in clear
	// text only here; the old one, if any, stops working.
	RotateAccountKey(ctx context.Context, account string) (string, error)
}

// ErrNoSession is wrapped by Sessions.Session for a session that is
// unknown, ended or expired: the person signs in again.
var ErrNoSession = errors.New("the session has ended; sign in again")

// SessionCookie is the name of the session cookie: a __Host- cookie when
// the public URL is https (the browser then requires Secure and Path=/,
// and refuses it from a subdomain), a plain name on http, where the
// browser would refuse a __Host- cookie.
func SessionCookie(publicURL string) string {
	if strings.HasPrefix(publicURL, "https://") {
		return "__Host-kwdata_session"
	}
	return "kwdata_session"
}

// SessionIdle is how long a session lasts unused, in seconds: the
// cookie's Max-Age. The store ends it after as long without a visit.
const SessionIdle = 30 * 24 * 3600

// SetSession sets (maxAge > 0) or clears (maxAge < 0) the session cookie:
// Path=/, HttpOnly, SameSite=Lax (a link from another site carries it, so
// a GET never changes anything), Secure on https.
func (s *Core) SetSession(w http.ResponseWriter, id string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: SessionCookie(s.PublicURL), Value: id, Path: "/", MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: strings.HasPrefix(s.PublicURL, "https://")})
}

// SessionID returns the session id r's cookie carries, or "".
func (s *Core) SessionID(r *http.Request) string {
	c, err := r.Cookie(SessionCookie(s.PublicURL))
	if err != nil {
		return ""
	}
	return c.Value
}

// SignedIn returns the account of r's session. A request without one, or
// with one that ended, is not signed in; a store that fails is logged and
// treated the same, so that a page still answers (anonymously).
func (s *Core) SignedIn(r *http.Request) (string, bool) {
	id := s.SessionID(r)
	if id == "" || s.Sessions == nil {
		return "", false
	}
	acct, err := s.Sessions.Session(r.Context(), id)
	if err != nil {
		if !errors.Is(err, ErrNoSession) {
			s.Log.Warn("cannot read a session; answering as signed out", "err", err)
		}
		return "", false
	}
	return acct, true
}

type accountKey struct{}

// WithAccount marks ctx as a request of a signed-in account (a session or
// an OAuth access token): Access.Admit then counts on that account, not
// on an API key or the client address.
func WithAccount(ctx context.Context, account string) context.Context {
	return context.WithValue(ctx, accountKey{}, account)
}

// AccountFrom returns the account WithAccount put in ctx.
func AccountFrom(ctx context.Context) (string, bool) {
	a, ok := ctx.Value(accountKey{}).(string)
	return a, ok && a != ""
}

// SendSigninCode starts a sign-in for email and mails its code; it returns
// the address as the store normalized it. The answer is the same whether
// the mailbox has an account or not, so that it tells no one who is
// registered.
func (s *Core) SendSigninCode(r *http.Request, email string) (string, error) {
	si, err := s.Sessions.StartSignin(r.Context(), email, s.ClientAddr(r))
	if err != nil {
		return "", RegisterError(err)
	}
	if err := s.mailCode(r, signinMail(si, s.BaseURL(r))); err != nil {
		return "", err
	}
	return si.Email, nil
}

// signinMail words the message that carries a sign-in code.
func signinMail(si Signup, base string) Mail {
	var b strings.Builder
	fmt.Fprintf(&b, "Your kwdata sign-in code is %s\n\n", si.Code)
	b.WriteString("Enter it on the page that asked for it to sign in. Signing in never changes your\n" +
		"API key. If you did not ask to sign in, ignore this mail: nothing happens.\n\n")
	fmt.Fprintf(&b, "The code works for %d minutes, until %s UTC.\n", int(CodeTTL/time.Minute), si.Expires.UTC().Format("15:04"))
	fmt.Fprintf(&b, "%s/account\n", base)
	to := si.To
	if to == "" {
		to = si.Email
	}
	return Mail{To: to, Subject: "Your kwdata sign-in code: " + si.Code, Text: b.String()}
}
