package access

import (
	"errors"
	"testing"
	"time"
)

// TestApplyBilling: a subscription's life as its events describe it,
// each applied once, late ones changing nothing.
func TestApplyBilling(t *testing.T) { forBackends(t, testApplyBilling) }

func testApplyBilling(t *testing.T, b backend) {
	clk, open := b.start(t)
	s := open()
	client := mustAddr(t, "192.0.2.1")
	key, rec := mustCreate(t, s, Registered, time.Time{})
	use(t, s, mustIdentify(t, s, key, client), 40)
	yes, no := true, false
	end1 := clk.Now().AddDate(0, 1, 0)
	end2 := end1.AddDate(0, 1, 0)
	state := func() (KeyRecord, Billing) {
		t.Helper()
		r, b, err := s.Account(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return r, b
	}
	apply := func(id string, c BillingChange, wantApplied bool) {
		t.Helper()
		applied, err := s.ApplyBilling(ctx, id, c)
		if err != nil || applied != wantApplied {
			t.Fatalf("ApplyBilling(%s) = %v, %v; want applied %v", id, applied, err, wantApplied)
		}
	}

	apply("evt_checkout", BillingChange{AccountID: rec.ID, Customer: "cus_1", Subscription: "sub_1", Status: "active", PaidUntil: end1}, true)
	if c := mustIdentify(t, s, key, client); c.Tier != Paid {
		t.Fatalf("after checkout: %s", c.Tier)
	}
	apply("evt_checkout", BillingChange{AccountID: rec.ID, Customer: "cus_1", Subscription: "sub_1", Status: "active", PaidUntil: end1}, false)

	// Renewal by invoice, found through the subscription; a late update
	// with the older end does not move it back.
	apply("evt_invoice", BillingChange{Customer: "cus_1", Subscription: "sub_1", PaidUntil: end2, PaymentFailed: &no}, true)
	apply("evt_late", BillingChange{Subscription: "sub_1", Status: "active", PaidUntil: end1}, true)
	if r, _ := state(); !r.PaidUntil.Equal(end2) {
		t.Errorf("paid until %s, want %s", r.PaidUntil, end2)
	}
	apply("evt_failed", BillingChange{Customer: "cus_1", PaymentFailed: &yes}, true)
	apply("evt_cancel_later", BillingChange{Subscription: "sub_1", Status: "active", CancelAtPeriodEnd: &yes}, true)
	if _, b := state(); b.PaymentFailed.IsZero() || !b.CancelAtPeriodEnd || b.Status != "active" || b.Customer != "cus_1" {
		t.Errorf("billing %+v", b)
	}

	// The end: registered again, with the month's registered count.
	apply("evt_deleted", BillingChange{Subscription: "sub_1", Ended: true}, true)
	if c := mustIdentify(t, s, key, client); c.Tier != Registered || remaining(t, s, c) != 460 {
		t.Errorf("after the end: %s with %d left, want registered with 460", c.Tier, remaining(t, s, c))
	}
	// An update that arrives after the end changes nothing.
	apply("evt_after_end", BillingChange{Subscription: "sub_1", Status: "active", PaidUntil: end2.AddDate(0, 1, 0)}, true)
	if c := mustIdentify(t, s, key, client); c.Tier != Registered {
		t.Errorf("a late update revived the subscription: %s", c.Tier)
	}
	// A new checkout starts a new subscription; the old one's events do
	// not touch it.
	apply("evt_checkout2", BillingChange{AccountID: rec.ID, Customer: "cus_1", Subscription: "sub_2", Status: "active", PaidUntil: end2}, true)
	apply("evt_old_deleted", BillingChange{Subscription: "sub_1", Ended: true}, true)
	if c := mustIdentify(t, s, key, client); c.Tier != Paid {
		t.Errorf("the old subscription's end ended the new one: %s", c.Tier)
	}

	if _, err := s.ApplyBilling(ctx, "evt_other", BillingChange{Subscription: "sub_unknown", Status: "active"}); !errors.Is(err, ErrUnknownAccount) {
		t.Errorf("an unknown subscription: %v", err)
	}
	// Rotation keeps it all.
	fresh, _, err := s.RotateKey(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if r, b, err := s.Account(ctx, fresh); err != nil || r.Tier != Paid || b.Subscription != "sub_2" {
		t.Errorf("after rotation: %+v %+v %v", r, b, err)
	}
	// Applied events survive a restart.
	s.Close()
	s = open()
	if applied, err := s.ApplyBilling(ctx, "evt_checkout2", BillingChange{AccountID: rec.ID}); applied || err != nil {
		t.Errorf("a replay after restart: %v %v", applied, err)
	}
}
