package api

import (
	"net/http"

	"github.com/kwdata/kwdata/serve/web"
)

// maxWebhookBody bounds a webhook event; Stripe's are a few KiB.
const maxWebhookBody = 256 << 10

// handleCheckout answers POST /v1/billing/checkout: 201 with the payment
// page that subscribes the key's account to the paid tier.
func (s *API) handleCheckout(w http.ResponseWriter, r *http.Request) error {
	if s.Billing == nil {
		return s.BillingUnavailable()
	}
	key, err := web.BillingKey(r)
	if err != nil {
		return err
	}
	u, err := s.Billing.Checkout(r.Context(), key)
	if err != nil {
		return web.BillingError(err)
	}
	return web.WriteJSON(w, http.StatusCreated, web.URLResponse{URL: u})
}

// handlePortal answers POST /v1/billing/portal: the page to manage the
// subscription.
func (s *API) handlePortal(w http.ResponseWriter, r *http.Request) error {
	if s.Billing == nil {
		return s.BillingUnavailable()
	}
	key, err := web.BillingKey(r)
	if err != nil {
		return err
	}
	u, err := s.Billing.Portal(r.Context(), key)
	if err != nil {
		return web.BillingError(err)
	}
	return web.WriteJSON(w, http.StatusOK, web.URLResponse{URL: u})
}

// handleWebhook answers POST /v1/billing/webhook: Stripe's events, applied
// before the 200, so that Stripe retries whatever did not get one.
func (s *API) handleWebhook(w http.ResponseWriter, r *http.Request) error {
	if s.Billing == nil {
		return s.BillingUnavailable()
	}
	body, err := web.ReadBody(r, maxWebhookBody)
	if err != nil {
		return err
	}
	if err := s.Billing.Webhook(r.Context(), body, r.Header.Get("Stripe-Signature")); err != nil {
		return web.BillingError(err)
	}
	return web.WriteJSON(w, http.StatusOK, struct {
		Received bool `json:"received"`
	}{true})
}
