package access

import (
	"fmt"
	"net/netip"
	"strings"
	"time"
)

// Tier is an access tier.
type Tier string

// The tiers (docs/API.md, "Limits", states their allowances).
const (
	// Anonymous is a caller without a key, counted by client address.
	Anonymous Tier = "anonymous"
	// Registered is a key with a monthly allowance.
	Registered Tier = "registered"
	// Paid is a key with an active subscription: unlimited.
	Paid Tier = "paid"
)

// ParseTier returns the tier named s (any case, surrounding space ignored).
func ParseTier(s string) (Tier, error) {
	switch t := Tier(strings.ToLower(strings.TrimSpace(s))); t {
	case Anonymous, Registered, Paid:
		return t, nil
	}
	return "", fmt.Errorf("unknown tier %q; use registered or paid", s)
}

// ParsePaidUntil parses a paid-through day ("2026-12-31") and returns the
// instant the subscription ends: the following UTC midnight, so the key is
// paid for the whole of the day named.
func ParsePaidUntil(day string) (time.Time, error) {
	t, err := time.Parse(time.DateOnly, strings.TrimSpace(day))
	if err != nil {
		return time.Time{}, fmt.Errorf("cannot parse paid-until %q; use YYYY-MM-DD", day)
	}
	return t.AddDate(0, 0, 1), nil
}

// Caller is who a request counts against, as Identify found it.
type Caller struct {
	// Tier is the effective tier: a paid key whose subscription has lapsed
	// is Registered here.
	Tier Tier
	// KeyID is the id of the API key; empty for Anonymous.
	KeyID string
	// Addr is the client address the anonymous allowance is counted on: the
	// IPv4 address, or the IPv6 address masked to its /64. It is set for
	// every tier.
	Addr netip.Addr
}

// String describes the caller for logs without revealing a key.
func (c Caller) String() string {
	if c.Tier == Anonymous {
		return "anonymous " + addrGroup(c.Addr)
	}
	return string(c.Tier) + " key " + c.KeyID
}

// GroupAddr returns the address the anonymous allowance of client is
// counted on: IPv4 (also IPv4-mapped IPv6) as is, IPv6 masked to /64, zone
// dropped. An invalid address stays invalid and all such callers share one
// allowance.
func GroupAddr(client netip.Addr) netip.Addr {
	if !client.IsValid() {
		return netip.Addr{}
	}
	a := client.Unmap().WithZone("")
	if a.Is4() {
		return a
	}
	p, _ := a.Prefix(64)
	return p.Addr()
}

// addrGroup renders a grouped address the way people read it.
func addrGroup(a netip.Addr) string {
	switch {
	case !a.IsValid():
		return "unknown-address"
	case a.Is4():
		return a.String()
	}
	return netip.PrefixFrom(a, 64).String()
}
