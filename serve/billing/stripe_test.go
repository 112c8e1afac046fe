package billing

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v85"
	"github.com/stripe/stripe-go/v85/webhook"

	"github.com/kwdata/kwdata/internal/testservers"
	"github.com/kwdata/kwdata/serve"
	"github.com/kwdata/kwdata/serve/access"
)

const testSecret = "whsec_billing_test"

func newTestBilling(tb testing.TB) (*Stripe, *access.Store, string, access.KeyRecord) {
	tb.Helper()
	api := testservers.StartStripeMock(tb)
	store, err := access.Open(access.Options{Dir: tb.TempDir(), FlushInterval: time.Hour})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { store.Close() })
	key, rec, err := store.CreateKey(context.Background(), access.Registered, "payer@example.com", time.Time{})
	if err != nil {
		tb.Fatal(err)
	}
	st, err := New(Options{SecretKey: "sk_test_x", WebhookSecret: testSecret, Price: testservers.StripeMockPrice, PublicURL: "https://kwdata.example", API: api}, store)
	if err != nil {
		tb.Fatal(err)
	}
	return st, store, key, rec
}

func sign(body, secret string, at time.Time) string {
	return webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: []byte(body), Secret: secret, Timestamp: at}).Header
}

func event(id, typ, object string) string {
	return `{"id": "` + id + `", "object": "event", "api_version": "2025-09-30.clover", "type": "` + typ + `", "data": {"object": ` + object + `}}`
}

// TestWebhookEvents: each event type moves the account as documented; the
// checkout's subscription, read from stripe-mock, is active and of the
// configured price.
func TestWebhookEvents(t *testing.T) {
	st, store, key, rec := newTestBilling(t)
	ctx := context.Background()
	post := func(body string) {
		t.Helper()
		if err := st.Webhook(ctx, []byte(body), sign(body, testSecret, time.Now())); err != nil {
			t.Fatalf("Webhook: %v", err)
		}
	}
	state := func() (access.KeyRecord, access.Billing) {
		t.Helper()
		r, b, err := store.Account(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return r, b
	}
	post(event("evt_1", "checkout.session.completed",
		`{"id": "cs_1", "object": "checkout.session", "mode": "subscription", "client_reference_id": "`+rec.ID+`", "customer": "cus_1", "subscription": "sub_1"}`))
	r, b := state()
	if r.ActiveTier(time.Now()) != access.Paid || b.Customer != "cus_1" || b.Subscription != "sub_1" {
		t.Fatalf("after checkout: %+v %+v", r, b)
	}
	end := time.Now().AddDate(0, 2, 0).Truncate(time.Second).UTC()
	post(event("evt_2", "customer.subscription.updated", fmt.Sprintf(
		`{"id": "sub_1", "object": "subscription", "customer": "cus_1", "status": "active", "cancel_at_period_end": true, "items": {"object": "list", "data": [{"id": "si_1", "object": "subscription_item", "price": %q, "current_period_end": %d}]}}`, testservers.StripeMockPrice, end.Unix())))
	if r, b := state(); !r.PaidUntil.Equal(end) || !b.CancelAtPeriodEnd || b.Status != "active" {
		t.Errorf("after an update: %+v %+v; want paid until %s, cancelling", r, b, end)
	}
	later := end.AddDate(0, 1, 0)
	post(event("evt_3", "invoice.paid", fmt.Sprintf(
		`{"id": "in_1", "object": "invoice", "customer": "cus_1", "parent": {"type": "subscription_details", "subscription_details": {"subscription": "sub_1"}}, "lines": {"object": "list", "data": [{"id": "il_1", "object": "line_item", "pricing": {"type": "price_details", "price_details": {"price": %q}}, "period": {"start": %d, "end": %d}}]}}`, testservers.StripeMockPrice, end.Unix(), later.Unix())))
	if r, _ := state(); !r.PaidUntil.Equal(later) {
		t.Errorf("after invoice.paid: paid until %s, want %s", r.PaidUntil, later)
	}
	post(event("evt_4", "invoice.payment_failed", `{"id": "in_2", "object": "invoice", "customer": "cus_1"}`))
	if _, b := state(); b.PaymentFailed.IsZero() {
		t.Error("a failed payment is not recorded")
	}
	post(event("evt_5", "customer.subscription.deleted", `{"id": "sub_1", "object": "subscription", "customer": "cus_1", "status": "canceled", "items": {"object": "list", "data": [{"id": "si_1", "object": "subscription_item", "price": "`+testservers.StripeMockPrice+`"}]}}`))
	if r, _ := state(); r.ActiveTier(time.Now()) != access.Registered {
		t.Errorf("after the end: %s", r.Tier)
	}
	// Not about an account here, or not a kind it uses: answered, ignored.
	post(event("evt_6", "customer.subscription.updated", `{"id": "sub_other", "object": "subscription", "customer": "cus_other", "status": "active"}`))
	post(event("evt_7", "charge.refunded", `{"id": "ch_1", "object": "charge"}`))

	// Signatures: wrong secret, stale, missing, tampered body.
	body := event("evt_8", "checkout.session.completed", `{"id": "cs_2", "object": "checkout.session", "mode": "subscription", "client_reference_id": "`+rec.ID+`", "customer": "cus_1", "subscription": "sub_2"}`)
	for name, sig := range map[string]string{
		"wrong secret": sign(body, "whsec_other", time.Now()),
		"stale":        sign(body, testSecret, time.Now().Add(-time.Hour)),
		"missing":      "",
		"tampered":     sign(strings.Replace(body, "sub_2", "sub_3", 1), testSecret, time.Now()),
	} {
		if err := st.Webhook(ctx, []byte(body), sig); !errors.Is(err, serve.ErrBadSignature) {
			t.Errorf("%s signature: %v, want ErrBadSignature", name, err)
		}
	}
	if r, _ := state(); r.ActiveTier(time.Now()) != access.Registered {
		t.Error("a badly signed event changed the account")
	}
}

// TestCheckoutAndPortal call stripe-mock through the official library.
func TestCheckoutAndPortal(t *testing.T) {
	st, store, key, rec := newTestBilling(t)
	ctx := context.Background()
	u, err := st.Checkout(ctx, key)
	if err != nil || !strings.HasPrefix(u, "http") {
		t.Fatalf("Checkout = %q, %v", u, err)
	}
	if _, err := st.Portal(ctx, key); !errors.Is(err, serve.ErrNoSubscription) {
		t.Errorf("Portal before a subscription: %v", err)
	}
	if _, err := store.ApplyBilling(ctx, "evt_x", access.BillingChange{AccountID: rec.ID, Customer: "cus_1"}); err != nil {
		t.Fatal(err)
	}
	if u, err := st.Portal(ctx, key); err != nil || !strings.HasPrefix(u, "http") {
		t.Errorf("Portal = %q, %v", u, err)
	}
	for _, bad := range []string{"", "kwd_nope", "kwd_" + strings.Repeat("a", 32)} {
		if _, err := st.Checkout(ctx, bad); !errors.Is(err, serve.ErrInvalidKey) {
			t.Errorf("Checkout(%q): %v, want ErrInvalidKey", bad, err)
		}
	}
}

func TestNewRefuses(t *testing.T) {
	full := Options{SecretKey: "sk", WebhookSecret: "wh", Price: "price", PublicURL: "https://x.example"}
	for name, mod := range map[string]func(*Options){
		"no secret key":  func(o *Options) { o.SecretKey = "" },
		"no hook secret": func(o *Options) { o.WebhookSecret = "" },
		"no price":       func(o *Options) { o.Price = "" },
		"no public URL":  func(o *Options) { o.PublicURL = "" },
	} {
		o := full
		mod(&o)
		if _, err := New(o, nil); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// FuzzEventChange: whatever object a signed event carries, reading it
// never panics, and a change it yields names a subscription or customer.
func FuzzEventChange(f *testing.F) {
	for _, seed := range []string{
		`{"id": "sub_1", "customer": "cus_1", "status": "active", "items": {"data": [{"current_period_end": 1767225600}]}}`,
		`{"id": "in_1", "customer": {"id": "cus_1"}, "lines": {"data": [{"period": {"end": -1}}]}}`,
		`{"parent": {"subscription_details": {"subscription": null}}}`,
		`[]`, `null`, `{"items": {"data": [null]}}`,
	} {
		f.Add("customer.subscription.updated", seed)
		f.Add("invoice.paid", seed)
	}
	s := &Stripe{opt: Options{Now: time.Now}}
	f.Fuzz(func(t *testing.T, typ, object string) {
		if typ == "checkout.session.completed" {
			return // reads the subscription over the network
		}
		ev := stripe.Event{Type: stripe.EventType(typ), Data: &stripe.EventData{Raw: []byte(object)}}
		c, ok, err := s.change(context.Background(), ev)
		if err == nil && ok && c.Subscription == "" && c.Customer == "" {
			t.Errorf("%s %s: a change for no one: %+v", typ, object, c)
		}
	})
}

// TestCheckoutByAccount: the account page pays and manages by account id,
// as the API does by key; an unknown account is an invalid key.
func TestCheckoutByAccount(t *testing.T) {
	st, _, _, rec := newTestBilling(t)
	ctx := context.Background()
	u, err := st.CheckoutAccount(ctx, rec.ID)
	if err != nil || !strings.HasPrefix(u, "https://") {
		t.Errorf("CheckoutAccount: %q, %v", u, err)
	}
	if _, err := st.PortalAccount(ctx, rec.ID); !errors.Is(err, serve.ErrNoSubscription) {
		t.Errorf("PortalAccount of an account that never subscribed: %v, want ErrNoSubscription", err)
	}
	for _, f := range []func(context.Context, string) (string, error){st.CheckoutAccount, st.PortalAccount} {
		if _, err := f(ctx, "nosuchaccount"); !errors.Is(err, serve.ErrInvalidKey) {
			t.Errorf("an unknown account: %v, want serve.ErrInvalidKey", err)
		}
	}
}
