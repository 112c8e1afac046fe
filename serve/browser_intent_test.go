package serve

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestIntentAndSuggestionsInBrowser follows the keyword page's intent chip
// to the intent group page in headless Chromium, types into the search box
// and waits for its suggestions, opens a 404 page that offers keywords to
// try, checks the Download CSV links answer CSV, and saves screenshots.
func TestIntentAndSuggestionsInBrowser(t *testing.T) {
	bctx := startBrowser(t)
	ds := newDemoServer(t)
	hs := httptest.NewServer(ds) // listens on 127.0.0.1
	defer hs.Close()
	do, text := pageSteps(t, bctx)

	// The intent chip of a member's page leads to its group.
	do(chromedp.Navigate(hs.URL+"/keyword?q=running+sneakers&country=us"), chromedp.WaitVisible(chromedp.ID("intent")))
	if chip, yoy := text("#intent"), text("#yoy"); chip != "running shoes" || yoy != "—" {
		t.Errorf("intent chip %q, yoy %q", chip, yoy)
	}
	do(chromedp.Click(chromedp.ID("intent")), chromedp.WaitVisible(chromedp.ID("members")))
	if loc := run(t, bctx, chromedp.Location()); !strings.HasSuffix(loc, "/intent?q=running+sneakers&country=us") {
		t.Errorf("the chip led to %s", loc)
	}
	size, total, leader := text("#size"), text("#total"), text("#leader")
	rows := run(t, bctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#members tbody tr")).map(r => r.innerText.replace(/\s+/g, " ").trim())`))
	if size != "4" || total != "761,500" || leader != "running shoes" || len(rows) != 4 || !strings.HasPrefix(rows[0], "running shoes leader 301,000 $1.23") || !strings.Contains(rows[1], "16/20") {
		t.Errorf("intent page: size %q total %q leader %q rows %q", size, total, leader, rows)
	}
	save(t, "intent-page.png", run(t, bctx, chromedp.FullScreenshot(100)))
	// Its Download CSV link answers CSV (fetched by the page, as a click would download it).
	csvText := run(t, bctx, chromedp.Evaluate[string](`fetch(document.getElementById("csv").href).then(r => r.text())`, chromedp.EvalAwaitPromise))
	if !strings.HasPrefix(csvText, "leader,keyword,volume,cpc,overlap,country,updated\r\nrunning shoes,running shoes,301000,1.23,20/20,US,2026-11-21\r\n") {
		t.Errorf("intent CSV %q", csvText)
	}

	// At phone width nothing is wider than the screen.
	do(chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile),
		chromedp.Navigate(hs.URL+"/intent?q=running+shoes&country=us"), chromedp.WaitVisible(chromedp.ID("members")))
	if sw, iw := run(t, bctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`)), run(t, bctx, chromedp.Evaluate[int](`window.innerWidth`)); sw > iw {
		t.Errorf("at phone width the intent page is %dpx wide in a %dpx window", sw, iw)
	}
	save(t, "intent-page-phone.png", run(t, bctx, chromedp.FullScreenshot(100)))
	do(chromedp.EmulateViewport(1200, 900))

	// The search box suggests as one types.
	do(chromedp.Navigate(hs.URL+"/keyword?q=running+shoes&country=us"), chromedp.WaitVisible(chromedp.CSS("form.search input[name=q]")))
	run(t, bctx, chromedp.Evaluate[string](`document.querySelector("form.search input[name=q]").value = ""`))
	do(chromedp.SendKeys(chromedp.CSS("form.search input[name=q]"), "running s"),
		chromedp.WaitReady(chromedp.CSS(`form.search input[data-suggested]`)))
	options := run(t, bctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#kw-suggestions option")).map(o => o.value)`))
	if len(options) < 3 || options[0] != "running shoes" || options[1] != "running shoe" {
		t.Errorf("suggestions %q", options)
	}
	if list := run(t, bctx, chromedp.AttributeValue(chromedp.CSS("form.search input[name=q]"), "list")).Value; list != "kw-suggestions" {
		t.Errorf("the box is not tied to the suggestions: list=%q", list)
	}
	save(t, "keyword-suggest.png", run(t, bctx, chromedp.FullScreenshot(100)))
	// Two keyword pages, two intent pages and the CSV count; the
	// suggestions do not.
	if n := len(ds.access.committed); n != 5 {
		t.Errorf("%d counted views, want 5", n)
	}

	// An unknown keyword's page offers keywords to try, which lead to pages.
	do(chromedp.Navigate(hs.URL+"/keyword?q=running+sandals&country=us"), chromedp.WaitVisible(chromedp.ID("did-you-mean")))
	if dym := text("#did-you-mean"); dym != "Did you mean running shoes, running shoe, running sneakers?" {
		t.Errorf("did you mean %q", dym)
	}
	save(t, "keyword-did-you-mean.png", run(t, bctx, chromedp.FullScreenshot(100)))
	do(chromedp.Click(chromedp.Search(`//p[@id="did-you-mean"]/a[text()="running shoe"]`)), chromedp.WaitVisible(chromedp.Search(`//h1[text()="running shoe"]`)))
}
