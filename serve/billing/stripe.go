// Package billing runs the paid tier's subscription through Stripe with
// the official Go library: Checkout Sessions to subscribe, the Billing
// Portal to manage, and webhook events, checked against their signature,
// turned into changes of the account (access.BillingChange).
package billing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/stripe/stripe-go/v85"
	"github.com/stripe/stripe-go/v85/webhook"

	"github.com/kwdata/kwdata/serve"
	"github.com/kwdata/kwdata/serve/access"
)

// Accounts is what billing needs of the access store.
type Accounts interface {
	Account(ctx context.Context, key string) (access.KeyRecord, access.Billing, error)
	AccountByID(ctx context.Context, id string) (access.KeyRecord, access.Billing, error)
	ApplyBilling(ctx context.Context, eventID string, c access.BillingChange) (bool, error)
}

// Options configures Stripe billing.
type Options struct {
	// SecretKey is the Stripe API key (STRIPE_SECRET_KEY). Required.
	SecretKey string
	// WebhookSecret checks the Stripe-Signature of webhook events
	// (STRIPE_WEBHOOK_SECRET). Required.
	WebhookSecret string
	// Price is the recurring price of the paid tier, "price_…". Required.
	Price string
	// PublicURL is where people reach the server; Checkout returns to
	// <PublicURL>/account. Required, absolute.
	PublicURL string
	// API, if set, is the base URL of Stripe's API (tests point it at
	// stripe-mock). Default: Stripe's.
	API string
	// Logger receives what webhooks did and failed payments. Default:
	// discard.
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Stripe implements serve.Billing.
type Stripe struct {
	opt      Options
	client   *stripe.Client
	accounts Accounts
	log      *slog.Logger
}

// apiTimeout bounds one call to Stripe's API, which a request waits for.
const apiTimeout = 20 * time.Second

// New returns Stripe billing over accounts.
func New(opt Options, accounts Accounts) (*Stripe, error) {
	switch {
	case opt.SecretKey == "":
		return nil, errors.New("no Stripe secret key; set STRIPE_SECRET_KEY")
	case opt.WebhookSecret == "":
		return nil, errors.New("no Stripe webhook secret; set STRIPE_WEBHOOK_SECRET or pass --stripe-webhook-secret")
	case opt.Price == "":
		return nil, errors.New("no Stripe price; pass --stripe-price price_…")
	case opt.PublicURL == "":
		return nil, errors.New("billing needs --public-url, the address people come back to from Stripe")
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	cfg := &stripe.BackendConfig{
		HTTPClient:    &http.Client{Timeout: apiTimeout},
		LeveledLogger: &stripe.LeveledLogger{Level: stripe.LevelError},
	}
	if opt.API != "" {
		cfg.URL = stripe.String(opt.API)
	}
	c := stripe.NewClient(opt.SecretKey, stripe.WithBackends(stripe.NewBackendsWithConfig(cfg)))
	return &Stripe{opt: opt, client: c, accounts: accounts, log: opt.Logger}, nil
}

// account finds the account of a key, in the server's error kinds.
func (s *Stripe) account(ctx context.Context, key string) (access.KeyRecord, access.Billing, error) {
	rec, b, err := s.accounts.Account(ctx, key)
	return rec, b, keyError(err)
}

// accountByID finds an account by its id, in the server's error kinds.
func (s *Stripe) accountByID(ctx context.Context, id string) (access.KeyRecord, access.Billing, error) {
	rec, b, err := s.accounts.AccountByID(ctx, id)
	return rec, b, keyError(err)
}

func keyError(err error) error {
	if errors.Is(err, access.ErrInvalidKey) {
		return fmt.Errorf("%w: %w", serve.ErrInvalidKey, err)
	}
	return err
}

// Checkout starts a subscription to the paid tier for the account of key
// and returns the Stripe Checkout page to send the person to. An account
// that already pays through Stripe gets its Billing Portal page instead.
func (s *Stripe) Checkout(ctx context.Context, key string) (string, error) {
	rec, b, err := s.account(ctx, key)
	if err != nil {
		return "", err
	}
	return s.checkout(ctx, rec, b)
}

// CheckoutAccount is Checkout for a signed-in account, by its id.
func (s *Stripe) CheckoutAccount(ctx context.Context, account string) (string, error) {
	rec, b, err := s.accountByID(ctx, account)
	if err != nil {
		return "", err
	}
	return s.checkout(ctx, rec, b)
}

func (s *Stripe) checkout(ctx context.Context, rec access.KeyRecord, b access.Billing) (string, error) {
	if rec.ActiveTier(s.opt.Now()) == access.Paid && b.Customer != "" {
		// A second subscription would charge the account twice for the
		// same tier; the portal is where a paying account goes.
		return s.portal(ctx, b)
	}
	p := &stripe.CheckoutSessionCreateParams{
		Mode:              stripe.String(string(stripe.CheckoutSessionModeSubscription)),
		LineItems:         []*stripe.CheckoutSessionCreateLineItemParams{{Price: stripe.String(s.opt.Price), Quantity: stripe.Int64(1)}},
		ClientReferenceID: stripe.String(rec.ID),
		SuccessURL:        stripe.String(s.opt.PublicURL + "/account?checkout=done"),
		CancelURL:         stripe.String(s.opt.PublicURL + "/account?checkout=cancelled"),
	}
	switch {
	case b.Customer != "":
		p.Customer = stripe.String(b.Customer) // one Stripe customer per account
	case rec.Email != "":
		p.CustomerEmail = stripe.String(rec.Email)
	}
	cs, err := s.client.V1CheckoutSessions.Create(ctx, p)
	if err != nil {
		return "", fmt.Errorf("cannot create a Stripe Checkout Session: %w", err)
	}
	return cs.URL, nil
}

// Portal returns a Stripe Billing Portal page for the account of key,
// where its owner cancels, changes the card and reads invoices.
func (s *Stripe) Portal(ctx context.Context, key string) (string, error) {
	_, b, err := s.account(ctx, key)
	if err != nil {
		return "", err
	}
	return s.portal(ctx, b)
}

// PortalAccount is Portal for a signed-in account, by its id.
func (s *Stripe) PortalAccount(ctx context.Context, account string) (string, error) {
	_, b, err := s.accountByID(ctx, account)
	if err != nil {
		return "", err
	}
	return s.portal(ctx, b)
}

func (s *Stripe) portal(ctx context.Context, b access.Billing) (string, error) {
	if b.Customer == "" {
		return "", serve.ErrNoSubscription
	}
	ps, err := s.client.V1BillingPortalSessions.Create(ctx, &stripe.BillingPortalSessionCreateParams{
		Customer: stripe.String(b.Customer), ReturnURL: stripe.String(s.opt.PublicURL + "/account"),
	})
	if err != nil {
		return "", fmt.Errorf("cannot create a Stripe Billing Portal session: %w", err)
	}
	return ps.URL, nil
}

// Webhook checks and applies one event Stripe posted. It returns an error
// wrapping serve.ErrBadSignature for a payload whose Stripe-Signature is
// missing, wrong or stale; any other error makes Stripe send it again.
func (s *Stripe) Webhook(ctx context.Context, payload []byte, signature string) error {
	// The account state is read from the objects' fields that this
	// library version decodes; events of other API versions decode the
	// same fields.
	ev, err := webhook.ConstructEventWithOptions(payload, signature, s.opt.WebhookSecret,
		webhook.ConstructEventOptions{IgnoreAPIVersionMismatch: true})
	if err != nil {
		return fmt.Errorf("%w: %w", serve.ErrBadSignature, err)
	}
	log := s.log.With("event", ev.ID, "type", string(ev.Type))
	change, ok, err := s.change(ctx, ev)
	var ref refusal
	if errors.As(err, &ref) {
		// Answered 200: Stripe sending it again would not change it.
		log.Warn("Stripe event refused; the account is unchanged", "reason", ref.why,
			"subscription", ref.subscription, "status", ref.status, "prices", ref.prices)
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot read Stripe event %s (%s): %w", ev.ID, ev.Type, err)
	}
	if !ok {
		log.Debug("Stripe event ignored")
		return nil
	}
	applied, err := s.accounts.ApplyBilling(ctx, ev.ID, change)
	if errors.Is(err, access.ErrUnknownAccount) {
		// A subscription of another product on the same Stripe account,
		// or one whose checkout was never completed here.
		log.Warn("Stripe event names no account here; ignored", "customer", change.Customer, "subscription", change.Subscription)
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot apply Stripe event %s: %w", ev.ID, err)
	}
	if change.PaymentFailed != nil && *change.PaymentFailed {
		log.Warn("a subscription payment failed", "customer", change.Customer, "subscription", change.Subscription)
	}
	log.Info("Stripe event", "applied", applied, "customer", change.Customer, "subscription", change.Subscription,
		"status", change.Status, "paid_until", change.PaidUntil, "ended", change.Ended)
	return nil
}

// refusal is why change turned down an event that buys no paid tier: a
// subscription that is not of the paid tier's price, or not paid.
type refusal struct {
	why, subscription, status string
	prices                    []string
}

func (r refusal) Error() string { return r.why }

// prices lists the prices of a subscription's items.
func prices(sub *stripe.Subscription) []string {
	var ps []string
	if sub.Items != nil {
		for _, it := range sub.Items.Data {
			if it != nil && it.Price != nil {
				ps = append(ps, it.Price.ID)
			}
		}
	}
	return ps
}

// ofPrice reports whether a subscription holds the paid tier's price.
func (s *Stripe) ofPrice(sub *stripe.Subscription) bool {
	return slices.Contains(prices(sub), s.opt.Price)
}

// change reads what an event does to an account; ok is false for events
// that do nothing. Only subscriptions of the configured price move an
// account, so that another product sold on the same Stripe account never
// buys the paid tier; it returns a refusal for those it turns down.
func (s *Stripe) change(ctx context.Context, ev stripe.Event) (access.BillingChange, bool, error) {
	var c access.BillingChange
	yes, no := true, false
	switch ev.Type {
	case "checkout.session.completed":
		var cs stripe.CheckoutSession
		if err := json.Unmarshal(ev.Data.Raw, &cs); err != nil {
			return c, false, err
		}
		if cs.Mode != stripe.CheckoutSessionModeSubscription || cs.ClientReferenceID == "" || cs.Subscription == nil {
			return c, false, nil
		}
		c.AccountID, c.Subscription = cs.ClientReferenceID, cs.Subscription.ID
		if cs.Customer != nil {
			c.Customer = cs.Customer.ID
		}
		// The session does not carry the period; the subscription does.
		sub, err := s.client.V1Subscriptions.Retrieve(ctx, c.Subscription, nil)
		if err != nil {
			return c, false, fmt.Errorf("cannot read subscription %s: %w", c.Subscription, err)
		}
		switch {
		case !s.ofPrice(sub):
			return c, false, refusal{why: "the checkout's subscription is not of the paid tier's price (--stripe-price)",
				subscription: sub.ID, status: string(sub.Status), prices: prices(sub)}
		case sub.Status != stripe.SubscriptionStatusActive && sub.Status != stripe.SubscriptionStatusTrialing:
			return c, false, refusal{why: "the checkout's subscription is neither active nor trialing",
				subscription: sub.ID, status: string(sub.Status), prices: prices(sub)}
		}
		c.Status, c.PaidUntil = string(sub.Status), periodEnd(sub)
		if !c.PaidUntil.After(s.opt.Now()) {
			// A subscription paid a moment ago ends in the future; an
			// end in the past is a clock or data problem, and the
			// invoice.paid that follows sets the real one.
			s.log.Warn("subscription's period end is not in the future; paid for a month until its invoice says otherwise",
				"subscription", c.Subscription, "period_end", c.PaidUntil)
			c.PaidUntil = s.opt.Now().AddDate(0, 1, 0)
		}
	case "customer.subscription.created", "customer.subscription.updated":
		var sub stripe.Subscription
		if err := json.Unmarshal(ev.Data.Raw, &sub); err != nil {
			return c, false, err
		}
		if sub.ID == "" {
			return c, false, nil
		}
		if !s.ofPrice(&sub) {
			return c, false, refusal{why: "the subscription is not of the paid tier's price (--stripe-price)",
				subscription: sub.ID, status: string(sub.Status), prices: prices(&sub)}
		}
		c.Subscription, c.Status = sub.ID, string(sub.Status)
		if sub.Customer != nil {
			c.Customer = sub.Customer.ID
		}
		c.CancelAtPeriodEnd = &no
		if sub.CancelAtPeriodEnd {
			c.CancelAtPeriodEnd = &yes
		}
		switch sub.Status {
		case stripe.SubscriptionStatusActive, stripe.SubscriptionStatusTrialing, stripe.SubscriptionStatusPastDue:
			c.PaidUntil = periodEnd(&sub)
		case stripe.SubscriptionStatusCanceled, stripe.SubscriptionStatusIncompleteExpired, stripe.SubscriptionStatusUnpaid:
			c.Ended = true
		}
	case "customer.subscription.deleted":
		var sub stripe.Subscription
		if err := json.Unmarshal(ev.Data.Raw, &sub); err != nil {
			return c, false, err
		}
		if sub.ID == "" {
			return c, false, nil
		}
		if !s.ofPrice(&sub) {
			return c, false, refusal{why: "the subscription is not of the paid tier's price (--stripe-price)",
				subscription: sub.ID, status: string(sub.Status), prices: prices(&sub)}
		}
		c.Subscription, c.Ended = sub.ID, true
		if sub.Customer != nil {
			c.Customer = sub.Customer.ID
		}
	case "invoice.paid", "invoice.payment_failed":
		var inv stripe.Invoice
		if err := json.Unmarshal(ev.Data.Raw, &inv); err != nil {
			return c, false, err
		}
		if inv.Customer != nil {
			c.Customer = inv.Customer.ID
		}
		if inv.Parent != nil && inv.Parent.SubscriptionDetails != nil && inv.Parent.SubscriptionDetails.Subscription != nil {
			c.Subscription = inv.Parent.SubscriptionDetails.Subscription.ID
		}
		if c.Customer == "" && c.Subscription == "" {
			return c, false, nil
		}
		if ev.Type == "invoice.payment_failed" {
			c.PaymentFailed = &yes
			break
		}
		if c.Subscription == "" {
			// A one-off invoice buys what it lists, never time on the
			// paid tier.
			return c, false, refusal{why: "the paid invoice is of no subscription"}
		}
		c.PaymentFailed = &no
		var lines []*stripe.InvoiceLineItem
		if inv.Lines != nil {
			lines = inv.Lines.Data
		}
		ofPrice := false
		for _, l := range lines {
			if l == nil || l.Pricing == nil || l.Pricing.PriceDetails == nil ||
				l.Pricing.PriceDetails.Price == nil || l.Pricing.PriceDetails.Price.ID != s.opt.Price {
				continue // another product's line
			}
			ofPrice = true
			if l.Period != nil && l.Period.End > c.PaidUntil.Unix() {
				c.PaidUntil = time.Unix(l.Period.End, 0).UTC()
			}
		}
		if !ofPrice {
			return c, false, refusal{why: "the paid invoice has no line of the paid tier's price (--stripe-price)",
				subscription: c.Subscription}
		}
	default:
		return c, false, nil
	}
	return c, true, nil
}

// periodEnd is the end of a subscription's current period: the latest
// of its items' (where Stripe keeps it since API version 2025-03-31).
func periodEnd(sub *stripe.Subscription) time.Time {
	var end int64
	if sub.Items != nil {
		for _, it := range sub.Items.Data {
			end = max(end, it.CurrentPeriodEnd)
		}
	}
	if end == 0 {
		return time.Time{}
	}
	return time.Unix(end, 0).UTC()
}
