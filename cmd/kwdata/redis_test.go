//go:build unix

package main

// Several `kwdata serve` processes on one Redis (--access redis://…), as
// several hosts behind a load balancer run them: the allowances are exact
// across them, a key changed through the command line reaches every one,
// a killed server loses nothing Redis acknowledged, and a Redis outage is
// a 503 that ends by itself.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v85/webhook"

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

// spreadInFlight is how many lookups spread keeps in flight on each
// server: enough for every server to race the others on one counter, and
// few enough that none waits for one of its Redis connections (10 per
// core) longer than the store's command timeout on a loaded machine.
const spreadInFlight = 4

// spread sends total lookups, round robin over the servers with
// spreadInFlight at a time on each, and counts the answers by status (-1
// for a lookup that got no answer).
func spread(tb testing.TB, ss []*tiersServer, total int, q string, hdr ...string) map[int]int {
	tb.Helper()
	var mu sync.Mutex
	got := map[int]int{}
	next := make(chan int, total)
	for i := range total {
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	for range spreadInFlight * len(ss) {
		wg.Go(func() {
			for i := range next {
				s := ss[i%len(ss)]
				r, err := s.send(s.client, "GET", "/v1/keyword?q="+strings.ReplaceAll(q, " ", "+")+"&country=us", "", hdr...)
				mu.Lock()
				if err != nil {
					got[-1]++
				} else {
					got[r.status]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return got
}

// TestRedisAccess runs the shared access store end to end.
func TestRedisAccess(t *testing.T) {
	t.Parallel()
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
			for i, s := range ss {
				s.lookupUntil(t, fmt.Sprintf("%s, server %d", what, i), q, 250*time.Millisecond, want, auth...)
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

	t.Run("SecondServerOnFolder", func(t *testing.T) { env.testSecondServerOnFolder(t, rd) })

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
		if !strings.Contains(out, "copied 1 key and ") {
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

	t.Run("SignupAndBillingAcrossServers", func(t *testing.T) {
		env.testRedisSignupAndBilling(t, rd)
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
		// Sign-up and the account page need Redis as counting does.
		for _, tc := range []struct{ method, path, body string }{
			{"POST", "/v1/register", `{"email": "down@example.com"}`},
			{"POST", "/v1/register/verify", `{"email": "down@example.com", "code": "123456"}`},
			{"POST", "/v1/keys/rotate", ""},
		} {
			r := ss[0].do(t, tc.method, tc.path, tc.body, append(xff, paidAuth...)...)
			if r.status != 503 || r.code != "access_unavailable" {
				t.Errorf("%s %s with Redis down: %d %q, want 503 access_unavailable", tc.method, tc.path, r.status, r.code)
			}
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
	var last string
	defer func() {
		if tb.Failed() {
			tb.Logf("GET /readyz last answered %s", last)
		}
	}()
	testservers.WaitFor(tb, 10*time.Second, fmt.Sprintf("GET /readyz to answer %d", status), func() bool {
		r, err := s.send(s.client, "GET", "/readyz", "")
		last = fmt.Sprintf("%d %q (%v)", r.status, r.code, err)
		return err == nil && r.status == status
	})
}

// testRedisSignupAndBilling: two servers on one Redis, with mail through
// Mailpit and billing against stripe-mock. A code mailed by one is traded
// for a key on the other, and the key works on the first; a Stripe event
// makes the key paid on both and, delivered again to the other, changes
// nothing; a rotation on one is refused on the other within 250 ms.
func (env *tiersEnv) testRedisSignupAndBilling(t *testing.T, rd *testservers.Redis) {
	mp := testservers.StartMailpit(t, false)
	api := testservers.StartStripeMock(t)
	const secret = "whsec_kwdata_redis"
	var ss []*tiersServer
	for range 2 {
		ss = append(ss, env.startEnv(t, []string{"STRIPE_SECRET_KEY=sk_test_kwdata", "STRIPE_WEBHOOK_SECRET=" + secret},
			env.fresh(t), "--access", rd.URL(), "--trusted-proxy", "127.0.0.1/32",
			"--smtp-url", "smtp://"+mp.SMTP, "--mail-from", "kwdata <no-reply@kwdata.example>",
			"--stripe-price", testservers.StripeMockPrice, "--stripe-api", api))
	}
	a, b := ss[0], ss[1]
	q := env.keywords[0]
	_, monthEnd := tiersMonth(env.now())
	xff := []string{"X-Forwarded-For", "198.51.100.20"}

	r := a.do(t, "POST", "/v1/register", `{"email": "redis-1@example.com"}`, xff...)
	tiersWantStatus(t, r, 202, "")
	m := regexp.MustCompile(`Your kwdata code is (\d{8})`).FindStringSubmatch(mp.Last(t, "redis-1@example.com").Text)
	if m == nil {
		t.Fatal("no code in the mail")
	}
	r = b.do(t, "POST", "/v1/register/verify", `{"email": "redis-1@example.com", "code": "`+m[1]+`"}`)
	tiersWantStatus(t, r, 201, "")
	var got struct{ Key string }
	if err := json.Unmarshal(r.body, &got); err != nil || !strings.HasPrefix(got.Key, "kwd_") {
		t.Fatalf("verify answered %s (%v)", r.body, err)
	}
	auth := []string{"Authorization", "Bearer " + got.Key}
	tiersWantLimit(t, a.lookup(t, q, auth...), tiersMonthly(env.now()), 499, monthEnd)
	// The code is used, whichever server is asked.
	tiersWantStatus(t, a.do(t, "POST", "/v1/register/verify", `{"email": "redis-1@example.com", "code": "`+m[1]+`"}`), 400, "invalid_code")

	var id string
	for _, line := range strings.Split(func() string { out, _ := env.cli(t, "keys", "list", "--access", rd.URL()); return out }(), "\n") {
		if strings.Contains(line, "redis-1@example.com") {
			id = strings.Fields(line)[0]
		}
	}
	if id == "" {
		t.Fatal("keys list --access does not show the new key")
	}
	post := func(s *tiersServer, body string) tiersResp {
		t.Helper()
		signed := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: []byte(body), Secret: secret, Timestamp: time.Now()})
		return s.do(t, "POST", "/v1/billing/webhook", body, "Stripe-Signature", signed.Header)
	}
	event := func(id, typ, object string) string {
		return `{"id": "` + id + `", "object": "event", "api_version": "2025-09-30.clover", "type": "` + typ + `", "data": {"object": ` + object + `}}`
	}
	completed := event("evt_redis_checkout", "checkout.session.completed",
		`{"id": "cs_test_r", "object": "checkout.session", "mode": "subscription", "client_reference_id": "`+id+`", "customer": "cus_redis", "subscription": "sub_redis"}`)
	deleted := event("evt_redis_deleted", "customer.subscription.deleted",
		`{"id": "sub_redis", "object": "subscription", "customer": "cus_redis", "status": "canceled", "items": {"object": "list", "data": [{"id": "si_1", "object": "subscription_item", "price": "`+testservers.StripeMockPrice+`"}]}}`)

	tiersWantStatus(t, b.do(t, "POST", "/v1/billing/checkout", "", auth...), 201, "")
	tiersWantStatus(t, post(a, completed), 200, "")
	// A server hears of a change made through another one on Redis's
	// channel, within milliseconds; until then its cached record stands.
	// Lookups the other server still counted as registered are counted in
	// the allowance, as they should be.
	stale := 0
	for i, s := range ss {
		r, before := s.lookupUntil(t, fmt.Sprintf("server %d, a paid lookup after the checkout", i), q, 2*time.Second,
			func(r tiersResp) bool { return r.header.Get("RateLimit") == "" }, auth...)
		for _, r := range append(before, r) {
			tiersWantStatus(t, r, 200, "")
		}
		stale += len(before)
	}
	// Signed in on one server with the key, the account page on the
	// other: sessions are kept in Redis too.
	login, err := http.NewRequest("POST", a.base+"/account/login", strings.NewReader("key="+got.Key))
	if err != nil {
		t.Fatal(err)
	}
	login.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	noFollow := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Do(login)
	if err != nil {
		t.Fatalf("POST /account/login: %v", err)
	}
	resp.Body.Close()
	session := ""
	for _, c := range resp.Cookies() {
		if c.Name == "kwdata_session" {
			session = c.Value
		}
	}
	if resp.StatusCode != http.StatusSeeOther || session == "" {
		t.Fatalf("POST /account/login: %d, cookies %q", resp.StatusCode, resp.Header.Values("Set-Cookie"))
	}
	page := b.do(t, "GET", "/account", "", "Cookie", "kwdata_session="+session)
	tiersWantStatus(t, page, 200, "")
	if !strings.Contains(string(page.body), id) {
		t.Errorf("the account page on the other server does not show %s", id)
	}
	tiersWantStatus(t, post(b, deleted), 200, "")
	// Until a hears of the deletion its record says paid, and a paid
	// lookup is not counted.
	r, _ = a.lookupUntil(t, "a lookup after the subscription's deletion", q, 2*time.Second,
		func(r tiersResp) bool { return r.header.Get("RateLimit-Policy") != "" }, auth...)
	tiersWantLimit(t, r, tiersMonthly(env.now()), int64(498-stale), monthEnd)
	// The checkout delivered again, to the other server: applied once, so
	// the key stays registered.
	tiersWantStatus(t, post(b, completed), 200, "")
	tiersWantLimit(t, b.lookup(t, q, auth...), tiersMonthly(env.now()), int64(497-stale), monthEnd)

	r = a.do(t, "POST", "/v1/keys/rotate", "", auth...)
	tiersWantStatus(t, r, 201, "")
	_, before := b.lookupUntil(t, "the rotated key on the other server", q, 250*time.Millisecond,
		func(r tiersResp) bool { return r.status == 401 && r.code == "invalid_key" }, auth...)
	late := 0 // lookups the old key still made before b heard of the rotation
	for _, r := range before {
		if r.status == 200 {
			late++
		}
	}

	// With Redis down, billing is a 503 (Stripe retries the webhook) and
	// applies nothing.
	rd.Stop()
	var fresh struct{ Key string }
	if err := json.Unmarshal(r.body, &fresh); err != nil {
		t.Fatalf("rotate answered %s (%v)", r.body, err)
	}
	again := event("evt_redis_checkout2", "checkout.session.completed",
		`{"id": "cs_test_r2", "object": "checkout.session", "mode": "subscription", "client_reference_id": "`+id+`", "customer": "cus_redis", "subscription": "sub_redis2"}`)
	for _, r := range []tiersResp{
		a.do(t, "POST", "/v1/billing/checkout", "", "Authorization", "Bearer "+fresh.Key),
		post(b, again),
	} {
		if r.status != 503 || r.code != "access_unavailable" {
			t.Errorf("billing with Redis down: %d %q, want 503 access_unavailable", r.status, r.code)
		}
	}
	rd.Start()
	for _, s := range ss {
		waitReadyz(t, s, http.StatusOK)
	}
	// The account's count went on through the rotation.
	tiersWantLimit(t, a.lookup(t, q, "Authorization", "Bearer "+fresh.Key), tiersMonthly(env.now()), int64(496-stale-late), monthEnd)
}
