package web

import (
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/kwdata/kwdata/kw"
)

// Core is what every room of the server reads and calls: the index, the
// access tiers, accounts, mail and billing, and the lookups built on them.
// The root package fills it in once; rooms hold it and never change it.
type Core struct {
	// Index answers lookups; lookups that meet a damaged index are
	// counted (see CountDamage).
	Index kw.Index
	// Log receives failures at Warn and Error and details at Debug.
	Log *slog.Logger
	// Now is the clock of allowance resets and answers.
	Now func() time.Time
	// Access admits and counts lookups.
	Access Access
	// Trusted are the proxies whose X-Forwarded-For is believed (see
	// ClientAddr).
	Trusted []netip.Prefix
	// Registrar runs sign-up and key rotation; nil when keys come only
	// from the operator.
	Registrar Registrar
	// Sessions signs people in and keeps their sessions; nil when keys
	// come only from the operator.
	Sessions Sessions
	// Mailer sends sign-up codes.
	Mailer Mailer
	// Billing runs the paid tier's subscription; nil when the server
	// takes no payments.
	Billing Billing
	// PublicURL is where clients reach the server, without a trailing
	// "/"; empty for relative links.
	PublicURL string

	answerLimit int64          // bound of the answer cache; <= 0 turns it off
	AnswerCache answerCachePtr // ready answers of the served build
}

// SetAnswerCache bounds the memory of ready GET /v1/keyword answers kept
// for the served build (see AnswerCache); limit <= 0 turns the cache off.
// Call it before the Core is shared.
func (s *Core) SetAnswerCache(limit int64) { s.answerLimit = limit }

// ClientAddr is the address a request comes from (see the function
// ClientAddr), believing X-Forwarded-For only from Trusted proxies.
func (s *Core) ClientAddr(r *http.Request) netip.Addr {
	var xff []string
	if len(s.Trusted) > 0 {
		xff = r.Header.Values("X-Forwarded-For")
	}
	return ClientAddr(r.RemoteAddr, xff, s.Trusted)
}
