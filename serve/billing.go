package serve

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

// maxWebhookBody bounds a webhook event; Stripe's are a few KiB.
const maxWebhookBody = 256 << 10

// urlResponse is the answer of the checkout and portal endpoints.
type urlResponse struct {
	URL string `json:"url"`
}

func (s *Server) billingUnavailable() error {
	return HTTPError{Status: http.StatusNotImplemented, Code: CodeBillingUnavailable,
		Msg: "This server takes no payments; ask its operator for the paid tier."}
}

// billingKey returns the key of a billing request, or its 401.
func billingKey(r *http.Request) (string, error) {
	key := requestKey(r)
	if key == "" {
		return "", HTTPError{Status: http.StatusUnauthorized, Code: CodeInvalidKey,
			Msg: "Send your API key as Authorization: Bearer <key>; get one at POST /v1/register."}
	}
	return key, nil
}

// billingError maps the failures of Billing to their answers.
func billingError(err error) error {
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

// handleCheckout answers POST /v1/billing/checkout: 201 with the payment
// page that subscribes the key's account to the paid tier.
func (s *Server) handleCheckout(w http.ResponseWriter, r *http.Request) error {
	if s.billing == nil {
		return s.billingUnavailable()
	}
	key, err := billingKey(r)
	if err != nil {
		return err
	}
	u, err := s.billing.Checkout(r.Context(), key)
	if err != nil {
		return billingError(err)
	}
	return writeJSON(w, http.StatusCreated, urlResponse{URL: u})
}

// handlePortal answers POST /v1/billing/portal: the page to manage the
// subscription.
func (s *Server) handlePortal(w http.ResponseWriter, r *http.Request) error {
	if s.billing == nil {
		return s.billingUnavailable()
	}
	key, err := billingKey(r)
	if err != nil {
		return err
	}
	u, err := s.billing.Portal(r.Context(), key)
	if err != nil {
		return billingError(err)
	}
	return writeJSON(w, http.StatusOK, urlResponse{URL: u})
}

// handleWebhook answers POST /v1/billing/webhook: Stripe's events, applied
// before the 200, so that Stripe retries whatever did not get one.
func (s *Server) handleWebhook(w http.ResponseWriter, r *http.Request) error {
	if s.billing == nil {
		return s.billingUnavailable()
	}
	body, err := readBody(r, maxWebhookBody)
	if err != nil {
		return err
	}
	if err := s.billing.Webhook(r.Context(), body, r.Header.Get("Stripe-Signature")); err != nil {
		return billingError(err)
	}
	return writeJSON(w, http.StatusOK, struct {
		Received bool `json:"received"`
	}{true})
}
