package access

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// nShards spreads counters over independent mutexes so that callers on
// different addresses and keys rarely meet.
const nShards = 64

// ckey names one counter: what it counts, for whom, in which window.
type ckey struct {
	kind   kind
	window int32
	addr   netip.Addr // kindAnon, kindReg, kindSignin, kindClient: grouped client address; kindRegNet: its /48
	id     string     // kindKey, kindPaid: key id
}

// counter is the in-memory state of one counter. used is what has been
// counted (and what is written to disk); reserved is held by reservations
// in flight.
type counter struct {
	key      ckey
	used     int64
	reserved int64
	lastUsed int64 // unix nanos of the last counted lookup; key kinds only
	dirty    bool  // used changed since the last flush
}

type shard struct {
	mu    sync.Mutex
	m     map[ckey]*counter
	dirty []*counter
	_     [64]byte // keep neighbouring shards' mutexes off one cache line
}

func (s *Store) shard(k ckey) *shard {
	return &s.shards[maphash.Comparable(s.seed, k)%nShards]
}

// dbKey encodes a counter key: kind prefix, window, subject, e.g.
// "anon/2026-11-22/203.0.113.7", "anon/2026-11-22/2001:db8:1:2::" (a /64),
// "key/2026-11/abcdefgh2345". Window first, so one window's counters are
// contiguous and expired windows go in one range deletion.
func dbKey(k ckey) []byte {
	subject := k.id
	if k.kind.byAddr() {
		subject = "-"
		if k.addr.IsValid() {
			subject = k.addr.String()
		}
	}
	return []byte(k.kind.prefix() + k.kind.windowName(k.window) + "/" + subject)
}

// parseDBKey is the inverse of dbKey.
func parseDBKey(b []byte) (ckey, bool) {
	s := string(b)
	for _, kd := range []kind{kindAnon, kindKey, kindPaid, kindReg, kindRegNet, kindSignin, kindClient} {
		rest, ok := strings.CutPrefix(s, kd.prefix())
		if !ok {
			continue
		}
		win, subject, ok := strings.Cut(rest, "/")
		if !ok || subject == "" {
			return ckey{}, false
		}
		w, ok := kd.parseWindow(win)
		if !ok {
			return ckey{}, false
		}
		k := ckey{kind: kd, window: w}
		if kd == kindKey || kd == kindPaid {
			k.id = subject
			return k, true
		}
		if subject != "-" {
			a, err := netip.ParseAddr(subject)
			if err != nil {
				return ckey{}, false
			}
			k.addr = a
		}
		return k, true
	}
	return ckey{}, false
}

const usedPrefix = "used/" // used/<key id> -> unix nanos of the last lookup

func encodeInt(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

func decodeInt(b []byte) (int64, bool) {
	if len(b) != 8 {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(b)), true
}

// Identify finds who a request counts against. An empty apiKey is an
// anonymous caller, counted on GroupAddr(client). A malformed, unknown or
// revoked key is ErrInvalidKey, never anonymous. A paid key whose
// subscription has lapsed is Registered.
func (s *Store) Identify(ctx context.Context, apiKey string, client netip.Addr) (Caller, error) {
	if s.closed.Load() {
		return Caller{}, ErrClosed
	}
	c := Caller{Tier: Anonymous, Addr: GroupAddr(client)}
	if apiKey == "" {
		return c, nil
	}
	if !wellFormed(apiKey) {
		return Caller{}, ErrInvalidKey
	}
	rec, ok := s.keys.lookup(apiKey)
	if !ok || rec.IsRevoked() {
		return Caller{}, ErrInvalidKey
	}
	c.Tier, c.KeyID = rec.ActiveTier(s.opt.Now()), rec.ID
	return c, nil
}

// RequestKey returns the API key a request carries, from
// "Authorization: Bearer <key>" or else "X-API-Key". present reports that
// the request carries a credential at all: a present but empty or
// non-Bearer one must be refused as an invalid key, not served anonymously.
func RequestKey(r *http.Request) (key string, present bool) {
	if v := r.Header.Values("Authorization"); len(v) > 0 {
		scheme, token, _ := strings.Cut(strings.TrimSpace(v[0]), " ")
		if !strings.EqualFold(scheme, "Bearer") {
			return "", true
		}
		return strings.TrimSpace(token), true
	}
	if v := r.Header.Values("X-API-Key"); len(v) > 0 {
		return strings.TrimSpace(v[0]), true
	}
	return "", false
}

// Admit identifies the caller of r (see RequestKey and Identify) and
// reserves n lookups for it: the whole counted path in one call. n == 0
// only authenticates: an unknown key is still ErrInvalidKey, but no
// allowance is consulted and the Reservation returned is already ended, so
// a request with nothing to count gets its 401 and never a 429.
func (s *Store) Admit(ctx context.Context, r *http.Request, client netip.Addr, n int) (*Reservation, error) {
	return admit(ctx, s, r, client, n)
}

// reserver is what admit needs of a store: both stores identify callers
// and reserve lookups their own way, and admit the same way.
type reserver interface {
	Identify(ctx context.Context, apiKey string, client netip.Addr) (Caller, error)
	Reserve(ctx context.Context, c Caller, n int) (*Reservation, error)
}

// admit is Admit of either store.
func admit(ctx context.Context, s reserver, r *http.Request, client netip.Addr, n int) (*Reservation, error) {
	key, present := RequestKey(r)
	if present && key == "" {
		return nil, ErrInvalidKey
	}
	c, err := s.Identify(ctx, key, client)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		res := &Reservation{}
		res.done.Store(true)
		return res, nil
	}
	return s.Reserve(ctx, c, n)
}

// Reserve takes n lookups from c's allowance, all or none. When the
// allowance cannot cover all n it returns a *QuotaError (wrapping
// ErrQuotaExhausted) and reserves nothing. Paid callers are never refused.
// The caller must end every Reservation with Commit or Cancel; one left
// open holds its lookups until the process exits.
func (s *Store) Reserve(ctx context.Context, c Caller, n int) (*Reservation, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	if n < 1 {
		return nil, fmt.Errorf("cannot reserve %d lookups; reserve at least one", n)
	}
	k := ckey{}
	limit, policy := int64(-1), ""
	switch c.Tier {
	case Anonymous:
		k.kind, k.addr = kindAnon, c.Addr
		limit, policy = s.opt.AnonymousPerDay, policyDaily
	case Registered, Paid:
		if c.KeyID == "" {
			return nil, fmt.Errorf("cannot reserve for a %s caller without a key id", c.Tier)
		}
		k.kind, k.id = kindKey, c.KeyID
		limit, policy = s.opt.RegisteredPerMonth, policyMonthly
		if c.Tier == Paid {
			k.kind, limit = kindPaid, -1
		}
	default:
		return nil, fmt.Errorf("cannot reserve for unknown tier %q", c.Tier)
	}
	r, err := s.reserve(k, s.opt.Now(), int64(n), limit, policy, ErrQuotaExhausted)
	if err != nil {
		s.opt.Metrics.refused(c.Tier)
		return nil, err
	}
	r.lookups = s.opt.Metrics.lookupCounter(c.Tier)
	return r, nil
}

// reserve is the counted path. limit < 0 means unlimited.
func (s *Store) reserve(k ckey, now time.Time, n, limit int64, policy string, refusal error) (*Reservation, error) {
	k.window = k.kind.window(now)
	sh := s.shard(k)
	sh.mu.Lock()
	c := sh.m[k]
	if c == nil {
		c = &counter{key: k}
		sh.m[k] = c
	}
	taken := c.used + c.reserved
	ok := limit < 0 || taken+n <= limit
	if ok {
		c.reserved += n
		taken += n
	}
	sh.mu.Unlock()

	r := &Reservation{sh: sh, c: c, n: n, now: s.opt.Now}
	if limit >= 0 {
		start, end := k.kind.bounds(k.window)
		r.limits = Limits{Policy: policy, Quota: limit, Window: end.Sub(start), Remaining: max(limit-taken, 0), Reset: end.Sub(now)}
		r.limited, r.end = true, end
	}
	if !ok {
		return nil, &QuotaError{Limits: r.limits, Requested: n, RetryAfter: r.limits.Reset, err: refusal}
	}
	return r, nil
}

// Reservation is lookups taken from an allowance for one request, not yet
// counted. End it with Commit (what was answered) or Cancel (nothing was);
// after either, further calls do nothing, so `defer r.Cancel()` is safe.
// Its method set matches the server's Ticket interface.
type Reservation struct {
	sh      *shard
	c       *counter
	n       int64
	now     func() time.Time
	limits  Limits
	limited bool
	end     time.Time // end of the counter's window
	done    atomic.Bool
	// lookups counts committed lookups for the server's metrics; nil when
	// the store has no Metrics.
	lookups prometheus.Counter
	// remote is set for a reservation of a RedisStore, which has no
	// shard or counter in memory.
	remote *redisTicket
}

// Commit counts counted lookups (clamped to 0..n; a lookup counts when it
// was answered 200 or 404), gives the rest of the reservation back, and,
// when h is not nil, sets the RateLimit-Policy and RateLimit fields on h
// with what remains after counting (none for paid callers). Call it before
// the response is written.
func (r *Reservation) Commit(counted int, h http.Header) {
	if r == nil || !r.done.CompareAndSwap(false, true) {
		return
	}
	n := min(max(int64(counted), 0), r.n)
	if r.remote != nil {
		r.remote.commit(r, n, h)
		return
	}
	var now time.Time
	if r.limited || (n > 0 && (r.c.key.kind == kindKey || r.c.key.kind == kindPaid)) {
		now = r.now()
	}
	r.sh.mu.Lock()
	r.c.reserved -= r.n
	if n > 0 {
		r.c.used += n
		r.c.lastUsed = max(r.c.lastUsed, now.UnixNano())
		if !r.c.dirty {
			r.c.dirty = true
			r.sh.dirty = append(r.sh.dirty, r.c)
		}
	}
	left := r.limits.Quota - r.c.used - r.c.reserved
	r.sh.mu.Unlock()
	if n > 0 && r.lookups != nil {
		r.lookups.Add(float64(n))
	}
	if h != nil && r.limited {
		l := r.limits
		l.Remaining, l.Reset = max(left, 0), max(r.end.Sub(now), 0)
		l.SetHeaders(h)
	}
}

// Cancel gives the whole reservation back; nothing is counted.
func (r *Reservation) Cancel() {
	if r == nil || !r.done.CompareAndSwap(false, true) {
		return
	}
	if r.remote != nil {
		r.remote.cancel(r)
		return
	}
	r.sh.mu.Lock()
	r.c.reserved -= r.n
	r.sh.mu.Unlock()
}

// Limits describes the allowance the reservation is charged to as it stood
// when it was made, with Remaining as if all n lookups are counted; ok is
// false for paid callers, whose responses carry no RateLimit fields.
func (r *Reservation) Limits() (l Limits, ok bool) { return r.limits, r.limited }
