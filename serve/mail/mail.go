// Package mail sends kwdata's mail (sign-up codes) through an SMTP server,
// with github.com/wneessen/go-mail writing the MIME and speaking SMTP.
package mail

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"

	gomail "github.com/wneessen/go-mail"

	"github.com/kwdata/kwdata/serve"
)

// SMTP sends mail through one SMTP server. It implements serve.Mailer.
type SMTP struct {
	from   string
	host   string
	opts   []gomail.Option
	target string // the server, for errors; never with the password
}

// sendTimeout bounds one delivery: the request that asked for the code
// waits for it.
const sendTimeout = 20 * time.Second

// NewSMTP returns a sender for rawURL, smtp://[user[:password]@]host[:port]
// (STARTTLS whenever the server offers it, and required with a login;
// port 587 by default) or
// smtps://… (TLS from the start; port 465 by default). password, when not
// empty, is used instead of one in the URL, so that it can come from the
// environment rather than the command line. from is the sender,
// "kwdata <no-reply@example.com>" or a plain address.
func NewSMTP(rawURL, password, from string) (*SMTP, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("cannot parse SMTP URL: %w", err)
	}
	if u.Host == "" || u.Hostname() == "" {
		return nil, errors.New("SMTP URL names no host; write smtp://user:pass@host:587")
	}
	if from == "" {
		return nil, errors.New("no sender address; pass --mail-from \"kwdata <no-reply@example.com>\"")
	}
	m := gomail.NewMsg()
	if err := m.From(from); err != nil {
		return nil, fmt.Errorf("cannot use %q as the sender: %w", from, err)
	}
	s := &SMTP{from: from, host: u.Hostname(), target: u.Scheme + "://" + u.Host}
	port := 587
	switch u.Scheme {
	case "smtp":
		s.opts = append(s.opts, gomail.WithTLSPolicy(gomail.TLSOpportunistic))
	case "smtps":
		port = 465
		s.opts = append(s.opts, gomail.WithSSL())
	default:
		return nil, fmt.Errorf("SMTP URL scheme is %q; use smtp:// (STARTTLS when offered) or smtps://", u.Scheme)
	}
	if p := u.Port(); p != "" {
		if port, err = strconv.Atoi(p); err != nil || port < 1 || port > 65535 {
			return nil, fmt.Errorf("SMTP URL port %q is not a port number", p)
		}
	}
	s.opts = append(s.opts, gomail.WithPort(port), gomail.WithTimeout(sendTimeout))
	if u.User != nil && u.User.Username() != "" {
		pass, _ := u.User.Password()
		if password != "" {
			pass = password
		}
		// A password never crosses the network in clear: with a login,
		// STARTTLS is required, not merely used when offered.
		if u.Scheme == "smtp" {
			s.opts = append(s.opts, gomail.WithTLSPolicy(gomail.TLSMandatory))
		}
		s.opts = append(s.opts, gomail.WithSMTPAuth(gomail.SMTPAuthAutoDiscover),
			gomail.WithUsername(u.User.Username()), gomail.WithPassword(pass))
	}
	return s, nil
}

// String names the server without credentials, for logs.
func (s *SMTP) String() string { return s.target }

// SendMail delivers m as a plain-text message.
func (s *SMTP) SendMail(ctx context.Context, m serve.Mail) error {
	msg := gomail.NewMsg()
	if err := msg.From(s.from); err != nil {
		return fmt.Errorf("cannot set the sender: %w", err)
	}
	if err := msg.To(m.To); err != nil {
		return fmt.Errorf("cannot address mail to %s: %w", m.To, err)
	}
	msg.Subject(m.Subject)
	msg.SetBodyString(gomail.TypeTextPlain, m.Text)
	c, err := gomail.NewClient(s.host, s.opts...)
	if err != nil {
		return fmt.Errorf("cannot set up mail to %s: %w", s.target, err)
	}
	ctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	if err := c.DialAndSendWithContext(ctx, msg); err != nil {
		return fmt.Errorf("cannot send mail through %s: %w", s.target, err)
	}
	return nil
}
