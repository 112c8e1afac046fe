package access

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Sessions: after signing in, a browser holds an opaque session id, never
// the API key. Only the id's SHA-256 is stored, in the account database
// (Redis: kwdata:n:<hex hash>), next to the account's id and when the
// session was last seen.
const (
	// SessionIdle is how long a session lives unused.
	SessionIdle = 30 * 24 * time.Hour
	// SessionRefresh is how stale a session's last-seen time may get
	// before a use writes it again. A page view then writes at most once
	// an hour per session, so reading a session costs reads only; the
	// idle clock is exact to within this, which 30 days do not notice.
	SessionRefresh = time.Hour

	sessionPrefix   = "n/" // n/<hex SHA-256 of the session id> -> JSON session
	sessionIDPrefix = "kws_"
	secretBytes     = 32 // 256 random bits in every session id and OAuth secret
)

// ErrNoSession is returned by Session for an id that is unknown, ended,
// idle past SessionIdle, or whose account is revoked. The server signs the
// browser out.
var ErrNoSession = errors.New("the session is unknown, ended or expired; sign in again")

// session is the value under n/<hash>.
type session struct {
	Account string    `json:"account"`
	Created time.Time `json:"created"`
	Seen    time.Time `json:"seen"`
	// End is when the entry goes: Seen + SessionIdle.
	End time.Time `json:"end"`
}

// newSecret returns prefix and 256 random bits in lower-case base32.
func newSecret(prefix string) string {
	var b [secretBytes]byte
	rand.Read(b[:])
	return prefix + keyEncoding.EncodeToString(b[:])
}

func newSessionID() string { return newSecret(sessionIDPrefix) }

// secretLen is the length of a newSecret without its prefix.
var secretLen = keyEncoding.EncodedLen(secretBytes)

// wellFormedSecret reports whether s has the shape of a newSecret(prefix);
// only such a string is hashed and looked up.
func wellFormedSecret(s, prefix string) bool {
	if len(s) != len(prefix)+secretLen || s[:len(prefix)] != prefix {
		return false
	}
	for i := len(prefix); i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < '2' || c > '7') {
			return false
		}
	}
	return true
}

// secretHash is the stored form of a session id or OAuth secret: 256
// random bits need no slow hash.
func secretHash(raw string) string {
	h := sha256.Sum256([]byte(raw))
	return hex.EncodeToString(h[:])
}

// getEntry reads the JSON entry under key into v; false when there is
// none.
func (t *txn) getEntry(key string, v any) (bool, error) {
	b, ok, err := t.kv.get(key)
	if err != nil || !ok {
		return false, err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, fmt.Errorf("cannot decode %s: %w", key, err)
	}
	return true, nil
}

// putEntry writes v as the JSON entry under key, ending at end (see
// entryEnd: v's "end" field must say the same).
func (t *txn) putEntry(key string, v any, end time.Time) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := t.kv.set(key, b); err != nil {
		return err
	}
	t.expireAt(key, end)
	return nil
}

// entryEnd reads the "end" field of an entry that putEntry wrote.
func entryEnd(v []byte) (time.Time, bool) {
	var e struct {
		End time.Time `json:"end"`
	}
	if json.Unmarshal(v, &e) != nil || e.End.IsZero() {
		return time.Time{}, false
	}
	return e.End, true
}

// account returns the active account of id (a key id, never a key):
// ErrInvalidKey when there is none or it is revoked.
func (t *txn) account(id string) (keyHash, storedKey, error) {
	if id == "" || wellFormed(id) {
		return keyHash{}, storedKey{}, ErrInvalidKey
	}
	h, sk, err := t.find(id)
	if errors.Is(err, ErrKeyNotFound) || (err == nil && !sk.Revoked.IsZero()) {
		return keyHash{}, storedKey{}, ErrInvalidKey
	}
	return h, sk, err
}

// NewSession starts a session of the active account id and returns its
// id, shown only now (ErrInvalidKey for an unknown or revoked account).
func (s *Store) NewSession(ctx context.Context, accountID string) (string, error) {
	if s.closed.Load() {
		return "", ErrClosed
	}
	return newSession(ctx, s, accountID)
}

// Session returns the account of a live session, renewing its idle
// clock (in writes at most once per SessionRefresh); ErrNoSession when
// the session is unknown, ended, idle past SessionIdle or its account
// revoked.
func (s *Store) Session(ctx context.Context, raw string) (KeyRecord, error) {
	if s.closed.Load() {
		return KeyRecord{}, ErrClosed
	}
	return sessionOf(ctx, s, raw)
}

// EndSession ends a session (signing out); ending an unknown one does
// nothing.
func (s *Store) EndSession(ctx context.Context, raw string) error {
	if s.closed.Load() {
		return ErrClosed
	}
	return endSession(ctx, s, raw)
}

// NewSession starts a session; see Store.NewSession. Every server knows
// it.
func (s *RedisStore) NewSession(ctx context.Context, accountID string) (string, error) {
	if s.closed.Load() {
		return "", ErrClosed
	}
	return newSession(ctx, s, accountID)
}

// Session returns the account of a live session; see Store.Session. It
// reads Redis on every call, so a sign-out or a revocation on any server
// holds at once.
func (s *RedisStore) Session(ctx context.Context, raw string) (KeyRecord, error) {
	if s.closed.Load() {
		return KeyRecord{}, ErrClosed
	}
	return sessionOf(ctx, s, raw)
}

// EndSession ends a session on every server; see Store.EndSession.
func (s *RedisStore) EndSession(ctx context.Context, raw string) error {
	if s.closed.Load() {
		return ErrClosed
	}
	return endSession(ctx, s, raw)
}

func newSession(ctx context.Context, b accountBackend, accountID string) (string, error) {
	raw := newSessionID()
	err := b.update(ctx, func(t *txn) error {
		if _, _, err := t.account(accountID); err != nil {
			return err
		}
		ses := session{Account: accountID, Created: t.now, Seen: t.now, End: t.now.Add(SessionIdle)}
		return t.putEntry(sessionPrefix+secretHash(raw), ses, ses.End)
	})
	if err != nil {
		return "", err
	}
	return raw, nil
}

func sessionOf(ctx context.Context, b accountBackend, raw string) (KeyRecord, error) {
	if !wellFormedSecret(raw, sessionIDPrefix) {
		return KeyRecord{}, ErrNoSession
	}
	key := sessionPrefix + secretHash(raw)
	var rec KeyRecord
	touch := false
	err := b.view(ctx, func(t *txn) error {
		var ses session
		if ok, err := t.getEntry(key, &ses); err != nil || !ok {
			return cmpErr(err, ErrNoSession)
		}
		if !t.now.Before(ses.End) {
			return ErrNoSession
		}
		_, sk, err := t.account(ses.Account)
		if errors.Is(err, ErrInvalidKey) {
			return ErrNoSession
		}
		rec = sk.record()
		touch = t.now.Sub(ses.Seen) >= SessionRefresh
		return err
	})
	if err != nil || !touch {
		return rec, err
	}
	err = b.update(ctx, func(t *txn) error {
		var ses session
		// Ended or expired meanwhile: a sign-out wins over a page view.
		if ok, err := t.getEntry(key, &ses); err != nil || !ok || !t.now.Before(ses.End) {
			return err
		}
		ses.Seen, ses.End = t.now, t.now.Add(SessionIdle)
		return t.putEntry(key, ses, ses.End)
	})
	if err != nil {
		return KeyRecord{}, fmt.Errorf("cannot renew the session: %w", err)
	}
	return rec, nil
}

// cmpErr returns err, or ifNil when err is nil.
func cmpErr(err, ifNil error) error {
	if err != nil {
		return err
	}
	return ifNil
}

func endSession(ctx context.Context, b accountBackend, raw string) error {
	if !wellFormedSecret(raw, sessionIDPrefix) {
		return nil
	}
	return b.update(ctx, func(t *txn) error {
		return t.kv.del(sessionPrefix + secretHash(raw))
	})
}
