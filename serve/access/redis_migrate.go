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
	if opt.Dir == "" {
		return rep, errors.New("cannot migrate: no access folder given")
	}
	if _, err := os.Stat(opt.Dir); err != nil {
		return rep, fmt.Errorf("cannot migrate: %w", err)
	}
	if adminAnswers(filepath.Join(opt.Dir, adminSockName)) {
		return rep, fmt.Errorf("cannot migrate %s: a kwdata server is running on it; stop it first, so that no count is made after the copy", opt.Dir)
	}
	k, err := openLocalKeys(opt)
	if err != nil {
		return rep, fmt.Errorf("cannot open the account database: %w", err)
	}
	defer k.Close()
	pipe := dst.rdb.Pipeline()
	flush := func(force bool) error {
		if pipe.Len() == 0 || (!force && pipe.Len() < migrateBatch) {
			return nil
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return fmt.Errorf("cannot write to Redis: %w", err)
		}
		return nil
	}

	// Mailboxes first: e/<mailbox> -> id of its active key.
	mailboxes := map[string]string{}
	it, err := k.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: []byte(emailPrefix), UpperBound: []byte("e0")})
	if err != nil {
		return rep, fmt.Errorf("cannot read the account database: %w", err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		mailboxes[string(it.Value())] = string(it.Key()[len(emailPrefix):])
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return rep, fmt.Errorf("cannot read the account database: %w", err)
	}
	var maxSeq uint64
	it, err = k.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: []byte(hashPrefix), UpperBound: []byte("k0")})
	if err != nil {
		return rep, fmt.Errorf("cannot read the account database: %w", err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		h := it.Key()[len(hashPrefix):]
		var sk storedKey
		if err := json.Unmarshal(it.Value(), &sk); err != nil {
			it.Close()
			return rep, fmt.Errorf("cannot read account %x: %w", h[:4], err)
		}
		hx := hex.EncodeToString(h)
		// The pipeline sends its commands at the next flush, after the
		// iterator has moved on and may have reused the value's memory.
		pipe.Set(ctx, redisRecord+hx, bytes.Clone(it.Value()), 0)
		pipe.Set(ctx, redisID+sk.ID, hx, 0)
		pipe.ZAdd(ctx, redisList, redis.Z{Score: float64(sk.Seq), Member: hx})
		if mb, ok := mailboxes[sk.ID]; ok && sk.Revoked.IsZero() {
			pipe.Set(ctx, redisMailbox+mb, sk.ID, 0)
		}
		maxSeq = max(maxSeq, sk.Seq)
		rep.Keys++
		if err := flush(false); err != nil {
			it.Close()
			return rep, err
		}
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return rep, fmt.Errorf("cannot read the account database: %w", err)
	}
	// Pending codes and billing state, as they are: a code mailed before
	// the move still works after it, a subscription's events still find
	// its account, and an event applied before is not applied again.
	for _, prefix := range []string{codePrefix, customerPrefix, subPrefix, eventPrefix} {
		upper := []byte(prefix)
		upper[len(upper)-1]++
		it, err := k.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: []byte(prefix), UpperBound: upper})
		if err != nil {
			return rep, fmt.Errorf("cannot read the account database: %w", err)
		}
		for ok := it.First(); ok; ok = it.Next() {
			v, err := it.ValueAndErr()
			if err != nil {
				it.Close()
				return rep, fmt.Errorf("cannot read the account database: %w", err)
			}
			pipe.Set(ctx, redisName(string(it.Key())), bytes.Clone(v), 0)
			rep.Accounts++
			if err := flush(false); err != nil {
				it.Close()
				return rep, err
			}
		}
		if err := errors.Join(it.Error(), it.Close()); err != nil {
			return rep, fmt.Errorf("cannot read the account database: %w", err)
		}
	}
	if err := flush(true); err != nil {
		return rep, err
	}
	// Keys created in Redis later must sort after the copied ones.
	if cur, err := dst.rdb.Get(ctx, redisSeq).Uint64(); (err == nil && cur < maxSeq) || errors.Is(err, redis.Nil) {
		pipe.Set(ctx, redisSeq, maxSeq, 0)
	} else if err != nil {
		return rep, fmt.Errorf("cannot read from Redis: %w", err)
	}

	db, err := openCounters(filepath.Join(opt.Dir, countersName), opt)
	if err != nil {
		return rep, err
	}
	defer db.Close()
	now := opt.Now()
	cit, err := db.NewIterWithContext(ctx, nil)
	if err != nil {
		return rep, fmt.Errorf("cannot read counters: %w", err)
	}
	for ok := cit.First(); ok; ok = cit.Next() {
		n, ok := decodeInt(cit.Value())
		if !ok {
			continue
		}
		if id, ok := cutUsed(cit.Key()); ok {
			pipe.Set(ctx, redisUsed+id, n/1e6, 0) // unix nanos to ms
			continue
		}
		ck, ok := parseDBKey(cit.Key())
		if !ok || ck.kind == kindReg || ck.window != ck.kind.window(now) {
			continue
		}
		_, end := ck.kind.bounds(ck.window)
		pipe.Set(ctx, redisPrefix+string(cit.Key()), n, 0)
		pipe.PExpireAt(ctx, redisPrefix+string(cit.Key()), expiry(ck.kind, end))
		rep.Counters++
		if err := flush(false); err != nil {
			cit.Close()
			return rep, err
		}
	}
	if err := errors.Join(cit.Error(), cit.Close()); err != nil {
		return rep, fmt.Errorf("cannot read counters: %w", err)
	}
	publishChange(ctx, pipe, redisAllChanged)
	return rep, flush(true)
}
