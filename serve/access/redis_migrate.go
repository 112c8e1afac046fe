package access

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2"
	"github.com/redis/go-redis/v9"
)

// MigrateReport says what MigrateToRedis copied.
type MigrateReport struct {
	// Keys is how many key records were copied, revoked ones included.
	Keys int
	// Counters is how many counters of the current day (anonymous) and
	// month (registered and paid keys) were copied.
	Counters int
	// Accounts is how many other account entries were copied: pending
	// sign-up codes, links of Stripe customers and subscriptions to
	// accounts, and applied billing events.
	Accounts int
}

// migrateBatch is how many writes go to Redis in one pipeline.
const migrateBatch = 1000

// MigrateToRedis copies the embedded store under opt.Dir into dst: every
// key record with its mailbox, pending sign-up codes, billing links and
// applied billing events, and the counts of the current windows, so that
// nobody's allowance restarts. The server on opt.Dir must be stopped
// (its databases are opened here). Copying again replaces what the last
// copy wrote rather than adding to it; counts made in Redis meanwhile are
// overwritten. Every server on dst drops its cached keys afterwards.
func MigrateToRedis(ctx context.Context, opt Options, dst *RedisStore) (MigrateReport, error) {
	opt.fill()
	var rep MigrateReport
	if err := checkMigrateSource(opt.Dir); err != nil {
		return rep, err
	}
	k, err := openLocalKeys(opt)
	if err != nil {
		return rep, fmt.Errorf("cannot open the account database: %w", err)
	}
	defer k.Close()
	w := &migrateWriter{ctx: ctx, pipe: dst.rdb.Pipeline()}
	mailboxes, err := readMailboxes(ctx, k)
	if err != nil {
		return rep, err
	}
	maxSeq, err := copyKeys(ctx, k, w, mailboxes, &rep)
	if err != nil {
		return rep, err
	}
	if err := copyAccountEntries(ctx, k, w, &rep); err != nil {
		return rep, err
	}
	if err := w.flush(true); err != nil {
		return rep, err
	}
	if err := raiseSeq(ctx, dst, w, maxSeq); err != nil {
		return rep, err
	}
	if err := copyCounters(ctx, opt, w, &rep); err != nil {
		return rep, err
	}
	publishChange(ctx, w.pipe, redisAllChanged)
	return rep, w.flush(true)
}

// checkMigrateSource checks that dir holds an embedded store that no
// server has open: a count made after the copy would be lost.
func checkMigrateSource(dir string) error {
	if dir == "" {
		return errors.New("cannot migrate: no access folder given")
	}
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("cannot migrate: %w", err)
	}
	if adminAnswers(filepath.Join(dir, adminSockName)) {
		return fmt.Errorf("cannot migrate %s: a kwdata server is running on it; stop it first, so that no count is made after the copy", dir)
	}
	return nil
}

// migrateWriter sends a migration's writes to Redis in pipelines of
// migrateBatch.
type migrateWriter struct {
	ctx  context.Context
	pipe redis.Pipeliner
}

// flush sends the queued writes once there are migrateBatch of them, or
// whatever is queued when force is set.
func (w *migrateWriter) flush(force bool) error {
	if w.pipe.Len() == 0 || (!force && w.pipe.Len() < migrateBatch) {
		return nil
	}
	if _, err := w.pipe.Exec(w.ctx); err != nil {
		return fmt.Errorf("cannot write to Redis: %w", err)
	}
	return nil
}

// readMailboxes reads e/<mailbox> -> id of its active key, keyed by id.
func readMailboxes(ctx context.Context, k *Keys) (map[string]string, error) {
	mailboxes := map[string]string{}
	it, err := k.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: []byte(emailPrefix), UpperBound: []byte("e0")})
	if err != nil {
		return nil, fmt.Errorf("cannot read the account database: %w", err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		mailboxes[string(it.Value())] = string(it.Key()[len(emailPrefix):])
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return nil, fmt.Errorf("cannot read the account database: %w", err)
	}
	return mailboxes, nil
}

// copyKeys queues every key record with its id, its place in the key list
// and, for an active key, its mailbox. It returns the highest creation
// order copied.
func copyKeys(ctx context.Context, k *Keys, w *migrateWriter, mailboxes map[string]string, rep *MigrateReport) (uint64, error) {
	var maxSeq uint64
	it, err := k.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: []byte(hashPrefix), UpperBound: []byte("k0")})
	if err != nil {
		return 0, fmt.Errorf("cannot read the account database: %w", err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		h := it.Key()[len(hashPrefix):]
		var sk storedKey
		if err := json.Unmarshal(it.Value(), &sk); err != nil {
			it.Close()
			return 0, fmt.Errorf("cannot read account %x: %w", h[:4], err)
		}
		hx := hex.EncodeToString(h)
		// The pipeline sends its commands at the next flush, after the
		// iterator has moved on and may have reused the value's memory.
		w.pipe.Set(ctx, redisRecord+hx, bytes.Clone(it.Value()), 0)
		w.pipe.Set(ctx, redisID+sk.ID, hx, 0)
		w.pipe.ZAdd(ctx, redisList, redis.Z{Score: float64(sk.Seq), Member: hx})
		if mb, ok := mailboxes[sk.ID]; ok && sk.Revoked.IsZero() {
			w.pipe.Set(ctx, redisMailbox+mb, sk.ID, 0)
		}
		maxSeq = max(maxSeq, sk.Seq)
		rep.Keys++
		if err := w.flush(false); err != nil {
			it.Close()
			return 0, err
		}
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return 0, fmt.Errorf("cannot read the account database: %w", err)
	}
	return maxSeq, nil
}

// copyAccountEntries queues pending codes, billing state, sessions and
// OAuth entries, as they are: a code mailed before the move still works
// after it, a subscription's events still find its account, an event
// applied before is not applied again, and nobody is signed out. Each
// keeps its lifetime.
func copyAccountEntries(ctx context.Context, k *Keys, w *migrateWriter, rep *MigrateReport) error {
	for _, prefix := range append([]string{customerPrefix, subPrefix}, expiringPrefixes...) {
		upper := []byte(prefix)
		upper[len(upper)-1]++
		it, err := k.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: []byte(prefix), UpperBound: upper})
		if err != nil {
			return fmt.Errorf("cannot read the account database: %w", err)
		}
		for ok := it.First(); ok; ok = it.Next() {
			v, err := it.ValueAndErr()
			if err != nil {
				it.Close()
				return fmt.Errorf("cannot read the account database: %w", err)
			}
			name := redisName(string(it.Key()))
			w.pipe.Set(ctx, name, bytes.Clone(v), 0)
			// Codes and event ids end as they would have in the
			// folder; one already past its end is not kept.
			if at, ok := accountExpiry(string(it.Key()), v); ok {
				w.pipe.PExpireAt(ctx, name, at)
			}
			rep.Accounts++
			if err := w.flush(false); err != nil {
				it.Close()
				return err
			}
		}
		if err := errors.Join(it.Error(), it.Close()); err != nil {
			return fmt.Errorf("cannot read the account database: %w", err)
		}
	}
	return nil
}

// raiseSeq queues the creation order's rise to maxSeq, so that keys
// created in Redis later sort after the copied ones.
func raiseSeq(ctx context.Context, dst *RedisStore, w *migrateWriter, maxSeq uint64) error {
	if cur, err := dst.rdb.Get(ctx, redisSeq).Uint64(); (err == nil && cur < maxSeq) || errors.Is(err, redis.Nil) {
		w.pipe.Set(ctx, redisSeq, maxSeq, 0)
	} else if err != nil {
		return fmt.Errorf("cannot read from Redis: %w", err)
	}
	return nil
}

// copyCounters queues the counters of the current windows (anonymous
// days, key months; not the sign-ups of the day) and each key's last use.
func copyCounters(ctx context.Context, opt Options, w *migrateWriter, rep *MigrateReport) error {
	db, err := openCounters(filepath.Join(opt.Dir, countersName), opt)
	if err != nil {
		return err
	}
	defer db.Close()
	now := opt.Now()
	cit, err := db.NewIterWithContext(ctx, nil)
	if err != nil {
		return fmt.Errorf("cannot read counters: %w", err)
	}
	for ok := cit.First(); ok; ok = cit.Next() {
		n, ok := decodeInt(cit.Value())
		if !ok {
			continue
		}
		if id, ok := cutUsed(cit.Key()); ok {
			w.pipe.Set(ctx, redisUsed+id, n/1e6, 0) // unix nanos to ms
			continue
		}
		ck, ok := parseDBKey(cit.Key())
		if !ok || ck.kind == kindReg || ck.kind == kindRegNet || ck.window != ck.kind.window(now) {
			continue
		}
		_, end := ck.kind.bounds(ck.window)
		w.pipe.Set(ctx, redisPrefix+string(cit.Key()), n, 0)
		w.pipe.PExpireAt(ctx, redisPrefix+string(cit.Key()), expiry(ck.kind, end))
		rep.Counters++
		if err := w.flush(false); err != nil {
			cit.Close()
			return err
		}
	}
	if err := errors.Join(cit.Error(), cit.Close()); err != nil {
		return fmt.Errorf("cannot read counters: %w", err)
	}
	return nil
}
