package access

import (
	"context"
	"fmt"
	"net/netip"
)

// Accounts by id: a session and an agent's OAuth grant name an account by
// its id, never by its key, and count against it exactly as its key does.

// AdmitAccount reserves n lookups for the account id as Admit does for a
// request carrying the account's key: one monthly count whichever way the
// account is reached, a paid account unlimited, a revoked or unknown one
// ErrInvalidKey. The tier is read from the account on every call. n == 0
// only checks the account, as in Admit.
func (s *Store) AdmitAccount(ctx context.Context, id string, client netip.Addr, n int) (*Reservation, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	return admitAccount(ctx, s, s, id, client, n)
}

// AdmitAccount reserves n lookups for the account id; see
// Store.AdmitAccount. The account is read from Redis on every call.
func (s *RedisStore) AdmitAccount(ctx context.Context, id string, client netip.Addr, n int) (*Reservation, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	return admitAccount(ctx, s, s, id, client, n)
}

func admitAccount(ctx context.Context, b accountBackend, r reserver, id string, client netip.Addr, n int) (*Reservation, error) {
	var rec KeyRecord
	err := b.view(ctx, func(t *txn) error {
		_, sk, err := t.account(id)
		rec = sk.record()
		return err
	})
	if err != nil {
		return nil, err
	}
	if n == 0 {
		res := &Reservation{}
		res.done.Store(true)
		return res, nil
	}
	return r.Reserve(ctx, Caller{Tier: rec.ActiveTier(b.now()), KeyID: rec.ID, Addr: GroupAddr(client)}, n)
}

// AccountByID returns the active account id, with its lookups this month,
// and its billing state, as Account does for its key; ErrInvalidKey for an
// unknown or revoked account.
func (s *Store) AccountByID(ctx context.Context, id string) (KeyRecord, Billing, error) {
	if s.closed.Load() {
		return KeyRecord{}, Billing{}, ErrClosed
	}
	sk, err := activeAccount(ctx, s, id)
	if err != nil {
		return KeyRecord{}, Billing{}, err
	}
	recs := []KeyRecord{sk.record()}
	s.fillLive(recs)
	return recs[0], sk.billing(), nil
}

// AccountByID returns the active account id with its lookups and billing
// state; see Store.AccountByID.
func (s *RedisStore) AccountByID(ctx context.Context, id string) (KeyRecord, Billing, error) {
	if s.closed.Load() {
		return KeyRecord{}, Billing{}, ErrClosed
	}
	sk, err := activeAccount(ctx, s, id)
	if err != nil {
		return KeyRecord{}, Billing{}, err
	}
	rec := sk.record()
	reg, paid, last, err := s.monthUsage(ctx, rec.ID)
	if err != nil {
		return KeyRecord{}, Billing{}, err
	}
	rec.Lookups, rec.LookupsAsOf, rec.LastUsed = reg+paid, s.opt.Now().UTC(), last
	return rec, sk.billing(), nil
}

func activeAccount(ctx context.Context, b accountBackend, id string) (storedKey, error) {
	var sk storedKey
	err := b.view(ctx, func(t *txn) error {
		var err error
		_, sk, err = t.account(id)
		return err
	})
	return sk, err
}

// RotateAccountKey gives the active account id a new API key, returned
// only now: the account keeps its id, tier, subscription and count, and
// its old key stops working at once. For an account made by signing in,
// whose key was never shown (KeyRecord.NoKeyShown), this is how its key is
// created.
func (s *Store) RotateAccountKey(ctx context.Context, id string) (string, KeyRecord, error) {
	if s.closed.Load() {
		return "", KeyRecord{}, ErrClosed
	}
	return rotateAccountKey(ctx, s, id)
}

// RotateAccountKey gives an account a new API key; see
// Store.RotateAccountKey. The old key stops working on every server as
// soon as they get the published change.
func (s *RedisStore) RotateAccountKey(ctx context.Context, id string) (string, KeyRecord, error) {
	if s.closed.Load() {
		return "", KeyRecord{}, ErrClosed
	}
	return rotateAccountKey(ctx, s, id)
}

func rotateAccountKey(ctx context.Context, b accountBackend, id string) (string, KeyRecord, error) {
	fresh := newKey()
	var rec KeyRecord
	err := b.update(ctx, func(t *txn) error {
		h, sk, err := t.account(id)
		if err != nil {
			return err
		}
		sk.NoKeyShown = false
		rec = sk.record()
		return t.rekey(h, hashKey(fresh), sk)
	})
	if err != nil {
		return "", KeyRecord{}, fmt.Errorf("cannot make a new key for account %s: %w", id, err)
	}
	return fresh, rec, nil
}
