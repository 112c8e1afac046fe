package access

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/kwdata/kwdata/internal/testservers"
	"github.com/kwdata/kwdata/serve/oauth"
	"github.com/kwdata/kwdata/serve/oauth/oauthtest"
)

func TestOAuthStoreEmbedded(t *testing.T) {
	oauthtest.TestStore(t, func(t *testing.T, now func() time.Time) oauth.Store {
		return openStore(t, t.TempDir(), &clock{t: now()}, func(o *Options) { o.Now = now }).ForOAuth()
	})
}

func TestOAuthStoreRedis(t *testing.T) {
	oauthtest.TestStore(t, func(t *testing.T, now func() time.Time) oauth.Store {
		rd := testservers.StartRedis(t)
		return openRedisStores(t, rd, 1, Options{Now: now, FlushInterval: time.Hour})[0].ForOAuth()
	})
}

// TestRedisCodeRace is an attack: a stolen code redeemed on two servers at
// the moment the client redeems it. Exactly one redemption gets the
// grant; the others see the reuse, and the chain of the winner is revoked
// (or, reused before it starts, never issued).
func TestRedisCodeRace(t *testing.T) {
	rd := testservers.StartRedis(t)
	stores := openRedisStores(t, rd, 3, Options{})
	c, err := stores[0].ForOAuth().RegisterClient(ctx, oauth.Client{RedirectURIs: []string{"http://127.0.0.1/cb"}}, mustAddr(t, "192.0.2.30"))
	if err != nil {
		t.Fatal(err)
	}
	for round := range 5 {
		code, err := stores[0].ForOAuth().NewCode(ctx, oauth.CodeGrant{Grant: oauth.Grant{Account: "acct", ClientID: c.ID, Resource: "r"}})
		if err != nil {
			t.Fatal(err)
		}
		const callers = 6
		type result struct {
			tok oauth.Tokens
			err error
		}
		results := make(chan result, callers)
		var wg sync.WaitGroup
		for i := range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				o := stores[i%len(stores)].ForOAuth()
				g, err := o.TakeCode(ctx, code)
				if err != nil {
					results <- result{err: err}
					return
				}
				tok, err := o.NewTokens(ctx, g.Grant, code)
				results <- result{tok, err}
			}()
		}
		wg.Wait()
		close(results)
		var issued []oauth.Tokens
		for r := range results {
			switch {
			case r.err == nil:
				issued = append(issued, r.tok)
			case !errors.Is(r.err, oauth.ErrReused):
				t.Errorf("round %d: %v, want tokens or ErrReused", round, r.err)
			}
		}
		if len(issued) > 1 {
			t.Fatalf("round %d: %d chains from one code", round, len(issued))
		}
		for _, tok := range issued {
			if _, err := stores[1].ForOAuth().Token(ctx, tok.Access); !errors.Is(err, oauth.ErrNotFound) {
				t.Errorf("round %d: the chain of a code redeemed %d times still works: %v", round, callers, err)
			}
		}
	}
}

// TestOAuthStoredHashed: no code, access token or refresh token is
// written anywhere as it is; only its SHA-256.
func TestOAuthStoredHashed(t *testing.T) {
	clk := newClock(t, "2026-11-22T12:00:00Z")
	dir := t.TempDir()
	s := openStore(t, dir, clk)
	rd := testservers.StartRedis(t)
	rs := openRedisStores(t, rd, 1, Options{})[0]
	for _, o := range []oauth.Store{s.ForOAuth(), rs.ForOAuth()} {
		c, err := o.RegisterClient(ctx, oauth.Client{RedirectURIs: []string{"http://127.0.0.1/cb"}}, mustAddr(t, "192.0.2.31"))
		if err != nil {
			t.Fatal(err)
		}
		code, err := o.NewCode(ctx, oauth.CodeGrant{Grant: oauth.Grant{Account: "acct", ClientID: c.ID, Resource: "r"}})
		if err != nil {
			t.Fatal(err)
		}
		tok, err := o.NewTokens(ctx, oauth.Grant{Account: "acct", ClientID: c.ID, Resource: "r"}, code)
		if err != nil {
			t.Fatal(err)
		}
		var all []string
		if o == rs.ForOAuth() {
			names, err := rs.rdb.Keys(ctx, redisPrefix+"*").Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range names {
				v, _ := rs.rdb.Get(ctx, n).Result()
				all = append(all, n, v)
			}
		} else {
			it, err := s.keys.db.NewIter(nil)
			if err != nil {
				t.Fatal(err)
			}
			for ok := it.First(); ok; ok = it.Next() {
				all = append(all, string(it.Key()), string(it.Value()))
			}
			it.Close()
		}
		for _, secret := range []string{code, tok.Access, tok.Refresh} {
			for _, v := range all {
				if strings.Contains(v, secret) {
					t.Errorf("%s is stored in clear: %.60s", secret[:4], v)
				}
			}
		}
	}
}

// TestOAuthEntriesExpire: each OAuth entry goes at its end: by the daily
// sweep when embedded, by PEXPIREAT on Redis.
func TestOAuthEntriesExpire(t *testing.T) {
	grant := oauth.Grant{Account: "acct", Resource: "r"}
	t.Run("embedded", func(t *testing.T) {
		clk := newClock(t, "2026-11-22T12:00:00Z")
		s := openStore(t, t.TempDir(), clk)
		o := s.ForOAuth()
		c, err := o.RegisterClient(ctx, oauth.Client{RedirectURIs: []string{"http://127.0.0.1/cb"}}, mustAddr(t, "192.0.2.32"))
		if err != nil {
			t.Fatal(err)
		}
		g := grant
		g.ClientID = c.ID
		code, err := o.NewCode(ctx, oauth.CodeGrant{Grant: g})
		if err != nil {
			t.Fatal(err)
		}
		_, err = o.NewTokens(ctx, g, code)
		if err != nil {
			t.Fatal(err)
		}
		count := func(prefix string) int {
			t.Helper()
			upper := []byte(prefix)
			upper[len(upper)-1]++
			it, err := s.keys.db.NewIter(&pebble.IterOptions{LowerBound: []byte(prefix), UpperBound: upper})
			if err != nil {
				t.Fatal(err)
			}
			defer it.Close()
			n := 0
			for ok := it.First(); ok; ok = it.Next() {
				n++
			}
			return n
		}
		sweep := func(at time.Time) {
			t.Helper()
			clk.Set(at)
			if err := s.flush(); err != nil {
				t.Fatal(err)
			}
		}
		sweep(clk.Now().Add(25 * time.Hour)) // the next day: the code and access token have ended
		for _, p := range []string{oauthCodePrefix, oauthAccessPrefix} {
			if n := count(p); n != 0 {
				t.Errorf("%d entries under %s a day after they ended", n, p)
			}
		}
		for _, p := range []string{oauthClientPrefix, oauthChainPrefix, oauthRefreshPrefix} {
			if n := count(p); n != 1 {
				t.Errorf("%d entries under %s within the refresh token's life, want 1", n, p)
			}
		}
		sweep(clk.Now().Add(oauth.RefreshTTL))
		for _, p := range []string{oauthClientPrefix, oauthChainPrefix, oauthRefreshPrefix} {
			if n := count(p); n != 0 {
				t.Errorf("%d entries under %s after RefreshTTL", n, p)
			}
		}
	})
	t.Run("redis", func(t *testing.T) {
		rd := testservers.StartRedis(t)
		clk := &clock{t: time.Now()}
		s := openRedisStores(t, rd, 1, Options{Now: clk.Now})[0]
		o := s.ForOAuth()
		c, err := o.RegisterClient(ctx, oauth.Client{RedirectURIs: []string{"http://127.0.0.1/cb"}}, mustAddr(t, "192.0.2.33"))
		if err != nil {
			t.Fatal(err)
		}
		g := grant
		g.ClientID = c.ID
		code, err := o.NewCode(ctx, oauth.CodeGrant{Grant: g})
		if err != nil {
			t.Fatal(err)
		}
		tok, err := o.NewTokens(ctx, g, code)
		if err != nil {
			t.Fatal(err)
		}
		now := clk.Now()
		for _, e := range []struct {
			key  string
			want time.Time
		}{
			{oauthClientPrefix + c.ID, now.Add(oauth.RefreshTTL)},
			{oauthCodePrefix + secretHash(code), now.Add(oauth.CodeTTL + oauthCodeKeep)},
			{oauthAccessPrefix + secretHash(tok.Access), now.Add(oauth.AccessTTL)},
			{oauthRefreshPrefix + secretHash(tok.Refresh), now.Add(oauth.RefreshTTL)},
		} {
			d, err := s.rdb.PExpireTime(ctx, redisName(e.key)).Result()
			if err != nil || d < 0 {
				t.Errorf("%s has no expiry (%v, %v)", redisName(e.key), d, err)
				continue
			}
			if got := time.UnixMilli(int64(d / time.Millisecond)); got.Sub(e.want).Abs() > time.Second {
				t.Errorf("%s expires at %s, want %s", redisName(e.key), got, e.want)
			}
		}
	})
}

// TestMigrateSessionsAndGrants: moving to Redis signs nobody out: a
// session and an agent's tokens made in the folder work on Redis, with
// their ends.
func TestMigrateSessionsAndGrants(t *testing.T) {
	rd := testservers.StartRedis(t)
	dir := t.TempDir()
	clk := &clock{t: time.Now()}
	emb := openStore(t, dir, clk)
	_, rec := mustCreate(t, emb, Registered, time.Time{})
	raw := mustSession(t, emb, rec.ID)
	o := emb.ForOAuth()
	c, err := o.RegisterClient(ctx, oauth.Client{RedirectURIs: []string{"http://127.0.0.1/cb"}}, mustAddr(t, "192.0.2.34"))
	if err != nil {
		t.Fatal(err)
	}
	g := oauth.Grant{Account: rec.ID, ClientID: c.ID, Resource: "r"}
	code, err := o.NewCode(ctx, oauth.CodeGrant{Grant: g})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := o.NewTokens(ctx, g, code)
	if err != nil {
		t.Fatal(err)
	}
	if err := emb.Close(); err != nil {
		t.Fatal(err)
	}
	s := openRedisStores(t, rd, 1, Options{Now: clk.Now})[0]
	if _, err := MigrateToRedis(ctx, Options{Dir: dir, Now: clk.Now}, s); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Session(ctx, raw); err != nil || got.ID != rec.ID {
		t.Errorf("the session after migration: %+v, %v", got, err)
	}
	if got, err := s.ForOAuth().Token(ctx, tok.Access); err != nil || got != g {
		t.Errorf("the access token after migration: %+v, %v", got, err)
	}
	if _, _, err := s.ForOAuth().Refresh(ctx, tok.Refresh, c.ID); err != nil {
		t.Errorf("the refresh token after migration: %v", err)
	}
	if _, err := s.ForOAuth().TakeCode(ctx, code); !errors.Is(err, oauth.ErrReused) {
		t.Errorf("the redeemed code after migration: %v, want ErrReused", err)
	}
	if d, err := s.rdb.PExpireTime(ctx, redisName(sessionPrefix+secretHash(raw))).Result(); err != nil || d < 0 {
		t.Errorf("a migrated session has no expiry (%v, %v)", d, err)
	}
}
