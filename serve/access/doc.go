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
// bits from crypto/rand). Only its SHA-256 is stored, in the account
// database <Dir>/accounts (Pebble), next to a random 12-character key id
// that operators use to list, revoke and re-tier keys, and an index of the
// mailbox (FoldEmail) that holds each active key. Every change is one
// synced batch. The server holds the database for its lifetime and
// answers the command line on a Unix socket, <Dir>/admin.sock (mode
// 0600): OpenKeys finds a server there and sends it each change, so a key
// created, re-tiered or revoked works on the server before `kwdata keys`
// returns. With no server running, OpenKeys opens the database itself.
// The server keeps the records of keys it has seen in memory; being the
// only writer, it updates them with every write, and a key it has not
// seen costs one database read (a Bloom filter answers made-up keys).
// A <Dir>/keys.json of an older kwdata is imported on the first open, in
// one batch, and renamed keys.json.migrated.
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
// the server, through Open. Through the admin socket the command line
// lists live counts; with no server running, the lookups-this-period
// column comes from <Dir>/usage.json, a snapshot the server rewrites after
// every flush that changed a key's count and on Close, exact after a clean
// stop (KeyRecord.LookupsAsOf says when it was taken).
//
// # Several servers
//
// RedisStore keeps the same keys and counters in one Redis (or Valkey)
// shared by several servers, for Admit and Ready as the server needs them
// and for key management as `kwdata keys` needs it. A Lua script
// checks and reserves each counted request in one atomic step, so the
// allowances are exact across servers; key records are cached in each
// server and dropped when a change is published on a Redis channel (a
// version key catches messages lost while disconnected); paid lookups are
// counted in memory and flushed every FlushInterval. An unreachable Redis
// is ErrUnavailable. MigrateToRedis copies an embedded store into one.
//
// # Sign-in, sessions and OAuth
//
// People sign in with the email code of sign-up (StartSignin,
// VerifySignin), which never changes an account's key; the browser then
// holds a session (NewSession, Session, EndSession), and agents hold OAuth
// tokens (ForOAuth, an oauth.Store). Both name the account by its id, and
// AdmitAccount counts their lookups on the account's own allowance, as
// its key would. Session ids, codes and tokens are 256 random bits, stored
// only as SHA-256 in the account database beside the accounts, each entry
// with an end of life (accountExpiry): Redis expires it (PEXPIREAT), the
// embedded store sweeps it daily, and every read checks it.
//
// # Account rules, once
//
// The rules of keys and accounts (create, revoke, set-tier, sign-up
// codes, rotation, billing events) are written once, on a txn over kvTx:
// get, set and delete of byte values in the account database's layout,
// applied all at once or not at all. The embedded Store's kvTx is a Pebble
// batch; the RedisStore's an optimistic transaction (WATCH what is read,
// MULTI/EXEC what is written, run again when another server got in
// first), so pending codes, billing links and applied events are shared
// by every server and each applies once.
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

// ErrEmailTaken is returned by Register when the email's mailbox (see
// FoldEmail) already has an active key. The server answers 409.
var ErrEmailTaken = errors.New("email already has an active API key")

// ErrInvalidEmail is returned for an email address that is not a plain
// addr-spec such as name@example.com. The server answers 400.
var ErrInvalidEmail = errors.New("email address is not valid; pass a plain address such as name@example.com")

// ErrKeyNotFound is returned by RevokeKey and SetTier for an id that names no
// key.
var ErrKeyNotFound = errors.New("no such API key")

// ErrClosed is returned by a Store used after Close.
var ErrClosed = errors.New("access store is closed")
