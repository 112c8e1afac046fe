package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"path/filepath"
	"time"

	"github.com/kwdata/kwdata/serve"
	"github.com/kwdata/kwdata/serve/access"
	"github.com/kwdata/kwdata/serve/billing"
)

// accessDir is where the key registry and the counters live.
func accessDir(data string) string { return filepath.Join(data, "access") }

// accountStore is what the server needs of an access store to admit
// requests, register keys, show accounts and apply billing; the embedded
// *access.Store and the shared *access.RedisStore both have it.
type accountStore interface {
	counterStore
	StartSignup(ctx context.Context, email string, client netip.Addr) (access.Signup, error)
	VerifySignup(ctx context.Context, email, code string) (string, access.KeyRecord, error)
	RotateKey(ctx context.Context, key string) (string, access.KeyRecord, error)
	Account(ctx context.Context, key string) (access.KeyRecord, access.Billing, error)
	MonthUsage(id string) (registered, paid int64)
	RegisteredPerMonth() int64
}

// accessAdapter lets the server admit requests and register keys through the
// access store, translating its errors into the server's kinds.
type accessAdapter struct{ s accountStore }

func (a accessAdapter) Admit(ctx context.Context, r *http.Request, client netip.Addr, n int) (serve.Ticket, error) {
	return admit(a.s, ctx, r, client, n)
}

func (a accessAdapter) StartSignup(ctx context.Context, email string, client netip.Addr) (serve.Signup, error) {
	su, err := a.s.StartSignup(ctx, email, client)
	if err != nil {
		return serve.Signup{}, signupError(err)
	}
	return serve.Signup{Email: su.Email, To: su.To, Code: su.Code, Replaces: su.Replaces, Expires: su.Expires}, nil
}

func (a accessAdapter) VerifySignup(ctx context.Context, email, code string) (string, error) {
	key, _, err := a.s.VerifySignup(ctx, email, code)
	if err != nil {
		return "", signupError(err)
	}
	return key, nil
}

func (a accessAdapter) RotateKey(ctx context.Context, key string) (string, error) {
	fresh, _, err := a.s.RotateKey(ctx, key)
	if err != nil {
		return "", signupError(err)
	}
	return fresh, nil
}

func (a accessAdapter) Account(ctx context.Context, key string) (serve.AccountInfo, error) {
	rec, b, err := a.s.Account(ctx, key)
	if err != nil {
		return serve.AccountInfo{}, signupError(err)
	}
	now := time.Now().UTC()
	reg, paid := a.s.MonthUsage(rec.ID)
	info := serve.AccountInfo{KeyID: rec.ID, Email: rec.Email, Tier: string(rec.ActiveTier(now)), Quota: a.s.RegisteredPerMonth(),
		SubStatus: b.Status, HasCustomer: b.Customer != "", CancelAtPeriodEnd: b.CancelAtPeriodEnd, PaymentFailed: b.PaymentFailed}
	if info.Tier == string(access.Paid) {
		info.Used, info.Left, info.Renews = reg+paid, -1, rec.PaidUntil
	} else {
		info.Used, info.Left = reg, max(info.Quota-reg, 0)
		info.Renews = time.Date(now.Year(), now.Month()+1, 1, 0, 0, 0, 0, time.UTC)
	}
	return info, nil
}

// signupError translates the access store's sign-up and key errors into
// the server's kinds.
func signupError(err error) error {
	var qe *access.QuotaError
	switch {
	case errors.Is(err, access.ErrInvalidEmail):
		return fmt.Errorf("%w: %w", serve.ErrInvalidEmail, err)
	case errors.Is(err, access.ErrCodeInvalid):
		return fmt.Errorf("%w: %w", serve.ErrCodeInvalid, err)
	case errors.Is(err, access.ErrInvalidKey):
		return fmt.Errorf("%w: %w", serve.ErrInvalidKey, err)
	case errors.As(err, &qe):
		return &serve.TooManyRegistrationsError{RetryAfter: qe.RetryAfter, Limit: qe.Quota}
	}
	return unavailableError(err)
}

// unavailableError makes an access store that does not answer (Redis) the
// server's 503 with Retry-After, as for lookups.
func unavailableError(err error) error {
	if errors.Is(err, access.ErrUnavailable) {
		return fmt.Errorf("%w: %w", serve.ErrAccessUnavailable, err)
	}
	return err
}

// billingAccounts gives billing the access store, with its errors kept
// (billing tells them apart) and an unreachable store made a 503.
type billingAccounts struct{ billing.Accounts }

func (b billingAccounts) Account(ctx context.Context, key string) (access.KeyRecord, access.Billing, error) {
	rec, bl, err := b.Accounts.Account(ctx, key)
	return rec, bl, unavailableError(err)
}

func (b billingAccounts) ApplyBilling(ctx context.Context, eventID string, c access.BillingChange) (bool, error) {
	applied, err := b.Accounts.ApplyBilling(ctx, eventID, c)
	return applied, unavailableError(err)
}

// Ready reports whether the access store can keep its counts (GET /readyz).
func (a accessAdapter) Ready() error { return a.s.Ready() }
