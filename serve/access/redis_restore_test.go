package access

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/kwdata/kwdata/internal/testservers"
	"github.com/redis/go-redis/v9"
)

// redisBackup is every entry of a Redis database as DUMP gives it, with
// its time to live: what an operator's backup holds.
type redisBackup map[string]struct {
	dump string
	pttl time.Duration
}

// adminClient is a plain client of rd, as an operator's redis-cli.
func adminClient(tb testing.TB, rd *testservers.Redis) *redis.Client {
	tb.Helper()
	c := redis.NewClient(&redis.Options{Addr: rd.Addr, MaxRetries: 3})
	tb.Cleanup(func() { c.Close() })
	return c
}

func backupRedis(tb testing.TB, rd *testservers.Redis) redisBackup {
	tb.Helper()
	ctx := context.Background()
	c := adminClient(tb, rd)
	b := redisBackup{}
	names, err := c.Keys(ctx, "*").Result()
	if err != nil {
		tb.Fatal(err)
	}
	for _, name := range names {
		dump, err := c.Dump(ctx, name).Result()
		if err != nil {
			tb.Fatal(err)
		}
		pttl, err := c.PTTL(ctx, name).Result()
		if err != nil {
			tb.Fatal(err)
		}
		b[name] = struct {
			dump string
			pttl time.Duration
		}{dump, max(pttl, 0)}
	}
	return b
}

// restoreRedis replaces the database with b, in place: the servers'
// connections and subscriptions stay up.
func restoreRedis(tb testing.TB, rd *testservers.Redis, b redisBackup) {
	tb.Helper()
	ctx := context.Background()
	c := adminClient(tb, rd)
	if err := c.FlushDB(ctx).Err(); err != nil {
		tb.Fatal(err)
	}
	for name, e := range b {
		if err := c.Restore(ctx, name, e.pttl, e.dump).Err(); err != nil {
			tb.Fatal(err)
		}
	}
}

// restartRedis stops Redis and starts it again on its data (the AOF), and
// waits until every store has subscribed again.
func restartRedis(tb testing.TB, rd *testservers.Redis, stores ...*RedisStore) {
	tb.Helper()
	rd.Stop()
	rd.Start()
	for _, s := range stores {
		select {
		case <-s.subscribe:
		case <-time.After(10 * time.Second):
			tb.Fatal("a store did not subscribe again within 10s of the restart")
		}
	}
}

// cacheKey has every store look key up until each holds its record.
func cacheKey(tb testing.TB, key string, stores ...*RedisStore) {
	tb.Helper()
	h := hashKey(key)
	for _, s := range stores {
		deadline := time.Now().Add(5 * time.Second)
		for {
			if _, err := s.Identify(context.Background(), key, netip.Addr{}); err != nil {
				tb.Fatal(err)
			}
			s.cacheMu.RLock()
			_, ok := s.known[h]
			s.cacheMu.RUnlock()
			if ok {
				break
			}
			if time.Now().After(deadline) {
				tb.Fatal("the key's record is not cached after 5s of lookups")
			}
		}
	}
}

// refusedWithin polls every store until it refuses key, failing when one
// still accepts it d after the call.
func refusedWithin(tb testing.TB, d time.Duration, key string, stores ...*RedisStore) {
	tb.Helper()
	deadline := time.Now().Add(d)
	for i, s := range stores {
		var c Caller
		var err error
		if !testservers.Poll(time.Until(deadline), func() bool {
			c, err = s.Identify(context.Background(), key, netip.Addr{})
			return errors.Is(err, ErrInvalidKey)
		}) {
			tb.Fatalf("server %d still accepts the key %v later (tier %q, err %v)", i, d, c.Tier, err)
		}
	}
}

// TestRedisRestoredOlderBackupRevokes: Redis restored from a backup taken
// before more keys were made (the version key goes back from 6 to 1), then
// a key the servers cached is revoked. Every server must refuse it within
// 250 ms, whether the restore happened in place or with a restart.
func TestRedisRestoredOlderBackupRevokes(t *testing.T) {
	for _, restart := range []bool{false, true} {
		name := "in place"
		if restart {
			name = "with a restart"
		}
		t.Run(name, func(t *testing.T) {
			rd := testservers.StartRedis(t)
			stores := openRedisStores(t, rd, 2, Options{})
			ctx := context.Background()
			paid, rec, err := stores[0].CreateKey(ctx, Paid, "", time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			backup := backupRedis(t, rd)
			for range 5 {
				mustCreate(t, stores[0], Registered, time.Time{})
			}
			cacheKey(t, paid, stores...)
			restoreRedis(t, rd, backup)
			if restart {
				restartRedis(t, rd, stores...)
			}
			if err := stores[1].RevokeKey(ctx, rec.ID); err != nil {
				t.Fatal(err)
			}
			refusedWithin(t, 250*time.Millisecond, paid, stores...)
		})
	}
}

// TestRedisEmptyRestartForgetsKeys: Redis restarts without its data; the
// servers must stop honouring the keys it no longer has.
func TestRedisEmptyRestartForgetsKeys(t *testing.T) {
	rd := testservers.StartRedis(t)
	stores := openRedisStores(t, rd, 2, Options{})
	paid, _ := mustCreate(t, stores[0], Paid, time.Time{})
	cacheKey(t, paid, stores...)
	if err := adminClient(t, rd).FlushAll(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	restartRedis(t, rd, stores...)
	refusedWithin(t, 250*time.Millisecond, paid, stores...)
}
