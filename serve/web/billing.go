package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
)

// Billing runs the paid tier's subscription (POST /v1/billing/*). The
// billing package implements it with Stripe.
type Billing interface {
	// Checkout returns the payment page that subscribes the account of key
	// to the paid tier. An unknown or revoked key wraps ErrInvalidKey.
	Checkout(ctx context.Context, key string) (url string, err error)
	// Portal returns the page where the account of key manages its
	// subscription; ErrNoSubscription if it never had one.
	Portal(ctx context.Context, key string) (url string, err error)
	// CheckoutAccount is Checkout for a signed-in account, by its id (the
	// account page); an unknown or revoked account wraps ErrInvalidKey.
	CheckoutAccount(ctx context.Context, account string) (url string, err error)
	// PortalAccount is Portal for a signed-in account, by its id.
	PortalAccount(ctx context.Context, account string) (url string, err error)
	// Webhook checks and applies one event the payment provider posted,
	// durably, before it returns; a bad signature wraps ErrBadSignature.
	Webhook(ctx context.Context, payload []byte, signature string) error
}

// ErrNoSubscription is returned by Billing.Portal for an account that has
// never subscribed (409 no_subscription).
var ErrNoSubscription = errors.New("the account has no subscription")

// ErrBadSignature is returned by Billing.Webhook for a payload whose
// signature is missing, wrong or stale (400 invalid_signature).
var ErrBadSignature = errors.New("webhook signature is not valid")

// Problem codes of billing.
const (
	CodeBillingUnavailable = "billing_unavailable"
	CodeNoSubscription     = "no_subscription"
	CodeInvalidSignature   = "invalid_signature"
)

// URLResponse is the answer of the checkout and portal endpoints.
type URLResponse struct {
	URL string `json:"url"`
}

// BillingUnavailable is the refusal of a billing route on a server that
// takes no payments.
func (s *Core) BillingUnavailable() error {
	return HTTPError{Status: http.StatusNotImplemented, Code: CodeBillingUnavailable,
		Msg: "This server takes no payments; ask its operator for the paid tier."}
}

// BillingKey returns the key of a billing request, or its 401.
func BillingKey(r *http.Request) (string, error) {
	key := RequestKey(r)
	if key == "" {
		return "", HTTPError{Status: http.StatusUnauthorized, Code: CodeInvalidKey,
			Msg: "Send your API key as Authorization: Bearer <key>; get one at POST /v1/register."}
	}
	return key, nil
}

// BillingError maps the failures of Billing to their answers.
func BillingError(err error) error {
	switch {
	case errors.Is(err, ErrInvalidKey):
		return HTTPError{Status: http.StatusUnauthorized, Code: CodeInvalidKey,
			Msg: "The API key is not valid; check it, or get one at POST /v1/register.", Err: err}
	case errors.Is(err, ErrNoSubscription):
		return HTTPError{Status: http.StatusConflict, Code: CodeNoSubscription,
			Msg: "This account has no subscription to manage; subscribe with POST /v1/billing/checkout.", Err: err}
	case errors.Is(err, ErrBadSignature):
		return HTTPError{Status: http.StatusBadRequest, Code: CodeInvalidSignature,
			Msg: "The Stripe-Signature does not match this server's webhook secret, or is too old; nothing was changed.", Err: err}
	}
	return fmt.Errorf("cannot complete the billing request: %w", err)
}
