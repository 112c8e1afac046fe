//go:build unix

package main

// The access tiers, tested against the real binary: `kwdata serve` runs as a
// process on a loopback port, so restarts, SIGTERM and SIGKILL are the real
// ones, and `kwdata keys` changes the registry from another process while
// the server runs.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/lake"

	"github.com/kwdata/kwdata/internal/testservers"
	"github.com/stripe/stripe-go/v85/webhook"
)

// tiersDate is the data date of the index every tiers test serves.
const tiersDate = "2026-11-21"

// tiersDaily is the exact RateLimit-Policy of an anonymous caller.
const tiersDaily = `"daily";q=20;w=86400`

// tiersMonthly returns the exact RateLimit-Policy of a registered key in
// the UTC calendar month of now.
func tiersMonthly(now time.Time) string {
	start, end := tiersMonth(now)
	return fmt.Sprintf(`"monthly";q=500;w=%d`, int64(end.Sub(start)/time.Second))
}

// tiersMonth returns the start and end of the UTC calendar month of now.
func tiersMonth(now time.Time) (time.Time, time.Time) {
	now = now.UTC()
	start := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	return start, start.AddDate(0, 1, 0)
}

// tiersMidnight returns the next UTC midnight after now.
func tiersMidnight(now time.Time) time.Time {
	now = now.UTC()
	return time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC).AddDate(0, 0, 1)
}

// TestTiers checks the access tiers of docs/API.md end to end: allowances and
// their RateLimit fields, keys managed from the command line while the
// server runs, trusted proxies, exact counting under concurrency, and
// durable counters across clean and crashing restarts.
func TestTiers(t *testing.T) {
	t.Parallel()
	env := tiersSetup(t)

	t.Run("Anonymous", env.testAnonymous)
	t.Run("Keys", env.testKeys)
	t.Run("TrustedProxy", env.testTrustedProxy)
	t.Run("Parallel", env.testParallel)
	t.Run("CleanRestart", env.testCleanRestart)
	t.Run("CrashRestart", env.testCrashRestart)
	t.Run("IdleAdminShutdown", env.testIdleAdminShutdown)
	t.Run("Register", env.testRegister)
	t.Run("Billing", env.testBilling)
	t.Run("MCP", env.testMCP)
	t.Run("AgentSignIn", env.testAgentSignIn)
}

// testAgentSignIn: kwdata serve with a loopback --public-url mounts the
// sign-in MCP endpoint, which refuses a call without a token with the
// challenge that names its metadata, and the authorization server whose
// issuer is that URL; /mcp stays anonymous.
func (env *tiersEnv) testAgentSignIn(t *testing.T) {
	addr := testservers.FreeAddr(t)
	pub := "http://" + addr
	s := env.start(t, env.fresh(t), "--addr", addr, "--public-url", pub)
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"tiers","version":"1"}}}`
	r := s.do(t, "POST", "/mcp/oauth", initialize, "Content-Type", "application/json", "Accept", "application/json, text/event-stream")
	if want := `Bearer resource_metadata="` + pub + `/.well-known/oauth-protected-resource/mcp/oauth"`; r.status != http.StatusUnauthorized || r.header.Get("WWW-Authenticate") != want {
		t.Errorf("POST /mcp/oauth without a token: %d %q, want 401 %q", r.status, r.header.Get("WWW-Authenticate"), want)
	}
	r = s.do(t, "GET", "/.well-known/oauth-authorization-server", "")
	var meta struct {
		Issuer           string `json:"issuer"`
		RegistrationEndp string `json:"registration_endpoint"`
	}
	if err := json.Unmarshal(r.body, &meta); err != nil || r.status != http.StatusOK || meta.Issuer != pub || meta.RegistrationEndp != pub+"/oauth/register" {
		t.Errorf("authorization server metadata: %d %s", r.status, r.body)
	}
	r = s.do(t, "POST", "/mcp", initialize, "Content-Type", "application/json", "Accept", "application/json, text/event-stream")
	if r.status != http.StatusOK || !strings.Contains(string(r.body), "/mcp/oauth") {
		t.Errorf("POST /mcp anonymous: %d %s; want 200 and instructions naming the sign-in endpoint", r.status, r.body)
	}
}

// testAnonymous: 20 lookups per address and day, whatever the kind of
// lookup; the 21st is refused with the right fields; a forged
// X-Forwarded-For shares the connection's allowance; validation failures
// and invalid keys are answered as such, never counted, before and after
// the allowance is spent.
func (env *tiersEnv) testAnonymous(t *testing.T) {
	s := env.start(t, env.fresh(t))
	refusals := func(when string) {
		t.Helper()
		for _, tc := range []struct {
			method, path, body string
			hdr                []string
			status             int
			code               string
		}{
			{"GET", "/v1/keyword", "", nil, 400, "missing_q"},
			{"GET", "/v1/keyword?q=&country=us", "", nil, 400, "missing_q"},
			{"GET", "/v1/keyword?q=running+shoes&country=zz", "", nil, 400, "unsupported_country"},
			{"GET", "/v1/keyword?q=" + strings.Repeat("x", 5000), "", nil, 400, "q_too_long"},
			{"GET", "/v1/keyword?q=" + strings.Repeat("x", 5000), "", []string{"X-Forwarded-For", "203.0.113.5"}, 400, "q_too_long"},
			{"POST", "/v1/keywords", `{"keywords": [`, nil, 400, "invalid_body"},
			{"POST", "/v1/keywords", tiersBulkBody(make([]string, 101)), nil, 400, "too_many_keywords"},
			{"GET", "/v1/keyword?q=running+shoes", "", []string{"Authorization", "Bearer " + tiersUnknownKey}, 401, "invalid_key"},
		} {
			r := s.do(t, tc.method, tc.path, tc.body, tc.hdr...)
			if r.status != tc.status || r.code != tc.code {
				t.Errorf("%s: %s %.60s: %d %q, want %d %q", when, tc.method, tc.path, r.status, r.code, tc.status, tc.code)
			}
			for _, f := range []string{"RateLimit", "RateLimit-Policy", "Retry-After"} {
				if v := r.header.Get(f); v != "" {
					t.Errorf("%s: %s %.60s (%d) carries %s: %s", when, tc.method, tc.path, r.status, f, v)
				}
			}
		}
	}
	refusals("before any lookup")

	// Every kind of lookup counts: API answers 200 and 404, and page views.
	// From the 11th on, each carries a forged X-Forwarded-For naming one of
	// two other addresses; without a trusted proxy they still count on the
	// connection's address, so the remainder keeps going down by one.
	for i := range 20 {
		var hdr []string
		if i >= 10 {
			hdr = []string{"X-Forwarded-For", fmt.Sprintf("198.51.100.%d", 1+i%2)}
		}
		var r tiersResp
		switch i % 3 {
		case 0:
			r = s.lookup(t, env.keywords[i], hdr...)
			tiersWantStatus(t, r, 200, "")
		case 1:
			r = s.lookup(t, fmt.Sprintf("tiers no such keyword %d", i), hdr...)
			tiersWantStatus(t, r, 404, "keyword_not_found")
		case 2:
			r = s.do(t, "GET", "/keyword?"+url.Values{"q": {env.keywords[i]}, "country": {"us"}}.Encode(), "", hdr...)
			tiersWantStatus(t, r, 200, "")
		}
		tiersWantLimit(t, r, tiersDaily, int64(19-i), tiersMidnight(env.now()))
		if i == 18 {
			// A bulk request larger than what is left is refused whole,
			// worded by the server from the numbers of the access store.
			r := s.do(t, "POST", "/v1/keywords", tiersBulkBody(env.keywords[:2]))
			tiersWantStatus(t, r, 429, "quota_exhausted")
			tiersWantDetail(t, r, `^This request needs 2 lookups but the daily allowance of 20 lookups for this address has 1 left; `+
				`send at most 1 keyword, or wait: it renews in `+tiersDurationRE+`\. A free API key \(POST /v1/register\)`)
		}
	}

	// The 21st lookup is refused however it is asked for.
	for _, tc := range []struct {
		name               string
		method, path, body string
		hdr                []string
	}{
		{"lookup", "GET", "/v1/keyword?q=" + url.QueryEscape(env.keywords[0]), "", nil},
		{"lookup with a forged X-Forwarded-For", "GET", "/v1/keyword?q=" + url.QueryEscape(env.keywords[0]), "", []string{"X-Forwarded-For", "203.0.113.77"}},
		{"unknown keyword", "GET", "/v1/keyword?q=tiers+nothing&country=us", "", nil},
		{"bulk", "POST", "/v1/keywords", tiersBulkBody(env.keywords[:2]), nil},
		{"page", "GET", "/keyword?q=" + url.QueryEscape(env.keywords[0]) + "&country=us", "", nil},
	} {
		r := s.do(t, tc.method, tc.path, tc.body, tc.hdr...)
		if tc.name == "page" {
			if r.status != 429 {
				t.Errorf("21st lookup (%s): status %d, want 429", tc.name, r.status)
			}
		} else {
			tiersWantStatus(t, r, 429, "quota_exhausted")
			if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
				t.Errorf("21st lookup (%s): Content-Type %q", tc.name, ct)
			}
		}
		tiersWantRetry(t, r, tiersDaily, tiersMidnight(env.now()))
		if tc.name != "page" {
			// Human words, never a Go duration such as "1h0m0s".
			tiersWantDetail(t, r, `^The daily allowance of 20 lookups for this address is used up; it renews in `+tiersDurationRE+
				`\. A free API key \(POST /v1/register\) raises the allowance to 500 lookups a month; the paid tier is unlimited\.$`)
		}
	}

	// A 400 wins over a 429, and an invalid key is a 401, not the spent
	// anonymous allowance.
	refusals("after the allowance is spent")
	if r := s.lookup(t, env.keywords[0]); r.status != 429 {
		t.Errorf("lookup after the refusals: status %d, want 429 still", r.status)
	}
}

// testKeys: invalid keys are 401 and never anonymous; a key created or
// revoked with `kwdata keys` while the server runs takes effect; registered
// keys carry the monthly policy, paid keys no RateLimit fields.
func (env *tiersEnv) testKeys(t *testing.T) {
	data := env.fresh(t)
	s := env.start(t, data)

	for _, hdr := range [][]string{
		{"Authorization", "Bearer " + tiersUnknownKey},
		{"Authorization", "bearer " + tiersUnknownKey},
		{"X-API-Key", tiersUnknownKey},
		{"Authorization", "Bearer not-a-key"},
		{"Authorization", "Bearer "},
		{"Authorization", "Basic dXNlcjpwYXNz"},
		{"X-API-Key", ""},
	} {
		r := s.lookup(t, env.keywords[0], hdr...)
		tiersWantStatus(t, r, 401, "invalid_key")
		if r.header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: %q: 401 without WWW-Authenticate", hdr[0], hdr[1])
		}
		if v := r.header.Get("RateLimit"); v != "" {
			t.Errorf("%s: %q: 401 carries RateLimit %s", hdr[0], hdr[1], v)
		}
	}
	// None of the refused keys was served or counted as anonymous.
	tiersWantLimit(t, s.lookup(t, env.keywords[0]), tiersDaily, 19, tiersMidnight(env.now()))

	// A key created while the server runs works on its first request.
	key, id := env.createKey(t, data, "--tier", "registered", "--email", "tiers-keys@example.com")
	_, monthEnd := tiersMonth(env.now())
	r := s.lookup(t, env.keywords[1], "Authorization", "Bearer "+key)
	tiersWantStatus(t, r, 200, "")
	tiersWantLimit(t, r, tiersMonthly(env.now()), 499, monthEnd)
	r = s.lookup(t, env.keywords[2], "X-API-Key", key)
	tiersWantStatus(t, r, 200, "")
	tiersWantLimit(t, r, tiersMonthly(env.now()), 498, monthEnd)

	// A bulk request counts one per valid keyword, found or not.
	r = s.do(t, "POST", "/v1/keywords", tiersBulkBody([]string{env.keywords[3], env.keywords[4], "tiers no such keyword", ""}),
		"Authorization", "Bearer "+key)
	tiersWantStatus(t, r, 200, "")
	tiersWantLimit(t, r, tiersMonthly(env.now()), 495, monthEnd)

	// Re-tiered with `kwdata keys set-tier` while the server runs (within
	// the registry poll interval; the deadline here is generous): paid
	// until a future day, its answers carry no rate-limit fields; back to
	// registered, they return, with the monthly count where it was (paid
	// lookups are not charged to it).
	left := int64(495)
	retier := func(paid bool, args ...string) {
		t.Helper()
		env.cli(t, append([]string{"keys", "set-tier", "--data", data, id}, args...)...)
		var r tiersResp
		if !testservers.Poll(5*time.Second, func() bool {
			r = s.lookup(t, env.keywords[5], "Authorization", "Bearer "+key)
			tiersWantStatus(t, r, 200, "")
			limited := r.header.Get("RateLimit") != ""
			if limited == paid && limited {
				// Not yet re-tiered: counted at the tier it had.
				left--
				tiersWantLimit(t, r, tiersMonthly(env.now()), left, monthEnd)
			}
			return limited != paid
		}) {
			t.Fatalf("keys set-tier %s: the server still answers as before after 5s", strings.Join(args, " "))
		}
		if paid {
			for _, f := range []string{"RateLimit-Policy", "Retry-After"} {
				if v := r.header.Get(f); v != "" {
					t.Errorf("lookup with a key set to paid carries %s: %s", f, v)
				}
			}
		} else {
			left--
			tiersWantLimit(t, r, tiersMonthly(env.now()), left, monthEnd)
		}
	}
	retier(true, "paid", "--paid-until", env.now().AddDate(1, 0, 0).Format(time.DateOnly))
	retier(false, "registered")

	// A paid key is unlimited and carries no RateLimit fields.
	paid, _ := env.createKey(t, data, "--tier", "paid")
	for i := range 25 {
		r := s.lookup(t, env.keywords[i], "Authorization", "Bearer "+paid)
		tiersWantStatus(t, r, 200, "")
		for _, f := range []string{"RateLimit", "RateLimit-Policy", "Retry-After"} {
			if v := r.header.Get(f); v != "" {
				t.Fatalf("paid lookup %d carries %s: %s", i+1, f, v)
			}
		}
	}
	// A paid key whose subscription has lapsed counts as registered.
	lapsed, _ := env.createKey(t, data, "--tier", "paid", "--paid-until", "2020-01-31")
	r = s.lookup(t, env.keywords[0], "Authorization", "Bearer "+lapsed)
	tiersWantStatus(t, r, 200, "")
	tiersWantLimit(t, r, tiersMonthly(env.now()), 499, monthEnd)

	// A revoked key is refused once `kwdata keys revoke` returns (it goes
	// through the server's admin socket; 250 ms at most is documented),
	// and is not anonymous.
	env.cli(t, "keys", "revoke", "--data", data, id)
	revoked := time.Now()
	testservers.WaitFor(t, 5*time.Second, "the revoked key to be refused after `kwdata keys revoke`", func() bool {
		r := s.lookup(t, env.keywords[0], "Authorization", "Bearer "+key)
		if r.status == 401 {
			tiersWantStatus(t, r, 401, "invalid_key")
			return true
		}
		tiersWantStatus(t, r, 200, "")
		return false
	})
	t.Logf("revocation took effect after %s", time.Since(revoked).Round(time.Millisecond))
	tiersWantStatus(t, s.lookup(t, env.keywords[0], "X-API-Key", key), 401, "invalid_key")
	tiersWantLimit(t, s.lookup(t, env.keywords[0]), tiersDaily, 18, tiersMidnight(env.now()))
	if out, _ := env.cli(t, "keys", "list", "--data", data); !regexp.MustCompile(`(?m)^` + id + `\s.*revoked`).MatchString(out) {
		t.Errorf("keys list does not show %s revoked:\n%s", id, out)
	}
}

// testTrustedProxy: behind a trusted proxy each forwarded address has its
// own allowance, and entries left of the right-most untrusted one are
// ignored (a client can write them).
func (env *tiersEnv) testTrustedProxy(t *testing.T) {
	s := env.start(t, env.fresh(t), "--trusted-proxy", "127.0.0.1/32")
	const a, b = "198.51.100.7", "198.51.100.8"
	for i := range 20 {
		r := s.lookup(t, env.keywords[i], "X-Forwarded-For", a)
		tiersWantStatus(t, r, 200, "")
		tiersWantLimit(t, r, tiersDaily, int64(19-i), tiersMidnight(env.now()))
	}
	r := s.lookup(t, env.keywords[0], "X-Forwarded-For", a)
	tiersWantStatus(t, r, 429, "quota_exhausted")
	tiersWantRetry(t, r, tiersDaily, tiersMidnight(env.now()))
	// A client that prepends another address is still counted on a.
	tiersWantStatus(t, s.lookup(t, env.keywords[0], "X-Forwarded-For", "203.0.113.9, "+a), 429, "quota_exhausted")

	for i, tc := range []struct {
		name string
		hdr  []string
		want int64
	}{
		{"another forwarded address", []string{"X-Forwarded-For", b}, 19},
		{"the proxy itself", nil, 19},
		{"b through a second trusted hop", []string{"X-Forwarded-For", b + ", 127.0.0.1"}, 18},
		{"b in a second field", []string{"X-Forwarded-For", "203.0.113.9", "X-Forwarded-For", b}, 17},
	} {
		r := s.lookup(t, env.keywords[i], tc.hdr...)
		tiersWantStatus(t, r, 200, "")
		tiersWantLimit(t, r, tiersDaily, tc.want, tiersMidnight(env.now()))
	}
}

// testParallel: counting is exact under concurrency, and spent allowances
// stay spent across a restart.
func (env *tiersEnv) testParallel(t *testing.T) {
	data := env.fresh(t)
	key, _ := env.createKey(t, data, "--tier", "registered")
	bulkKey, _ := env.createKey(t, data, "--tier", "registered")
	s := env.start(t, data)
	_, monthEnd := tiersMonth(env.now())
	lookup := "/v1/keyword?" + url.Values{"q": {env.keywords[0]}, "country": {"us"}}.Encode()

	for _, tc := range []struct {
		name       string
		n, want    int
		method     string
		path, body string
		hdr        []string
		policy     string
		resetsAt   time.Time
	}{
		{"anonymous", 100, 20, "GET", lookup, "", nil, tiersDaily, tiersMidnight(env.now())},
		{"registered", 600, 500, "GET", lookup, "", []string{"Authorization", "Bearer " + key}, tiersMonthly(env.now()), monthEnd},
		// Bulk requests hold their reservation across 20 index lookups,
		// so far more of them overlap than single lookups do.
		{"registered bulk of 20", 100, 25, "POST", "/v1/keywords", tiersBulkBody(env.keywords[:20]),
			[]string{"Authorization", "Bearer " + bulkKey}, tiersMonthly(env.now()), monthEnd},
	} {
		got := s.burst(t, tc.n, tc.method, tc.path, tc.body, tc.hdr...)
		if got.status[200] != tc.want || got.status[429] != tc.n-tc.want || len(got.status) != 2 {
			t.Errorf("%s: %d parallel requests answered %v, want %d×200 and %d×429", tc.name, tc.n, got.status, tc.want, tc.n-tc.want)
		}
		if got.badFields != nil {
			t.Errorf("%s: %s", tc.name, got.badFields)
		}
		r := s.lookup(t, env.keywords[1], tc.hdr...)
		tiersWantStatus(t, r, 429, "quota_exhausted")
		tiersWantRetry(t, r, tc.policy, tc.resetsAt)
		// A 400 still wins over the 429.
		tiersWantStatus(t, s.do(t, "GET", "/v1/keyword?country=us", "", tc.hdr...), 400, "missing_q")
	}

	if err := s.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("serve after SIGTERM: %v", err)
	}
	s = env.start(t, data)
	tiersWantStatus(t, s.lookup(t, env.keywords[2]), 429, "quota_exhausted")
	tiersWantStatus(t, s.lookup(t, env.keywords[2], "Authorization", "Bearer "+key), 429, "quota_exhausted")
	tiersWantStatus(t, s.lookup(t, env.keywords[2], "Authorization", "Bearer "+bulkKey), 429, "quota_exhausted")

	// Behind a trusted proxy every forwarded address is exact on its own;
	// several bursts give a counting race several chances to show.
	s = env.start(t, env.fresh(t), "--trusted-proxy", "127.0.0.1/32")
	for i := range 8 {
		addr := fmt.Sprintf("198.51.100.%d", 10+i)
		got := s.burst(t, 100, "GET", lookup, "", "X-Forwarded-For", addr)
		if got.status[200] != 20 || got.status[429] != 80 || len(got.status) != 2 || got.badFields != nil {
			t.Errorf("100 parallel lookups forwarded for %s answered %v (%v), want 20×200 and 80×429", addr, got.status, got.badFields)
		}
	}
}

// testCleanRestart: a SIGTERM stop exits 0 and keeps every count exactly.
func (env *tiersEnv) testCleanRestart(t *testing.T) {
	data := env.fresh(t)
	key, id := env.createKey(t, data, "--tier", "registered")
	s := env.start(t, data)
	const anon, reg = 7, 13
	for i := range anon {
		tiersWantStatus(t, s.lookup(t, env.keywords[i]), 200, "")
	}
	for i := range reg {
		tiersWantStatus(t, s.lookup(t, env.keywords[i], "Authorization", "Bearer "+key), 200, "")
	}
	// A second server on the same folder would count beside the first;
	// it must refuse to start.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	second, err := env.command(ctx, nil, "serve", "--data", data, "--addr", "127.0.0.1:0").CombinedOutput()
	if err == nil || ctx.Err() != nil || !strings.Contains(string(second), "already running") {
		t.Errorf("a second server on the same folder: %v\n%s", err, second)
	}
	if err := s.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("serve after SIGTERM: %v", err)
	}
	// After a clean stop the command line's usage column is exact too.
	out, _ := env.cli(t, "keys", "list", "--data", data)
	if !regexp.MustCompile(`(?m)^` + id + `\s.*\s` + strconv.Itoa(reg) + ` \(as of `).MatchString(out) {
		t.Errorf("keys list after a clean stop does not show %d lookups for %s:\n%s", reg, id, out)
	}

	s = env.start(t, data)
	tiersWantLimit(t, s.lookup(t, env.keywords[0]), tiersDaily, 20-anon-1, tiersMidnight(env.now()))
	_, monthEnd := tiersMonth(env.now())
	tiersWantLimit(t, s.lookup(t, env.keywords[0], "Authorization", "Bearer "+key), tiersMonthly(env.now()), 500-reg-1, monthEnd)
}

// testCrashRestart: after a SIGKILL the counters lose at most what was
// counted within the last flush interval (1 s): lookups made well before
// the kill survive, and nothing is counted twice.
func (env *tiersEnv) testCrashRestart(t *testing.T) {
	data := env.fresh(t)
	key, id := env.createKey(t, data, "--tier", "registered")
	s := env.start(t, data)
	auth := []string{"Authorization", "Bearer " + key}
	const before, last = 6, 5 // lookups before the flush, and within the last second
	for i := range before {
		tiersWantStatus(t, s.lookup(t, env.keywords[i]), 200, "")
		tiersWantStatus(t, s.lookup(t, env.keywords[i], auth...), 200, "")
	}
	// Wait for a flush (every 1 s) to have written them: the server
	// rewrites its usage snapshot, access/usage.json, after each flush that
	// changed a key. Waiting for that rather than sleeping keeps a slow
	// disk from failing the test. (`kwdata keys list` shows live counts
	// while the server runs, so it cannot tell.)
	flushed := time.Now()
	var usage []byte
	defer func() {
		if t.Failed() {
			t.Logf("usage.json holds:\n%s", usage)
		}
	}()
	testservers.WaitFor(t, 15*time.Second, fmt.Sprintf("a flush of the first %d lookups to usage.json", before), func() bool {
		var snap struct {
			Keys map[string]struct{ Lookups int } `json:"keys"`
		}
		usage, _ = os.ReadFile(filepath.Join(data, "access", "usage.json"))
		return json.Unmarshal(usage, &snap) == nil && snap.Keys[id].Lookups == before
	})
	t.Logf("the first %d lookups were flushed within %s", before, time.Since(flushed).Round(time.Millisecond))
	for i := range last {
		tiersWantStatus(t, s.lookup(t, env.keywords[i]), 200, "")
		tiersWantStatus(t, s.lookup(t, env.keywords[i], auth...), 200, "")
	}
	err := s.stop(t, syscall.SIGKILL)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("serve after SIGKILL: %v, want killed", err)
	}

	s = env.start(t, data)
	for _, tc := range []struct {
		name  string
		hdr   []string
		quota int64
	}{
		{"anonymous", nil, 20},
		{"registered", auth, 500},
	} {
		r := s.lookup(t, env.keywords[0], tc.hdr...)
		tiersWantStatus(t, r, 200, "")
		_, remaining, _ := tiersLimit(t, r.header)
		kept := tc.quota - 1 - remaining // counted before the kill and kept
		if kept < before || kept > before+last {
			t.Errorf("%s: %d lookups survived a SIGKILL after %d flushed and %d recent ones; want %d to %d",
				tc.name, kept, before, last, before, before+last)
		}
		t.Logf("%s: %d of the %d lookups counted in the last second before SIGKILL were lost", tc.name, before+last-kept, last)
	}
}

// testRegister: sign-up end to end through a real SMTP server (Mailpit):
// the code arrives by mail and is traded for a key; the same mailbox in
// another spelling gets the same answer, and a code that replaces the key
// (count kept) mailed to the account's own address, never to the one
// typed; rotation replaces it again; bad input and a wrong code are
// refused; a few codes per address and day.
func (env *tiersEnv) testRegister(t *testing.T) {
	mp := testservers.StartMailpit(t, false)
	data := env.fresh(t)
	s := env.start(t, data, "--smtp-url", "smtp://"+mp.SMTP, "--mail-from", "kwdata <no-reply@kwdata.example>")
	register := func(email string) tiersResp {
		body, _ := json.Marshal(map[string]string{"email": email})
		return s.do(t, "POST", "/v1/register", string(body))
	}
	codeRE := regexp.MustCompile(`Your kwdata code is (\d{8})`)
	codeFor := func(to string) (string, string) {
		t.Helper()
		msg := mp.Last(t, to)
		m := codeRE.FindStringSubmatch(msg.Text)
		if m == nil || msg.From.Address != "no-reply@kwdata.example" {
			t.Fatalf("mail to %s: %+v", to, msg)
		}
		return m[1], msg.Text
	}
	verify := func(email, code string) tiersResp {
		body, _ := json.Marshal(map[string]string{"email": email, "code": code})
		return s.do(t, "POST", "/v1/register/verify", string(body))
	}
	keyOf := func(r tiersResp) string {
		t.Helper()
		tiersWantStatus(t, r, 201, "")
		var got struct{ Key string }
		if err := json.Unmarshal(r.body, &got); err != nil || !strings.HasPrefix(got.Key, "kwd_") {
			t.Fatalf("answered %s (%v)", r.body, err)
		}
		if cc := r.header.Get("Cache-Control"); cc != "private, no-store" {
			t.Errorf("a key answered with Cache-Control %q, want private, no-store", cc)
		}
		return got.Key
	}
	_, monthEnd := tiersMonth(env.now())

	r := register("tiers-1@example.com")
	if r.status == 404 && r.code == "not_found" {
		t.Fatal("POST /v1/register answered 404 not_found: kwdata serve does not wire up registration")
	}
	tiersWantStatus(t, r, 202, "")
	first := string(r.body)
	code, text := codeFor("tiers-1@example.com")
	if strings.Contains(text, "stops working") {
		t.Errorf("the first code's mail speaks of replacing a key:\n%s", text)
	}
	wrong := "000000"
	if code == wrong {
		wrong = "111111"
	}
	tiersWantStatus(t, verify("tiers-1@example.com", wrong), 400, "invalid_code")
	key := keyOf(verify("tiers-1@example.com", code))
	tiersWantLimit(t, s.lookup(t, env.keywords[0], "Authorization", "Bearer "+key), tiersMonthly(env.now()), 499, monthEnd)
	tiersWantStatus(t, verify("tiers-1@example.com", code), 400, "invalid_code") // used

	// The same mailbox, spelled otherwise: the same answer (nothing tells
	// it is registered), and a code that replaces the key, mailed to the
	// account's address: whoever owns tiers-1+x@ does not own tiers-1@.
	r = register("Tiers-1+X@Example.com")
	tiersWantStatus(t, r, 202, "")
	if strings.ReplaceAll(first, "tiers-1@example.com", "tiers-1+x@example.com") != string(r.body) {
		t.Errorf("a registered mailbox is answered otherwise:\n%s\n%s", first, r.body)
	}
	if n := mp.Count(t); n != 2 {
		t.Fatalf("Mailpit holds %d messages after two codes, want 2", n)
	}
	msg := mp.Last(t, "tiers-1@example.com")
	if len(msg.To) != 1 || msg.To[0].Address != "tiers-1@example.com" || !strings.Contains(msg.Text, "stops working") {
		t.Fatalf("the code that replaces the key of tiers-1@example.com was not mailed to it (asked as tiers-1+x@); its newest mail:\n%+v", msg)
	}
	code, _ = codeFor("tiers-1@example.com")
	key2 := keyOf(verify("tiers-1+x@example.com", code))
	tiersWantStatus(t, s.lookup(t, env.keywords[0], "Authorization", "Bearer "+key), 401, "invalid_key")
	tiersWantLimit(t, s.lookup(t, env.keywords[0], "Authorization", "Bearer "+key2), tiersMonthly(env.now()), 498, monthEnd)

	// Rotation: a new key on the same account; the old one is refused.
	key3 := keyOf(s.do(t, "POST", "/v1/keys/rotate", "", "Authorization", "Bearer "+key2))
	tiersWantStatus(t, s.lookup(t, env.keywords[0], "Authorization", "Bearer "+key2), 401, "invalid_key")
	tiersWantLimit(t, s.lookup(t, env.keywords[0], "Authorization", "Bearer "+key3), tiersMonthly(env.now()), 497, monthEnd)
	tiersWantStatus(t, s.do(t, "POST", "/v1/keys/rotate", "", "Authorization", "Bearer "+key2), 401, "invalid_key")
	tiersWantStatus(t, s.do(t, "POST", "/v1/keys/rotate", ""), 401, "invalid_key")
	if out, _ := env.cli(t, "keys", "list", "--data", data); strings.Count(out, "tiers-1") != 1 {
		t.Errorf("keys list after a recovery and a rotation, want one account:\n%s", out)
	}

	for _, tc := range []struct {
		body   string
		status int
		code   string
	}{
		{`{"email": "not-an-email"}`, 400, "invalid_email"},
		{`{"email": "a@b"}`, 400, "invalid_email"},
		{`{"email": "Ann <ann@example.com>"}`, 400, "invalid_email"},
		{`{"email": ""}`, 400, "invalid_email"},
		{`{"mail": "x@example.com"}`, 400, "invalid_body"},
		{`nonsense`, 400, "invalid_body"},
	} {
		r := s.do(t, "POST", "/v1/register", tc.body)
		if r.status != tc.status || r.code != tc.code {
			t.Errorf("register %s: %d %q, want %d %q", tc.body, r.status, r.code, tc.status, tc.code)
		}
	}
	// Refused requests did not use up the address's codes: two sent, one left.
	tiersWantStatus(t, register("tiers-2@example.com"), 202, "")
	r = register("tiers-3@example.com")
	tiersWantStatus(t, r, 429, "too_many_registrations")
	if n, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || n < 1 {
		t.Errorf("too_many_registrations: Retry-After %q", r.header.Get("Retry-After"))
	}
	// Signing up is not a lookup.
	tiersWantLimit(t, s.lookup(t, env.keywords[0]), tiersDaily, 19, tiersMidnight(env.now()))
}

// testBilling: the subscription end to end with the official Stripe
// library against stripe-mock, and webhook events signed here with the
// configured secret: paid after checkout.session.completed (no RateLimit
// fields), registered again after customer.subscription.deleted (500 a
// month, the count kept), a replayed event changes nothing, a bad
// signature is 400 and changes nothing.
func (env *tiersEnv) testBilling(t *testing.T) {
	api := testservers.StartStripeMock(t)
	const secret = "whsec_kwdata_test"
	data := env.fresh(t)
	key, id := env.createKey(t, data, "--tier", "registered", "--email", "payer@example.com")
	s := env.startEnv(t, []string{"STRIPE_SECRET_KEY=sk_test_kwdata", "STRIPE_WEBHOOK_SECRET=" + secret},
		data, "--stripe-price", testservers.StripeMockPrice, "--stripe-api", api)
	auth := []string{"Authorization", "Bearer " + key}
	_, monthEnd := tiersMonth(env.now())
	for i := range 3 {
		tiersWantLimit(t, s.lookup(t, env.keywords[i], auth...), tiersMonthly(env.now()), int64(499-i), monthEnd)
	}

	r := s.do(t, "POST", "/v1/billing/checkout", "", auth...)
	tiersWantStatus(t, r, 201, "")
	var page struct{ URL string }
	if err := json.Unmarshal(r.body, &page); err != nil || !strings.HasPrefix(page.URL, "http") {
		t.Fatalf("checkout answered %s (%v)", r.body, err)
	}
	tiersWantStatus(t, s.do(t, "POST", "/v1/billing/checkout", ""), 401, "invalid_key")
	tiersWantStatus(t, s.do(t, "POST", "/v1/billing/portal", "", auth...), 409, "no_subscription")

	post := func(body, withSecret string) tiersResp {
		t.Helper()
		signed := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: []byte(body), Secret: withSecret, Timestamp: time.Now()})
		return s.do(t, "POST", "/v1/billing/webhook", body, "Stripe-Signature", signed.Header)
	}
	event := func(id, typ, object string) string {
		return `{"id": "` + id + `", "object": "event", "api_version": "2025-09-30.clover", "type": "` + typ + `", "data": {"object": ` + object + `}}`
	}
	completed := event("evt_checkout", "checkout.session.completed",
		`{"id": "cs_test_1", "object": "checkout.session", "mode": "subscription", "client_reference_id": "`+id+`", "customer": "cus_kwdata", "subscription": "sub_kwdata"}`)
	deleted := event("evt_deleted", "customer.subscription.deleted",
		`{"id": "sub_kwdata", "object": "subscription", "customer": "cus_kwdata", "status": "canceled", "items": {"object": "list", "data": [{"id": "si_1", "object": "subscription_item", "price": "`+testservers.StripeMockPrice+`"}]}}`)

	tiersWantStatus(t, post(completed, "whsec_wrong"), 400, "invalid_signature")
	tiersWantStatus(t, s.do(t, "POST", "/v1/billing/webhook", completed), 400, "invalid_signature")
	tiersWantLimit(t, s.lookup(t, env.keywords[3], auth...), tiersMonthly(env.now()), 496, monthEnd)

	tiersWantStatus(t, post(completed, secret), 200, "")
	for i := range 5 {
		r := s.lookup(t, env.keywords[i], auth...)
		tiersWantStatus(t, r, 200, "")
		if v := r.header.Get("RateLimit") + r.header.Get("RateLimit-Policy"); v != "" {
			t.Fatalf("a paid lookup carries RateLimit fields: %s", v)
		}
	}
	r = s.do(t, "POST", "/v1/billing/portal", "", auth...)
	tiersWantStatus(t, r, 200, "")
	if out, _ := env.cli(t, "keys", "list", "--data", data); !regexp.MustCompile(`(?m)^` + id + `\s+paid\s`).MatchString(out) {
		t.Errorf("keys list does not show %s paid:\n%s", id, out)
	}

	tiersWantStatus(t, post(deleted, secret), 200, "")
	tiersWantLimit(t, s.lookup(t, env.keywords[0], auth...), tiersMonthly(env.now()), 495, monthEnd)
	// Replays, as Stripe's retries are, change nothing: the checkout does
	// not make the key paid again.
	tiersWantStatus(t, post(completed, secret), 200, "")
	tiersWantStatus(t, post(deleted, secret), 200, "")
	tiersWantLimit(t, s.lookup(t, env.keywords[1], auth...), tiersMonthly(env.now()), 494, monthEnd)
}

// testMCP: POST /mcp with raw JSON-RPC against the real access store. A
// registered key is accepted and each tool call counts like a lookup (the
// RateLimit fields are on the HTTP answer, and a following GET sees the
// count); a bad key is 401 invalid_key on any method and counts nothing;
// the 21st anonymous tool call is a tool error that says when the
// allowance renews.
func (env *tiersEnv) testMCP(t *testing.T) {
	data := env.fresh(t)
	key, _ := env.createKey(t, data, "--tier", "registered")
	s := env.start(t, data)
	_, monthEnd := tiersMonth(env.now())
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"tiers","version":"1"}}}`
	lookup := func(q string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"keyword_lookup","arguments":{"keyword":%q,"country":"us"}}}`, q)
	}
	type toolAnswer struct {
		Result *struct {
			IsError bool
			Content []struct{ Text string }
		}
		Error *struct{ Code int }
	}
	call := func(t *testing.T, body string, hdr ...string) (tiersResp, toolAnswer) {
		t.Helper()
		r := s.do(t, "POST", "/mcp", body, hdr...)
		tiersWantStatus(t, r, 200, "")
		var a toolAnswer
		if err := json.Unmarshal(r.body, &a); err != nil || a.Result == nil || a.Error != nil {
			t.Fatalf("not a JSON-RPC result: %s (%v)", r.body, err)
		}
		return r, a
	}

	// A registered key: connecting counts nothing, each tool call one
	// lookup, as a following GET shows.
	auth := []string{"Authorization", "Bearer " + key}
	if r, _ := call(t, initialize, auth...); r.header.Get("RateLimit") != "" {
		t.Errorf("initialize carries RateLimit %s", r.header.Get("RateLimit"))
	}
	for i := range 2 {
		r, a := call(t, lookup(env.keywords[i]), auth...)
		if a.Result.IsError {
			t.Fatalf("tool error: %s", r.body)
		}
		tiersWantLimit(t, r, tiersMonthly(env.now()), int64(499-i), monthEnd)
	}
	tiersWantLimit(t, s.lookup(t, env.keywords[2], auth...), tiersMonthly(env.now()), 497, monthEnd)

	// A bad key is refused on every method, and is never anonymous.
	for _, body := range []string{initialize, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, lookup(env.keywords[0])} {
		for _, hdr := range [][]string{{"Authorization", "Bearer " + tiersUnknownKey}, {"X-API-Key", "not-a-key"}} {
			r := s.do(t, "POST", "/mcp", body, hdr...)
			tiersWantStatus(t, r, 401, "invalid_key")
			if v := r.header.Get("RateLimit"); v != "" {
				t.Errorf("401 carries RateLimit %s", v)
			}
		}
	}

	// Anonymous: 20 tool calls, then a tool error with the reset time.
	for i := range 20 {
		r, a := call(t, lookup(env.keywords[i]))
		if a.Result.IsError {
			t.Fatalf("tool call %d: tool error: %s", i+1, r.body)
		}
		tiersWantLimit(t, r, tiersDaily, int64(19-i), tiersMidnight(env.now()))
	}
	r, a := call(t, lookup(env.keywords[0]))
	if !a.Result.IsError || len(a.Result.Content) != 1 {
		t.Fatalf("the 21st anonymous tool call answered %s, want a tool error", r.body)
	}
	text := a.Result.Content[0].Text
	m := regexp.MustCompile(`^The daily allowance of 20 lookups for this address is used up; it renews in ` + tiersDurationRE +
		` \(at (\S+)\)\. For 500 lookups a month, ask your user for their email address and call register_request_code`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("tool error %q does not say when the allowance renews", text)
	}
	at, err := time.Parse(time.RFC3339, m[len(m)-1])
	if want := tiersMidnight(env.now()); err != nil || at.Sub(want).Abs() > 5*time.Second {
		t.Errorf("tool error says the allowance renews at %s, want %s", m[len(m)-1], want.Format(time.RFC3339))
	}
	tiersWantStatus(t, s.lookup(t, env.keywords[0]), 429, "quota_exhausted")
}

// tiersUnknownKey is well formed ("kwd_" and 32 base32 characters) but
// names no key.
const tiersUnknownKey = "kwd_abcdefghijklmnopqrstuvwxyz234567"

// tiersEnv is what every tiers subtest shares: the kwdata binary and a data
// folder holding a published index of 500 US keywords.
type tiersEnv struct {
	bin      string
	seed     string
	keywords []string // keywords of the index, in lake order
	// ahead is how far the clock of every kwdata process the test starts
	// runs ahead of the wall clock: to the next noon UTC, so that no
	// allowance (they renew at UTC midnight, months too) renews while the
	// test counts it down, whatever the hour it runs at.
	ahead time.Duration
}

// now is the time on the clock of the test's kwdata processes.
func (env *tiersEnv) now() time.Time { return time.Now().Add(env.ahead) }

// command returns kwdata with args, its clock set to the test's, and
// environ added to the environment.
func (env *tiersEnv) command(ctx context.Context, environ []string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, env.bin, args...)
	cmd.Env = append(append(os.Environ(), testClockEnv+"="+env.ahead.String()), environ...)
	return cmd
}

// tiersClockAhead is the ahead of every tiers test of this process.
var tiersClockAhead = sync.OnceValue(func() time.Duration { return tiersAhead(time.Now()) })

// tiersAhead returns how far after now the next noon UTC is.
func tiersAhead(now time.Time) time.Duration {
	now = now.UTC()
	noon := time.Date(now.Year(), now.Month(), now.Day(), 12, 0, 0, 0, time.UTC)
	if !noon.After(now) {
		noon = noon.AddDate(0, 0, 1)
	}
	return noon.Sub(now)
}

// testBinary is the kwdata binary of the tests that run it as processes,
// built once for all of them, in a folder TestMain removes.
var testBinary struct {
	once      sync.Once
	dir, path string
	err       error
}

// kwdataBinary builds kwdata with the kwdatatestclock tag, which lets a
// test set the processes' clock, once per test process.
func kwdataBinary(tb testing.TB) string {
	tb.Helper()
	testBinary.once.Do(func() {
		gomod, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			testBinary.err = fmt.Errorf("go env GOMOD: %w", err)
			return
		}
		mod := strings.TrimSpace(string(gomod))
		if mod == "" || mod == os.DevNull {
			testBinary.err = fmt.Errorf("go env GOMOD = %q: not inside the module", mod)
			return
		}
		if testBinary.dir, err = os.MkdirTemp("", "kwdata-test-"); err != nil {
			testBinary.err = err
			return
		}
		testBinary.path = filepath.Join(testBinary.dir, "kwdata")
		// A loaded machine took more than 5 minutes.
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		build := exec.CommandContext(ctx, "go", "build", "-tags", "kwdatatestclock", "-o", testBinary.path, "./cmd/kwdata")
		build.Dir = filepath.Dir(mod)
		if out, err := build.CombinedOutput(); err != nil {
			testBinary.err = fmt.Errorf("go build ./cmd/kwdata: %w\n%s", err, out)
		}
	})
	if testBinary.err != nil {
		tb.Fatal(testBinary.err)
	}
	return testBinary.path
}

func TestMain(m *testing.M) {
	code := m.Run()
	if testBinary.dir != "" {
		os.RemoveAll(testBinary.dir)
	}
	os.Exit(code)
}

// tiersSetup builds the binary and the index with the binary's own
// commands.
func tiersSetup(tb testing.TB) *tiersEnv {
	tb.Helper()
	dir := tb.TempDir()
	env := &tiersEnv{bin: kwdataBinary(tb), seed: filepath.Join(dir, "seed"), ahead: tiersClockAhead()}

	in := filepath.Join(dir, "in")
	env.cli(tb, "sample", "--out", in, "--keywords", "500", "--countries", "us", "--seed", "11")
	env.cli(tb, "ingest", "--data", env.seed, "--date", tiersDate, "--country", "us",
		"--planner-csv", filepath.Join(in, "us", "keyword-planner.csv"),
		"--serp-jsonl", filepath.Join(in, "us", "serps.jsonl"))
	env.cli(tb, "similarity", "--data", env.seed, "--date", tiersDate)
	env.cli(tb, "build-index", "--data", env.seed, "--date", tiersDate)
	recs, err := lake.Read[kw.KeywordRecord](env.seed, kw.DatasetKeywords, "us", tiersDate)
	if err != nil {
		tb.Fatal(err)
	}
	for _, rec := range recs {
		env.keywords = append(env.keywords, rec.Keyword)
	}
	if len(env.keywords) < 30 {
		tb.Fatalf("the sample has %d keywords; the tests need 30", len(env.keywords))
	}
	return env
}

// cli runs the binary to completion and returns its stdout and stderr; a
// failure fails the test.
func (env *tiersEnv) cli(tb testing.TB, args ...string) (string, string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := env.command(ctx, nil, args...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		tb.Fatalf("kwdata %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.String(), errb.String()
}

// createKey runs `kwdata keys create` and returns the key and its id.
func (env *tiersEnv) createKey(tb testing.TB, data string, args ...string) (key, id string) {
	tb.Helper()
	out, errb := env.cli(tb, append([]string{"keys", "create", "--data", data}, args...)...)
	key = strings.TrimSpace(out)
	m := regexp.MustCompile(`created key (\S+) `).FindStringSubmatch(errb)
	if !strings.HasPrefix(key, "kwd_") || m == nil {
		tb.Fatalf("keys create printed %q and %q", out, errb)
	}
	return key, m[1]
}

// fresh returns a new data folder serving the shared index, with no access
// store: fresh counters and no keys. Copying the 100 KB index is faster
// than building it again.
func (env *tiersEnv) fresh(tb testing.TB) string {
	tb.Helper()
	data := filepath.Join(tb.TempDir(), "data")
	src := kw.IndexDir(env.seed)
	dst := kw.IndexDir(data)
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o644)
	})
	if err != nil {
		tb.Fatalf("cannot copy the index: %v", err)
	}
	return data
}

// tiersServer is a running `kwdata serve` process.
type tiersServer struct {
	base   string // http://127.0.0.1:port
	cmd    *exec.Cmd
	client *http.Client
	done   chan struct{} // closed once the process has exited
	err    error         // the process's exit, set before done closes

	mu  sync.Mutex
	log strings.Builder // its stderr
}

func (s *tiersServer) stderr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

var tiersServingRE = regexp.MustCompile(`msg="serving HTTP".* addr=(\S+)`)

// start runs `kwdata serve` on data on a free loopback port, waits until it
// is ready, and kills it when the test ends if it still runs.
func (env *tiersEnv) start(tb testing.TB, data string, extra ...string) *tiersServer {
	tb.Helper()
	return env.startEnv(tb, nil, data, extra...)
}

// startEnv is start with environ added to the server's environment.
func (env *tiersEnv) startEnv(tb testing.TB, environ []string, data string, extra ...string) *tiersServer {
	tb.Helper()
	args := append([]string{"serve", "--data", data, "--addr", "127.0.0.1:0"}, extra...)
	s := &tiersServer{
		cmd:  env.command(context.Background(), environ, args...),
		done: make(chan struct{}),
		client: &http.Client{
			Timeout:   30 * time.Second,
			Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 8},
		},
	}
	pipe, err := s.cmd.StderrPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		tb.Fatalf("cannot start kwdata serve: %v", err)
	}
	tb.Cleanup(func() {
		s.client.CloseIdleConnections()
		select {
		case <-s.done:
			return
		default:
		}
		s.cmd.Process.Kill()
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			tb.Errorf("kwdata serve (pid %d) did not exit after SIGKILL", s.cmd.Process.Pid)
		}
	})
	addrc := make(chan string, 1)
	go func() {
		// Read stderr to its end (the process must never block on a full
		// pipe), then reap the process.
		rd := bufio.NewReader(pipe)
		for {
			line, err := rd.ReadString('\n')
			s.mu.Lock()
			s.log.WriteString(line)
			s.mu.Unlock()
			if m := tiersServingRE.FindStringSubmatch(line); m != nil {
				select {
				case addrc <- m[1]:
				default:
				}
			}
			if err != nil {
				break
			}
		}
		s.err = s.cmd.Wait()
		close(s.done)
	}()
	select {
	case a := <-addrc:
		s.base = "http://" + a
	case <-s.done:
		tb.Fatalf("kwdata serve exited before serving: %v\n%s", s.err, s.stderr())
	case <-time.After(30 * time.Second):
		tb.Fatalf("kwdata serve did not report its address within 30s\n%s", s.stderr())
	}
	var last error
	defer func() {
		if tb.Failed() {
			tb.Logf("GET /readyz last failed with %v; the server's log:\n%s", last, s.stderr())
		}
	}()
	testservers.WaitFor(tb, 30*time.Second, "kwdata serve to be ready", func() bool {
		resp, err := s.client.Get(s.base + "/readyz")
		if last = err; err != nil {
			return false
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return s
}

// stop sends sig and returns how the process exited.
func (s *tiersServer) stop(tb testing.TB, sig syscall.Signal) error {
	tb.Helper()
	s.client.CloseIdleConnections()
	if err := s.cmd.Process.Signal(sig); err != nil {
		tb.Fatalf("cannot signal kwdata serve: %v", err)
	}
	select {
	case <-s.done:
		return s.err
	case <-time.After(30 * time.Second):
		tb.Fatalf("kwdata serve did not exit within 30s of %s\n%s", sig, s.stderr())
	}
	return nil
}

// tiersResp is an answer, read whole.
type tiersResp struct {
	status int
	header http.Header
	body   []byte
	code   string // the problem code of a problem document
}

// do sends one request; hdr holds field name and value pairs.
func (s *tiersServer) do(tb testing.TB, method, path, body string, hdr ...string) tiersResp {
	tb.Helper()
	r, err := s.send(s.client, method, path, body, hdr...)
	if err != nil {
		tb.Fatalf("%s %.80s: %v", method, path, err)
	}
	return r
}

func (s *tiersServer) send(c *http.Client, method, path, body string, hdr ...string) (tiersResp, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.base+path, rd)
	if err != nil {
		return tiersResp{}, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		return tiersResp{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return tiersResp{}, err
	}
	r := tiersResp{status: resp.StatusCode, header: resp.Header, body: b}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/problem+json") {
		var p struct{ Code string }
		if err := json.Unmarshal(b, &p); err != nil {
			return r, fmt.Errorf("cannot parse the problem document %q: %w", b, err)
		}
		r.code = p.Code
	}
	return r, nil
}

// lookup asks GET /v1/keyword for q in the US.
func (s *tiersServer) lookup(tb testing.TB, q string, hdr ...string) tiersResp {
	tb.Helper()
	return s.do(tb, "GET", "/v1/keyword?"+url.Values{"q": {q}, "country": {"us"}}.Encode(), "", hdr...)
}

// lookupUntil asks s for q every 5 ms until done holds of the answer, and
// returns that answer and the ones before it. It fails the test, naming
// what it waited for, if done does not hold within d: a change made
// elsewhere reaches a server after a while, never at once.
func (s *tiersServer) lookupUntil(tb testing.TB, what, q string, d time.Duration, done func(tiersResp) bool, hdr ...string) (tiersResp, []tiersResp) {
	tb.Helper()
	var before []tiersResp
	var r tiersResp
	asked := false
	if !testservers.Poll(d, func() bool {
		if asked {
			before = append(before, r)
		}
		r, asked = s.lookup(tb, q, hdr...), true
		return done(r)
	}) {
		tb.Fatalf("%s: still %d %q (RateLimit %q) %v later", what, r.status, r.code, r.header.Get("RateLimit"), d)
	}
	return r, before
}

// tiersBurst is what a burst of parallel requests got back.
type tiersBurst struct {
	status    map[int]int // answers by status; -1 counts transport errors
	badFields error       // the first answer whose fields do not fit its status
}

// burst sends n copies of a request at once and counts the answers. Each
// copy has its own connection, opened and used once beforehand, so that all
// n arrive together instead of trickling in behind their dials.
func (s *tiersServer) burst(tb testing.TB, n int, method, path, body string, hdr ...string) tiersBurst {
	tb.Helper()
	var (
		mu           sync.Mutex
		out          = tiersBurst{status: map[int]int{}}
		wg, warm     sync.WaitGroup
		start        = make(chan struct{})
		warmFailures int
	)
	warm.Add(n)
	for range n {
		wg.Go(func() {
			tr := &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 1}
			defer tr.CloseIdleConnections()
			c := &http.Client{Timeout: 30 * time.Second, Transport: tr}
			if r, err := s.send(c, "GET", "/healthz", ""); err != nil || r.status != 200 {
				mu.Lock()
				warmFailures++
				mu.Unlock()
			}
			warm.Done()
			<-start
			r, err := s.send(c, method, path, body, hdr...)
			var bad error
			switch {
			case err != nil:
				r.status, bad = -1, err
			case r.status == 200:
				if r.header.Get("RateLimit-Policy") == "" || r.header.Get("RateLimit") == "" {
					bad = fmt.Errorf("a 200 without RateLimit fields: %v", r.header)
				}
			case r.status == 429:
				if r.code != "quota_exhausted" || r.header.Get("Retry-After") == "" || !strings.Contains(r.header.Get("RateLimit"), ";r=0;") {
					bad = fmt.Errorf("a 429 %q with Retry-After %q and RateLimit %q", r.code, r.header.Get("Retry-After"), r.header.Get("RateLimit"))
				}
			}
			mu.Lock()
			defer mu.Unlock()
			out.status[r.status]++
			if out.badFields == nil {
				out.badFields = bad
			}
		})
	}
	warm.Wait()
	close(start)
	wg.Wait()
	if warmFailures > 0 {
		tb.Fatalf("%d of %d connections failed GET /healthz before the burst", warmFailures, n)
	}
	return out
}

func tiersBulkBody(keywords []string) string {
	b, _ := json.Marshal(map[string]any{"country": "us", "keywords": keywords})
	return string(b)
}

// tiersWantStatus fails the test unless r has the status and problem code.
func tiersWantStatus(tb testing.TB, r tiersResp, status int, code string) {
	tb.Helper()
	if r.status != status || r.code != code {
		tb.Fatalf("answer %d %q, want %d %q: %.300s", r.status, r.code, status, code, r.body)
	}
}

var tiersLimitRE = regexp.MustCompile(`^"([a-z]+)";r=(\d+);t=(\d+)$`)

// tiersLimit parses the RateLimit field `"daily";r=7;t=3600`.
func tiersLimit(tb testing.TB, h http.Header) (policy string, remaining, reset int64) {
	tb.Helper()
	m := tiersLimitRE.FindStringSubmatch(h.Get("RateLimit"))
	if m == nil {
		tb.Fatalf("RateLimit %q is not of the form \"name\";r=N;t=N", h.Get("RateLimit"))
	}
	remaining, _ = strconv.ParseInt(m[2], 10, 64)
	reset, _ = strconv.ParseInt(m[3], 10, 64)
	return m[1], remaining, reset
}

// tiersWantLimit checks the RateLimit fields of a counted answer: the exact
// policy, the remainder, and a reset within a few seconds of when the window
// ends.
func tiersWantLimit(tb testing.TB, r tiersResp, policy string, remaining int64, end time.Time) {
	tb.Helper()
	if got := r.header.Get("RateLimit-Policy"); got != policy {
		tb.Fatalf("RateLimit-Policy %q, want %q", got, policy)
	}
	name, rem, reset := tiersLimit(tb, r.header)
	if want := policy[1 : strings.Index(policy[1:], `"`)+1]; name != want {
		tb.Errorf("RateLimit names %q, the policy %q", name, want)
	}
	if rem != remaining {
		tb.Errorf("RateLimit %s: remaining %d, want %d", r.header.Get("RateLimit"), rem, remaining)
	}
	tiersWantReset(tb, reset, end)
}

// tiersWantRetry checks a 429 refusal of a lookup: Retry-After equals the
// t of RateLimit, nothing remains, and the window ends when it should.
func tiersWantRetry(tb testing.TB, r tiersResp, policy string, end time.Time) {
	tb.Helper()
	if got := r.header.Get("RateLimit-Policy"); got != policy {
		tb.Errorf("429: RateLimit-Policy %q, want %q", got, policy)
	}
	_, rem, reset := tiersLimit(tb, r.header)
	if rem != 0 {
		tb.Errorf("429: RateLimit %s: remaining %d, want 0", r.header.Get("RateLimit"), rem)
	}
	if ra := r.header.Get("Retry-After"); ra != strconv.FormatInt(reset, 10) {
		tb.Errorf("429: Retry-After %q, RateLimit %s: want Retry-After equal to t", ra, r.header.Get("RateLimit"))
	}
	tiersWantReset(tb, reset, end)
}

// tiersDurationRE matches how the server words a wait: "5h 12m", "3d",
// "40s".
const tiersDurationRE = `(\d+d( \d+h)?|\d+h( \d+m)?|\d+m|\d+s)`

// tiersWantDetail checks the detail of a problem document against a
// regular expression.
func tiersWantDetail(tb testing.TB, r tiersResp, re string) {
	tb.Helper()
	var p struct{ Detail string }
	if err := json.Unmarshal(r.body, &p); err != nil {
		tb.Fatalf("not a problem document: %s", r.body)
	}
	if !regexp.MustCompile(re).MatchString(p.Detail) {
		tb.Errorf("detail %q does not match %s", p.Detail, re)
	}
}

func tiersWantReset(tb testing.TB, reset int64, end time.Time) {
	tb.Helper()
	want := end.Sub(time.Now().Add(tiersClockAhead())).Seconds()
	if float64(reset) < want-5 || float64(reset) > want+2 {
		tb.Errorf("RateLimit t=%d, but the window ends in %.0fs (%s)", reset, want, end.Format(time.RFC3339))
	}
}

// TestTiersAhead: the test clock of the tiers tests always stands at the
// next noon UTC, at most a day ahead, so a window renews 12 hours after
// the test starts, not during it.
func TestTiersAhead(t *testing.T) {
	t.Parallel()
	for _, now := range []string{"2026-11-26T23:58:30Z", "2026-11-26T00:00:00Z", "2026-11-26T12:00:00Z", "2026-12-31T13:00:00Z"} {
		at, err := time.Parse(time.RFC3339, now)
		if err != nil {
			t.Fatal(err)
		}
		d := tiersAhead(at)
		got := at.Add(d)
		if d <= 0 || d > 24*time.Hour || got.Hour() != 12 || got.Minute() != 0 || got.Second() != 0 {
			t.Errorf("tiersAhead(%s) = %s, to %s; want the next noon UTC", now, d, got)
		}
		if until := tiersMidnight(got).Sub(got); until != 12*time.Hour {
			t.Errorf("from %s, midnight is %s away, want 12h", got, until)
		}
	}
}
