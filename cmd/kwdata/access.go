package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"path/filepath"

	"github.com/kwdata/kwdata/serve"
	"github.com/kwdata/kwdata/serve/access"
)

// accessDir is where the key registry and the counters live.
func accessDir(data string) string { return filepath.Join(data, "access") }

// accessAdapter lets the server admit requests and register keys through the
// access store, translating its errors into the server's kinds.
type accessAdapter struct{ s *access.Store }

func (a accessAdapter) Admit(ctx context.Context, r *http.Request, client netip.Addr, n int) (serve.Ticket, error) {
	res, err := a.s.Admit(ctx, r, client, n)
	if err != nil {
		var qe *access.QuotaError
		switch {
		case errors.Is(err, access.ErrInvalidKey):
			return nil, fmt.Errorf("%w: %w", serve.ErrInvalidKey, err)
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

func (a accessAdapter) Register(ctx context.Context, email string, client netip.Addr) (string, error) {
	key, _, err := a.s.Register(ctx, email, client)
	if err != nil {
		var qe *access.QuotaError
		switch {
		case errors.Is(err, access.ErrInvalidEmail):
			return "", fmt.Errorf("%w: %w", serve.ErrInvalidEmail, err)
		case errors.Is(err, access.ErrEmailTaken):
			return "", fmt.Errorf("%w: %w", serve.ErrEmailTaken, err)
		case errors.As(err, &qe):
			return "", &serve.TooManyRegistrationsError{RetryAfter: qe.RetryAfter, Limit: qe.Quota}
		}
		return "", err
	}
	return key, nil
}

// Ready reports whether the access store can keep its counts (GET /readyz).
func (a accessAdapter) Ready() error { return a.s.Ready() }
