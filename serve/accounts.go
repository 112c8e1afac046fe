package serve

import (
	"context"
	"errors"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// handleAccounts registers the routes of sign-up, keys and billing, in
// one place so that they read together.
func (s *Server) handleAccounts() {
	s.handle("POST /v1/register", s.handleRegister)
	s.handle("POST /v1/register/verify", s.handleRegisterVerify)
	s.handle("POST /v1/keys/rotate", s.handleRotate)
	s.handle("GET /register", s.handleRegisterPage)
	s.handle("POST /register", s.handleRegisterForm)
	s.handle("POST /register/verify", s.handleRegisterVerifyForm)
	s.handle("POST /v1/billing/checkout", s.handleCheckout)
	s.handle("POST /v1/billing/portal", s.handlePortal)
	s.handle("POST /v1/billing/webhook", s.handleWebhook)
}

// LogMailer is the Mailer of a server without SMTP: it writes each message
// to the log, so that a person running the demo can still read the code.
type LogMailer struct{ Logger *slog.Logger }

// SendMail logs m in full.
func (l LogMailer) SendMail(ctx context.Context, m Mail) error {
	l.Logger.Info("mail not sent (no --smtp-url); here it is", "to", m.To, "subject", m.Subject, "text", m.Text)
	return nil
}

// accountView is what the sign-up and account pages show.
type accountView struct {
	Email string // the address a code went to (sign-up, second step)
	Key   string // a key shown once
	Error string // why the last step was refused
}

// pageForms guards the pages' forms: a browser that says a POST comes
// from another site (Sec-Fetch-Site, else Origin) is refused, so no page
// of another site can submit them through its visitors' browsers.
var pageForms = http.NewCrossOriginProtection()

// readForm checks that r is a same-site form POST and parses its body.
func readForm(r *http.Request) (url.Values, error) {
	if err := pageForms.Check(r); err != nil {
		return nil, HTTPError{Status: http.StatusForbidden, Code: CodeForbiddenOrigin,
			Msg: "This form may only be sent from this site's own pages.", Err: err}
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/x-www-form-urlencoded" {
		return nil, HTTPError{Status: http.StatusUnsupportedMediaType, Code: CodeInvalidBody,
			Msg: "Send the form as application/x-www-form-urlencoded, as the page does."}
	}
	body, err := readBody(r, maxRegisterBody)
	if err != nil {
		return nil, err
	}
	v, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, HTTPError{Status: http.StatusBadRequest, Code: CodeInvalidBody, Msg: "The form is not valid; send it from the page again.", Err: err}
	}
	return v, nil
}

// renderAccountPage renders a sign-up or account page; a refused step
// (an HTTPError below 500) is shown on the page with its status.
func (s *Server) renderAccountPage(w http.ResponseWriter, r *http.Request, name, title string, v *accountView, err error) error {
	status := http.StatusOK
	if err != nil {
		var he HTTPError
		if !errors.As(err, &he) || he.Status >= 500 && he.Code != CodeMailUnavailable {
			return err
		}
		status, v.Error = he.Status, he.Msg
		for k, vals := range he.Header {
			w.Header()[k] = vals
		}
	}
	d := s.newPage(r, title, formData{Country: strings.ToUpper(DefaultCountry)})
	d.Acct = v
	return s.renderPage(w, r, status, name, d)
}

// handleRegisterPage answers GET /register: the sign-up form.
func (s *Server) handleRegisterPage(w http.ResponseWriter, r *http.Request) error {
	if s.registrar == nil {
		return s.noRegistrar()
	}
	return s.renderAccountPage(w, r, "register", "Get a free API key · kwdata", &accountView{}, nil)
}

// handleRegisterForm answers POST /register: the code is mailed, and the
// page asks for it.
func (s *Server) handleRegisterForm(w http.ResponseWriter, r *http.Request) error {
	if s.registrar == nil {
		return s.noRegistrar()
	}
	const title = "Get a free API key · kwdata"
	form, err := readForm(r)
	if err != nil {
		return s.renderAccountPage(w, r, "register", title, &accountView{}, err)
	}
	email, err := checkEmail(form.Get("email"))
	if err == nil {
		email, err = s.sendCode(r, email)
	}
	if err != nil {
		return s.renderAccountPage(w, r, "register", title, &accountView{}, err)
	}
	return s.renderAccountPage(w, r, "register", title, &accountView{Email: email}, nil)
}

// handleRegisterVerifyForm answers POST /register/verify: the key, once.
func (s *Server) handleRegisterVerifyForm(w http.ResponseWriter, r *http.Request) error {
	if s.registrar == nil {
		return s.noRegistrar()
	}
	const title = "Your API key · kwdata"
	form, err := readForm(r)
	if err != nil {
		return s.renderAccountPage(w, r, "register", title, &accountView{}, err)
	}
	email, err := checkEmail(form.Get("email"))
	if err != nil {
		return s.renderAccountPage(w, r, "register", title, &accountView{}, err)
	}
	v := &accountView{Email: email}
	code := strings.TrimSpace(form.Get("code"))
	if code == "" || len(code) > 16 {
		return s.renderAccountPage(w, r, "register", title, v, registerError(ErrCodeInvalid))
	}
	key, err := s.registrar.VerifySignup(r.Context(), email, code)
	if err != nil {
		return s.renderAccountPage(w, r, "register", title, v, registerError(err))
	}
	v.Key = key
	return s.renderAccountPage(w, r, "register", title, v, nil)
}
