package access

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/kwdata/kwdata/serve"
)

// TestServeAdapterAccount checks the account page's figures and the
// translation of the store's refusals into the server's kinds, on every
// backend, by the store's clock.
func TestServeAdapterAccount(t *testing.T) {
	forBackends(t, func(t *testing.T, b backend) {
		clk, open := b.start(t, func(o *Options) { o.RegisteredPerMonth = 3 })
		st := open()
		a := st.(serveStore)
		ad := ServeAdapter{a}
		ctx := context.Background()

		key, rec := mustCreate(t, st, Registered, time.Time{})
		client := mustAddr(t, "192.0.2.1")
		if n := use(t, st, mustIdentify(t, st, key, client), 2); n != 2 {
			t.Fatalf("admitted %d of 2 lookups", n)
		}
		now := clk.Now().UTC()
		nextMonth := time.Date(now.Year(), now.Month()+1, 1, 0, 0, 0, 0, time.UTC)
		info, err := ad.Account(ctx, key)
		if err != nil {
			t.Fatalf("Account: %v", err)
		}
		want := serve.AccountInfo{KeyID: rec.ID, Tier: "registered", Used: 2, Left: 1, Quota: 3, Renews: nextMonth}
		if info != want {
			t.Errorf("registered account = %+v, want %+v", info, want)
		}

		paidUntil := now.Add(48 * time.Hour).Truncate(time.Second)
		pkey, prec := mustCreate(t, st, Paid, paidUntil)
		if n := use(t, st, mustIdentify(t, st, pkey, client), 5); n != 5 {
			t.Fatalf("admitted %d of 5 paid lookups", n)
		}
		info, err = ad.Account(ctx, pkey)
		if err != nil {
			t.Fatalf("Account: %v", err)
		}
		if info.KeyID != prec.ID || info.Tier != "paid" || info.Left != -1 || !info.Renews.Equal(paidUntil) {
			t.Errorf("paid account = %+v, want tier paid, Left -1, Renews %s", info, paidUntil)
		}

		// A lapsed paid period counts as registered again, renewing with
		// the month: the rule reads the store's clock, not the machine's.
		clk.Set(paidUntil.Add(time.Hour))
		info, err = ad.Account(ctx, pkey)
		if err != nil {
			t.Fatalf("Account: %v", err)
		}
		at := paidUntil.Add(time.Hour)
		if renews := time.Date(at.Year(), at.Month()+1, 1, 0, 0, 0, 0, time.UTC); info.Tier != "registered" || !info.Renews.Equal(renews) {
			t.Errorf("lapsed paid account = %+v, want tier registered renewing %s", info, renews)
		}
		clk.Set(now)

		_, err = ad.Account(ctx, "kw_unknown")
		if !errors.Is(err, serve.ErrInvalidKey) || !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Account of an unknown key: %v, want serve.ErrInvalidKey wrapping the store's", err)
		}
		if _, err := ad.RotateKey(ctx, "kw_unknown"); !errors.Is(err, serve.ErrInvalidKey) {
			t.Errorf("RotateKey of an unknown key: %v, want serve.ErrInvalidKey", err)
		}
		if _, err := ad.StartSignup(ctx, "not an address", client); !errors.Is(err, serve.ErrInvalidEmail) {
			t.Errorf("StartSignup of a bad address: %v, want serve.ErrInvalidEmail", err)
		}
		if _, err := ad.VerifySignup(ctx, "nobody@example.com", "000000"); !errors.Is(err, serve.ErrCodeInvalid) {
			t.Errorf("VerifySignup of a code never sent: %v, want serve.ErrCodeInvalid", err)
		}

		r := httptest.NewRequest("GET", "/v1/keyword?q=x", nil)
		r.Header.Set("Authorization", "Bearer "+key)
		_, err = ad.Admit(ctx, r, client, 2)
		var qe *serve.QuotaError
		if !errors.As(err, &qe) {
			t.Fatalf("Admit past the allowance: %v, want *serve.QuotaError", err)
		}
		if qe.Policy != "monthly" || qe.Quota != 3 || qe.Remaining != 1 || qe.Requested != 2 || qe.RetryAfter <= 0 || qe.Header.Get("RateLimit-Policy") == "" {
			t.Errorf("QuotaError = %+v, want monthly 3, 1 left, 2 asked, a renewal and RateLimit-Policy", qe)
		}
		r.Header.Set("Authorization", "Bearer kw_unknown")
		if _, err := ad.Admit(ctx, r, client, 1); !errors.Is(err, serve.ErrInvalidKey) {
			t.Errorf("Admit with an unknown key: %v, want serve.ErrInvalidKey", err)
		}
	})
}

// TestUnavailableError checks that a store that does not answer is the
// server's 503 for sign-up and billing alike, its cause kept.
func TestUnavailableError(t *testing.T) {
	err := unavailableError(ErrUnavailable)
	if !errors.Is(err, serve.ErrAccessUnavailable) || !errors.Is(err, ErrUnavailable) {
		t.Errorf("unavailableError(ErrUnavailable) = %v, want both kinds", err)
	}
	if err := signupError(ErrUnavailable); !errors.Is(err, serve.ErrAccessUnavailable) {
		t.Errorf("signupError(ErrUnavailable) = %v, want serve.ErrAccessUnavailable", err)
	}
	other := errors.New("disk on fire")
	if err := unavailableError(other); err != other {
		t.Errorf("unavailableError(other) = %v, want it unchanged", err)
	}
}
