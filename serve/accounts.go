package serve

import (
	"context"
	"log/slog"
)

// handleAccounts registers the routes of sign-up, keys and billing, in
// one place so that they read together.
func (s *Server) handleAccounts() {
	s.handle("POST /v1/register", s.handleRegister)
	s.handle("POST /v1/register/verify", s.handleRegisterVerify)
	s.handle("POST /v1/keys/rotate", s.handleRotate)
}

// LogMailer is the Mailer of a server without SMTP: it writes each message
// to the log, so that a person running the demo can still read the code.
type LogMailer struct{ Logger *slog.Logger }

// SendMail logs m in full.
func (l LogMailer) SendMail(ctx context.Context, m Mail) error {
	l.Logger.Info("mail not sent (no --smtp-url); here it is", "to", m.To, "subject", m.Subject, "text", m.Text)
	return nil
}
