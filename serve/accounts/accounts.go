package accounts

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/kwdata/kwdata/serve/web"
)

// Accounts answers the sign-up and account pages. It is safe for
// concurrent use.
type Accounts struct {
	*web.Core
}

// New returns the accounts room over core.
func New(core *web.Core) *Accounts { return &Accounts{Core: core} }

// Routes lists the routes of the sign-up and account pages.
func (s *Accounts) Routes() []web.Route {
	routes := []web.Route{
		{Pattern: "GET /register", Handler: s.handleRegisterPage, Private: true},
		{Pattern: "POST /register", Handler: s.handleRegisterForm, Private: true},
		{Pattern: "POST /register/verify", Handler: s.handleRegisterVerifyForm, Private: true},
		{Pattern: "GET /account", Handler: s.handleAccountPage, Private: true},
		{Pattern: "POST /account/signin", Handler: s.handleSignin, Private: true},
		{Pattern: "POST /account/signin/verify", Handler: s.handleSigninVerify, Private: true},
		{Pattern: "POST /account/login", Handler: s.handleAccountLogin, Private: true},
		{Pattern: "POST /account/logout", Handler: s.handleAccountLogout, Private: true},
		{Pattern: "POST /account/rotate", Handler: s.handleAccountRotate, Private: true},
		{Pattern: "POST /account/subscribe", Handler: s.handleAccountSubscribe, Private: true},
		{Pattern: "POST /account/manage", Handler: s.handleAccountManage, Private: true},
	}
	for i := range routes {
		routes[i].Handler = clearKeyCookie(routes[i].Handler)
	}
	return routes
}

//go:embed templates/*.html
var templateFS embed.FS

// pageTemplates holds the sign-up and account pages, each the shared
// layout plus the page's "content".
var pageTemplates = web.ParsePages(templateFS, "register", "account")

// renderPage renders the page name with the shared layout.
func (s *Accounts) renderPage(w http.ResponseWriter, r *http.Request, status int, name string, d *web.PageData) error {
	return web.RenderPage(w, r, status, name, pageTemplates[name], d)
}

// accountView is what the sign-up and account pages show.
type accountView struct {
	Email string // the address a code went to (sign-up, second step)
	Key   string // a key shown once
	Next  string // the local path to land on after signing in
	// Signin is the address a sign-in code went to (the code form).
	Signin string
	Error  string // why the last step was refused
	Note   string // what the last step did

	Info      *web.AccountInfo // the account page of a signed-in account
	BillingOn bool             // the server takes payments
	Used      string           // Info.Used, for people
	Left      string
	Renews    string
	Failed    string // when the last charge failed
}

// pageForms guards the pages' forms: a browser that says a POST comes
// from another site (Sec-Fetch-Site, else Origin) is refused, so no page
// of another site can submit them through its visitors' browsers.
var pageForms = http.NewCrossOriginProtection()

// readForm checks that r is a same-site form POST and parses its body.
func readForm(r *http.Request) (url.Values, error) {
	if err := pageForms.Check(r); err != nil {
		return nil, web.HTTPError{Status: http.StatusForbidden, Code: web.CodeForbiddenOrigin,
			Msg: "This form may only be sent from this site's own pages.", Err: err}
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/x-www-form-urlencoded" {
		return nil, web.HTTPError{Status: http.StatusUnsupportedMediaType, Code: web.CodeInvalidBody,
			Msg: "Send the form as application/x-www-form-urlencoded, as the page does."}
	}
	body, err := web.ReadBody(r, web.MaxRegisterBody)
	if err != nil {
		return nil, err
	}
	v, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, web.HTTPError{Status: http.StatusBadRequest, Code: web.CodeInvalidBody, Msg: "The form is not valid; send it from the page again.", Err: err}
	}
	return v, nil
}

// renderAccountPage renders a sign-up or account page; a refused step
// (an HTTPError below 500) is shown on the page with its status.
func (s *Accounts) renderAccountPage(w http.ResponseWriter, r *http.Request, name, title string, v *accountView, err error) error {
	status := http.StatusOK
	if err != nil {
		var he web.HTTPError
		if !errors.As(err, &he) || he.Status >= 500 && he.Code != web.CodeMailUnavailable {
			return err
		}
		status, v.Error = he.Status, he.Msg
		for k, vals := range he.Header {
			w.Header()[k] = vals
		}
	}
	d := s.NewPage(r, title, web.FormData{Country: strings.ToUpper(web.DefaultCountry)})
	d.Acct = v
	return s.renderPage(w, r, status, name, d)
}

// handleRegisterPage answers GET /register: the sign-up form.
func (s *Accounts) handleRegisterPage(w http.ResponseWriter, r *http.Request) error {
	if s.Registrar == nil {
		return s.NoRegistrar()
	}
	return s.renderAccountPage(w, r, "register", "Get a free API key · kwdata", &accountView{}, nil)
}

// handleRegisterForm answers POST /register: the code is mailed, and the
// page asks for it.
func (s *Accounts) handleRegisterForm(w http.ResponseWriter, r *http.Request) error {
	if s.Registrar == nil {
		return s.NoRegistrar()
	}
	const title = "Get a free API key · kwdata"
	form, err := readForm(r)
	if err != nil {
		return s.renderAccountPage(w, r, "register", title, &accountView{}, err)
	}
	email, err := web.CheckEmail(form.Get("email"))
	if err == nil {
		email, err = s.SendCode(r, email)
	}
	if err != nil {
		return s.renderAccountPage(w, r, "register", title, &accountView{}, err)
	}
	return s.renderAccountPage(w, r, "register", title, &accountView{Email: email}, nil)
}

// handleRegisterVerifyForm answers POST /register/verify: the key, once.
func (s *Accounts) handleRegisterVerifyForm(w http.ResponseWriter, r *http.Request) error {
	if s.Registrar == nil {
		return s.NoRegistrar()
	}
	const title = "Your API key · kwdata"
	form, err := readForm(r)
	if err != nil {
		return s.renderAccountPage(w, r, "register", title, &accountView{}, err)
	}
	email, err := web.CheckEmail(form.Get("email"))
	if err != nil {
		return s.renderAccountPage(w, r, "register", title, &accountView{}, err)
	}
	v := &accountView{Email: email}
	code := strings.TrimSpace(form.Get("code"))
	if code == "" || len(code) > 16 {
		return s.renderAccountPage(w, r, "register", title, v, web.RegisterError(web.ErrCodeInvalid))
	}
	key, err := s.Registrar.VerifySignup(r.Context(), email, code)
	if err != nil {
		return s.renderAccountPage(w, r, "register", title, v, web.RegisterError(err))
	}
	v.Key = key
	return s.renderAccountPage(w, r, "register", title, v, nil)
}

// oldKeyCookie is the cookie earlier versions kept the API key in, on
// /account. The key never goes into a cookie any more: a request that
// still carries one gets it cleared, and it opens nothing.
const oldKeyCookie = "kwdata_key"

// clearKeyCookie clears the old key cookie on any request carrying it.
func clearKeyCookie(h web.HandlerFunc) web.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if _, err := r.Cookie(oldKeyCookie); err == nil {
			http.SetCookie(w, &http.Cookie{Name: oldKeyCookie, Path: "/account", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
		}
		return h(w, r)
	}
}

// LocalNext returns next if it is a path of this site, to land on after
// signing in, else "": it must start with "/" but not "//" or "/\"
// (which browsers read as another host), and hold no backslash, control
// character or space (browsers drop tabs and newlines, so "/\t/host" is
// "//host" to them).
func LocalNext(next string) string {
	if len(next) > maxNext || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") {
		return ""
	}
	for i := 0; i < len(next); i++ {
		if c := next[i]; c <= ' ' || c == 0x7f || c == '\\' {
			return ""
		}
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || !strings.HasPrefix(u.Path, "/") {
		return ""
	}
	return next
}

// maxNext bounds the next parameter; an OAuth authorization request with
// its parameters fits well within it.
const maxNext = 4096

const accountTitle = "Your account · kwdata"

// accountPage renders the account of the signed-in account acct (or the
// sign-in forms without one), with v's message.
func (s *Accounts) accountPage(w http.ResponseWriter, r *http.Request, acct string, v *accountView, stepErr error) error {
	v.BillingOn = s.Billing != nil
	if acct != "" {
		info, err := s.Sessions.AccountByID(r.Context(), acct)
		switch {
		case errors.Is(err, web.ErrInvalidKey):
			// A revoked account: its session opens nothing any more.
			s.SetSession(w, "", -1)
		case err != nil:
			return err
		default:
			v.Info = &info
			v.Used = thousands(info.Used)
			v.Left = "unlimited"
			if info.Left >= 0 {
				v.Left = thousands(info.Left)
			}
			if !info.Renews.IsZero() {
				v.Renews = info.Renews.UTC().Format("Mon 2 Jan 2006")
			}
			if !info.PaymentFailed.IsZero() {
				v.Failed = info.PaymentFailed.UTC().Format("2 Jan 2006 15:04 UTC")
			}
		}
	}
	return s.renderAccountPage(w, r, "account", accountTitle, v, stepErr)
}

// thousands writes n with thousands separators.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// noSignin is the refusal of the account pages on a server without
// sign-up or sessions.
func (s *Accounts) noSignin() error {
	if s.Registrar == nil || s.Sessions == nil {
		return s.NoRegistrar()
	}
	return nil
}

// handleAccountPage answers GET /account: the account of the session, or
// the forms to sign in by email code or with a key.
func (s *Accounts) handleAccountPage(w http.ResponseWriter, r *http.Request) error {
	if err := s.noSignin(); err != nil {
		return err
	}
	v := &accountView{Next: LocalNext(r.URL.Query().Get("next"))}
	switch r.URL.Query().Get("checkout") {
	case "done":
		v.Note = "Thank you: your payment went through. The paid tier starts as soon as Stripe confirms it, usually within seconds; reload this page."
	case "cancelled":
		v.Note = "Checkout was cancelled; nothing was charged."
	}
	acct, _ := s.SignedIn(r)
	return s.accountPage(w, r, acct, v, nil)
}

// handleSignin answers POST /account/signin: a code is mailed to the
// address, and the page asks for it. The answer is the same whether the
// mailbox has an account or not.
func (s *Accounts) handleSignin(w http.ResponseWriter, r *http.Request) error {
	if err := s.noSignin(); err != nil {
		return err
	}
	form, err := readForm(r)
	if err != nil {
		return s.accountPage(w, r, "", &accountView{}, err)
	}
	v := &accountView{Next: LocalNext(form.Get("next"))}
	email, err := web.CheckEmail(form.Get("email"))
	if err == nil {
		email, err = s.SendSigninCode(r, email)
	}
	if err != nil {
		return s.accountPage(w, r, "", v, err)
	}
	v.Signin = email
	return s.accountPage(w, r, "", v, nil)
}

// handleSigninVerify answers POST /account/signin/verify: the code opens
// a session of the mailbox's account (a new registered one for a new
// mailbox), and the browser goes on to next or the account page. The API
// key stays as it was.
func (s *Accounts) handleSigninVerify(w http.ResponseWriter, r *http.Request) error {
	if err := s.noSignin(); err != nil {
		return err
	}
	form, err := readForm(r)
	if err != nil {
		return s.accountPage(w, r, "", &accountView{}, err)
	}
	v := &accountView{Next: LocalNext(form.Get("next"))}
	email, err := web.CheckEmail(form.Get("email"))
	if err != nil {
		return s.accountPage(w, r, "", v, err)
	}
	v.Signin = email
	code := strings.TrimSpace(form.Get("code"))
	if code == "" || len(code) > 16 {
		return s.accountPage(w, r, "", v, web.RegisterError(web.ErrCodeInvalid))
	}
	acct, err := s.Sessions.VerifySignin(r.Context(), email, code)
	if err != nil {
		return s.accountPage(w, r, "", v, web.RegisterError(err))
	}
	return s.openSession(w, r, acct, v.Next)
}

// openSession signs the browser in to acct and sends it on to next, or to
// the account page.
func (s *Accounts) openSession(w http.ResponseWriter, r *http.Request, acct, next string) error {
	id, err := s.Sessions.NewSession(r.Context(), acct)
	if err != nil {
		return fmt.Errorf("cannot open a session: %w", err)
	}
	s.SetSession(w, id, web.SessionIdle)
	if next == "" {
		next = "/account"
	}
	// Set as is: http.Redirect would clean the path and re-resolve it.
	w.Header().Set("Location", next)
	w.WriteHeader(http.StatusSeeOther)
	return nil
}

// handleAccountLogin answers POST /account/login: a pasted key, checked,
// opens a session of its account. The key itself is kept nowhere.
func (s *Accounts) handleAccountLogin(w http.ResponseWriter, r *http.Request) error {
	if err := s.noSignin(); err != nil {
		return err
	}
	form, err := readForm(r)
	if err != nil {
		return s.accountPage(w, r, "", &accountView{}, err)
	}
	next := LocalNext(form.Get("next"))
	info, err := s.Registrar.Account(r.Context(), strings.TrimSpace(form.Get("key")))
	if err != nil {
		return s.accountPage(w, r, "", &accountView{Next: next}, web.RegisterError(err))
	}
	return s.openSession(w, r, info.KeyID, next)
}

// handleAccountLogout answers POST /account/logout: the session ends on
// the server, so its cookie opens nothing even if replayed.
func (s *Accounts) handleAccountLogout(w http.ResponseWriter, r *http.Request) error {
	if err := s.noSignin(); err != nil {
		return err
	}
	if _, err := readForm(r); err != nil {
		return s.accountPage(w, r, "", &accountView{}, err)
	}
	if id := s.SessionID(r); id != "" {
		if err := s.Sessions.EndSession(r.Context(), id); err != nil {
			return fmt.Errorf("cannot end the session: %w", err)
		}
	}
	s.SetSession(w, "", -1)
	http.Redirect(w, r, "/account", http.StatusSeeOther)
	return nil
}

// accountForm reads a form POST of a signed-in account page and returns
// the session's account.
func (s *Accounts) accountForm(r *http.Request) (string, error) {
	if err := s.noSignin(); err != nil {
		return "", err
	}
	if _, err := readForm(r); err != nil {
		return "", err
	}
	acct, ok := s.SignedIn(r)
	if !ok {
		return "", web.HTTPError{Status: http.StatusUnauthorized, Code: web.CodeInvalidKey, Msg: "Sign in first: your session has ended."}
	}
	return acct, nil
}

// handleAccountRotate answers POST /account/rotate: a new key (the first
// one, for an account made by signing in), shown once.
func (s *Accounts) handleAccountRotate(w http.ResponseWriter, r *http.Request) error {
	acct, err := s.accountForm(r)
	if err != nil {
		return s.accountPage(w, r, acct, &accountView{}, err)
	}
	fresh, err := s.Sessions.RotateAccountKey(r.Context(), acct)
	if err != nil {
		return s.accountPage(w, r, acct, &accountView{}, web.RegisterError(err))
	}
	return s.accountPage(w, r, acct, &accountView{Key: fresh,
		Note: "Your new key is below; any earlier one no longer works. It is shown only now: copy it somewhere safe."}, nil)
}

// handleAccountSubscribe answers POST /account/subscribe: off to Stripe
// Checkout.
func (s *Accounts) handleAccountSubscribe(w http.ResponseWriter, r *http.Request) error {
	return s.accountBilling(w, r, func(ctx context.Context, acct string) (string, error) { return s.Billing.CheckoutAccount(ctx, acct) })
}

// handleAccountManage answers POST /account/manage: off to the Stripe
// Billing Portal.
func (s *Accounts) handleAccountManage(w http.ResponseWriter, r *http.Request) error {
	return s.accountBilling(w, r, func(ctx context.Context, acct string) (string, error) { return s.Billing.PortalAccount(ctx, acct) })
}

func (s *Accounts) accountBilling(w http.ResponseWriter, r *http.Request, page func(context.Context, string) (string, error)) error {
	acct, err := s.accountForm(r)
	if err == nil && s.Billing == nil {
		err = s.BillingUnavailable()
	}
	if err != nil {
		return s.accountPage(w, r, acct, &accountView{}, err)
	}
	u, err := page(r.Context(), acct)
	if err != nil {
		return s.accountPage(w, r, acct, &accountView{}, web.BillingError(err))
	}
	http.Redirect(w, r, u, http.StatusSeeOther)
	return nil
}
