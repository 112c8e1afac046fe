// Package oauthtest checks that an oauth.Store keeps the contract the
// authorization server relies on: clients that expire unless used, a
// per-address registration allowance, single-use codes, rotating refresh
// tokens, and the revocation of a whole chain when a code or refresh token
// comes back. Every Store implementation runs TestStore in its own tests.
package oauthtest

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/kwdata/kwdata/serve/oauth"
)

// Clock is the settable time a store under test reads through now. It
// starts at the real time, so that a store whose entries also expire by a
// server's own clock (Redis) keeps them while the test looks; it only
// moves forward.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Add moves the clock forward by d.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// TestStore runs the contract's checks on stores made by open, one fresh
// (empty) store per subtest, reading the time through now.
func TestStore(t *testing.T, open func(t *testing.T, now func() time.Time) oauth.Store) {
	start := func(t *testing.T) (oauth.Store, *Clock) {
		t.Helper()
		clk := &Clock{t: time.Now().UTC().Truncate(time.Second)}
		return open(t, clk.Now), clk
	}
	for _, tc := range []struct {
		name string
		f    func(t *testing.T, s oauth.Store, clk *Clock)
	}{
		{"Clients", testClients},
		{"ClientExpiry", testClientExpiry},
		{"RegistrationAllowance", testRegistrationAllowance},
		{"CodeSingleUse", testCodeSingleUse},
		{"CodeExpiry", testCodeExpiry},
		{"Tokens", testTokens},
		{"Rotation", testRotation},
		{"RefreshReuseRevokesChain", testRefreshReuse},
		{"CodeReuseRevokesChain", testCodeReuse},
		{"TokenExpiry", testTokenExpiry},
		{"ChainsApart", testChainsApart},
		{"Unknown", testUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, clk := start(t)
			tc.f(t, s, clk)
		})
	}
}

var (
	ctx    = context.Background()
	client = netip.MustParseAddr("192.0.2.80")
)

func register(t *testing.T, s oauth.Store) oauth.Client {
	t.Helper()
	c, err := s.RegisterClient(ctx, oauth.Client{Name: "Agent", URI: "https://agent.example/",
		RedirectURIs: []string{"http://127.0.0.1:3334/callback"}}, client)
	if err != nil {
		t.Fatalf("RegisterClient: %v", err)
	}
	return c
}

func grantOf(c oauth.Client, account string) oauth.CodeGrant {
	return oauth.CodeGrant{
		Grant:       oauth.Grant{Account: account, ClientID: c.ID, Resource: "https://kwdata.example/mcp", Scope: "kwdata"},
		RedirectURI: c.RedirectURIs[0],
		Challenge:   "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
	}
}

// authorize runs one authorization to its tokens: a code, redeemed, and a
// new chain.
func authorize(t *testing.T, s oauth.Store, c oauth.Client, account string) (string, oauth.Tokens) {
	t.Helper()
	code, err := s.NewCode(ctx, grantOf(c, account))
	if err != nil {
		t.Fatalf("NewCode: %v", err)
	}
	g, err := s.TakeCode(ctx, code)
	if err != nil {
		t.Fatalf("TakeCode: %v", err)
	}
	tok, err := s.NewTokens(ctx, g.Grant, code)
	if err != nil {
		t.Fatalf("NewTokens: %v", err)
	}
	return code, tok
}

func wantGone(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, oauth.ErrNotFound) {
		t.Errorf("%s: %v, want ErrNotFound", what, err)
	}
}

// wantRefused: a token of a revoked chain may answer ErrNotFound or
// ErrReused, never work.
func wantRefused(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, oauth.ErrNotFound) && !errors.Is(err, oauth.ErrReused) {
		t.Errorf("%s: %v, want ErrNotFound or ErrReused", what, err)
	}
}

func testClients(t *testing.T, s oauth.Store, clk *Clock) {
	c := register(t, s)
	if c.ID == "" || !c.Registered.Equal(clk.Now()) {
		t.Errorf("registered %+v: want an id made by the store, registered now (%s)", c, clk.Now())
	}
	got, err := s.Client(ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != c.ID || got.Name != c.Name || got.URI != c.URI || len(got.RedirectURIs) != 1 ||
		got.RedirectURIs[0] != c.RedirectURIs[0] || !got.Registered.Equal(c.Registered) {
		t.Errorf("Client = %+v, want %+v", got, c)
	}
	if other := register(t, s); other.ID == c.ID {
		t.Error("two registrations got one client id")
	}
}

func testClientExpiry(t *testing.T, s oauth.Store, clk *Clock) {
	unused := register(t, s)
	used := register(t, s)
	_, tok := authorize(t, s, used, "acct1")
	clk.Add(oauth.ClientTTL)
	if _, err := s.Client(ctx, unused.ID); !errors.Is(err, oauth.ErrNotFound) {
		t.Errorf("a client without a code after ClientTTL: %v, want ErrNotFound", err)
	}
	if _, err := s.Client(ctx, used.ID); err != nil {
		t.Errorf("a client with a live chain after ClientTTL: %v", err)
	}
	if _, _, err := s.Refresh(ctx, tok.Refresh, used.ID); err != nil {
		t.Errorf("refreshing after ClientTTL: %v", err)
	}
}

func testRegistrationAllowance(t *testing.T, s oauth.Store, clk *Clock) {
	const bound = 1000
	n := 0
	var err error
	for ; n < bound; n++ {
		if _, err = s.RegisterClient(ctx, oauth.Client{RedirectURIs: []string{"http://127.0.0.1/cb"}}, client); err != nil {
			break
		}
	}
	if !errors.Is(err, oauth.ErrTooManyClients) || n == 0 {
		t.Fatalf("after %d registrations from one address: %v, want ErrTooManyClients", n, err)
	}
	if _, err := s.RegisterClient(ctx, oauth.Client{RedirectURIs: []string{"http://127.0.0.1/cb"}}, netip.MustParseAddr("198.51.100.80")); err != nil {
		t.Errorf("another address: %v", err)
	}
	clk.Add(24 * time.Hour)
	if _, err := s.RegisterClient(ctx, oauth.Client{RedirectURIs: []string{"http://127.0.0.1/cb"}}, client); err != nil {
		t.Errorf("the same address a day later: %v", err)
	}
}

func testCodeSingleUse(t *testing.T, s oauth.Store, clk *Clock) {
	c := register(t, s)
	want := grantOf(c, "acct1")
	code, err := s.NewCode(ctx, want)
	if err != nil {
		t.Fatal(err)
	}
	if code == "" {
		t.Fatal("NewCode returned an empty code")
	}
	if other, _ := s.NewCode(ctx, want); other == code {
		t.Error("two codes are equal")
	}
	got, err := s.TakeCode(ctx, code)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("TakeCode = %+v, want %+v", got, want)
	}
	if _, err := s.TakeCode(ctx, code); !errors.Is(err, oauth.ErrReused) {
		t.Errorf("a code redeemed twice: %v, want ErrReused", err)
	}
}

func testCodeExpiry(t *testing.T, s oauth.Store, clk *Clock) {
	c := register(t, s)
	code, err := s.NewCode(ctx, grantOf(c, "acct1"))
	if err != nil {
		t.Fatal(err)
	}
	clk.Add(oauth.CodeTTL)
	if _, err := s.TakeCode(ctx, code); !errors.Is(err, oauth.ErrNotFound) {
		t.Errorf("a code after CodeTTL: %v, want ErrNotFound", err)
	}
}

func testTokens(t *testing.T, s oauth.Store, clk *Clock) {
	c := register(t, s)
	_, tok := authorize(t, s, c, "acct1")
	if tok.Access == "" || tok.Refresh == "" || tok.Access == tok.Refresh {
		t.Fatalf("tokens %+v: want two different non-empty tokens", tok)
	}
	if !tok.AccessExpires.Equal(clk.Now().Add(oauth.AccessTTL)) {
		t.Errorf("access expires at %s, want %s", tok.AccessExpires, clk.Now().Add(oauth.AccessTTL))
	}
	g, err := s.Token(ctx, tok.Access)
	if err != nil {
		t.Fatal(err)
	}
	if want := grantOf(c, "acct1").Grant; g != want {
		t.Errorf("Token = %+v, want %+v", g, want)
	}
	if _, err := s.Token(ctx, tok.Refresh); !errors.Is(err, oauth.ErrNotFound) {
		t.Errorf("a refresh token used as an access token: %v, want ErrNotFound", err)
	}
	if _, _, err := s.Refresh(ctx, tok.Access, c.ID); err == nil {
		t.Error("an access token used as a refresh token worked")
	}
}

func testRotation(t *testing.T, s oauth.Store, clk *Clock) {
	c := register(t, s)
	_, tok := authorize(t, s, c, "acct1")
	clk.Add(time.Minute)
	next, g, err := s.Refresh(ctx, tok.Refresh, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if want := grantOf(c, "acct1").Grant; g != want {
		t.Errorf("Refresh grant = %+v, want %+v", g, want)
	}
	if next.Refresh == tok.Refresh || next.Access == tok.Access || next.Access == "" || next.Refresh == "" {
		t.Errorf("refresh gave %+v after %+v: want new tokens", next, tok)
	}
	if !next.AccessExpires.Equal(clk.Now().Add(oauth.AccessTTL)) {
		t.Errorf("the new access token expires at %s, want %s", next.AccessExpires, clk.Now().Add(oauth.AccessTTL))
	}
	if _, err := s.Token(ctx, next.Access); err != nil {
		t.Errorf("the new access token: %v", err)
	}
	if _, _, err := s.Refresh(ctx, next.Refresh, "another-client"); err == nil {
		t.Error("a refresh token worked for another client")
	}
}

func testRefreshReuse(t *testing.T, s oauth.Store, clk *Clock) {
	c := register(t, s)
	_, tok := authorize(t, s, c, "acct1")
	next, _, err := s.Refresh(ctx, tok.Refresh, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	// Someone else presents the traded token: the whole chain goes.
	if _, _, err := s.Refresh(ctx, tok.Refresh, c.ID); !errors.Is(err, oauth.ErrReused) {
		t.Errorf("a traded refresh token: %v, want ErrReused", err)
	}
	wantGone(t, "the first access token of a revoked chain", errOf(s.Token(ctx, tok.Access)))
	wantGone(t, "the latest access token of a revoked chain", errOf(s.Token(ctx, next.Access)))
	_, _, err = s.Refresh(ctx, next.Refresh, c.ID)
	wantRefused(t, "the latest refresh token of a revoked chain", err)
}

func testCodeReuse(t *testing.T, s oauth.Store, clk *Clock) {
	c := register(t, s)
	code, tok := authorize(t, s, c, "acct1")
	next, _, err := s.Refresh(ctx, tok.Refresh, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.TakeCode(ctx, code); !errors.Is(err, oauth.ErrReused) {
		t.Errorf("a redeemed code: %v, want ErrReused", err)
	}
	wantGone(t, "an access token issued from a reused code", errOf(s.Token(ctx, tok.Access)))
	wantGone(t, "a refreshed access token of a reused code", errOf(s.Token(ctx, next.Access)))
	_, _, err = s.Refresh(ctx, next.Refresh, c.ID)
	wantRefused(t, "a refresh token issued from a reused code", err)
}

func testTokenExpiry(t *testing.T, s oauth.Store, clk *Clock) {
	c := register(t, s)
	_, tok := authorize(t, s, c, "acct1")
	clk.Add(oauth.AccessTTL)
	wantGone(t, "an access token after AccessTTL", errOf(s.Token(ctx, tok.Access)))
	next, _, err := s.Refresh(ctx, tok.Refresh, c.ID)
	if err != nil {
		t.Fatalf("refreshing after the access token expired: %v", err)
	}
	clk.Add(oauth.RefreshTTL - time.Second)
	if _, err := s.Client(ctx, c.ID); err != nil {
		t.Errorf("the client of a live chain: %v", err)
	}
	clk.Add(time.Second)
	_, _, err = s.Refresh(ctx, next.Refresh, c.ID)
	wantGone(t, "a refresh token unused for RefreshTTL", err)
}

func testChainsApart(t *testing.T, s oauth.Store, clk *Clock) {
	c := register(t, s)
	_, one := authorize(t, s, c, "acct1")
	_, two := authorize(t, s, c, "acct1")
	if _, _, err := s.Refresh(ctx, one.Refresh, c.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Refresh(ctx, one.Refresh, c.ID); !errors.Is(err, oauth.ErrReused) {
		t.Fatalf("reuse: %v", err)
	}
	if _, err := s.Token(ctx, two.Access); err != nil {
		t.Errorf("another chain's access token after a reuse: %v", err)
	}
	if _, _, err := s.Refresh(ctx, two.Refresh, c.ID); err != nil {
		t.Errorf("another chain's refresh token after a reuse: %v", err)
	}
}

func testUnknown(t *testing.T, s oauth.Store, clk *Clock) {
	for _, v := range []string{"", "x", "kwdata", string(make([]byte, 4096))} {
		wantGone(t, "Client("+short(v)+")", errOf(s.Client(ctx, v)))
		wantGone(t, "TakeCode("+short(v)+")", errOf(s.TakeCode(ctx, v)))
		wantGone(t, "Token("+short(v)+")", errOf(s.Token(ctx, v)))
		_, _, err := s.Refresh(ctx, v, "client")
		wantGone(t, "Refresh("+short(v)+")", err)
	}
}

func short(s string) string {
	if len(s) > 8 {
		return s[:8] + "…"
	}
	return "\"" + s + "\""
}

func errOf[T any](_ T, err error) error { return err }
