package access

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrUnavailable is wrapped by the errors of a RedisStore that cannot reach
// Redis. The server answers 503 access_unavailable with Retry-After: a
// lookup it cannot count is neither free nor a failure of the server.
var ErrUnavailable = errors.New("access store is unreachable")

// Redis layout. Every name starts with redisPrefix, so one Redis (or one
// database of it) can hold other data beside kwdata's. Counter names are
// the embedded store's counter keys (see dbKey), e.g.
// "kwdata:anon/2026-11-22/203.0.113.7", "kwdata:key/2026-11/<id>".
const (
	redisPrefix     = "kwdata:"
	redisRecord     = redisPrefix + "k:"      // k:<hex SHA-256 of the key> -> JSON storedKey
	redisID         = redisPrefix + "i:"      // i:<id> -> hex hash of the id's key
	redisMailbox    = redisPrefix + "e:"      // e:<FoldEmail(email)> -> id of the mailbox's active key
	redisUsed       = redisPrefix + "used:"   // used:<id> -> unix ms of the last admitted lookup
	redisList       = redisPrefix + "keys"    // sorted set of hex hashes, scored by creation order
	redisSeq        = redisPrefix + "seq"     // last creation order given
	redisVersion    = redisPrefix + "version" // bumped by every change of a key record
	redisChannel    = redisPrefix + "keys"    // pub/sub: hex hash of a changed record, or "*"
	redisAllChanged = "*"

	// The rest of the account database is named by redisName from the
	// embedded store's keys: pending sign-up codes (kwdata:c:<mailbox> ->
	// JSON pendingCode), billing links (kwdata:u:<customer id> and
	// kwdata:s:<subscription id> -> account id) and applied billing events
	// (kwdata:x:<event id> -> when it was applied).
)

// redisMonthKeep is how long a monthly counter is kept after its month
// ends: the usage history, bounded. Day counters are kept one day past
// their window, as the embedded store keeps yesterday.
const redisMonthKeep = 400 * 24 * time.Hour

// negativeCacheMax bounds the remembered unknown keys, which anyone can
// make up; past it the set starts over.
const negativeCacheMax = 1 << 16

// admitScript reserves ARGV[1] lookups on counter KEYS[1] in one atomic
// step: the check and the count cannot be split by another server. It
// returns {1, taken} when admitted (taken counts every reservation in
// flight, on any server) and {0, taken} when the allowance (ARGV[2]) cannot
// cover n, leaving the counter as it was. The counter expires at ARGV[3]
// (unix ms). For a key's counter KEYS[2] keeps the latest admission time
// (ARGV[4], unix ms).
var admitScript = redis.NewScript(`
local n = tonumber(ARGV[1])
local taken = redis.call('INCRBY', KEYS[1], n)
if redis.call('PTTL', KEYS[1]) < 0 then
  redis.call('PEXPIREAT', KEYS[1], ARGV[3])
end
if taken > tonumber(ARGV[2]) then
  redis.call('DECRBY', KEYS[1], n)
  return {0, taken - n}
end
if KEYS[2] ~= KEYS[1] then
  local last = tonumber(redis.call('GET', KEYS[2]) or '0')
  if tonumber(ARGV[4]) > last then
    redis.call('SET', KEYS[2], ARGV[4])
  end
end
return {1, taken}
`)

// addScript adds ARGV[1] to counter KEYS[1] (expiring at ARGV[2], unix
// ms) and raises KEYS[2] to ARGV[3]: the paid lookups a server flushes.
var addScript = redis.NewScript(`
redis.call('INCRBY', KEYS[1], ARGV[1])
if redis.call('PTTL', KEYS[1]) < 0 then
  redis.call('PEXPIREAT', KEYS[1], ARGV[2])
end
local last = tonumber(redis.call('GET', KEYS[2]) or '0')
if tonumber(ARGV[3]) > last then
  redis.call('SET', KEYS[2], ARGV[3])
end
return 1
`)

// RedisOptions says how to reach Redis (or Valkey).
type RedisOptions struct {
	// URL is redis://[user:password@]host:port/db or rediss:// for TLS.
	// Required.
	URL string
	// Password, if not empty, replaces the URL's, so that it need not
	// appear on a command line.
	Password string
	// Timeout bounds each command and each dial. A counted request waits
	// at most this long for an unreachable Redis before its 503. Default
	// 1s.
	Timeout time.Duration
}

// RedisStore counts lookups and keeps API keys in Redis, so that several
// servers share one allowance per client and one set of keys. It counts
// exactly: the check and the count of a reservation are one Lua script.
// It satisfies what the server needs of the embedded Store (Admit, Ready,
// Close) and what `kwdata keys` needs of Keys.
//
// A counted request (anonymous or registered) costs one round trip, the
// admission script; a Commit that counts less than it reserved costs a
// second one to give the rest back. A paid key costs none once its record
// is cached: its lookups are added up in memory and flushed every
// Options.FlushInterval. Key records are cached in each server and
// dropped within milliseconds of a change, which is published on a Redis
// channel; a version number read on every (re)subscription catches the
// changes made while the subscription was down.
type RedisStore struct {
	opt     Options
	log     *slog.Logger
	rdb     *redis.Client
	ps      *redis.PubSub
	timeout time.Duration

	cacheMu sync.RWMutex
	known   map[keyHash]KeyRecord // records of keys seen; under cacheMu
	readAt  map[keyHash]int64     // the version key when each known record was read; under cacheMu
	unknown map[keyHash]struct{}  // well-formed keys Redis does not know; under cacheMu
	gen     uint64                // bumped by every invalidation; under cacheMu
	// lastAt is the version key the latest single-key invalidation saw,
	// and blindGen the gen of the latest one that saw none (a "*", a
	// failed read, a resubscribe that emptied the cache); under cacheMu.
	// A read that an invalidation overtook keeps its record when it was
	// read at lastAt or later and no blind invalidation came since.
	lastAt   int64
	blindGen uint64
	version  int64 // value of redisVersion the cache follows; under cacheMu
	// highest is the highest value of redisVersion any read saw, and
	// runID the run id of the Redis process the cache was filled from;
	// under cacheMu. The version only grows, so a read below highest, or
	// another run id, means Redis was restored from an older backup or
	// lost its data: the whole cache goes (see wentBack).
	highest int64
	runID   string
	// recheck: a subscription's version read failed; the next ping that
	// Redis answers compares the version again. Under cacheMu.
	recheck bool

	paidMu sync.Mutex
	paid   map[string]*paidCount // lookups of paid keys not yet flushed, by key id

	health    atomic.Pointer[error] // why Redis is unreachable; nil while it answers
	lastLog   atomic.Int64          // unix nanos of the last "unreachable" log line
	done      chan struct{}
	wg        sync.WaitGroup
	closed    atomic.Bool
	subscribe chan struct{} // signalled on every (re)subscription; tests wait on it
	handled   atomic.Int64  // invalidation messages handled; tests wait on it
}

type paidCount struct {
	month int32
	n     int64
	last  int64 // unix ms
}

// OpenRedis connects to Redis, checks that it answers, and starts the
// cache invalidation, the health check and the flushing of paid counts.
// Of opt it uses Now, Logger, the allowances, FlushInterval and Metrics;
// Dir is ignored.
func OpenRedis(ctx context.Context, ro RedisOptions, opt Options) (*RedisStore, error) {
	opt.fill()
	ro.fill()
	// go-redis has one logger for the process; the last store opened
	// names it.
	redis.SetLogger(redisLogger{opt.Logger})
	o, err := redis.ParseURL(ro.URL)
	if err != nil {
		return nil, fmt.Errorf("cannot parse Redis URL: %w; write redis://HOST:6379/0 or rediss://HOST:6380/0", err)
	}
	if ro.Password != "" {
		o.Password = ro.Password
	}
	o.DialTimeout, o.ReadTimeout, o.WriteTimeout = ro.Timeout, ro.Timeout, ro.Timeout
	// A retried admission whose first reply was lost would count twice:
	// a failed command is reported, never repeated.
	o.MaxRetries = -1
	o.ContextTimeoutEnabled = true
	s := &RedisStore{
		opt: opt, log: opt.Logger, rdb: redis.NewClient(o), timeout: ro.Timeout,
		known: map[keyHash]KeyRecord{}, readAt: map[keyHash]int64{}, unknown: map[keyHash]struct{}{}, version: -1,
		paid: map[string]*paidCount{}, done: make(chan struct{}), subscribe: make(chan struct{}, 1),
	}
	pctx, cancel := context.WithTimeout(ctx, ro.Timeout)
	defer cancel()
	if err := s.rdb.Ping(pctx).Err(); err != nil {
		s.rdb.Close()
		return nil, fmt.Errorf("cannot reach Redis at %s: %w", redactURL(o), err)
	}
	s.ps = s.rdb.Subscribe(context.Background(), redisChannel)
	s.wg.Add(3)
	go func() { defer s.wg.Done(); s.listen() }()
	go func() { defer s.wg.Done(); s.watchHealth() }()
	go func() { defer s.wg.Done(); s.flushLoop() }()
	return s, nil
}

// redisLogger routes go-redis's own messages (a failed dial, a lost
// pub/sub connection) into slog at Debug: the store logs what matters
// itself, once a minute, and a log of structured lines stays structured.
type redisLogger struct{ l *slog.Logger }

func (r redisLogger) Printf(ctx context.Context, format string, v ...any) {
	r.l.DebugContext(ctx, fmt.Sprintf(format, v...), "component", "redis")
}

func (ro *RedisOptions) fill() {
	if ro.Timeout <= 0 {
		ro.Timeout = time.Second
	}
}

func redactURL(o *redis.Options) string { return fmt.Sprintf("%s/%d", o.Addr, o.DB) }

// listen applies the invalidations published on redisChannel. go-redis
// resubscribes by itself after a lost connection; every subscription
// confirmation compares the version key, so a change whose message was
// lost meanwhile still empties the cache.
func (s *RedisStore) listen() {
	for {
		msg, err := s.ps.Receive(context.Background())
		if err != nil {
			if s.closed.Load() {
				return
			}
			// Receive reconnects on the next call; don't spin on a dead
			// Redis.
			select {
			case <-s.done:
				return
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				s.checkVersion()
				select {
				case s.subscribe <- struct{}{}:
				default:
				}
			}
		case *redis.Message:
			s.invalidate(m.Payload)
		}
	}
}

// checkVersion drops the cached records that may be stale when the version
// key has moved since the cache last followed it, and every record when
// the version went back or Redis is another process (a restart: its data
// may be an older backup, or none).
func (s *RedisStore) checkVersion() {
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	var ver *redis.StringCmd
	var info *redis.StringCmd
	// Each command's own error is read below.
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		ver = p.Get(ctx, redisVersion)
		info = p.Info(ctx, "server")
		return nil
	})
	v, err := versionOf(ver)
	if err == nil && info.Err() != nil {
		// A managed Redis may refuse INFO; the version alone still
		// tells a restore or a loss of data.
		s.log.Debug("cannot read the Redis run id; comparing the key version only", "err", info.Err())
	}
	if err != nil {
		// Redis went away again just after the subscription (it is being
		// stopped, say): keep the cache, which serves the paid keys while
		// Redis is down, and compare once Redis answers.
		s.log.Warn("cannot read the key version after subscribing; comparing it when Redis answers", "err", err)
		s.cacheMu.Lock()
		s.recheck = true
		s.cacheMu.Unlock()
		return
	}
	s.cacheMu.Lock()
	s.recheck = false
	id := runIDOf(info.Val())
	restarted := id != "" && s.runID != "" && id != s.runID
	if id != "" {
		s.runID = id
	}
	switch {
	case restarted:
		s.dropAll(v, "Redis restarted (its run id changed)")
	case s.wentBack(v):
	case v != s.version:
		// A record read at v or later saw every change up to v; any other
		// may have missed one whose message was lost.
		for h, at := range s.readAt {
			if at < v {
				delete(s.known, h)
				delete(s.readAt, h)
			}
		}
		clear(s.unknown)
		s.gen++
		s.blindGen = s.gen
		s.version = v
	}
	s.cacheMu.Unlock()
}

// versionOf reads the reply to a GET of redisVersion: 0 when Redis has
// none (INCR counts from 0).
func versionOf(cmd *redis.StringCmd) (int64, error) {
	v, err := cmd.Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	return v, err
}

// runIDOf finds the run_id line of an INFO server reply; "" when there is
// none.
func runIDOf(info string) string {
	for line := range strings.Lines(info) {
		if id, ok := strings.CutPrefix(line, "run_id:"); ok {
			return strings.TrimSpace(id)
		}
	}
	return ""
}

// wentBack notes that v was read from redisVersion. When v is below the
// highest value read before, the data changed under the cache without
// its changes (a restore from an older backup, an empty restart), so no
// cached record can be trusted, whatever version it was read at: they
// all go, and v becomes the highest. It reports whether that happened.
// The caller holds cacheMu.
func (s *RedisStore) wentBack(v int64) bool {
	if v >= s.highest {
		s.highest = v
		return false
	}
	s.dropAll(v, fmt.Sprintf("the key version went back from %d to %d (Redis restored from an older backup, or its data lost)", s.highest, v))
	return true
}

// dropAll empties the cache because of why, with the version key at v:
// every key is read from Redis again on its next use, and reads in flight
// are not kept. The caller holds cacheMu.
func (s *RedisStore) dropAll(v int64, why string) {
	s.log.Warn("dropped every cached key; each is read from Redis again on its next use", "why", why, "keys", len(s.known))
	clear(s.known)
	clear(s.readAt)
	clear(s.unknown)
	s.gen++
	s.blindGen = s.gen
	// The cache is empty, so it follows v: whatever it reads from now
	// on was read at v or later.
	s.highest, s.lastAt, s.version = v, v, v
}

// invalidate drops the cached record of one key (its hex hash), or of
// every key ("*"). A record read when the version key already stood where
// it stands now was read after the change the message is about (a change
// bumps the version before it publishes), so it is kept: a message that
// arrives after a server read the new record must not leave that server
// without it, for the record is what serves a paid key while Redis is
// down.
func (s *RedisStore) invalidate(payload string) {
	defer s.handled.Add(1)
	now := int64(-1)
	if payload != redisAllChanged {
		ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
		if v, err := versionOf(s.rdb.Get(ctx, redisVersion)); err == nil {
			now = v
		}
		cancel()
	}
	s.cacheMu.Lock()
	defer s.cacheMu.Unlock()
	if now >= 0 && s.wentBack(now) {
		return
	}
	s.gen++
	if payload == redisAllChanged || now < 0 {
		s.blindGen = s.gen
	} else {
		s.lastAt = now
	}
	if payload == redisAllChanged {
		clear(s.known)
		clear(s.readAt)
		clear(s.unknown)
		return
	}
	var h keyHash
	if b, err := hex.DecodeString(payload); err == nil && len(b) == len(h) {
		copy(h[:], b)
		if at, ok := s.readAt[h]; ok && now >= 0 && at >= now {
			return
		}
		delete(s.known, h)
		delete(s.readAt, h)
		delete(s.unknown, h)
	}
}

// watchHealth reads the version key every healthInterval, for Ready, and
// to notice a version that went back without a message: a restore done in
// place after which no key changed yet.
func (s *RedisStore) watchHealth() {
	t := time.NewTicker(healthInterval)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
		}
		s.cacheMu.RLock()
		gen := s.gen
		s.cacheMu.RUnlock()
		ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
		v, err := versionOf(s.rdb.Get(ctx, redisVersion))
		cancel()
		if err != nil {
			s.failed(err)
			continue
		}
		if s.health.Swap(nil) != nil {
			s.log.Info("Redis answers again; counted lookups are served")
		}
		s.cacheMu.Lock()
		if s.gen == gen {
			s.wentBack(v)
		}
		recheck := s.recheck
		s.cacheMu.Unlock()
		if recheck {
			s.checkVersion()
		}
	}
}

// healthInterval is how often Ready's view of Redis is refreshed.
const healthInterval = 500 * time.Millisecond

// failed records that Redis did not answer, and logs it at most once per
// folderLogGap.
func (s *RedisStore) failed(err error) {
	err = fmt.Errorf("%w: %w", ErrUnavailable, err)
	s.health.Store(&err)
	now := time.Now().UnixNano()
	if last := s.lastLog.Load(); now-last >= int64(folderLogGap) && s.lastLog.CompareAndSwap(last, now) {
		s.log.Error("Redis does not answer: counted lookups get 503 access_unavailable, paid keys already known are served (logged at most once a minute)", "err", err)
	}
}

// unavailable wraps a failed Redis command for the server.
func (s *RedisStore) unavailable(what string, err error) error {
	if errors.Is(err, context.Canceled) {
		return err
	}
	s.failed(err)
	return fmt.Errorf("cannot %s: %w: %w", what, ErrUnavailable, err)
}

// Ready returns an error (wrapping ErrUnavailable) while Redis does not
// answer, so that GET /readyz sends clients to a server that can count.
func (s *RedisStore) Ready() error {
	if s.closed.Load() {
		return ErrClosed
	}
	if p := s.health.Load(); p != nil {
		return *p
	}
	return nil
}

// Identify returns who a request with apiKey (may be empty) from client
// counts against; see Store.Identify. A key seen before is answered from
// the cache, also while Redis is unreachable; any other needs Redis.
func (s *RedisStore) Identify(ctx context.Context, apiKey string, client netip.Addr) (Caller, error) {
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
	rec, ok, err := s.lookup(ctx, hashKey(apiKey))
	if err != nil {
		return Caller{}, err
	}
	if !ok || rec.IsRevoked() {
		return Caller{}, ErrInvalidKey
	}
	c.Tier, c.KeyID = rec.ActiveTier(s.opt.Now()), rec.ID
	return c, nil
}

// lookup returns the record of a key hash, from the cache or Redis.
func (s *RedisStore) lookup(ctx context.Context, h keyHash) (KeyRecord, bool, error) {
	s.cacheMu.RLock()
	rec, ok := s.known[h]
	_, no := s.unknown[h]
	gen := s.gen
	s.cacheMu.RUnlock()
	if ok || no {
		return rec, ok, nil
	}
	sk, ok, at, err := s.getAt(ctx, hex.EncodeToString(h[:]))
	if err != nil {
		return KeyRecord{}, false, s.unavailable("look up the API key", err)
	}
	s.cacheMu.Lock()
	if s.gen == gen {
		// A read that nothing overtook tells whether the version went
		// back; an older one may predate a restore.
		s.wentBack(max(at, 0))
	}
	if s.fresh(gen, at) {
		if ok {
			s.known[h], s.readAt[h] = sk.record(), at
		} else {
			if len(s.unknown) >= negativeCacheMax {
				clear(s.unknown)
			}
			s.unknown[h] = struct{}{}
		}
	}
	s.cacheMu.Unlock()
	return sk.record(), ok, nil
}

// fresh reports whether a record read at version at, when the cache stood
// at gen, may be kept. An invalidation that arrived during the read may
// concern the record; it does not when the record was read at the version
// that invalidation saw or later (the rule of invalidate), which is the
// common case of a key's creation message reaching a server while it
// reads the new key: dropping that read would leave a paid key unknown
// to the server until its next lookup, and refused while Redis is down.
// The caller holds cacheMu.
func (s *RedisStore) fresh(gen uint64, at int64) bool {
	if s.gen == gen {
		return true
	}
	return s.blindGen <= gen && at >= 0 && at >= s.lastAt
}

// getAt reads one record by its hex hash, and the version key in the same
// transaction (-1 when it has none).
func (s *RedisStore) getAt(ctx context.Context, hexHash string) (storedKey, bool, int64, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var rec *redis.StringCmd
	var ver *redis.StringCmd
	if _, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		rec = p.Get(ctx, redisRecord+hexHash)
		ver = p.Get(ctx, redisVersion)
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return storedKey{}, false, 0, err
	}
	at, err := ver.Int64()
	if errors.Is(err, redis.Nil) {
		at = -1
	} else if err != nil {
		return storedKey{}, false, 0, err
	}
	sk, ok, err := storedReply(rec, hexHash)
	if err != nil {
		return storedKey{}, false, 0, err
	}
	return sk, ok, at, nil
}

// get reads one record by its hex hash.
func (s *RedisStore) get(ctx context.Context, hexHash string) (storedKey, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	return storedReply(s.rdb.Get(ctx, redisRecord+hexHash), hexHash)
}

// storedReply decodes the reply to a GET of record hexHash: the record, and
// false when Redis has none.
func storedReply(cmd *redis.StringCmd, hexHash string) (storedKey, bool, error) {
	v, err := cmd.Bytes()
	if errors.Is(err, redis.Nil) {
		return storedKey{}, false, nil
	}
	if err != nil {
		return storedKey{}, false, err
	}
	var sk storedKey
	if err := json.Unmarshal(v, &sk); err != nil {
		return storedKey{}, false, fmt.Errorf("cannot read account %s: %w", hexHash[:8], err)
	}
	return sk, true, nil
}

// Admit identifies the caller of r and reserves n lookups for it; see
// Store.Admit. A counted caller's reservation is one round trip to Redis;
// an unreachable Redis gives an error wrapping ErrUnavailable.
func (s *RedisStore) Admit(ctx context.Context, r *http.Request, client netip.Addr, n int) (*Reservation, error) {
	return admit(ctx, s, r, client, n)
}

// Reserve takes n lookups from c's allowance, all or none; see
// Store.Reserve.
func (s *RedisStore) Reserve(ctx context.Context, c Caller, n int) (*Reservation, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	if n < 1 {
		return nil, fmt.Errorf("cannot reserve %d lookups; reserve at least one", n)
	}
	now := s.opt.Now()
	k := ckey{}
	var limit int64
	var policy string
	switch c.Tier {
	case Anonymous:
		k.kind, k.addr, limit, policy = kindAnon, c.Addr, s.opt.AnonymousPerDay, policyDaily
	case Registered:
		if c.KeyID == "" {
			return nil, fmt.Errorf("cannot reserve for a %s caller without a key id", c.Tier)
		}
		k.kind, k.id, limit, policy = kindKey, c.KeyID, s.opt.RegisteredPerMonth, policyMonthly
	case Paid:
		if c.KeyID == "" {
			return nil, fmt.Errorf("cannot reserve for a %s caller without a key id", c.Tier)
		}
		// Unlimited: nothing to check, so nothing to ask Redis; the
		// count is flushed with the others.
		r := &Reservation{n: int64(n), now: s.opt.Now, remote: &redisTicket{s: s, paidID: c.KeyID}}
		r.lookups = s.opt.Metrics.lookupCounter(c.Tier)
		return r, nil
	default:
		return nil, fmt.Errorf("cannot reserve for unknown tier %q", c.Tier)
	}
	r, err := s.reserveCounter(ctx, k, now, n, limit, policy, "count the lookup", ErrQuotaExhausted)
	if err != nil {
		var qe *QuotaError
		if errors.As(err, &qe) {
			s.opt.Metrics.refused(c.Tier)
		}
		return nil, err
	}
	r.lookups = s.opt.Metrics.lookupCounter(c.Tier)
	return r, nil
}

// reserveCounter reserves n on the counter k (of the window of now) up to
// limit in one round trip, refusing with a *QuotaError wrapping refusal.
// what names the step in an unavailable error.
func (s *RedisStore) reserveCounter(ctx context.Context, k ckey, now time.Time, n int, limit int64, policy, what string, refusal error) (*Reservation, error) {
	k.window = k.kind.window(now)
	start, end := k.kind.bounds(k.window)
	name := redisPrefix + string(dbKey(k))
	used := name
	if k.id != "" {
		used = redisUsed + k.id
	}
	rctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	res, err := admitScript.Run(rctx, s.rdb, []string{name, used}, n, limit, expiry(k.kind, end).UnixMilli(), now.UnixMilli()).Int64Slice()
	if err != nil {
		return nil, s.unavailable(what, err)
	}
	if len(res) != 2 {
		return nil, fmt.Errorf("cannot %s: admission script answered %v", what, res)
	}
	r := &Reservation{n: int64(n), now: s.opt.Now, limited: true, end: end,
		limits: Limits{Policy: policy, Quota: limit, Window: end.Sub(start), Remaining: max(limit-res[1], 0), Reset: end.Sub(now)}}
	if res[0] != 1 {
		return nil, &QuotaError{Limits: r.limits, Requested: int64(n), RetryAfter: r.limits.Reset, err: refusal}
	}
	r.remote = &redisTicket{s: s, counter: name, taken: res[1]}
	return r, nil
}

// expiry is when the Redis counter of a window ending at end may go.
func expiry(k kind, end time.Time) time.Time {
	if k.daily() {
		return end.Add(24 * time.Hour)
	}
	return end.Add(redisMonthKeep)
}

// redisTicket is the Redis side of a Reservation.
type redisTicket struct {
	s       *RedisStore
	counter string // counter name; empty for a paid key
	taken   int64  // the counter after the reservation
	paidID  string // key id of a paid key
}

// commit counts counted (already clamped) of r's lookups.
func (t *redisTicket) commit(r *Reservation, counted int64, h http.Header) {
	if t.paidID != "" {
		if counted > 0 {
			t.s.addPaid(t.paidID, counted, r.now())
			if r.lookups != nil {
				r.lookups.Add(float64(counted))
			}
		}
		return
	}
	left := r.limits.Quota - t.taken
	if back := r.n - counted; back > 0 {
		if v, err := t.s.giveBack(t.counter, back); err == nil {
			left = r.limits.Quota - v
		} else {
			left += back
		}
	}
	if counted > 0 && r.lookups != nil {
		r.lookups.Add(float64(counted))
	}
	if h != nil {
		now := r.now()
		l := r.limits
		l.Remaining, l.Reset = max(left, 0), max(r.end.Sub(now), 0)
		l.SetHeaders(h)
	}
}

// cancel gives r's whole reservation back.
func (t *redisTicket) cancel(r *Reservation) {
	if t.paidID == "" {
		t.s.giveBack(t.counter, r.n)
	}
}

// giveBack returns n reserved lookups to a counter. It runs even when the
// request's context has ended: a reservation left in Redis would count
// lookups nobody got. If Redis cannot be reached the lookups stay
// counted: an error in the caller's disfavour, never in its favour.
func (s *RedisStore) giveBack(counter string, n int64) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	v, err := s.rdb.DecrBy(ctx, counter, n).Result()
	if err != nil {
		s.failed(err)
		s.log.Warn("cannot give back reserved lookups; they stay counted", "counter", counter, "n", n, "err", err)
	}
	return v, err
}

// addPaid notes counted lookups of a paid key for the next flush.
func (s *RedisStore) addPaid(id string, n int64, now time.Time) {
	month := kindPaid.window(now)
	s.paidMu.Lock()
	p := s.paid[id]
	if p == nil || p.month != month {
		if p != nil {
			// A month ended with lookups unflushed: flush them under
			// their own month first.
			s.paidMu.Unlock()
			s.flush()
			s.paidMu.Lock()
		}
		p = &paidCount{month: month}
		s.paid[id] = p
	}
	p.n += n
	p.last = max(p.last, now.UnixMilli())
	s.paidMu.Unlock()
}

func (s *RedisStore) flushLoop() {
	t := time.NewTicker(s.opt.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
			if err := s.flush(); err != nil {
				s.log.Warn("cannot flush paid lookups; will retry", "err", err)
			}
		}
	}
}

// flush adds the paid lookups counted since the last flush to Redis in
// one pipeline; what fails is kept for the next.
func (s *RedisStore) flush() error {
	s.paidMu.Lock()
	pending := s.paid
	s.paid = map[string]*paidCount{}
	s.paidMu.Unlock()
	if len(pending) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	pipe := s.rdb.Pipeline()
	for id, p := range pending {
		k := ckey{kind: kindPaid, window: p.month, id: id}
		_, end := kindPaid.bounds(p.month)
		addScript.EvalSha(ctx, pipe, []string{redisPrefix + string(dbKey(k)), redisUsed + id}, p.n, expiry(kindPaid, end).UnixMilli(), p.last)
	}
	// A pipeline cannot fall back from EVALSHA to EVAL; after a Redis
	// restart the script is unknown until loaded again.
	if err := addScript.Load(ctx, s.rdb).Err(); err != nil {
		s.putBack(pending)
		return err
	}
	if _, err := pipe.Exec(ctx); err != nil {
		s.putBack(pending)
		return err
	}
	return nil
}

// putBack returns counts of a failed flush to the pending ones. A
// pipeline that failed part-way may have added some: paid counts are
// usage records, not an allowance, so a rare double count is accepted.
func (s *RedisStore) putBack(pending map[string]*paidCount) {
	s.paidMu.Lock()
	defer s.paidMu.Unlock()
	for id, p := range pending {
		q := s.paid[id]
		if q == nil {
			s.paid[id] = p
			continue
		}
		if q.month == p.month {
			q.n += p.n
			q.last = max(q.last, p.last)
		}
	}
}

// Close stops the background work, flushes the paid lookups and
// disconnects. Stop serving requests first.
func (s *RedisStore) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return nil
	}
	close(s.done)
	s.ps.Close()
	s.wg.Wait()
	err := s.flush()
	if err != nil {
		err = fmt.Errorf("cannot flush paid lookups: %w", err)
	}
	return errors.Join(err, s.rdb.Close())
}

// publishChange bumps the version and tells every server to drop hexHash
// (or "*") from its cache, inside the caller's transaction.
func publishChange(ctx context.Context, p redis.Pipeliner, hexHash string) {
	p.Incr(ctx, redisVersion)
	p.Publish(ctx, redisChannel, hexHash)
}

// CreateKey issues a key; see Keys.CreateKey. Every server knows it as
// soon as this returns (unknown keys are looked up, not cached, unless a
// request asked for this very key before, and that entry is dropped by
// the published change).
func (s *RedisStore) CreateKey(ctx context.Context, tier Tier, email string, paidUntil time.Time) (string, KeyRecord, error) {
	return createKey(ctx, s, tier, email, paidUntil, email != "")
}

// RevokeKey revokes a key by id (or the key itself); every server refuses
// it within milliseconds. Revoking a revoked key does nothing.
func (s *RedisStore) RevokeKey(ctx context.Context, idOrKey string) error {
	return revokeKey(ctx, s, idOrKey)
}

// SetTier changes the tier of an active key; see Keys.SetTier.
func (s *RedisStore) SetTier(ctx context.Context, idOrKey string, tier Tier, paidUntil time.Time) error {
	if err := checkGrant(tier, paidUntil); err != nil {
		return err
	}
	return setTier(ctx, s, idOrKey, tier, paidUntil)
}

// ListKeys returns every key, oldest first, with its lookups this month
// as Redis holds them and this server counted (paid lookups of the other
// servers' last FlushInterval may be missing).
func (s *RedisStore) ListKeys(ctx context.Context) ([]KeyRecord, error) {
	hexes, err := s.rdb.ZRange(ctx, redisList, 0, -1).Result()
	if err != nil {
		return nil, s.unavailable("list the keys", err)
	}
	now := s.opt.Now()
	month := kindKey.window(now)
	recs := make([]KeyRecord, 0, len(hexes))
	const batch = 1000
	for i := 0; i < len(hexes); i += batch {
		part := hexes[i:min(i+batch, len(hexes))]
		names := make([]string, len(part))
		for j, hx := range part {
			names[j] = redisRecord + hx
		}
		vals, err := s.rdb.MGet(ctx, names...).Result()
		if err != nil {
			return nil, s.unavailable("list the keys", err)
		}
		var got []KeyRecord
		var usage []string
		for j, v := range vals {
			str, ok := v.(string)
			if !ok {
				continue
			}
			var sk storedKey
			if err := json.Unmarshal([]byte(str), &sk); err != nil {
				return nil, fmt.Errorf("cannot read account %s: %w", part[j][:8], err)
			}
			got = append(got, sk.record())
			usage = append(usage,
				redisPrefix+string(dbKey(ckey{kind: kindKey, window: month, id: sk.ID})),
				redisPrefix+string(dbKey(ckey{kind: kindPaid, window: month, id: sk.ID})),
				redisUsed+sk.ID)
		}
		if len(got) == 0 {
			continue
		}
		counts, err := s.rdb.MGet(ctx, usage...).Result()
		if err != nil {
			return nil, s.unavailable("list the keys", err)
		}
		for j := range got {
			n, ms := s.unflushed(got[j].ID, month)
			got[j].Lookups = redisInt(counts[3*j]) + redisInt(counts[3*j+1]) + n
			got[j].LookupsAsOf = now.UTC()
			if ms = max(ms, redisInt(counts[3*j+2])); ms > 0 {
				got[j].LastUsed = time.UnixMilli(ms).UTC()
			}
		}
		recs = append(recs, got...)
	}
	return recs, nil
}

func redisInt(v any) int64 {
	s, _ := v.(string)
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}
