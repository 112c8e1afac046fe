package oauth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/netip"
	"sync"
	"time"
)

// memStore is an in-memory Store for the tests of this package, faithful
// to the contract: codes work once and a second use revokes what they
// issued, refresh tokens rotate and a reused one revokes its chain, and
// everything expires by the injected clock. Secrets are kept hashed.
type memStore struct {
	mu      sync.Mutex
	now     func() time.Time
	limit   int // registrations a day per address
	clients map[string]memClient
	perDay  map[string]int // day/address -> registrations
	codes   map[string]*memCode
	access  map[string]*memToken
	refresh map[string]*memToken
	revoked map[string]bool // chains
	calls   map[string]int  // method -> calls, for tests that check nothing was issued
}

type memClient struct {
	Client
	expires time.Time // zero: kept
}

type memCode struct {
	CodeGrant
	expires time.Time
	used    bool
	chain   string
}

type memToken struct {
	Grant
	expires time.Time
	used    bool
	chain   string
}

func newMemStore(now func() time.Time) *memStore {
	return &memStore{
		now: now, limit: 3,
		clients: map[string]memClient{}, perDay: map[string]int{},
		codes: map[string]*memCode{}, access: map[string]*memToken{},
		refresh: map[string]*memToken{}, revoked: map[string]bool{},
		calls: map[string]int{},
	}
}

func hashed(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func (m *memStore) RegisterClient(_ context.Context, c Client, from netip.Addr) (Client, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls["RegisterClient"]++
	day := m.now().UTC().Format("2006-01-02") + "/" + from.String()
	if m.perDay[day] >= m.limit {
		return Client{}, ErrTooManyClients
	}
	m.perDay[day]++
	if c.ID == "" {
		c.ID = "c_" + rand.Text()
	}
	c.Registered = m.now()
	m.clients[c.ID] = memClient{Client: c, expires: m.now().Add(ClientTTL)}
	return c, nil
}

func (m *memStore) Client(_ context.Context, id string) (Client, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.clients[id]
	if !ok || (!c.expires.IsZero() && !m.now().Before(c.expires)) {
		return Client{}, ErrNotFound
	}
	return c.Client, nil
}

func (m *memStore) NewCode(_ context.Context, g CodeGrant) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls["NewCode"]++
	code := rand.Text()
	m.codes[hashed(code)] = &memCode{CodeGrant: g, expires: m.now().Add(CodeTTL)}
	if c, ok := m.clients[g.ClientID]; ok {
		c.expires = time.Time{} // a client that got a code lives with its tokens
		m.clients[g.ClientID] = c
	}
	return code, nil
}

func (m *memStore) TakeCode(_ context.Context, code string) (CodeGrant, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.codes[hashed(code)]
	if !ok {
		return CodeGrant{}, ErrNotFound
	}
	if c.used {
		if c.chain != "" {
			m.revoked[c.chain] = true
		}
		return CodeGrant{}, ErrReused
	}
	if !m.now().Before(c.expires) {
		return CodeGrant{}, ErrNotFound
	}
	c.used = true
	return c.CodeGrant, nil
}

func (m *memStore) NewTokens(_ context.Context, g Grant, code string) (Tokens, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls["NewTokens"]++
	chain := rand.Text()
	if c, ok := m.codes[hashed(code)]; ok {
		c.chain = chain
	}
	return m.issue(g, chain), nil
}

func (m *memStore) issue(g Grant, chain string) Tokens {
	t := Tokens{Access: rand.Text(), AccessExpires: m.now().Add(AccessTTL), Refresh: rand.Text()}
	m.access[hashed(t.Access)] = &memToken{Grant: g, expires: t.AccessExpires, chain: chain}
	m.refresh[hashed(t.Refresh)] = &memToken{Grant: g, expires: m.now().Add(RefreshTTL), chain: chain}
	return t
}

func (m *memStore) Refresh(_ context.Context, refresh, clientID string) (Tokens, Grant, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.refresh[hashed(refresh)]
	if !ok || r.ClientID != clientID || m.revoked[r.chain] || !m.now().Before(r.expires) {
		return Tokens{}, Grant{}, ErrNotFound
	}
	if r.used {
		m.revoked[r.chain] = true
		return Tokens{}, Grant{}, ErrReused
	}
	r.used = true
	return m.issue(r.Grant, r.chain), r.Grant, nil
}

func (m *memStore) Token(_ context.Context, access string) (Grant, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.access[hashed(access)]
	if !ok || m.revoked[a.chain] || !m.now().Before(a.expires) {
		return Grant{}, ErrNotFound
	}
	return a.Grant, nil
}

func (m *memStore) count(method string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls[method]
}

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
