package access

import (
	"log/slog"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Options configures a Store (Open) or a key registry (OpenKeys). Zero
// fields take the defaults documented on each; fill sets them in one place.
type Options struct {
	// Dir is the folder of the store, normally <data>/access. Required;
	// created if missing.
	Dir string
	// Now returns the current time; windows follow Now().UTC(). Default
	// time.Now. Tests inject a clock here.
	Now func() time.Time
	// Logger receives flush failures and account database problems. Default:
	// discard.
	Logger *slog.Logger
	// AnonymousPerDay is the anonymous allowance per client address (IPv4
	// address, IPv6 /64) per UTC day. Default 20.
	AnonymousPerDay int64
	// RegisteredPerMonth is the allowance of a registered key per UTC
	// calendar month. Default 500.
	RegisteredPerMonth int64
	// RegistrationsPerAddressPerDay is how many sign-up codes StartSignup
	// makes (and keys Register issues) for one client address per UTC
	// day. Default 3.
	RegistrationsPerAddressPerDay int64
	// RegistrationsPerNetworkPerDay is how many sign-up codes StartSignup
	// makes (and keys Register issues) for all the /64s of one IPv6 /48
	// per UTC day, so that a client holding a /48 (65,536 /64s) cannot
	// multiply the per-address allowance. Default 10.
	RegistrationsPerNetworkPerDay int64
	// SigninsPerAddressPerDay is how many sign-in codes StartSignin
	// makes for mailboxes that already have an account, for one client
	// address (IPv6 by /64) per UTC day. A code for a new mailbox is a
	// registration and takes from RegistrationsPerAddressPerDay instead.
	// Default 20.
	SigninsPerAddressPerDay int64
	// OAuthClientsPerAddressPerDay is how many OAuth clients one client
	// address (IPv6 by /64) may register per UTC day (see ForOAuth).
	// Default 20.
	OAuthClientsPerAddressPerDay int64
	// FlushInterval is how often changed counters are written to disk, and
	// so the most counting a crash can lose. Default 1s.
	FlushInterval time.Duration
	// Metrics, if set, counts committed lookups and quota refusals by tier
	// (see NewMetrics). Default: nil, which counts nothing.
	Metrics *Metrics

	// fs is the file system of the counter database; tests use a crashable
	// in-memory one. Default vfs.Default.
	fs vfs.FS
}

func (o *Options) fill() {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.AnonymousPerDay <= 0 {
		o.AnonymousPerDay = 20
	}
	if o.RegisteredPerMonth <= 0 {
		o.RegisteredPerMonth = 500
	}
	if o.RegistrationsPerAddressPerDay <= 0 {
		o.RegistrationsPerAddressPerDay = 3
	}
	if o.RegistrationsPerNetworkPerDay <= 0 {
		o.RegistrationsPerNetworkPerDay = 10
	}
	if o.SigninsPerAddressPerDay <= 0 {
		o.SigninsPerAddressPerDay = 20
	}
	if o.OAuthClientsPerAddressPerDay <= 0 {
		o.OAuthClientsPerAddressPerDay = 20
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = time.Second
	}
	if o.fs == nil {
		o.fs = vfs.Default
	}
}
