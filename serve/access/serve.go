package access

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"time"

	"github.com/kwdata/kwdata/serve"
	"github.com/kwdata/kwdata/serve/web"
)

// serveStore is what the HTTP server needs of a store; *Store and
// *RedisStore both are one.
type serveStore interface {
	Admit(ctx context.Context, r *http.Request, client netip.Addr, n int) (*Reservation, error)
	Ready() error
	StartSignup(ctx context.Context, email string, client netip.Addr) (Signup, error)
	VerifySignup(ctx context.Context, email, code string) (string, KeyRecord, error)
	RotateKey(ctx context.Context, key string) (string, KeyRecord, error)
	Account(ctx context.Context, key string) (KeyRecord, Billing, error)
	ApplyBilling(ctx context.Context, eventID string, c BillingChange) (bool, error)
	MonthUsage(id string) (registered, paid int64)
	RegisteredPerMonth() int64
	now() time.Time

	AdmitAccount(ctx context.Context, id string, client netip.Addr, n int) (*Reservation, error)
	StartSignin(ctx context.Context, email string, client netip.Addr) (Signin, error)
	VerifySignin(ctx context.Context, email, code string) (KeyRecord, error)
	NewSession(ctx context.Context, accountID string) (string, error)
	Session(ctx context.Context, raw string) (KeyRecord, error)
	EndSession(ctx context.Context, raw string) error
	AccountByID(ctx context.Context, id string) (KeyRecord, Billing, error)
	RotateAccountKey(ctx context.Context, id string) (string, KeyRecord, error)
}

func (s *Store) now() time.Time      { return s.opt.Now() }
func (s *RedisStore) now() time.Time { return s.opt.Now() }

// ForServer returns the store as the HTTP server sees it.
func (s *Store) ForServer() ServeAdapter { return ServeAdapter{s} }

// ForServer returns the store as the HTTP server sees it.
func (s *RedisStore) ForServer() ServeAdapter { return ServeAdapter{s} }

// ServeAdapter lets the HTTP server admit and count lookups (serve.Access),
// report readiness (serve.Readier), and run sign-up, key rotation and the
// account page (serve.Registrar) through a store. It is the one place where
// the store's error kinds become the server's, and where the account
// page's figures are worked out.
type ServeAdapter struct{ s serveStore }

// Admit identifies the caller and reserves n lookups (serve.Access).
// A request of a signed-in account (web.WithAccount: a session or an
// OAuth access token) counts on that account, read live, so a tier bought
// a minute ago applies at once.
func (a ServeAdapter) Admit(ctx context.Context, r *http.Request, client netip.Addr, n int) (serve.Ticket, error) {
	var res *Reservation
	var err error
	if id, ok := web.AccountFrom(ctx); ok {
		res, err = a.s.AdmitAccount(ctx, id, client, n)
	} else {
		res, err = a.s.Admit(ctx, r, client, n)
	}
	if err != nil {
		var qe *QuotaError
		switch {
		case errors.Is(err, ErrInvalidKey):
			return nil, fmt.Errorf("%w: %w", serve.ErrInvalidKey, err)
		case errors.Is(err, ErrUnavailable):
			return nil, fmt.Errorf("%w: %w", serve.ErrAccessUnavailable, err)
		case errors.As(err, &qe):
			// Numbers only: the server words the refusal, the same way in
			// every answer.
			h := http.Header{}
			qe.Limits.SetHeaders(h)
			return nil, &serve.QuotaError{Policy: qe.Policy, Quota: qe.Quota, Remaining: qe.Remaining,
				Requested: qe.Requested, RetryAfter: qe.RetryAfter, Header: h}
		}
		return nil, err
	}
	return res, nil
}

// Ready reports whether the store can keep its counts (GET /readyz).
func (a ServeAdapter) Ready() error { return a.s.Ready() }

// StartSignup makes a sign-up code for email (serve.Registrar).
func (a ServeAdapter) StartSignup(ctx context.Context, email string, client netip.Addr) (serve.Signup, error) {
	su, err := a.s.StartSignup(ctx, email, client)
	if err != nil {
		return serve.Signup{}, signupError(err)
	}
	return serve.Signup{Email: su.Email, To: su.To, Code: su.Code, Replaces: su.Replaces, Expires: su.Expires}, nil
}

// VerifySignup trades a sign-up code for a registered key
// (serve.Registrar).
func (a ServeAdapter) VerifySignup(ctx context.Context, email, code string) (string, error) {
	key, _, err := a.s.VerifySignup(ctx, email, code)
	if err != nil {
		return "", signupError(err)
	}
	return key, nil
}

// RotateKey replaces an active key (serve.Registrar).
func (a ServeAdapter) RotateKey(ctx context.Context, key string) (string, error) {
	fresh, _, err := a.s.RotateKey(ctx, key)
	if err != nil {
		return "", signupError(err)
	}
	return fresh, nil
}

// Account describes the account of key for its page (serve.Registrar): a
// paid key has no allowance left to count (Left -1) and renews when its
// paid period ends; a registered key has the monthly allowance, whole
// again on the first of the next UTC month. The month is the store's, by
// the store's clock.
func (a ServeAdapter) Account(ctx context.Context, key string) (serve.AccountInfo, error) {
	rec, b, err := a.s.Account(ctx, key)
	if err != nil {
		return serve.AccountInfo{}, signupError(err)
	}
	return a.accountInfo(rec, b), nil
}

// AccountByID describes the account id for its page, as Account does for
// a key (web.Sessions).
func (a ServeAdapter) AccountByID(ctx context.Context, id string) (serve.AccountInfo, error) {
	rec, b, err := a.s.AccountByID(ctx, id)
	if err != nil {
		return serve.AccountInfo{}, signupError(err)
	}
	return a.accountInfo(rec, b), nil
}

func (a ServeAdapter) accountInfo(rec KeyRecord, b Billing) serve.AccountInfo {
	now := a.s.now().UTC()
	reg, paid := a.s.MonthUsage(rec.ID)
	info := serve.AccountInfo{KeyID: rec.ID, Email: rec.Email, Tier: string(rec.ActiveTier(now)), Quota: a.s.RegisteredPerMonth(),
		SubStatus: b.Status, HasCustomer: b.Customer != "", CancelAtPeriodEnd: b.CancelAtPeriodEnd, PaymentFailed: b.PaymentFailed,
		NoKeyShown: rec.NoKeyShown}
	if info.Tier == string(Paid) {
		info.Used, info.Left, info.Renews = reg+paid, -1, rec.PaidUntil
	} else {
		info.Used, info.Left = reg, max(info.Quota-reg, 0)
		info.Renews = time.Date(now.Year(), now.Month()+1, 1, 0, 0, 0, 0, time.UTC)
	}
	return info
}

// StartSignin makes a sign-in code for email (web.Sessions).
func (a ServeAdapter) StartSignin(ctx context.Context, email string, client netip.Addr) (serve.Signup, error) {
	si, err := a.s.StartSignin(ctx, email, client)
	if err != nil {
		return serve.Signup{}, signupError(err)
	}
	return serve.Signup{Email: si.Email, To: si.To, Code: si.Code, Expires: si.Expires}, nil
}

// VerifySignin trades a sign-in code for its account (web.Sessions).
func (a ServeAdapter) VerifySignin(ctx context.Context, email, code string) (string, error) {
	rec, err := a.s.VerifySignin(ctx, email, code)
	if err != nil {
		return "", signupError(err)
	}
	return rec.ID, nil
}

// NewSession opens a session of the account (web.Sessions).
func (a ServeAdapter) NewSession(ctx context.Context, account string) (string, error) {
	id, err := a.s.NewSession(ctx, account)
	return id, signupError(err)
}

// Session returns the account of a live session (web.Sessions).
func (a ServeAdapter) Session(ctx context.Context, id string) (string, error) {
	rec, err := a.s.Session(ctx, id)
	if errors.Is(err, ErrNoSession) {
		return "", fmt.Errorf("%w: %w", web.ErrNoSession, err)
	}
	if err != nil {
		return "", unavailableError(err)
	}
	return rec.ID, nil
}

// EndSession ends a session (web.Sessions).
func (a ServeAdapter) EndSession(ctx context.Context, id string) error {
	return unavailableError(a.s.EndSession(ctx, id))
}

// RotateAccountKey gives the account a new key (web.Sessions).
func (a ServeAdapter) RotateAccountKey(ctx context.Context, account string) (string, error) {
	key, _, err := a.s.RotateAccountKey(ctx, account)
	if err != nil {
		return "", signupError(err)
	}
	return key, nil
}

// ForBilling returns the store as billing sees it.
func (a ServeAdapter) ForBilling() BillingAccounts { return BillingAccounts(a) }

// BillingAccounts gives billing the store's accounts with their errors
// kept (billing tells them apart), except that a store that does not
// answer becomes the server's 503 access_unavailable.
type BillingAccounts struct{ s serveStore }

// Account returns the key's record and billing state.
func (b BillingAccounts) Account(ctx context.Context, key string) (KeyRecord, Billing, error) {
	rec, bl, err := b.s.Account(ctx, key)
	return rec, bl, unavailableError(err)
}

// AccountByID returns the record and billing state of the account id.
func (b BillingAccounts) AccountByID(ctx context.Context, id string) (KeyRecord, Billing, error) {
	rec, bl, err := b.s.AccountByID(ctx, id)
	return rec, bl, unavailableError(err)
}

// ApplyBilling applies a payment provider's event once.
func (b BillingAccounts) ApplyBilling(ctx context.Context, eventID string, c BillingChange) (bool, error) {
	applied, err := b.s.ApplyBilling(ctx, eventID, c)
	return applied, unavailableError(err)
}

// signupError translates the store's sign-up and key errors into the
// server's kinds.
func signupError(err error) error {
	var qe *QuotaError
	switch {
	case errors.Is(err, ErrInvalidEmail):
		return fmt.Errorf("%w: %w", serve.ErrInvalidEmail, err)
	case errors.Is(err, ErrCodeInvalid):
		return fmt.Errorf("%w: %w", serve.ErrCodeInvalid, err)
	case errors.Is(err, ErrInvalidKey):
		return fmt.Errorf("%w: %w", serve.ErrInvalidKey, err)
	case errors.As(err, &qe):
		return &serve.TooManyRegistrationsError{RetryAfter: qe.RetryAfter, Limit: qe.Quota}
	}
	return unavailableError(err)
}

// unavailableError makes a store that does not answer (Redis) the
// server's 503 with Retry-After, as for lookups.
func unavailableError(err error) error {
	if errors.Is(err, ErrUnavailable) {
		return fmt.Errorf("%w: %w", serve.ErrAccessUnavailable, err)
	}
	return err
}
