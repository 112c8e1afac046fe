package access

import (
	"context"
	"net/netip"
	"time"
)

// Signin is a sign-in code to mail, from StartSignin.
type Signin struct {
	// Email is the address asked for, as normalized.
	Email string
	// To is the address to mail the code to: the one stored on the
	// mailbox's account when it has one, else Email.
	To string
	// Code is the one-time code, in clear text only here.
	Code string
	// Known is true when the mailbox already has an account: the mail
	// says "sign in", not "welcome". The HTTP answer does not say it.
	Known bool
	// Expires is when the code stops working.
	Expires time.Time
}

// StartSignin makes a one-time sign-in code for email's mailbox.
func (s *Store) StartSignin(ctx context.Context, email string, client netip.Addr) (Signin, error) {
	su, err := s.StartSignup(ctx, email, client)
	return Signin{Email: su.Email, To: su.To, Code: su.Code, Known: su.Replaces, Expires: su.Expires}, err
}

// VerifySignin trades a sign-in code for the mailbox's account.
func (s *Store) VerifySignin(ctx context.Context, email, code string) (KeyRecord, error) {
	_, rec, err := s.VerifySignup(ctx, email, code)
	return rec, err
}

// StartSignin makes a one-time sign-in code for email's mailbox.
func (s *RedisStore) StartSignin(ctx context.Context, email string, client netip.Addr) (Signin, error) {
	su, err := s.StartSignup(ctx, email, client)
	return Signin{Email: su.Email, To: su.To, Code: su.Code, Known: su.Replaces, Expires: su.Expires}, err
}

// VerifySignin trades a sign-in code for the mailbox's account.
func (s *RedisStore) VerifySignin(ctx context.Context, email, code string) (KeyRecord, error) {
	_, rec, err := s.VerifySignup(ctx, email, code)
	return rec, err
}
