package access

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/netip"
	"time"

	"github.com/kwdata/kwdata/serve/oauth"
)

// The authorization server's clients, codes and tokens (oauth.Store), kept
// in the account database beside the accounts, so that every server of a
// deployment shares them. Codes and tokens are stored as their SHA-256
// only. Every entry carries its end ("end") and goes then: by PEXPIREAT on
// Redis, by the daily sweep in the embedded store; reads check the end
// themselves, so an entry past it is never used.
const (
	oauthClientPrefix  = "l/" // l/<client id> -> JSON clientEntry
	oauthCodePrefix    = "g/" // g/<hex SHA-256 of the code> -> JSON codeEntry
	oauthChainPrefix   = "h/" // h/<chain id> -> JSON chainEntry
	oauthAccessPrefix  = "a/" // a/<hex SHA-256 of the access token> -> JSON accessEntry
	oauthRefreshPrefix = "r/" // r/<hex SHA-256 of the refresh token> -> JSON refreshEntry

	// oauthCodeKeep is how long a code's entry is kept after the code
	// expired, so that one presented again in that time still revokes the
	// tokens issued from it.
	oauthCodeKeep = oauth.AccessTTL

	// Prefixes of what the store hands out, so that a leaked one is
	// recognised; each is followed by 256 random bits in base32.
	oauthCodeTokenPrefix = "kwc_"
	accessTokenPrefix    = "kwa_"
	refreshTokenPrefix   = "kwr_"

	// maxClientID bounds a client id that is looked up: a registered
	// one is short; a metadata document's URL is not stored.
	maxClientID = 512
)

// clientEntry is the value under l/<id>.
type clientEntry struct {
	oauth.Client
	// End is ClientTTL after registration, moved on by each code and
	// token chain issued to the client.
	End time.Time `json:"end"`
}

// codeEntry is the value under g/<hash>.
type codeEntry struct {
	Grant   oauth.CodeGrant `json:"grant"`
	Expires time.Time       `json:"expires"`
	Taken   bool            `json:"taken,omitempty"`
	Reused  bool            `json:"reused,omitempty"`
	Chain   string          `json:"chain,omitempty"` // the chain issued from the code
	End     time.Time       `json:"end"`
}

// chainEntry is the value under h/<id>: one authorization's tokens, so
// that all of them can be revoked at once.
type chainEntry struct {
	Grant   oauth.Grant `json:"grant"`
	Access  []accessRef `json:"access,omitempty"`  // live access tokens
	Refresh string      `json:"refresh,omitempty"` // hash of the current refresh token
	Revoked bool        `json:"revoked,omitempty"`
	// End is when the current refresh token expires; the chain is kept
	// until then, so that a traded refresh token presented again finds
	// it.
	End time.Time `json:"end"`
}

type accessRef struct {
	Hash string    `json:"hash"`
	End  time.Time `json:"end"`
}

// accessEntry is the value under a/<hash>.
type accessEntry struct {
	Chain string      `json:"chain"`
	Grant oauth.Grant `json:"grant"`
	End   time.Time   `json:"end"`
}

// refreshEntry is the value under r/<hash>. A traded one stays (Used)
// until its end, so that its reuse is told from an unknown token.
type refreshEntry struct {
	Chain    string    `json:"chain"`
	ClientID string    `json:"client_id"`
	Used     bool      `json:"used,omitempty"`
	End      time.Time `json:"end"`
}

// oauthBackend is what the oauth.Store needs of a store.
type oauthBackend interface {
	accountBackend
	// reserveClient takes one OAuth client registration from the
	// address's daily allowance.
	reserveClient(ctx context.Context, from netip.Addr) (*Reservation, error)
	// open returns ErrClosed after Close.
	open() error
}

// ForOAuth returns the store as the authorization server keeps its
// clients, codes and tokens in it (oauth.Store).
func (s *Store) ForOAuth() oauth.Store { return oauthStore{s} }

func (s *Store) open() error {
	if s.closed.Load() {
		return ErrClosed
	}
	return nil
}

func (s *Store) reserveClient(_ context.Context, from netip.Addr) (*Reservation, error) {
	return s.reserve(ckey{kind: kindClient, addr: GroupAddr(from)}, s.opt.Now(), 1, s.opt.OAuthClientsPerAddressPerDay,
		policyRegistrations, oauth.ErrTooManyClients)
}

// oauthStore is oauth.Store on either store: the rules are written once,
// on txn.
type oauthStore struct{ b oauthBackend }

// newHexID returns 128 random bits in hex: chain ids.
func newHexID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// newClientID returns a client id: not secret, but not guessable either,
// so that nobody finds the clients of others.
func newClientID() string {
	var b [15]byte
	rand.Read(b[:])
	return "kwdc_" + keyEncoding.EncodeToString(b[:])
}

// RegisterClient stores a new client (oauth.Store).
func (o oauthStore) RegisterClient(ctx context.Context, c oauth.Client, from netip.Addr) (oauth.Client, error) {
	if err := o.b.open(); err != nil {
		return oauth.Client{}, err
	}
	if len(c.ID) > maxClientID {
		return oauth.Client{}, fmt.Errorf("cannot register a client id of %d bytes; at most %d", len(c.ID), maxClientID)
	}
	res, err := o.b.reserveClient(ctx, from)
	if err != nil {
		return oauth.Client{}, err
	}
	defer res.Cancel()
	if c.ID == "" {
		c.ID = newClientID()
	}
	err = o.b.update(ctx, func(t *txn) error {
		var old clientEntry
		if ok, err := t.getEntry(oauthClientPrefix+c.ID, &old); err != nil {
			return err
		} else if ok && t.now.Before(old.End) {
			return fmt.Errorf("cannot register client %s: the id is taken; register without an id", c.ID)
		}
		c.Registered = t.now
		e := clientEntry{Client: c, End: t.now.Add(oauth.ClientTTL)}
		return t.putEntry(oauthClientPrefix+c.ID, e, e.End)
	})
	if err != nil {
		return oauth.Client{}, err
	}
	res.Commit(1, nil)
	return c, nil
}

// Client returns a live registered client (oauth.Store).
func (o oauthStore) Client(ctx context.Context, id string) (oauth.Client, error) {
	if err := o.b.open(); err != nil {
		return oauth.Client{}, err
	}
	if id == "" || len(id) > maxClientID {
		return oauth.Client{}, oauth.ErrNotFound
	}
	var e clientEntry
	err := o.b.view(ctx, func(t *txn) error {
		ok, err := t.getEntry(oauthClientPrefix+id, &e)
		if err == nil && (!ok || !t.now.Before(e.End)) {
			err = oauth.ErrNotFound
		}
		return err
	})
	return e.Client, err
}

// keepClient keeps the client id stored until end at least: a client
// that got a code or a token chain lives as long as they do. A client
// that is not stored (a metadata document's) is left alone.
func (t *txn) keepClient(id string, end time.Time) error {
	if id == "" || len(id) > maxClientID {
		return nil
	}
	var e clientEntry
	ok, err := t.getEntry(oauthClientPrefix+id, &e)
	if err != nil || !ok || !t.now.Before(e.End) || !end.After(e.End) {
		return err
	}
	e.End = end
	return t.putEntry(oauthClientPrefix+id, e, e.End)
}

// NewCode stores a grant under a new code (oauth.Store).
func (o oauthStore) NewCode(ctx context.Context, g oauth.CodeGrant) (string, error) {
	if err := o.b.open(); err != nil {
		return "", err
	}
	code := newSecret(oauthCodeTokenPrefix)
	err := o.b.update(ctx, func(t *txn) error {
		e := codeEntry{Grant: g, Expires: t.now.Add(oauth.CodeTTL)}
		e.End = e.Expires.Add(oauthCodeKeep)
		if err := t.putEntry(oauthCodePrefix+secretHash(code), e, e.End); err != nil {
			return err
		}
		return t.keepClient(g.ClientID, e.End)
	})
	if err != nil {
		return "", err
	}
	return code, nil
}

// TakeCode redeems a code once (oauth.Store). A second time it revokes
// the chain issued from the code and answers oauth.ErrReused.
func (o oauthStore) TakeCode(ctx context.Context, code string) (oauth.CodeGrant, error) {
	if err := o.b.open(); err != nil {
		return oauth.CodeGrant{}, err
	}
	if !wellFormedSecret(code, oauthCodeTokenPrefix) {
		return oauth.CodeGrant{}, oauth.ErrNotFound
	}
	key := oauthCodePrefix + secretHash(code)
	var g oauth.CodeGrant
	reused := false
	err := o.b.update(ctx, func(t *txn) error {
		reused = false
		var e codeEntry
		if ok, err := t.getEntry(key, &e); err != nil || !ok {
			return cmpErr(err, oauth.ErrNotFound)
		}
		if e.Taken {
			reused = true
			return t.codeReused(key, e)
		}
		if !t.now.Before(e.Expires) {
			return oauth.ErrNotFound
		}
		e.Taken, g = true, e.Grant
		return t.putEntry(key, e, e.End)
	})
	if err == nil && reused {
		err = oauth.ErrReused
	}
	if err != nil {
		return oauth.CodeGrant{}, err
	}
	return g, nil
}

// codeReused marks the code under key as presented again and revokes
// the chain issued from it.
func (t *txn) codeReused(key string, e codeEntry) error {
	e.Reused = true
	if e.Chain != "" {
		if err := t.revokeChain(e.Chain); err != nil {
			return err
		}
	}
	return t.putEntry(key, e, e.End)
}

// revokeChain ends every token of a chain: its access tokens and its
// refresh token go; the chain stays, revoked, until its end, so that its
// traded refresh tokens are still refused as such.
func (t *txn) revokeChain(id string) error {
	var ch chainEntry
	if ok, err := t.getEntry(oauthChainPrefix+id, &ch); err != nil || !ok || ch.Revoked {
		return err
	}
	for _, a := range ch.Access {
		if err := t.kv.del(oauthAccessPrefix + a.Hash); err != nil {
			return err
		}
	}
	if ch.Refresh != "" {
		if err := t.kv.del(oauthRefreshPrefix + ch.Refresh); err != nil {
			return err
		}
	}
	ch.Revoked, ch.Access, ch.Refresh = true, nil, ""
	return t.putEntry(oauthChainPrefix+id, ch, ch.End)
}

// issue adds a new access token and a new refresh token to chain ch (id),
// making the refresh token the chain's current one, and returns them.
func (t *txn) issue(id string, ch *chainEntry, clientID string) (oauth.Tokens, error) {
	tok := oauth.Tokens{Access: newSecret(accessTokenPrefix), Refresh: newSecret(refreshTokenPrefix),
		AccessExpires: t.now.Add(oauth.AccessTTL)}
	ah, rh := secretHash(tok.Access), secretHash(tok.Refresh)
	if err := t.putEntry(oauthAccessPrefix+ah, accessEntry{Chain: id, Grant: ch.Grant, End: tok.AccessExpires}, tok.AccessExpires); err != nil {
		return oauth.Tokens{}, err
	}
	rEnd := t.now.Add(oauth.RefreshTTL)
	if err := t.putEntry(oauthRefreshPrefix+rh, refreshEntry{Chain: id, ClientID: clientID, End: rEnd}, rEnd); err != nil {
		return oauth.Tokens{}, err
	}
	live := ch.Access[:0]
	for _, a := range ch.Access {
		if t.now.Before(a.End) {
			live = append(live, a)
		}
	}
	ch.Access = append(live, accessRef{Hash: ah, End: tok.AccessExpires})
	ch.Refresh, ch.End = rh, rEnd
	if err := t.putEntry(oauthChainPrefix+id, *ch, ch.End); err != nil {
		return oauth.Tokens{}, err
	}
	return tok, t.keepClient(ch.Grant.ClientID, ch.End)
}

// NewTokens starts a token chain for g, issued from code (oauth.Store). A
// code that was presented again, or already started a chain, answers
// oauth.ErrReused and revokes that chain.
func (o oauthStore) NewTokens(ctx context.Context, g oauth.Grant, code string) (oauth.Tokens, error) {
	if err := o.b.open(); err != nil {
		return oauth.Tokens{}, err
	}
	if !wellFormedSecret(code, oauthCodeTokenPrefix) {
		return oauth.Tokens{}, oauth.ErrNotFound
	}
	key := oauthCodePrefix + secretHash(code)
	var tok oauth.Tokens
	reused := false
	err := o.b.update(ctx, func(t *txn) error {
		reused = false
		var e codeEntry
		if ok, err := t.getEntry(key, &e); err != nil || !ok {
			return cmpErr(err, oauth.ErrNotFound)
		}
		if e.Reused || e.Chain != "" {
			reused = true
			return t.codeReused(key, e)
		}
		id := newHexID()
		ch := chainEntry{Grant: g}
		var err error
		if tok, err = t.issue(id, &ch, g.ClientID); err != nil {
			return err
		}
		e.Taken, e.Chain = true, id
		return t.putEntry(key, e, e.End)
	})
	if err == nil && reused {
		err = oauth.ErrReused
	}
	if err != nil {
		return oauth.Tokens{}, err
	}
	return tok, nil
}

// Refresh trades a refresh token for new tokens of its chain
// (oauth.Store). One presented after it was traded revokes the chain and
// answers oauth.ErrReused.
func (o oauthStore) Refresh(ctx context.Context, refresh, clientID string) (oauth.Tokens, oauth.Grant, error) {
	if err := o.b.open(); err != nil {
		return oauth.Tokens{}, oauth.Grant{}, err
	}
	if !wellFormedSecret(refresh, refreshTokenPrefix) {
		return oauth.Tokens{}, oauth.Grant{}, oauth.ErrNotFound
	}
	h := secretHash(refresh)
	var tok oauth.Tokens
	var g oauth.Grant
	reused := false
	err := o.b.update(ctx, func(t *txn) error {
		reused = false
		var re refreshEntry
		if ok, err := t.getEntry(oauthRefreshPrefix+h, &re); err != nil || !ok {
			return cmpErr(err, oauth.ErrNotFound)
		}
		var ch chainEntry
		if ok, err := t.getEntry(oauthChainPrefix+re.Chain, &ch); err != nil || !ok || ch.Revoked {
			return cmpErr(err, oauth.ErrNotFound)
		}
		if re.Used || ch.Refresh != h {
			reused = true
			return t.revokeChain(re.Chain)
		}
		if !t.now.Before(re.End) || re.ClientID != clientID {
			return oauth.ErrNotFound
		}
		re.Used = true
		if err := t.putEntry(oauthRefreshPrefix+h, re, re.End); err != nil {
			return err
		}
		var err error
		tok, err = t.issue(re.Chain, &ch, clientID)
		g = ch.Grant
		return err
	})
	if err == nil && reused {
		err = oauth.ErrReused
	}
	if err != nil {
		return oauth.Tokens{}, oauth.Grant{}, err
	}
	return tok, g, nil
}

// Token returns the grant of a live access token (oauth.Store). It only
// reads: one GET on Redis, one read of the database when embedded.
func (o oauthStore) Token(ctx context.Context, access string) (oauth.Grant, error) {
	if err := o.b.open(); err != nil {
		return oauth.Grant{}, err
	}
	if !wellFormedSecret(access, accessTokenPrefix) {
		return oauth.Grant{}, oauth.ErrNotFound
	}
	var e accessEntry
	err := o.b.view(ctx, func(t *txn) error {
		ok, err := t.getEntry(oauthAccessPrefix+secretHash(access), &e)
		if err == nil && (!ok || !t.now.Before(e.End)) {
			err = oauth.ErrNotFound
		}
		return err
	})
	if err != nil {
		return oauth.Grant{}, err
	}
	return e.Grant, nil
}
