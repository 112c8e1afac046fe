package serve

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kwdata/kwdata/internal/testservers"

	"github.com/chromedp/chromedp"
)

// TestAccountPageInBrowser signs in on the account page in headless
// Chromium, by email code and by pasting a key, checks what it shows and
// that no script can read the session cookie, rotates the key, follows the subscribe button, shows a paid
// account with a failed payment, and saves screenshots.
func TestAccountPageInBrowser(t *testing.T) {
	bctx := startBrowser(t)
	ds := newDemoServer(t)
	hs := httptest.NewServer(ds)
	defer hs.Close()
	ds.billing.url = hs.URL + "/healthz" // Stripe's pages are off the network here
	do, pageText := pageSteps(t, bctx)
	text := func(sel string) string {
		t.Helper()
		return strings.TrimSpace(pageText(sel))
	}

	// By email code, from the header's link.
	do(chromedp.Navigate(hs.URL+"/"), chromedp.Click(chromedp.ID("signin-link")), chromedp.WaitVisible(chromedp.ID("email")))
	save(t, "account-sign-in.png", run(t, bctx, chromedp.FullScreenshot(100)))
	do(chromedp.SendKeys(chromedp.ID("email"), "ada@example.com"), chromedp.Submit(chromedp.ID("email")),
		chromedp.WaitVisible(chromedp.ID("code")))
	do(chromedp.SendKeys(chromedp.ID("code"), "424242"), chromedp.Submit(chromedp.ID("code")),
		chromedp.WaitVisible(chromedp.ID("tier")))
	if loc := run(t, bctx, chromedp.Location()); loc != hs.URL+"/account" {
		t.Errorf("after the code the browser is on %s", loc)
	}
	do(chromedp.Click(chromedp.ID("logout")), chromedp.WaitVisible(chromedp.ID("key-input")))

	// By pasting a key.
	const key = "kwd_abcdefghijklmnopqrstuvwxyz234567"
	do(chromedp.SendKeys(chromedp.ID("key-input"), key), chromedp.Submit(chromedp.ID("key-input")),
		chromedp.WaitVisible(chromedp.ID("tier")))
	if tier, used, left, renews := text("#tier"), text("#used"), text("#left"), text("#renews"); tier != "registered" || used != "123" || left != "377" || renews != "Tue 1 Dec 2026" {
		t.Errorf("account shows tier %q used %q left %q renews %q", tier, used, left, renews)
	}
	if c := run(t, bctx, chromedp.Evaluate[string](`document.cookie`)); c != "" {
		t.Errorf("a script reads a cookie: document.cookie = %q", c)
	}
	if n := run(t, bctx, chromedp.Evaluate[int](`document.querySelectorAll("#subscribe, #rotate, #logout").length`)); n != 3 {
		t.Errorf("%d of the subscribe, rotate and sign-out buttons", n)
	}
	save(t, "account.png", run(t, bctx, chromedp.FullScreenshot(100)))

	// A new key: shown once, and kept in no cookie.
	do(chromedp.Click(chromedp.ID("rotate")), chromedp.WaitVisible(chromedp.CSS("pre#key")))
	if got := text("pre#key"); !strings.HasPrefix(got, "kw_live_9b1c") {
		t.Errorf("new key shown as %q", got)
	}
	ds.sessions.mu.Lock()
	rotated := append([]string(nil), ds.sessions.accounts...)
	ds.sessions.mu.Unlock()
	if len(rotated) != 1 || rotated[0] != "a1b2c3d4e5f6" {
		t.Errorf("rotated the keys of accounts %q, want the session's a1b2c3d4e5f6", rotated)
	}

	// Subscribe leads to the payment page Billing answers.
	do(chromedp.Navigate(hs.URL+"/account"), chromedp.WaitVisible(chromedp.ID("subscribe")),
		chromedp.Click(chromedp.ID("subscribe")))
	loc := ""
	testservers.Poll(10*time.Second, func() bool { // the redirect takes a moment
		loc = run(t, bctx, chromedp.Location())
		return strings.HasSuffix(loc, "/healthz")
	})
	if !strings.HasSuffix(loc, "/healthz") {
		t.Errorf("subscribe led to %s", loc)
	}

	// A paid account whose last charge failed.
	ds.registrar.mu.Lock()
	ds.registrar.account = AccountInfo{KeyID: "a1b2c3d4e5f6", Email: "ada@example.com", Tier: "paid", Used: 4210, Left: -1, Quota: 500,
		Renews: time.Date(2026, 12, 22, 12, 0, 0, 0, time.UTC), SubStatus: "past_due", HasCustomer: true,
		PaymentFailed: time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)}
	ds.registrar.mu.Unlock()
	do(chromedp.Navigate(hs.URL+"/account"), chromedp.WaitVisible(chromedp.ID("manage")))
	if tier, left, failed, next := text("#tier"), text("#left"), text("#payment-failed"), text("#next-charge"); tier != "paid" || left != "unlimited" ||
		!strings.Contains(failed, "22 Nov 2026") || next != "4.99 USD on Tue 22 Dec 2026" {
		t.Errorf("paid account shows tier %q left %q failed %q next %q", tier, left, failed, next)
	}
	if n := run(t, bctx, chromedp.Evaluate[int](`document.querySelectorAll("#subscribe").length`)); n != 0 {
		t.Error("a paid account is offered to subscribe")
	}
	save(t, "account-paid.png", run(t, bctx, chromedp.FullScreenshot(100)))
	do(chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile),
		chromedp.Navigate(hs.URL+"/account"), chromedp.WaitVisible(chromedp.ID("manage")))
	if sw, iw := run(t, bctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`)), run(t, bctx, chromedp.Evaluate[int](`window.innerWidth`)); sw > iw {
		t.Errorf("at phone width the account page is %dpx wide in a %dpx window", sw, iw)
	}
	save(t, "account-phone.png", run(t, bctx, chromedp.FullScreenshot(100)))

	// Signing out ends the session on the server.
	do(chromedp.Click(chromedp.ID("logout")), chromedp.WaitVisible(chromedp.ID("key-input")))
	ds.sessions.mu.Lock()
	live, ended := len(ds.sessions.live), len(ds.sessions.ended)
	ds.sessions.mu.Unlock()
	if live != 1 || ended != 2 { // the demo session stays
		t.Errorf("after two sign-outs %d sessions live and %d ended, want 1 and 2", live, ended)
	}
}
