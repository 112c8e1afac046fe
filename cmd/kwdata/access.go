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
)

// accessDir is where the key registry and the counters live.
func accessDir(data string) string { return filepath.Join(data, "access") }

// accessAdapter lets the server admit requests and register keys through the
// access store, translating its errors into the server's kinds.
type accessAdapter struct{ s *access.Store }

func (a accessAdapter) Admit(ctx context.Context, r *http.Request, client netip.Addr, n int) (serve.Ticket, error) {
	return admit(a.s, ctx, r, client, n)
}

func (a accessAdapter) StartSignup(ctx context.Context, email string, client netip.Addr) (serve.Signup, error) {
	su, err := a.s.StartSignup(ctx, email, client)
	if err != nil {
		return serve.Signup{}, signupError(err)
	}
	return serve.Signup{Email: su.Email, Code: su.Code, Replaces: su.Replaces, Expires: su.Expires}, nil
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
	return err
}

// Ready reports whether the access store can keep its counts (GET /readyz).
func (a accessAdapter) Ready() error { return a.s.Ready() }
