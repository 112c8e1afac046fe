package web

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Access decides whether a request may be answered and counts what is
// answered. The access-tier package implements it; serve calls it only after
// a request has passed validation, so a malformed request gets its 400 even
// when the caller's allowance is spent, and is never counted.
type Access interface {
	// Admit identifies the caller (the API key r carries in
	// "Authorization: Bearer" or "X-API-Key", else the client address)
	// and reserves n lookups. It returns an error wrapping ErrInvalidKey
	// for an unknown or revoked key, a *QuotaError when the allowance
	// cannot cover n, an HTTPError for any other refusal, or any other
	// error for an internal failure (answered 500, cause logged). n == 0
	// only authenticates: it reserves nothing and is never refused for
	// the allowance. An error wrapping ErrAccessUnavailable means the
	// counting store cannot be reached (503). On success the caller must
	// end the Ticket with Commit or Cancel.
	Admit(ctx context.Context, r *http.Request, client netip.Addr, n int) (Ticket, error)
}

// Readier is implemented by an Access whose storage can fail under a
// running server (its folder deleted, say). GET /readyz answers 503
// not_ready while Ready returns an error, so that a load balancer sends
// clients to a server that can count their lookups.
type Readier interface {
	Ready() error
}

// ErrNotReady is wrapped by the error of GET /readyz when the server runs
// but cannot do its whole job (503 not_ready).
var ErrNotReady = errors.New("server is not ready")

// ErrAccessUnavailable is wrapped by an Access error when the store that
// counts lookups cannot be reached (a shared Redis, say): the request is
// answered 503 access_unavailable with Retry-After, neither free nor a
// 500.
var ErrAccessUnavailable = errors.New("access store is unavailable")

// accessRetryAfter is the Retry-After, in seconds, of access_unavailable:
// a restarted Redis or a failed-over one answers within seconds.
const accessRetryAfter = "5"

// Ticket is a reservation of lookups made by Access.Admit. Exactly one of
// Commit or Cancel takes effect; calls after the first are no-ops, so a
// handler may defer Cancel and Commit on the paths that count.
type Ticket interface {
	// Commit counts counted of the reserved lookups (0 <= counted <= n; a
	// lookup counts when answered 200 or 404), releases the rest, and sets
	// the rate-limit fields of the response on h (RateLimit-Policy and
	// RateLimit, reflecting the allowance after counting; none for
	// unlimited tiers). It is called before the response is written.
	Commit(counted int, h http.Header)
	// Cancel releases the whole reservation; nothing is counted.
	Cancel()
}

// ClientAddr returns the address a request comes from. It is the peer of
// the connection (remoteAddr, "host:port"), unless that peer is inside one
// of the trusted proxy prefixes: then it is the right-most X-Forwarded-For
// entry that is not itself a trusted proxy, since every entry left of that
// one was written by a party that could forge it. An unparsable entry stops
// the walk at the last trusted hop. IPv4-mapped IPv6 addresses are unmapped
// and zones dropped. The zero Addr means the peer address is unknown (for
// example a Unix socket).
func ClientAddr(remoteAddr string, xff []string, trusted []netip.Prefix) netip.Addr {
	peer := parseHostAddr(remoteAddr)
	if !peer.IsValid() || !inPrefixes(peer, trusted) || len(xff) == 0 {
		return peer
	}
	client := peer
	for i := len(xff) - 1; i >= 0; i-- {
		entries := xff[i]
		for entries != "" {
			var entry string
			if j := strings.LastIndexByte(entries, ','); j >= 0 {
				entries, entry = entries[:j], entries[j+1:]
			} else {
				entries, entry = "", entries
			}
			entry = strings.TrimSpace(entry)
			if entry == "" {
				continue
			}
			a := parseHostAddr(entry)
			if !a.IsValid() {
				return client
			}
			client = a
			if !inPrefixes(a, trusted) {
				return a
			}
		}
	}
	return client
}

// parseHostAddr parses "1.2.3.4", "1.2.3.4:80", "::1", "[::1]:80" or
// "[::1]".
func parseHostAddr(s string) netip.Addr {
	// A connection's peer is always "host:port", and it is parsed on every
	// request: trying it first spares the bare-address parse, whose
	// failure allocates an error on the hot path.
	if looksHostPort(s) {
		if ap, err := netip.ParseAddrPort(s); err == nil {
			return ap.Addr().Unmap().WithZone("")
		}
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap().WithZone("")
	}
	if host, _, err := net.SplitHostPort(s); err == nil {
		if a, err := netip.ParseAddr(host); err == nil {
			return a.Unmap().WithZone("")
		}
	}
	if len(s) > 2 && s[0] == '[' && s[len(s)-1] == ']' {
		if a, err := netip.ParseAddr(s[1 : len(s)-1]); err == nil {
			return a.Unmap().WithZone("")
		}
	}
	return netip.Addr{}
}

// looksHostPort reports whether s may be "1.2.3.4:80" or "[::1]:80": a
// bare IPv6 address has more than one colon and no bracket.
func looksHostPort(s string) bool {
	if s != "" && s[0] == '[' {
		return strings.Contains(s, "]:")
	}
	return strings.Count(s, ":") == 1
}

func inPrefixes(a netip.Addr, ps []netip.Prefix) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
