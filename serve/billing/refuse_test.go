package billing

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kwdata/kwdata/serve/access"
)

const paidPrice = "price_paid_tier"

// fakeStripe answers the few Stripe calls billing makes: a subscription
// with the status and price a test sets, and session pages whose URLs
// say which kind they are. It records the paths asked for.
type fakeStripe struct {
	mu            sync.Mutex
	status, price string
	end           time.Time
	paths         []string
}

func (f *fakeStripe) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.paths = append(f.paths, r.Method+" "+r.URL.Path)
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == "GET" && strings.HasPrefix(r.URL.Path, "/v1/subscriptions/"):
		id := strings.TrimPrefix(r.URL.Path, "/v1/subscriptions/")
		fmt.Fprintf(w, `{"id": %q, "object": "subscription", "customer": "cus_1", "status": %q, "items": {"object": "list", "data": [
			{"id": "si_1", "object": "subscription_item", "price": {"id": %q, "object": "price"}, "current_period_end": %d}]}}`,
			id, f.status, f.price, f.end.Unix())
	case r.Method == "POST" && r.URL.Path == "/v1/checkout/sessions":
		fmt.Fprint(w, `{"id": "cs_1", "object": "checkout.session", "url": "https://checkout.example/cs_1"}`)
	case r.Method == "POST" && r.URL.Path == "/v1/billing_portal/sessions":
		fmt.Fprint(w, `{"id": "bps_1", "object": "billing_portal.session", "url": "https://portal.example/bps_1"}`)
	default:
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error": {"type": "invalid_request_error", "message": "not faked"}}`)
	}
}

func (f *fakeStripe) set(status, price string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status, f.price = status, price
}

func (f *fakeStripe) asked(path string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.paths {
		if p == path {
			return true
		}
	}
	return false
}

// newFakeBilling is billing of paidPrice over a fresh store with one
// registered account, against a fakeStripe.
func newFakeBilling(tb testing.TB) (*Stripe, *fakeStripe, *access.Store, string, access.KeyRecord) {
	tb.Helper()
	fake := &fakeStripe{status: "active", price: paidPrice, end: time.Now().AddDate(0, 1, 0)}
	srv := httptest.NewServer(fake)
	tb.Cleanup(srv.Close)
	store, err := access.Open(access.Options{Dir: tb.TempDir(), FlushInterval: time.Hour})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { store.Close() })
	key, rec, err := store.CreateKey(context.Background(), access.Registered, "payer@example.com", time.Time{})
	if err != nil {
		tb.Fatal(err)
	}
	st, err := New(Options{SecretKey: "sk_test_x", WebhookSecret: testSecret, Price: paidPrice, PublicURL: "https://kwdata.example", API: srv.URL}, store)
	if err != nil {
		tb.Fatal(err)
	}
	return st, fake, store, key, rec
}

func postEvent(tb testing.TB, st *Stripe, body string) {
	tb.Helper()
	if err := st.Webhook(context.Background(), []byte(body), sign(body, testSecret, time.Now())); err != nil {
		tb.Fatalf("Webhook: %v", err)
	}
}

func tierOf(tb testing.TB, store *access.Store, key string) access.KeyRecord {
	tb.Helper()
	r, _, err := store.Account(context.Background(), key)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

func checkoutEvent(id, account, sub string) string {
	return event(id, "checkout.session.completed",
		`{"id": "cs_`+id+`", "object": "checkout.session", "mode": "subscription", "client_reference_id": "`+account+`", "customer": "cus_1", "subscription": "`+sub+`"}`)
}

// TestCheckoutBuysOnlyThePaidTier: a completed checkout makes the account
// paid only when its subscription is active or trialing and of the
// configured price; a cheaper product on the same Stripe account, or a
// subscription that was never paid, buys nothing.
func TestCheckoutBuysOnlyThePaidTier(t *testing.T) {
	for _, tc := range []struct {
		status, price string
		paid          bool
	}{
		{"active", paidPrice, true},
		{"trialing", paidPrice, true},
		{"active", "price_cheaper_product", false},
		{"trialing", "price_cheaper_product", false},
		{"incomplete", paidPrice, false},
		{"incomplete_expired", paidPrice, false},
		{"canceled", paidPrice, false},
		{"unpaid", paidPrice, false},
		{"past_due", paidPrice, false},
		{"paused", paidPrice, false},
	} {
		t.Run(tc.status+"/"+tc.price, func(t *testing.T) {
			st, fake, store, key, rec := newFakeBilling(t)
			var logged bytes.Buffer
			st.log = slog.New(slog.NewTextHandler(&logged, nil))
			fake.set(tc.status, tc.price)
			postEvent(t, st, checkoutEvent("evt_1", rec.ID, "sub_1"))
			if refused := strings.Contains(logged.String(), "Stripe event refused"); refused == tc.paid || (refused && !strings.Contains(logged.String(), "subscription=sub_1")) {
				t.Errorf("a checkout of a %s subscription of %s logged:\n%s", tc.status, tc.price, logged.String())
			}
			if !fake.asked("GET /v1/subscriptions/sub_1") {
				t.Fatal("the subscription was not read from Stripe")
			}
			if got := tierOf(t, store, key).ActiveTier(time.Now()) == access.Paid; got != tc.paid {
				t.Errorf("a checkout of a %s subscription of %s: paid %v, want %v", tc.status, tc.price, got, tc.paid)
			}
		})
	}
}

// TestEventsOfAnotherPriceChangeNothing: after a real checkout, an update
// that moves the subscription to another price, and an invoice that no
// subscription of the paid price issued, do not extend the paid tier.
func TestEventsOfAnotherPriceChangeNothing(t *testing.T) {
	st, _, store, key, rec := newFakeBilling(t)
	postEvent(t, st, checkoutEvent("evt_1", rec.ID, "sub_1"))
	before := tierOf(t, store, key)
	if before.ActiveTier(time.Now()) != access.Paid {
		t.Fatalf("a checkout of the paid price did not make the account paid: %+v", before)
	}
	far := time.Now().AddDate(1, 0, 0).Unix()
	item := func(price string) string {
		return fmt.Sprintf(`{"object": "list", "data": [{"id": "si_1", "object": "subscription_item", "price": {"id": %q, "object": "price"}, "current_period_end": %d}]}`, price, far)
	}
	line := func(price string) string {
		return fmt.Sprintf(`{"object": "list", "data": [{"id": "il_1", "object": "line_item", "pricing": {"type": "price_details", "price_details": {"price": %q}}, "period": {"start": 1, "end": %d}}]}`, price, far)
	}
	for _, tc := range []struct{ name, body string }{
		{"subscription moved to another price", event("evt_2", "customer.subscription.updated",
			`{"id": "sub_1", "object": "subscription", "customer": "cus_1", "status": "active", "items": `+item("price_cheaper_product")+`}`)},
		{"one-off invoice of the paid price", event("evt_3", "invoice.paid",
			`{"id": "in_1", "object": "invoice", "customer": "cus_1", "lines": `+line(paidPrice)+`}`)},
		{"one-off invoice of another price", event("evt_4", "invoice.paid",
			`{"id": "in_2", "object": "invoice", "customer": "cus_1", "lines": `+line("price_cheaper_product")+`}`)},
		{"subscription invoice of another price", event("evt_5", "invoice.paid",
			`{"id": "in_3", "object": "invoice", "customer": "cus_1", "parent": {"type": "subscription_details", "subscription_details": {"subscription": "sub_1"}}, "lines": `+line("price_cheaper_product")+`}`)},
	} {
		postEvent(t, st, tc.body)
		if after := tierOf(t, store, key); !after.PaidUntil.Equal(before.PaidUntil) || after.Tier != before.Tier {
			t.Errorf("%s: paid until %s, was %s", tc.name, after.PaidUntil, before.PaidUntil)
		}
	}
	// The paid price's own invoice still extends it.
	postEvent(t, st, event("evt_6", "invoice.paid",
		`{"id": "in_4", "object": "invoice", "customer": "cus_1", "parent": {"type": "subscription_details", "subscription_details": {"subscription": "sub_1"}}, "lines": `+line(paidPrice)+`}`))
	if after := tierOf(t, store, key); after.PaidUntil.Unix() != far {
		t.Errorf("the paid price's invoice: paid until %s, want %s", after.PaidUntil, time.Unix(far, 0).UTC())
	}
}

// TestPaidAccountGetsThePortal: an account that already pays is sent to
// the billing portal, never to a second checkout that would charge it
// twice.
func TestPaidAccountGetsThePortal(t *testing.T) {
	st, fake, store, key, rec := newFakeBilling(t)
	postEvent(t, st, checkoutEvent("evt_1", rec.ID, "sub_1"))
	if tierOf(t, store, key).ActiveTier(time.Now()) != access.Paid {
		t.Fatal("a checkout of the paid price did not make the account paid")
	}
	u, err := st.Checkout(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if u != "https://portal.example/bps_1" || fake.asked("POST /v1/checkout/sessions") {
		t.Errorf("Checkout of a paid account = %q (paths %v), want the portal and no checkout session", u, fake.paths)
	}
}
