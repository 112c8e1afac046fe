package access

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Billing state of an account, kept next to its key. The payment provider
// is not known here: the server's billing package turns its events into
// BillingChanges.
const (
	customerPrefix = "u/" // u/<customer id> -> account id
	subPrefix      = "s/" // s/<subscription id> -> account id
	eventPrefix    = "x/" // x/<event id> -> when it was applied
)

// AppliedEventLifetime is how long the id of an applied billing event is
// remembered, so that the event is not applied twice. Stripe retries an
// event for up to 3 days and lets an operator resend one for as long as
// it keeps events (30 days); past that no copy of the event can arrive,
// and the id goes.
const AppliedEventLifetime = 35 * 24 * time.Hour

// ErrUnknownAccount is returned by ApplyBilling for a change that names no
// known account: a subscription of another product, or one whose checkout
// event has not arrived yet.
var ErrUnknownAccount = errors.New("no account has this customer or subscription")

// BillingChange is what one billing event does to an account.
type BillingChange struct {
	// AccountID names the account (the key id); when empty, the account
	// is the one Subscription, else Customer, was linked to.
	AccountID string
	// Customer and Subscription are the provider's ids; set, they are
	// linked to the account.
	Customer, Subscription string
	// Status is the subscription's state in the provider's words
	// ("active", "past_due", "canceled"); empty leaves it.
	Status string
	// PaidUntil, when set, makes the account paid until then. It only
	// moves forward, so an event delivered late changes nothing.
	PaidUntil time.Time
	// CancelAtPeriodEnd, when set, records whether the subscription ends
	// at PaidUntil instead of renewing.
	CancelAtPeriodEnd *bool
	// Ended ends the subscription: the account is registered again, with
	// this month's count kept (counts belong to the account, not the
	// tier).
	Ended bool
	// PaymentFailed, when set, records a failed charge (true, at the
	// event's time) or a successful one (false).
	PaymentFailed *bool
}

// Billing is the billing state of an account, for the account page.
type Billing struct {
	Customer, Subscription, Status string
	CancelAtPeriodEnd              bool
	PaymentFailed                  time.Time // the last failed charge since the last paid one; zero if none
}

// ApplyBilling applies one billing event, once: an event id seen before
// changes nothing and reports applied false. The change and the event id
// are written in one synced batch before it returns, so a provider that
// retries after a crash finds the event applied.
func (s *Store) ApplyBilling(ctx context.Context, eventID string, c BillingChange) (applied bool, err error) {
	if s.closed.Load() {
		return false, ErrClosed
	}
	return applyBilling(ctx, s, eventID, c)
}

func applyBilling(ctx context.Context, b accountBackend, eventID string, c BillingChange) (applied bool, err error) {
	if eventID == "" {
		return false, errors.New("cannot apply a billing event without an id")
	}
	err = b.update(ctx, func(t *txn) error {
		applied = false
		if _, seen, err := t.getString(eventPrefix + eventID); err != nil || seen {
			return err
		}
		id := c.AccountID
		for _, link := range []string{subPrefix + c.Subscription, customerPrefix + c.Customer} {
			if id != "" || link == subPrefix || link == customerPrefix {
				continue
			}
			v, ok, err := t.getString(link)
			if err != nil {
				return err
			}
			if ok {
				id = v
			}
		}
		if id == "" {
			return ErrUnknownAccount
		}
		h, sk, err := t.find(id)
		if errors.Is(err, ErrKeyNotFound) {
			return fmt.Errorf("%w: %s", ErrUnknownAccount, id)
		}
		if err != nil {
			return err
		}
		if err := t.kv.set(eventPrefix+eventID, []byte(t.now.Format(time.RFC3339))); err != nil {
			return err
		}
		t.expireAt(eventPrefix+eventID, t.now.Add(AppliedEventLifetime))
		applied = true
		if c.AccountID != "" && c.Subscription != "" && c.Subscription != sk.Subscription {
			// A checkout: the account takes this subscription.
			sk.Subscription, sk.Status, sk.CancelAtPeriodEnd = c.Subscription, "", false
			if err := t.kv.set(subPrefix+c.Subscription, []byte(sk.ID)); err != nil {
				return err
			}
		}
		if c.Customer != "" && c.Customer != sk.Customer {
			sk.Customer = c.Customer
			if err := t.kv.set(customerPrefix+c.Customer, []byte(sk.ID)); err != nil {
				return err
			}
		}
		if c.PaymentFailed != nil {
			sk.PaymentFailed = time.Time{}
			if *c.PaymentFailed {
				sk.PaymentFailed = t.now
			}
		}
		switch {
		case c.Subscription != "" && c.Subscription != sk.Subscription:
			// About an older subscription of the account: its end or a
			// late update changes nothing now.
		case sk.Status == "canceled":
			// The subscription has ended; only a new checkout starts
			// another.
		case c.Ended:
			sk.Tier, sk.PaidUntil, sk.Status, sk.CancelAtPeriodEnd = Registered, time.Time{}, "canceled", false
		default:
			if c.Status != "" {
				sk.Status = c.Status
			}
			if c.CancelAtPeriodEnd != nil {
				sk.CancelAtPeriodEnd = *c.CancelAtPeriodEnd
			}
			// The end only moves forward, so a late event changes
			// nothing; an operator's paid grant without end stays.
			grantWithoutEnd := sk.Tier == Paid && sk.PaidUntil.IsZero()
			if !c.PaidUntil.IsZero() && !grantWithoutEnd && (sk.Tier != Paid || c.PaidUntil.After(sk.PaidUntil)) {
				sk.Tier, sk.PaidUntil = Paid, c.PaidUntil.UTC()
			}
		}
		return t.put(h, sk)
	})
	if err != nil {
		return false, err
	}
	return applied, nil
}

// Account returns the record of an active key, with its lookups this
// month, and its billing state.
func (s *Store) Account(ctx context.Context, key string) (KeyRecord, Billing, error) {
	if s.closed.Load() {
		return KeyRecord{}, Billing{}, ErrClosed
	}
	if !wellFormed(key) {
		return KeyRecord{}, Billing{}, ErrInvalidKey
	}
	if err := ctx.Err(); err != nil {
		return KeyRecord{}, Billing{}, err
	}
	sk, ok, err := s.keys.get(hashKey(key))
	if err != nil {
		return KeyRecord{}, Billing{}, fmt.Errorf("cannot read account: %w", err)
	}
	if !ok || !sk.Revoked.IsZero() {
		return KeyRecord{}, Billing{}, ErrInvalidKey
	}
	recs := []KeyRecord{sk.record()}
	s.fillLive(recs)
	return recs[0], sk.billing(), nil
}

func (sk storedKey) billing() Billing {
	return Billing{Customer: sk.Customer, Subscription: sk.Subscription, Status: sk.Status,
		CancelAtPeriodEnd: sk.CancelAtPeriodEnd, PaymentFailed: sk.PaymentFailed}
}

// MonthUsage returns the lookups counted on an account this UTC month,
// at the registered tier (what its allowance is spent by) and at the paid
// tier.
func (s *Store) MonthUsage(id string) (registered, paid int64) {
	month := kindKey.window(s.opt.Now())
	for _, kd := range []kind{kindKey, kindPaid} {
		k := ckey{kind: kd, window: month, id: id}
		sh := s.shard(k)
		sh.mu.Lock()
		if c := sh.m[k]; c != nil {
			if kd == kindKey {
				registered = c.used
			} else {
				paid = c.used
			}
		}
		sh.mu.Unlock()
	}
	return registered, paid
}

// RegisteredPerMonth is the registered tier's monthly allowance.
func (s *Store) RegisteredPerMonth() int64 { return s.opt.RegisteredPerMonth }
