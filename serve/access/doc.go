// Package access owns kwdata's access tiers: API keys, the allowance of each
// tier, and exact, durable counting of lookups.
//
// # Tiers
//
// An anonymous caller gets AnonymousPerDay lookups (20) per UTC day per
// client address; IPv4 addresses count one by one and IPv6 addresses by /64,
// so one host cannot multiply its allowance by rotating interface ids. A
// registered key gets RegisteredPerMonth lookups (500) per UTC calendar month.
// A paid key is unlimited until its paid-until instant and counts as
// registered afterwards. An unknown, malformed or revoked key is refused with
// ErrInvalidKey and never downgraded to anonymous.
//
// # Keys
//
// A key is "kwd_" followed by 32 characters of lower-case base32 (160 random
// bits from crypto/rand). Only its SHA-256 is stored, in the key registry
// <Dir>/keys.json, next to a random 12-character key id that operators use
// to list, revoke and re-tier keys. The registry is one JSON file replaced
// atomically (temporary file, fsync, rename) under an advisory file lock, so
// the `kwdata keys` command line and a running server can both change it. A
// running Store notices a changed registry within KeysPollInterval (250 ms);
// a key it does not know makes it look again before answering, so a newly
// created key works on its first request, and a revoked or re-tiered key
// takes effect within 250 ms. Those looks happen at most every 100 ms, so a
// flood of made-up keys costs at most ten a second; a request with an
// unknown key waits for the next one instead.
//
// # Counting
//
// Counting is a reservation: Reserve takes n lookups from the allowance
// atomically (all or nothing), Commit counts what was actually answered and
// gives back the rest, Cancel gives back everything. Counters live in memory
// in 64 mutex-guarded shards; no lock is held across I/O and no request waits
// for a disk write. A background flusher writes the counters that changed
// into a Pebble database of their own (<Dir>/counters) every FlushInterval
// (1 s) in one synced batch, and Close flushes the rest, so a clean stop
// loses nothing and a crash loses at most the last FlushInterval of counts.
// Counter keys carry their window ("anon/2026-11-22/203.0.113.7",
// "key/2026-11/<id>"), so the UTC midnight and month rollovers need no
// bookkeeping, and old day windows are deleted as days pass.
//
// Only one process may hold the counter database (Pebble locks it). That is
// the server, through Open. The command line uses OpenKeys, which touches
// only the registry; the lookups-this-period column it shows comes from
// <Dir>/usage.json, a snapshot the server rewrites after every flush that
// changed a key's count and on Close. While the server runs it is at most
// FlushInterval old; after a clean stop it is exact (KeyRecord.LookupsAsOf
// says when it was taken).
package access

import "errors"

// ErrInvalidKey is returned by Identify for a key that is malformed, unknown
// or revoked. The server answers 401.
var ErrInvalidKey = errors.New("API key is not valid; check it or request a new one")

// ErrQuotaExhausted is wrapped by the *QuotaError Reserve returns when the
// allowance cannot cover a request. The server answers 429.
var ErrQuotaExhausted = errors.New("allowance is used up")

// ErrTooManyRegistrations is wrapped by the *QuotaError Register returns when
// a client address has registered too many keys today. The server answers 429.
var ErrTooManyRegistrations = errors.New("too many registrations from this address today")

// ErrEmailTaken is returned by Register when the email already has an active
// key. The server answers 409.
var ErrEmailTaken = errors.New("email already has an active API key")

// ErrInvalidEmail is returned for an email address that is not a plain
// addr-spec such as name@example.com. The server answers 400.
var ErrInvalidEmail = errors.New("email address is not valid; pass a plain address such as name@example.com")

// ErrKeyNotFound is returned by RevokeKey and SetTier for an id that names no
// key.
var ErrKeyNotFound = errors.New("no such API key")

// ErrClosed is returned by a Store used after Close.
var ErrClosed = errors.New("access store is closed")
