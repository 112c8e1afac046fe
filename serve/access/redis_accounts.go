package access

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Sign-up, key rotation, billing and the account page on Redis: the rules
// of signup.go and billing.go, run on a redisTx instead of a Pebble batch,
// so that every server sees the same pending codes, billing links and
// applied events.

// redisTxAttempts bounds the reruns of a transaction that lost a race:
// each loss means another server changed what it read, and a handful of
// servers racing for one mailbox or account is the most there is.
const redisTxAttempts = 10

// redisName maps a key of the account database layout (see hashPrefix,
// codePrefix, customerPrefix) to its Redis name: "c/<mailbox>" is
// "kwdata:c:<mailbox>", and a record's binary hash is written in hex.
func redisName(key string) string {
	if rest, ok := strings.CutPrefix(key, hashPrefix); ok {
		return redisRecord + hex.EncodeToString([]byte(rest))
	}
	if len(key) >= 2 && key[1] == '/' {
		return redisPrefix + key[:1] + ":" + key[2:]
	}
	return redisPrefix + key
}

// redisTx is the RedisStore's kvTx: an optimistic transaction. Every key
// read is WATCHed first; writes are buffered (and read back from the
// buffer) and applied in one MULTI/EXEC, which Redis refuses when another
// client changed a watched key since, so the rules run again on what is
// there now.
type redisTx struct {
	s      *RedisStore
	ctx    context.Context
	tx     *redis.Tx
	writes map[string]redisWrite
	order  []string // keys of writes, first write first
	keys   map[keyHash]*storedKey
	hashes []keyHash // keys of keys, first change first
}

type redisWrite struct {
	v     []byte
	del   bool
	until time.Time // when the entry expires; zero: never
}

func (x *redisTx) get(key string) ([]byte, bool, error) {
	if w, ok := x.writes[key]; ok {
		return w.v, !w.del, nil
	}
	name := redisName(key)
	if err := x.tx.Watch(x.ctx, name).Err(); err != nil {
		return nil, false, x.s.unavailable("read the account", err)
	}
	v, err := x.tx.Get(x.ctx, name).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, x.s.unavailable("read the account", err)
	}
	if strings.HasPrefix(key, idPrefix) {
		// Redis keeps an id's hash in hex, as CreateKey writes it.
		if v, err = hex.DecodeString(string(v)); err != nil {
			return nil, false, fmt.Errorf("cannot read %s: %w", name, err)
		}
	}
	return v, true, nil
}

func (x *redisTx) write(key string, w redisWrite) {
	if _, ok := x.writes[key]; !ok {
		x.order = append(x.order, key)
	}
	x.writes[key] = w
}

func (x *redisTx) set(key string, v []byte) error {
	x.write(key, redisWrite{v: v})
	return nil
}

func (x *redisTx) del(key string) error {
	x.write(key, redisWrite{del: true})
	return nil
}

// expireAt gives the entry key, written in this transaction, its end of
// life.
func (x *redisTx) expireAt(key string, at time.Time) {
	if w, ok := x.writes[key]; ok && !w.del {
		w.until = at
		x.writes[key] = w
	}
}

func (x *redisTx) keyChanged(h keyHash, sk *storedKey) {
	if _, ok := x.keys[h]; !ok {
		x.hashes = append(x.hashes, h)
	}
	x.keys[h] = sk
}

// nextSeq takes the next creation order outside the transaction: one a
// lost race leaves unused is a gap, harmless for ordering.
func (x *redisTx) nextSeq() (uint64, error) {
	seq, err := x.tx.Incr(x.ctx, redisSeq).Uint64()
	if err != nil {
		return 0, x.s.unavailable("number the key", err)
	}
	return seq, nil
}

// commit applies the buffered writes in one MULTI/EXEC, with the key list
// and the published invalidation of every changed record. It returns
// redis.TxFailedErr when a watched key changed.
func (x *redisTx) commit() error {
	if len(x.order) == 0 {
		return nil
	}
	_, err := x.tx.TxPipelined(x.ctx, func(p redis.Pipeliner) error {
		for _, key := range x.order {
			w := x.writes[key]
			switch {
			case w.del:
				p.Del(x.ctx, redisName(key))
			case strings.HasPrefix(key, idPrefix):
				p.Set(x.ctx, redisName(key), hex.EncodeToString(w.v), 0)
			default:
				p.Set(x.ctx, redisName(key), w.v, 0)
				if !w.until.IsZero() {
					// PEXPIREAT rather than SET's PXAT, which needs
					// Redis 6.2.
					p.PExpireAt(x.ctx, redisName(key), w.until)
				}
			}
		}
		for _, h := range x.hashes {
			hx := hex.EncodeToString(h[:])
			if sk := x.keys[h]; sk != nil {
				p.ZAdd(x.ctx, redisList, redis.Z{Score: float64(sk.Seq), Member: hx})
			} else {
				p.ZRem(x.ctx, redisList, hx)
			}
			publishChange(x.ctx, p, hx)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.TxFailedErr) {
		return x.s.unavailable("write the account", err)
	}
	return err
}

// update runs fn on a redisTx and commits it, running it again (at most
// redisTxAttempts times) while another server's change to what it read
// gets in first. On success this server's cache drops the changed
// records at once; the others drop them on the published message.
func (s *RedisStore) update(ctx context.Context, fn func(t *txn) error) error {
	for range redisTxAttempts {
		var x *redisTx
		err := s.rdb.Watch(ctx, func(tx *redis.Tx) error {
			x = &redisTx{s: s, ctx: ctx, tx: tx, writes: map[string]redisWrite{}, keys: map[keyHash]*storedKey{}}
			if err := fn(&txn{kv: x, now: s.opt.Now().UTC()}); err != nil {
				return err
			}
			return x.commit()
		})
		if errors.Is(err, redis.TxFailedErr) {
			continue
		}
		if err == nil {
			for _, h := range x.hashes {
				s.invalidate(hex.EncodeToString(h[:]))
			}
		}
		return err
	}
	return fmt.Errorf("cannot change the account: other servers changed it %d times in a row; try again", redisTxAttempts)
}

// redisReadTx is the kvTx of a RedisStore's view: plain reads, no WATCH,
// no writes.
type redisReadTx struct {
	s   *RedisStore
	ctx context.Context
}

func (x redisReadTx) get(key string) ([]byte, bool, error) {
	v, err := x.s.rdb.Get(x.ctx, redisName(key)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, x.s.unavailable("read the account", err)
	}
	if strings.HasPrefix(key, idPrefix) {
		if v, err = hex.DecodeString(string(v)); err != nil {
			return nil, false, fmt.Errorf("cannot read %s: %w", redisName(key), err)
		}
	}
	return v, true, nil
}

func (redisReadTx) set(string, []byte) error       { return errReadOnly }
func (redisReadTx) del(string) error               { return errReadOnly }
func (redisReadTx) keyChanged(keyHash, *storedKey) {}
func (redisReadTx) nextSeq() (uint64, error)       { return 0, errReadOnly }

// view runs fn on what Redis holds now, one GET per read: the read path
// of sessions and grants.
func (s *RedisStore) view(ctx context.Context, fn func(t *txn) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	return fn(&txn{kv: redisReadTx{s, ctx}, now: s.opt.Now().UTC()})
}

func (s *RedisStore) reserveSignin(ctx context.Context, client netip.Addr) (registration, error) {
	r, err := s.reserveCounter(ctx, ckey{kind: kindSignin, addr: GroupAddr(client)}, s.opt.Now(), 1,
		s.opt.SigninsPerAddressPerDay, policyRegistrations, "count the sign-in", ErrTooManyRegistrations)
	if err != nil {
		return nil, err
	}
	return registration{r}, nil
}

func (s *RedisStore) reserveRegistration(ctx context.Context, client netip.Addr) (registration, error) {
	now := s.opt.Now()
	return reserveRegistration(s.opt, client, func(k ckey, limit int64) (*Reservation, error) {
		return s.reserveCounter(ctx, k, now, 1, limit, policyRegistrations, "count the sign-up", ErrTooManyRegistrations)
	})
}

// StartSignup makes a one-time code for email's mailbox; see
// Store.StartSignup. The code is kept in Redis, so any server verifies
// it, and the per-address limit is counted there for all servers.
func (s *RedisStore) StartSignup(ctx context.Context, email string, client netip.Addr) (Signup, error) {
	if s.closed.Load() {
		return Signup{}, ErrClosed
	}
	return startSignup(ctx, s, email, client)
}

// VerifySignup trades a code from StartSignup (on any server) for a
// registered key; see Store.VerifySignup. Two servers verifying one code
// at once issue one key: the second finds the code used.
func (s *RedisStore) VerifySignup(ctx context.Context, email, code string) (string, KeyRecord, error) {
	if s.closed.Load() {
		return "", KeyRecord{}, ErrClosed
	}
	return verifySignup(ctx, s, email, code)
}

// RotateKey replaces an active key with a new one; see Store.RotateKey.
// The old key stops working on this server when it returns and on the
// others as soon as they get the published change.
func (s *RedisStore) RotateKey(ctx context.Context, key string) (string, KeyRecord, error) {
	if s.closed.Load() {
		return "", KeyRecord{}, ErrClosed
	}
	return rotateKey(ctx, s, key)
}

// ApplyBilling applies one billing event, once across all servers; see
// Store.ApplyBilling. The event id is written in the same transaction as
// the change.
func (s *RedisStore) ApplyBilling(ctx context.Context, eventID string, c BillingChange) (bool, error) {
	if s.closed.Load() {
		return false, ErrClosed
	}
	return applyBilling(ctx, s, eventID, c)
}

// Account returns the record of an active key, with its lookups this
// month, and its billing state; see Store.Account. It reads Redis, not
// the cache, which holds no billing state.
func (s *RedisStore) Account(ctx context.Context, key string) (KeyRecord, Billing, error) {
	if s.closed.Load() {
		return KeyRecord{}, Billing{}, ErrClosed
	}
	if !wellFormed(key) {
		return KeyRecord{}, Billing{}, ErrInvalidKey
	}
	h := hashKey(key)
	sk, ok, err := s.get(ctx, hex.EncodeToString(h[:]))
	if err != nil {
		return KeyRecord{}, Billing{}, s.unavailable("read the account", err)
	}
	if !ok || !sk.Revoked.IsZero() {
		return KeyRecord{}, Billing{}, ErrInvalidKey
	}
	rec := sk.record()
	reg, paid, last, err := s.monthUsage(ctx, rec.ID)
	if err != nil {
		return KeyRecord{}, Billing{}, err
	}
	rec.Lookups, rec.LookupsAsOf, rec.LastUsed = reg+paid, s.opt.Now().UTC(), last
	return rec, sk.billing(), nil
}

// MonthUsage returns the lookups counted on an account this UTC month, at
// the registered and at the paid tier, on all servers (paid lookups of
// other servers' last FlushInterval may be missing). While Redis does not
// answer it logs why and returns zeros.
func (s *RedisStore) MonthUsage(id string) (registered, paid int64) {
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	registered, paid, _, err := s.monthUsage(ctx, id)
	if err != nil {
		s.log.Warn("cannot read an account's lookups", "id", id, "err", err)
	}
	return registered, paid
}

// monthUsage reads an account's counters of this month and its last use,
// adding the paid lookups this server has not flushed yet.
func (s *RedisStore) monthUsage(ctx context.Context, id string) (registered, paid int64, last time.Time, err error) {
	month := kindKey.window(s.opt.Now())
	vals, err := s.rdb.MGet(ctx,
		redisPrefix+string(dbKey(ckey{kind: kindKey, window: month, id: id})),
		redisPrefix+string(dbKey(ckey{kind: kindPaid, window: month, id: id})),
		redisUsed+id).Result()
	if err != nil {
		return 0, 0, time.Time{}, s.unavailable("read the account's lookups", err)
	}
	n, ms := s.unflushed(id, month)
	registered, paid = redisInt(vals[0]), redisInt(vals[1])+n
	if ms = max(ms, redisInt(vals[2])); ms > 0 {
		last = time.UnixMilli(ms).UTC()
	}
	return registered, paid, last, nil
}

// unflushed returns the paid lookups of id this server counted in month
// and has not flushed yet, and the last one's time (unix ms).
func (s *RedisStore) unflushed(id string, month int32) (n, lastMs int64) {
	s.paidMu.Lock()
	defer s.paidMu.Unlock()
	if p := s.paid[id]; p != nil && p.month == month {
		return p.n, p.last
	}
	return 0, 0
}

// RegisteredPerMonth is the registered tier's monthly allowance.
func (s *RedisStore) RegisteredPerMonth() int64 { return s.opt.RegisteredPerMonth }
