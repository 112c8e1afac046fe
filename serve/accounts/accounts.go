package accounts

import (
	"context"
	"embed"
	"errors"
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
	return []web.Route{
		{Pattern: "GET /register", Handler: s.handleRegisterPage, Private: true},
		{Pattern: "POST /register", Handler: s.handleRegisterForm, Private: true},
		{Pattern: "POST /register/verify", Handler: s.handleRegisterVerifyForm, Private: true},
		{Pattern: "GET /account", Handler: s.handleAccountPage, Private: true},
		{Pattern: "POST /account/login", Handler: s.handleAccountLogin, Private: true},
		{Pattern: "POST /account/logout", Handler: s.handleAccountLogout, Private: true},
		{Pattern: "POST /account/rotate", Handler: s.handleAccountRotate, Private: true},
		{Pattern: "POST /account/subscribe", Handler: s.handleAccountSubscribe, Private: true},
		{Pattern: "POST /account/manage", Handler: s.handleAccountManage, Private: true},
	}
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
	Error string // why the last step was refused
	Note  string // what the last step did

	Info      *web.AccountInfo // the account page of a signed-in key
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

// The account page keeps the key in a cookie: HttpOnly, so no script can
// read it (the account pages load no script, and the Content-Security-Policy
// of every page allows only the server's own, /suggest.js); SameSite=Strict and scoped to /account, so no other site's page
// and no API call ever sends it; Secure when the public URL is https.
const (
	accountCookie = "kwdata_key"
	cookieMaxAge  = 30 * 24 * 3600 // a month; signing out ends it sooner
)

func (s *Accounts) setKeyCookie(w http.ResponseWriter, key string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: accountCookie, Value: key, Path: "/account", MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: strings.HasPrefix(s.PublicURL, "https://")})
}

func cookieKey(r *http.Request) string {
	c, err := r.Cookie(accountCookie)
	if err != nil {
		return ""
	}
	return c.Value
}

const accountTitle = "Your account · kwdata"

// accountPage renders the account of key (or the sign-in form without
// one), with v's message.
func (s *Accounts) accountPage(w http.ResponseWriter, r *http.Request, key string, v *accountView, stepErr error) error {
	v.BillingOn = s.Billing != nil
	if key != "" && s.Registrar != nil {
		info, err := s.Registrar.Account(r.Context(), key)
		switch {
		case errors.Is(err, web.ErrInvalidKey):
			s.setKeyCookie(w, "", -1)
			if stepErr == nil {
				stepErr = web.HTTPError{Status: http.StatusUnauthorized, Code: web.CodeInvalidKey,
					Msg: "That API key is not valid (mistyped, revoked or replaced); enter your current key, or get one by email."}
			}
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

// handleAccountPage answers GET /account: the account of the key in the
// cookie, or the form to enter one.
func (s *Accounts) handleAccountPage(w http.ResponseWriter, r *http.Request) error {
	if s.Registrar == nil {
		return s.NoRegistrar()
	}
	v := &accountView{}
	switch r.URL.Query().Get("checkout") {
	case "done":
		v.Note = "Thank you: your payment went through. The paid tier starts as soon as Stripe confirms it, usually within seconds; reload this page."
	case "cancelled":
		v.Note = "Checkout was cancelled; nothing was charged."
	}
	return s.accountPage(w, r, cookieKey(r), v, nil)
}

// accountForm reads a form POST of the account page and its key.
func (s *Accounts) accountForm(r *http.Request) (url.Values, string, error) {
	if s.Registrar == nil {
		return nil, "", s.NoRegistrar()
	}
	form, err := readForm(r)
	if err != nil {
		return nil, "", err
	}
	key := cookieKey(r)
	if key == "" {
		return form, "", web.HTTPError{Status: http.StatusUnauthorized, Code: web.CodeInvalidKey, Msg: "Enter your API key first."}
	}
	return form, key, nil
}

// handleAccountLogin answers POST /account/login: the key, checked, goes
// into the cookie.
func (s *Accounts) handleAccountLogin(w http.ResponseWriter, r *http.Request) error {
	if s.Registrar == nil {
		return s.NoRegistrar()
	}
	form, err := readForm(r)
	if err != nil {
		return s.accountPage(w, r, "", &accountView{}, err)
	}
	key := strings.TrimSpace(form.Get("key"))
	if _, err := s.Registrar.Account(r.Context(), key); err != nil {
		return s.accountPage(w, r, "", &accountView{}, web.RegisterError(err))
	}
	s.setKeyCookie(w, key, cookieMaxAge)
	http.Redirect(w, r, "/account", http.StatusSeeOther)
	return nil
}

// handleAccountLogout answers POST /account/logout.
func (s *Accounts) handleAccountLogout(w http.ResponseWriter, r *http.Request) error {
	if _, err := readForm(r); err != nil {
		return s.accountPage(w, r, "", &accountView{}, err)
	}
	s.setKeyCookie(w, "", -1)
	http.Redirect(w, r, "/account", http.StatusSeeOther)
	return nil
}

// handleAccountRotate answers POST /account/rotate: a new key, shown once
// and kept in the cookie.
func (s *Accounts) handleAccountRotate(w http.ResponseWriter, r *http.Request) error {
	_, key, err := s.accountForm(r)
	if err != nil {
		return s.accountPage(w, r, key, &accountView{}, err)
	}
	fresh, err := s.Registrar.RotateKey(r.Context(), key)
	if err != nil {
		return s.accountPage(w, r, key, &accountView{}, web.RegisterError(err))
	}
	s.setKeyCookie(w, fresh, cookieMaxAge)
	return s.accountPage(w, r, fresh, &accountView{Key: fresh,
		Note: "Your new key is below; the old one no longer works. It is shown only now: copy it somewhere safe."}, nil)
}

// handleAccountSubscribe answers POST /account/subscribe: off to Stripe
// Checkout.
func (s *Accounts) handleAccountSubscribe(w http.ResponseWriter, r *http.Request) error {
	return s.accountBilling(w, r, func(ctx context.Context, key string) (string, error) { return s.Billing.Checkout(ctx, key) })
}

// handleAccountManage answers POST /account/manage: off to the Stripe
// Billing Portal.
func (s *Accounts) handleAccountManage(w http.ResponseWriter, r *http.Request) error {
	return s.accountBilling(w, r, func(ctx context.Context, key string) (string, error) { return s.Billing.Portal(ctx, key) })
}

func (s *Accounts) accountBilling(w http.ResponseWriter, r *http.Request, page func(context.Context, string) (string, error)) error {
	_, key, err := s.accountForm(r)
	if err == nil && s.Billing == nil {
		err = s.BillingUnavailable()
	}
	if err != nil {
		return s.accountPage(w, r, key, &accountView{}, err)
	}
	u, err := page(r.Context(), key)
	if err != nil {
		return s.accountPage(w, r, key, &accountView{}, web.BillingError(err))
	}
	http.Redirect(w, r, u, http.StatusSeeOther)
	return nil
}
