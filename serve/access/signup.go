package access

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/netip"
	"time"
)

// Sign-up by email: StartSignup stores a one-time code for a mailbox and
// returns it to be mailed; VerifySignup trades the code for a key.
const (
	// CodeTTL is how long a sign-up code can be used.
	CodeTTL = 15 * time.Minute
	// CodeAttempts is how many wrong codes a mailbox's pending code
	// survives; the next wrong one discards it.
	CodeAttempts = 5
	// CodesPerMailboxPerDay bounds the codes mailed to one mailbox a UTC
	// day, so the endpoint cannot be used to flood someone's inbox.
	CodesPerMailboxPerDay = 5
	codeDigits            = 6
	codePrefix            = "c/" // c/<mailbox> -> JSON pendingCode
)

// ErrCodeInvalid is returned by VerifySignup for a code that is wrong,
// expired, used or never sent. The server answers 400.
var ErrCodeInvalid = errors.New("the code is wrong or no longer valid; check the latest mail, or request a new code")

// pendingCode is the value under c/<mailbox>. Only a hash of the code is
// kept.
type pendingCode struct {
	Email    string    `json:"email"`
	Hash     []byte    `json:"hash"`
	Expires  time.Time `json:"expires"`
	Attempts int       `json:"attempts"`
	Day      string    `json:"day"`  // UTC day of Sent
	Sent     int       `json:"sent"` // codes sent to the mailbox on Day
}

// Signup is a code to mail, from StartSignup.
type Signup struct {
	// Email is the address asked for, as normalized.
	Email string
	// To is the address to mail the code to: the one stored on the
	// mailbox's account when it has one (a code for ann+x@ re-keys the
	// account of ann@, so only ann@ may read it), else Email.
	To string
	// Code is the one-time code, in clear text only here.
	Code string
	// Replaces is true when the mailbox already holds an active key:
	// verifying the code then replaces that key (see VerifySignup). The
	// mail says so; the HTTP answer does not, so that it tells no one who
	// is registered.
	Replaces bool
	// Expires is when the code stops working.
	Expires time.Time
}

func codeHash(mailbox, code string) []byte {
	h := sha256.Sum256([]byte(mailbox + "\x00" + code))
	return h[:]
}

func newCode() string {
	n, _ := rand.Int(rand.Reader, big.NewInt(1_000_000))
	return fmt.Sprintf("%0*d", codeDigits, n)
}

func (t *txn) pending(mailbox string) (pendingCode, bool, error) {
	var p pendingCode
	v, ok, err := t.getString(codePrefix + mailbox)
	if err != nil || !ok {
		return p, false, err
	}
	if err := json.Unmarshal([]byte(v), &p); err != nil {
		return p, false, fmt.Errorf("cannot decode the pending code of %s: %w", mailbox, err)
	}
	return p, true, nil
}

func (t *txn) putPending(mailbox string, p pendingCode) error {
	v, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return t.kv.set(codePrefix+mailbox, v)
}

// StartSignup makes a new one-time code for email's mailbox, replacing any
// earlier one, and returns it to be mailed. It refuses an invalid address
// (ErrInvalidEmail) and, with a *QuotaError wrapping
// ErrTooManyRegistrations, more than RegistrationsPerAddressPerDay codes
// from one client address (IPv6 by /64) or CodesPerMailboxPerDay to one
// mailbox in a UTC day. A mailbox that holds a key gets a code too (see
// Signup.Replaces).
func (s *Store) StartSignup(ctx context.Context, email string, client netip.Addr) (Signup, error) {
	if s.closed.Load() {
		return Signup{}, ErrClosed
	}
	return startSignup(ctx, s, email, client)
}

// accountBackend is where the account rules of this file and billing.go
// run: the embedded Store or the RedisStore.
type accountBackend interface {
	// update runs fn in one transaction: all its writes are applied, or
	// none (fn may run more than once; each run starts afresh).
	updater
	// reserveRegistration takes one of the day's sign-ups of client's
	// address group (RegistrationsPerAddressPerDay).
	reserveRegistration(ctx context.Context, client netip.Addr) (*Reservation, error)
}

func (s *Store) update(ctx context.Context, fn func(t *txn) error) error {
	return s.keys.update(ctx, fn)
}

func (s *Store) reserveRegistration(ctx context.Context, client netip.Addr) (*Reservation, error) {
	return s.reserve(ckey{kind: kindReg, addr: GroupAddr(client)}, s.opt.Now(), 1,
		s.opt.RegistrationsPerAddressPerDay, policyRegistrations, ErrTooManyRegistrations)
}

func startSignup(ctx context.Context, b accountBackend, email string, client netip.Addr) (Signup, error) {
	email, err := NormalizeEmail(email)
	if err != nil {
		return Signup{}, err
	}
	res, err := b.reserveRegistration(ctx, client)
	if err != nil {
		return Signup{}, err
	}
	defer res.Cancel()
	mb := FoldEmail(email)
	su := Signup{Email: email, Code: newCode()}
	err = b.update(ctx, func(t *txn) error {
		p, _, err := t.pending(mb)
		if err != nil {
			return err
		}
		day := t.now.Format(time.DateOnly)
		if p.Day != day {
			p.Day, p.Sent = day, 0
		}
		if p.Sent >= CodesPerMailboxPerDay {
			midnight := t.now.Truncate(24 * time.Hour).Add(24 * time.Hour)
			return &QuotaError{Limits: Limits{Policy: policyRegistrations, Quota: CodesPerMailboxPerDay},
				RetryAfter: midnight.Sub(t.now), err: ErrTooManyRegistrations}
		}
		id, taken, err := t.activeOf(mb)
		if err != nil {
			return err
		}
		su.Replaces, su.To = taken, email
		if taken {
			_, sk, err := t.find(id)
			if err != nil {
				return fmt.Errorf("cannot read the account of mailbox %s: %w", mb, err)
			}
			su.To = sk.Email
		}
		su.Expires = t.now.Add(CodeTTL)
		p.Email, p.Hash, p.Expires, p.Attempts = email, codeHash(mb, su.Code), su.Expires, 0
		p.Sent++
		return t.putPending(mb, p)
	})
	if err != nil {
		return Signup{}, err
	}
	res.Commit(1, nil)
	return su, nil
}

// VerifySignup trades a code from StartSignup for a registered key of
// email, shown only now. If the mailbox already holds an active key, that
// key is replaced as RotateKey replaces it (same account, tier and count;
// the old key stops working): proving the mailbox is how a lost key is
// recovered. A wrong code counts against CodeAttempts; the code works
// once.
func (s *Store) VerifySignup(ctx context.Context, email, code string) (string, KeyRecord, error) {
	if s.closed.Load() {
		return "", KeyRecord{}, ErrClosed
	}
	return verifySignup(ctx, s, email, code)
}

func verifySignup(ctx context.Context, b accountBackend, email, code string) (string, KeyRecord, error) {
	email, err := NormalizeEmail(email)
	if err != nil {
		return "", KeyRecord{}, err
	}
	mb := FoldEmail(email)
	key := newKey()
	h := hashKey(key)
	var rec KeyRecord
	wrong := false
	err = b.update(ctx, func(t *txn) error {
		rec, wrong = KeyRecord{}, false
		p, ok, err := t.pending(mb)
		if err != nil {
			return err
		}
		if !ok || !t.now.Before(p.Expires) || p.Hash == nil {
			return ErrCodeInvalid
		}
		if subtle.ConstantTimeCompare(p.Hash, codeHash(mb, code)) != 1 {
			// Counted durably, so that restarts do not reset it.
			wrong = true
			p.Attempts++
			if p.Attempts >= CodeAttempts {
				p.Hash = nil
			}
			return t.putPending(mb, p)
		}
		p.Hash = nil // used; the day's count stays
		if err := t.putPending(mb, p); err != nil {
			return err
		}
		id, taken, err := t.activeOf(mb)
		if err != nil {
			return err
		}
		if taken {
			oldHash, sk, err := t.find(id)
			if err != nil {
				return err
			}
			rec = sk.record()
			return t.rekey(oldHash, h, sk)
		}
		sk, err := t.newAccount(h, Registered, p.Email, time.Time{}, true)
		rec = sk.record()
		return err
	})
	if err == nil && wrong {
		err = ErrCodeInvalid
	}
	if err != nil {
		return "", KeyRecord{}, err
	}
	return key, rec, nil
}

// RotateKey replaces an active key with a new one, returned only now: the
// account keeps its id, tier, subscription and this period's count, and
// the old key stops working at once.
func (s *Store) RotateKey(ctx context.Context, key string) (string, KeyRecord, error) {
	if s.closed.Load() {
		return "", KeyRecord{}, ErrClosed
	}
	return rotateKey(ctx, s, key)
}

func rotateKey(ctx context.Context, b accountBackend, key string) (string, KeyRecord, error) {
	if !wellFormed(key) {
		return "", KeyRecord{}, ErrInvalidKey
	}
	old := hashKey(key)
	fresh := newKey()
	var rec KeyRecord
	err := b.update(ctx, func(t *txn) error {
		sk, ok, err := t.get(old)
		if err != nil {
			return err
		}
		if !ok || !sk.Revoked.IsZero() {
			return ErrInvalidKey
		}
		rec = sk.record()
		return t.rekey(old, hashKey(fresh), sk)
	})
	if err != nil {
		return "", KeyRecord{}, err
	}
	return fresh, rec, nil
}
