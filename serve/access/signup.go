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
	"strings"
	"time"
)

// Sign-up by email: StartSignup stores a one-time code for a mailbox and
// returns it to be mailed; VerifySignup trades the code for a key.
const (
	// CodeTTL is how long a sign-up code can be used.
	CodeTTL = 15 * time.Minute
	// CodeAttempts is how many codes may be tried against a mailbox's
	// pending code, whoever tries them: the wrong one that reaches it
	// discards the code.
	CodeAttempts = 3
	// CodesPerMailboxPerDay bounds the codes mailed to one mailbox a UTC
	// day, whatever the client address, so the endpoint cannot be used to
	// flood someone's inbox.
	CodesPerMailboxPerDay = 5
	// CodeDigits is the length of a code, digits only. With CodeAttempts
	// and CodesPerMailboxPerDay it bounds the chance that someone who
	// guesses codes takes over one given mailbox (a verified code replaces
	// the mailbox's key) in a year: CodeAttempts × CodesPerMailboxPerDay ×
	// 365 guesses, each right with chance 1/10^CodeDigits, so 3 × 5 × 365
	// / 10^8 = 5,475 / 100,000,000, about 1 in 18,000.
	CodeDigits = 8
	// CodeRecordLifetime is how long a mailbox's pending-code entry (the
	// code's hash, its wrong attempts, the day's count of codes) is kept
	// after its latest code expired: past the end of that code's UTC day,
	// so the day's count holds, and no longer, so that the entries of
	// everyone who ever asked for a code do not pile up.
	CodeRecordLifetime = 2 * 24 * time.Hour
	codePrefix         = "c/" // c/<mailbox> -> JSON pendingCode
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
	// Signin marks a sign-in code (StartSignin): it signs in and never
	// re-keys, and VerifySignup takes it for a wrong code, as
	// VerifySignin takes a sign-up code.
	Signin bool `json:"signin,omitempty"`
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

// codeSpace is 10^CodeDigits, the number of possible codes.
var codeSpace = new(big.Int).Exp(big.NewInt(10), big.NewInt(CodeDigits), nil)

func newCode() string {
	n, _ := rand.Int(rand.Reader, codeSpace)
	return fmt.Sprintf("%0*d", CodeDigits, n)
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
	if err := t.kv.set(codePrefix+mailbox, v); err != nil {
		return err
	}
	t.expireAt(codePrefix+mailbox, p.Expires.Add(CodeRecordLifetime))
	return nil
}

// expirer is a kvTx whose entries can be given an end of life (Redis's
// PEXPIREAT). The embedded store has none: expireAccounts sweeps its
// entries by the same rules (accountExpiry).
type expirer interface {
	expireAt(key string, at time.Time)
}

// expireAt ends the entry key, just written, at at, where the storage can.
func (t *txn) expireAt(key string, at time.Time) {
	if e, ok := t.kv.(expirer); ok {
		e.expireAt(key, at)
	}
}

// expiringPrefixes name the entries of the account database that have an
// end of life (accountExpiry): the embedded store sweeps them daily.
var expiringPrefixes = []string{codePrefix, eventPrefix, sessionPrefix,
	oauthClientPrefix, oauthCodePrefix, oauthChainPrefix, oauthAccessPrefix, oauthRefreshPrefix}

// accountExpiry says when an entry of the account database may go: a
// pending code CodeRecordLifetime after it expired, an applied billing
// event AppliedEventLifetime after it was applied, a session or an OAuth
// entry at the end it carries. ok is false for
// entries that are kept (keys, mailboxes, billing links) and for values
// it cannot read, which are kept too: losing one would be worse than
// keeping it.
func accountExpiry(key string, v []byte) (at time.Time, ok bool) {
	switch {
	case strings.HasPrefix(key, codePrefix):
		var p pendingCode
		if json.Unmarshal(v, &p) != nil || p.Expires.IsZero() {
			return time.Time{}, false
		}
		return p.Expires.Add(CodeRecordLifetime), true
	case strings.HasPrefix(key, eventPrefix):
		applied, err := time.Parse(time.RFC3339, string(v))
		if err != nil {
			return time.Time{}, false
		}
		return applied.Add(AppliedEventLifetime), true
	}
	for _, p := range expiringPrefixes {
		if p != codePrefix && p != eventPrefix && strings.HasPrefix(key, p) {
			return entryEnd(v)
		}
	}
	return time.Time{}, false
}

// StartSignup makes a new one-time code for email's mailbox, replacing any
// earlier one, and returns it to be mailed. It refuses an invalid address
// (ErrInvalidEmail) and, with a *QuotaError wrapping
// ErrTooManyRegistrations, more than RegistrationsPerAddressPerDay codes
// from one client address (IPv6 by /64), RegistrationsPerNetworkPerDay
// from one IPv6 /48, or CodesPerMailboxPerDay to one mailbox in a UTC
// day. A mailbox that holds a key gets a code too (see
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
	// address group and, for IPv6, of its /48.
	reserveRegistration(ctx context.Context, client netip.Addr) (registration, error)
	// reserveSignin takes one of the day's sign-in codes of client's
	// address group.
	reserveSignin(ctx context.Context, client netip.Addr) (registration, error)
	// view runs fn on what is stored now, without writing: fn's writes
	// fail.
	view(ctx context.Context, fn func(t *txn) error) error
	now() time.Time
}

// registration is one sign-up taken from the allowances of a client's
// address and network: one Reservation each.
type registration []*Reservation

func (r registration) commit() {
	for _, res := range r {
		res.Commit(1, nil)
	}
}

func (r registration) cancel() {
	for _, res := range r {
		res.Cancel()
	}
}

// reserveRegistration takes one sign-up from client's address group
// (RegistrationsPerAddressPerDay) and, for an IPv6 client, from its /48
// (RegistrationsPerNetworkPerDay), all or nothing, with reserve.
func reserveRegistration(opt Options, client netip.Addr, reserve func(k ckey, limit int64) (*Reservation, error)) (registration, error) {
	a, err := reserve(ckey{kind: kindReg, addr: GroupAddr(client)}, opt.RegistrationsPerAddressPerDay)
	if err != nil {
		return nil, err
	}
	network, ok := networkOf(client)
	if !ok {
		return registration{a}, nil
	}
	b, err := reserve(ckey{kind: kindRegNet, addr: network}, opt.RegistrationsPerNetworkPerDay)
	if err != nil {
		a.Cancel()
		return nil, err
	}
	return registration{a, b}, nil
}

// networkOf returns the /48 of an IPv6 client, the block one site is
// given; false for IPv4.
func networkOf(client netip.Addr) (netip.Addr, bool) {
	a := client.Unmap().WithZone("")
	if !a.Is6() {
		return netip.Addr{}, false
	}
	p, _ := a.Prefix(48)
	return p.Addr(), true
}

func (s *Store) update(ctx context.Context, fn func(t *txn) error) error {
	return s.keys.update(ctx, fn)
}

func (s *Store) view(ctx context.Context, fn func(t *txn) error) error {
	return s.keys.view(ctx, fn)
}

func (s *Store) reserveSignin(_ context.Context, client netip.Addr) (registration, error) {
	r, err := s.reserve(ckey{kind: kindSignin, addr: GroupAddr(client)}, s.opt.Now(), 1, s.opt.SigninsPerAddressPerDay,
		policyRegistrations, ErrTooManyRegistrations)
	if err != nil {
		return nil, err
	}
	return registration{r}, nil
}

func (s *Store) reserveRegistration(_ context.Context, client netip.Addr) (registration, error) {
	now := s.opt.Now()
	return reserveRegistration(s.opt, client, func(k ckey, limit int64) (*Reservation, error) {
		return s.reserve(k, now, 1, limit, policyRegistrations, ErrTooManyRegistrations)
	})
}

func startSignup(ctx context.Context, b accountBackend, email string, client netip.Addr) (Signup, error) {
	email, err := NormalizeEmail(email)
	if err != nil {
		return Signup{}, err
	}
	su := Signup{Email: email}
	su.Code, su.To, su.Replaces, su.Expires, err = sendCode(ctx, b, b.reserveRegistration, client, email, false)
	if err != nil {
		return Signup{}, err
	}
	return su, nil
}

// sendCode takes one code from the client's allowance (reserve) and
// stores a new code for email, a sign-in code when signin, all or nothing;
// it returns the code and what issueCode says of the mailbox.
func sendCode(ctx context.Context, b accountBackend, reserve func(context.Context, netip.Addr) (registration, error),
	client netip.Addr, email string, signin bool) (code, to string, known bool, expires time.Time, err error) {
	res, err := reserve(ctx, client)
	if err != nil {
		return "", "", false, time.Time{}, err
	}
	defer res.cancel()
	code = newCode()
	err = b.update(ctx, func(t *txn) error {
		var err error
		to, known, expires, err = t.issueCode(email, code, signin)
		return err
	})
	if err != nil {
		return "", "", false, time.Time{}, err
	}
	res.commit()
	return code, to, known, expires, nil
}

// issueCode stores code as the pending code of email's mailbox, a
// sign-in code or a sign-up one, within CodesPerMailboxPerDay. It returns
// the address to mail it to (the account's own when the mailbox has one)
// and whether the mailbox has an account.
func (t *txn) issueCode(email, code string, signin bool) (to string, known bool, expires time.Time, err error) {
	mb := FoldEmail(email)
	p, _, err := t.pending(mb)
	if err != nil {
		return "", false, time.Time{}, err
	}
	day := t.now.Format(time.DateOnly)
	if p.Day != day {
		p.Day, p.Sent = day, 0
	}
	if p.Sent >= CodesPerMailboxPerDay {
		midnight := t.now.Truncate(24 * time.Hour).Add(24 * time.Hour)
		return "", false, time.Time{}, &QuotaError{Limits: Limits{Policy: policyRegistrations, Quota: CodesPerMailboxPerDay},
			RetryAfter: midnight.Sub(t.now), err: ErrTooManyRegistrations}
	}
	id, known, err := t.activeOf(mb)
	if err != nil {
		return "", false, time.Time{}, err
	}
	to = email
	if known {
		_, sk, err := t.find(id)
		if err != nil {
			return "", false, time.Time{}, fmt.Errorf("cannot read the account of mailbox %s: %w", mb, err)
		}
		to = sk.Email
	}
	expires = t.now.Add(CodeTTL)
	p.Email, p.Hash, p.Expires, p.Attempts, p.Signin = email, codeHash(mb, code), expires, 0, signin
	p.Sent++
	return to, known, expires, t.putPending(mb, p)
}

// useCode checks code against the pending code of mailbox mb, which must
// be of the kind asked for (signin): the right one is used up and its
// pending entry returned; a wrong one counts against CodeAttempts, durably,
// so that restarts do not reset it, and reports wrong with no error, so
// that the caller's transaction keeps the count. No pending code, or an
// expired or burnt one, is ErrCodeInvalid.
func (t *txn) useCode(mb, code string, signin bool) (p pendingCode, wrong bool, err error) {
	p, ok, err := t.pending(mb)
	if err != nil {
		return p, false, err
	}
	if !ok || !t.now.Before(p.Expires) || p.Hash == nil {
		return p, false, ErrCodeInvalid
	}
	if subtle.ConstantTimeCompare(p.Hash, codeHash(mb, code)) != 1 || p.Signin != signin {
		p.Attempts++
		if p.Attempts >= CodeAttempts {
			p.Hash = nil
		}
		return p, true, t.putPending(mb, p)
	}
	p.Hash = nil // used; the day's count stays
	return p, false, t.putPending(mb, p)
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
		rec = KeyRecord{}
		var p pendingCode
		var err error
		if p, wrong, err = t.useCode(mb, code, false); err != nil || wrong {
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
			sk.NoKeyShown = false
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
