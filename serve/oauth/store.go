package oauth

import (
	"context"
	"errors"
	"net/netip"
	"time"
)

// Lifetimes of what the authorization server hands out.
const (
	// CodeTTL is how long an authorization code can be redeemed; it works
	// once.
	CodeTTL = time.Minute
	// AccessTTL is how long an access token works.
	AccessTTL = time.Hour
	// RefreshTTL is how long a refresh token works unused. Each use
	// replaces it with a new one of the same chain.
	RefreshTTL = 30 * 24 * time.Hour
	// ClientTTL is how long a dynamically registered client is kept when
	// no authorization code is ever issued to it. A client that got a
	// code is kept as long as a token of its chains lives.
	ClientTTL = 24 * time.Hour
)

// Errors a Store returns. Callers tell them apart with errors.Is.
var (
	// ErrNotFound: the client, code or token is unknown, expired, used or
	// revoked. Answered invalid_grant or invalid_token, never told apart
	// to the caller.
	ErrNotFound = errors.New("not found, expired or revoked")
	// ErrReused: a code or refresh token was presented a second time. The
	// Store has already revoked every token issued from it (the whole
	// chain): someone else may hold a copy.
	ErrReused = errors.New("presented a second time; the tokens issued from it are revoked")
	// ErrTooManyClients: the client address registered too many clients
	// today (RFC 7591 registration is rate-limited per address).
	ErrTooManyClients = errors.New("too many client registrations from this address today")
)

// Client is a public OAuth client: one registered through RFC 7591
// (ID is a random id the Store made) or one described by a client ID
// metadata document (ID is the document's https URL; such clients are
// fetched, not stored).
type Client struct {
	ID           string    `json:"client_id"`
	Name         string    `json:"client_name,omitempty"`
	URI          string    `json:"client_uri,omitempty"`
	RedirectURIs []string  `json:"redirect_uris"`
	Registered   time.Time `json:"registered"`
}

// Grant is what a person approved: an account lets a client act as it on
// one protected resource.
type Grant struct {
	// Account is the account's id (its key id); the tier is read from the
	// account on every use, never copied into the grant.
	Account  string `json:"account"`
	ClientID string `json:"client_id"`
	// Resource is the protected resource the tokens work for (the public
	// URL of the OAuth MCP endpoint).
	Resource string `json:"resource"`
	Scope    string `json:"scope,omitempty"`
}

// CodeGrant is a grant waiting in an authorization code, with what the
// token request must repeat.
type CodeGrant struct {
	Grant
	RedirectURI string `json:"redirect_uri"`
	// Challenge is the PKCE S256 code_challenge.
	Challenge string `json:"code_challenge"`
}

// Tokens is a token response's credentials. Only hashes of Access and
// Refresh are stored.
type Tokens struct {
	Access        string
	AccessExpires time.Time
	Refresh       string
}

// Store keeps clients, codes and tokens, hashed, in the access store, so
// that every server of a deployment (embedded or Redis) shares them.
type Store interface {
	// RegisterClient stores c (c.ID empty: the Store makes one and
	// returns c with it), taking one registration from the address's daily
	// allowance (ErrTooManyClients when spent).
	RegisterClient(ctx context.Context, c Client, from netip.Addr) (Client, error)
	// Client returns a registered client, or ErrNotFound.
	Client(ctx context.Context, id string) (Client, error)
	// NewCode stores g under a new random code, valid for CodeTTL, and
	// returns the code.
	NewCode(ctx context.Context, g CodeGrant) (string, error)
	// TakeCode redeems a code: it returns the code's grant and marks the
	// code used, so that the next TakeCode of it answers ErrReused and
	// revokes the tokens issued from it (NewTokens with this code).
	// Unknown or expired: ErrNotFound.
	TakeCode(ctx context.Context, code string) (CodeGrant, error)
	// NewTokens starts a token chain for g, issued from code: an access
	// token valid for AccessTTL and a refresh token valid for RefreshTTL.
	NewTokens(ctx context.Context, g Grant, code string) (Tokens, error)
	// Refresh trades a refresh token of clientID for a new access token and
	// a new refresh token of the same chain; the presented one stops
	// working. A refresh token presented after it was traded answers
	// ErrReused and revokes the whole chain.
	Refresh(ctx context.Context, refresh, clientID string) (Tokens, Grant, error)
	// Token returns the grant of a live access token, or ErrNotFound.
	Token(ctx context.Context, access string) (Grant, error)
}
