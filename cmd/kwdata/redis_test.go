//go:build unix

package main

// Several `kwdata serve` processes on one Redis (--access redis://…), as
// several hosts behind a load balancer run them: the allowances are exact
// across them, a key changed through the command line reaches every one,
// a killed server loses nothing Redis acknowledged, and a Redis outage is
// a 503 that ends by itself.

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kwdata/kwdata/internal/testservers"
)

// redisServers starts n servers on one Redis, each with its own data
// folder holding the same index. They trust loopback as a proxy, so each
// test picks its client address with X-Forwarded-For.
func (env *tiersEnv) redisServers(tb testing.TB, rd *testservers.Redis, n int) []*tiersServer {
	tb.Helper()
	var ss []*tiersServer
	for range n {
		ss = append(ss, env.start(tb, env.fresh(tb), "--access", rd.URL(), "--trusted-proxy", "127.0.0.1/32"))
	}
	return ss
}

// spread sends total lookups at once, round robin over the servers, and
// counts the answers by status.
func spread(tb testing.TB, ss []*tiersServer, total int, q string, hdr ...string) map[int]int {
	tb.Helper()
	var mu sync.Mutex
	got := map[int]int{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range total {
		wg.Go(func() {
			s := ss[i%len(ss)]
			<-start
			r, err := s.send(s.client, "GET", "/v1/keyword?q="+strings.ReplaceAll(q, " ", "+")+"&country=us", "", hdr...)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				got[-1]++
				return
			}
			got[r.status]++
		})
	}
	close(start)
	wg.Wait()
	return got
}

// TestRedisAccess runs the shared access store end to end.
func TestRedisAccess(t *testing.T) {
	if until := time.Until(tiersMidnight(time.Now())); until < 3*time.Minute {
		t.Skipf("UTC midnight is %s away; the allowances would renew mid-test", until.Round(time.Second))
	}
	rd := testservers.StartRedis(t)
	env := tiersSetup(t)
	ss := env.redisServers(t, rd, 3)
	q := env.keywords[0]

	t.Run("ExactAcrossServers", func(t *testing.T) {
		key, _ := env.createRedisKey(t, rd, "--tier", "registered")
		for _, tc := range []struct {
			name        string
			total, want int
			hdr         []string
		}{
			{"anonymous", 100, 20, []string{"X-Forwarded-For", "198.51.100.1"}},
			{"registered", 600, 500, []string{"Authorization", "Bearer " + key}},
		} {
			got := spread(t, ss, tc.total, q, tc.hdr...)
			if got[200] != tc.want || got[429] != tc.total-tc.want {
				t.Errorf("%s: %d parallel lookups over 3 servers got %v, want exactly %d answers and %d refusals",
					tc.name, tc.total, got, tc.want, tc.total-tc.want)
			}
		}
	})

	t.Run("KeyChangesReachEveryServer", func(t *testing.T) {
		key, id := env.createRedisKey(t, rd, "--tier", "registered")
		auth := []string{"Authorization", "Bearer " + key}
		// within checks that every server answers as want within 250 ms
		// of the command's return.
		within := func(what string, want func(tiersResp) bool) {
			t.Helper()
			deadline := time.Now().Add(250 * time.Millisecond)
			for i, s := range ss {
				for {
					r := s.lookup(t, q, auth...)
					if want(r) {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("%s: server %d still answers %d %q 250ms after the command returned", what, i, r.status, r.code)
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
		}
		within("create", func(r tiersResp) bool { return r.status == 200 && r.header.Get("RateLimit") != "" })
		env.cli(t, "keys", "set-tier", "--access", rd.URL(), id, "paid")
		within("set-tier paid", func(r tiersResp) bool { return r.status == 200 && r.header.Get("RateLimit") == "" })
		env.cli(t, "keys", "revoke", "--access", rd.URL(), id)
		within("revoke", func(r tiersResp) bool { return r.status == 401 && r.code == "invalid_key" })
		out, _ := env.cli(t, "keys", "list", "--access", rd.URL())
		if !strings.Contains(out, id) || !strings.Contains(out, "revoked") {
			t.Errorf("keys list --access does not show %s revoked:\n%s", id, out)
		}
	})

	t.Run("KillLosesNothing", func(t *testing.T) {
		victim := env.start(t, env.fresh(t), "--access", rd.URL(), "--trusted-proxy", "127.0.0.1/32")
		xff := []string{"X-Forwarded-For", "198.51.100.2"}
		for i := range 7 {
			if r := victim.lookup(t, q, xff...); r.status != 200 {
				t.Fatalf("lookup %d: %d %q", i, r.status, r.code)
			}
		}
		victim.stop(t, syscall.SIGKILL)
		r := ss[0].lookup(t, q, xff...)
		if want := `"daily";r=12;`; r.status != 200 || !strings.HasPrefix(r.header.Get("RateLimit"), want) {
			t.Fatalf("after the kill: %d RateLimit %q, want 200 and %s… (7 counted before the kill, 1 now)", r.status, r.header.Get("RateLimit"), want)
		}
	})

	t.Run("Migrate", func(t *testing.T) {
		// One host with the embedded store: a key and some lookups.
		data := env.fresh(t)
		one := env.start(t, data, "--trusted-proxy", "127.0.0.1/32")
		key, id := env.createKey(t, data, "--tier", "registered", "--email", "migrate@example.com")
		xff := []string{"X-Forwarded-For", "198.51.100.4"}
		for range 6 {
			if r := one.lookup(t, q, xff...); r.status != 200 {
				t.Fatalf("anonymous lookup: %d %q", r.status, r.code)
			}
		}
		for range 9 {
			if r := one.lookup(t, q, "Authorization", "Bearer "+key); r.status != 200 {
				t.Fatalf("registered lookup: %d %q", r.status, r.code)
			}
		}
		if err := one.stop(t, syscall.SIGTERM); err != nil {
			t.Fatalf("serve after SIGTERM: %v", err)
		}
		out, _ := env.cli(t, "access", "migrate", "--from", data, "--to", rd.URL())
		if !strings.Contains(out, "copied 1 keys") {
			t.Errorf("migrate printed %q", out)
		}
		// The servers on Redis continue both allowances where they were.
		r := ss[1].lookup(t, q, xff...)
		if want := `"daily";r=13;`; r.status != 200 || !strings.HasPrefix(r.header.Get("RateLimit"), want) {
			t.Errorf("anonymous after migrate: %d RateLimit %q, want %s…", r.status, r.header.Get("RateLimit"), want)
		}
		r = ss[2].lookup(t, q, "Authorization", "Bearer "+key)
		if want := `"monthly";r=490;`; r.status != 200 || !strings.HasPrefix(r.header.Get("RateLimit"), want) {
			t.Errorf("registered after migrate: %d RateLimit %q, want %s…", r.status, r.header.Get("RateLimit"), want)
		}
		list, _ := env.cli(t, "keys", "list", "--access", rd.URL())
		if !strings.Contains(list, id) || !strings.Contains(list, "migrate@example.com") {
			t.Errorf("keys list --access after migrate lacks %s:\n%s", id, list)
		}
	})

	t.Run("RedisDownAndBack", func(t *testing.T) {
		paid, _ := env.createRedisKey(t, rd, "--tier", "paid")
		paidAuth := []string{"Authorization", "Bearer " + paid}
		xff := []string{"X-Forwarded-For", "198.51.100.3"}
		for _, s := range ss {
			if r := s.lookup(t, q, paidAuth...); r.status != 200 { // now cached by each
				t.Fatalf("paid key: %d %q", r.status, r.code)
			}
		}
		rd.Stop()
		for i, s := range ss {
			r := s.lookup(t, q, xff...)
			if r.status != 503 || r.code != "access_unavailable" || r.header.Get("Retry-After") == "" {
				t.Errorf("server %d, Redis down, anonymous: %d %q Retry-After %q; want 503 access_unavailable with Retry-After",
					i, r.status, r.code, r.header.Get("Retry-After"))
			}
			if r := s.lookup(t, q, paidAuth...); r.status != 200 {
				t.Errorf("server %d, Redis down, known paid key: %d %q, want 200", i, r.status, r.code)
			}
			waitReadyz(t, s, http.StatusServiceUnavailable)
		}
		rd.Start()
		for _, s := range ss {
			waitReadyz(t, s, http.StatusOK)
		}
		got := spread(t, ss, 25, q, xff...)
		if got[200] != 20 || got[429] != 5 {
			t.Errorf("after Redis returned: %v, want 20 answers and 5 refusals (nothing was counted while it was down)", got)
		}
	})
}

// createRedisKey runs `kwdata keys create --access` on rd.
func (env *tiersEnv) createRedisKey(tb testing.TB, rd *testservers.Redis, args ...string) (key, id string) {
	tb.Helper()
	out, errb := env.cli(tb, append([]string{"keys", "create", "--access", rd.URL()}, args...)...)
	key = strings.TrimSpace(out)
	var tier string
	if _, err := fmt.Sscanf(errb, "created key %s %s", &id, &tier); err != nil || !strings.HasPrefix(key, "kwd_") {
		tb.Fatalf("keys create printed %q and %q", out, errb)
	}
	return key, id
}

// waitReadyz waits up to 10 s for GET /readyz to answer status.
func waitReadyz(tb testing.TB, s *tiersServer, status int) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, err := s.send(s.client, "GET", "/readyz", "")
		if err == nil && r.status == status {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("GET /readyz did not answer %d within 10s (last %d %q, %v)", status, r.status, r.code, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
