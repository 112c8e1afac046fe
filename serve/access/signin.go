package access

import (
	"context"
	"net/netip"
	"time"
)

// Sign-in by email: the one-time code that registration mails, for people
// who sign in on a page or approve an agent. A new mailbox gets a
// registered account; a known one its own account. Signing in never
// changes an account's API key: only VerifySignup (the lost-key code) and
// rotation do.

// Signin is a sign-in code to mail, from StartSignin.
type Signin struct {
	// Email is the address asked for, as normalized.
	Email string
	// To is the address to mail the code to: the one stored on the
	// mailbox's account when it has one (so only that mailbox's owner
	// reads it), else Email.
	To string
	// Code is the one-time code, in clear text only here.
	Code string
	// Known is true when the mailbox already has an account: the mail
	// says "sign in", not "welcome". The HTTP answer must not say it, so
	// that it tells no one who is registered.
	Known bool
	// Expires is when the code stops working.
	Expires time.Time
}

// StartSignin makes a one-time sign-in code for email's mailbox, replacing
// any earlier code of the mailbox, and returns it to be mailed. A mailbox
// that has an account takes one sign-in from the client address's
// SigninsPerAddressPerDay; a new mailbox is a registration and takes from
// the registration allowances, as StartSignup does. Refusals, like
// StartSignup's, are a *QuotaError wrapping ErrTooManyRegistrations (also
// past CodesPerMailboxPerDay) and ErrInvalidEmail.
func (s *Store) StartSignin(ctx context.Context, email string, client netip.Addr) (Signin, error) {
	if s.closed.Load() {
		return Signin{}, ErrClosed
	}
	return startSignin(ctx, s, email, client)
}

// VerifySignin trades a code from StartSignin for the account of email's
// mailbox: the account the mailbox has, or a new registered one whose key
// is made and never shown (KeyRecord.NoKeyShown; RotateAccountKey creates
// one to show). The account's key never changes here. A wrong code counts
// against CodeAttempts, and a sign-up code is a wrong code here; the code
// works once.
func (s *Store) VerifySignin(ctx context.Context, email, code string) (KeyRecord, error) {
	if s.closed.Load() {
		return KeyRecord{}, ErrClosed
	}
	return verifySignin(ctx, s, email, code)
}

// StartSignin makes a sign-in code; see Store.StartSignin. Any server
// verifies it.
func (s *RedisStore) StartSignin(ctx context.Context, email string, client netip.Addr) (Signin, error) {
	if s.closed.Load() {
		return Signin{}, ErrClosed
	}
	return startSignin(ctx, s, email, client)
}

// VerifySignin trades a sign-in code for its account; see
// Store.VerifySignin.
func (s *RedisStore) VerifySignin(ctx context.Context, email, code string) (KeyRecord, error) {
	if s.closed.Load() {
		return KeyRecord{}, ErrClosed
	}
	return verifySignin(ctx, s, email, code)
}

func startSignin(ctx context.Context, b accountBackend, email string, client netip.Addr) (Signin, error) {
	email, err := NormalizeEmail(email)
	if err != nil {
		return Signin{}, err
	}
	mb := FoldEmail(email)
	var known bool
	if err := b.view(ctx, func(t *txn) error {
		_, known, err = t.activeOf(mb)
		return err
	}); err != nil {
		return Signin{}, err
	}
	// A mailbox that gains or loses its account in between takes from
	// the other allowance once: harmless either way.
	reserve := b.reserveRegistration
	if known {
		reserve = b.reserveSignin
	}
	si := Signin{Email: email}
	si.Code, si.To, si.Known, si.Expires, err = sendCode(ctx, b, reserve, client, email, true)
	if err != nil {
		return Signin{}, err
	}
	return si, nil
}

func verifySignin(ctx context.Context, b accountBackend, email, code string) (KeyRecord, error) {
	email, err := NormalizeEmail(email)
	if err != nil {
		return KeyRecord{}, err
	}
	mb := FoldEmail(email)
	// The key of a new account exists so that the account has the same
	// shape as every other; nobody ever sees it.
	h := hashKey(newKey())
	var rec KeyRecord
	wrong := false
	err = b.update(ctx, func(t *txn) error {
		rec = KeyRecord{}
		var p pendingCode
		var err error
		if p, wrong, err = t.useCode(mb, code, true); err != nil || wrong {
			return err
		}
		id, known, err := t.activeOf(mb)
		if err != nil {
			return err
		}
		if known {
			_, sk, err := t.find(id)
			rec = sk.record()
			return err
		}
		sk, err := t.newAccount(h, Registered, p.Email, time.Time{}, true)
		if err != nil {
			return err
		}
		sk.NoKeyShown = true
		rec = sk.record()
		return t.put(h, sk)
	})
	if err == nil && wrong {
		err = ErrCodeInvalid
	}
	if err != nil {
		return KeyRecord{}, err
	}
	return rec, nil
}
