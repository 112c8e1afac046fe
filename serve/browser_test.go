package serve

import (
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kwdata/kwdata/internal/testservers"
)

// artifactDir is where the browser test saves its screenshots:
// $KWDATA_ARTIFACTS when set (CI keeps that folder), else a temporary one.
func artifactDir(tb testing.TB) string {
	tb.Helper()
	dir := os.Getenv("KWDATA_ARTIFACTS")
	if dir == "" {
		return tb.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	return dir
}

// pageSteps returns the two steps every page test takes in the browser
// bctx: do runs actions and fails the test on an error, text reads the
// text of the element a CSS selector names.
func pageSteps(t *testing.T, bctx context.Context) (do func(...chromedp.Action[chromedp.Void]), text func(string) string) {
	do = func(steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(bctx, steps...); err != nil {
			t.Fatalf("browser: %v", err)
		}
	}
	text = func(sel string) string {
		t.Helper()
		return run(t, bctx, chromedp.Text(chromedp.CSS(sel)))
	}
	return do, text
}

// TestKeywordPageInBrowser loads the keyword page in headless Chromium,
// checks the rendered numbers and links, follows a related keyword, and
// saves desktop and phone-width screenshots.
func TestKeywordPageInBrowser(t *testing.T) {
	bctx := startBrowser(t)
	ds := newDemoServer(t)
	hs := httptest.NewServer(ds) // listens on 127.0.0.1
	defer hs.Close()

	do, text := pageSteps(t, bctx)

	page := hs.URL + "/keyword?q=running+shoes&country=us"
	do(chromedp.Navigate(page), chromedp.WaitVisible(chromedp.ID("related")))
	title := run(t, bctx, chromedp.Title())
	h1, volume, cpc, competition, country := text("h1"), text("#volume"), text("#cpc"), text("#competition"), text("#country")
	if h1 != "running shoes" || volume != "301,000" || cpc != "$1.23" || competition != "0.87" || country != "US" {
		t.Errorf("page shows %q volume %q cpc %q competition %q country %q", h1, volume, cpc, competition, country)
	}
	relatedCount := run(t, bctx, chromedp.Evaluate[int](`document.querySelectorAll("#related tbody tr").length`))
	firstHref := run(t, bctx, chromedp.AttributeValue(chromedp.CSS(`#related tbody tr:first-child a`), "href")).Value
	if !strings.Contains(title, "running shoes") || relatedCount != 10 || firstHref != "/keyword?q=running+shoe&country=us" {
		t.Errorf("title %q, %d related rows, first link %q", title, relatedCount, firstHref)
	}
	chartText := run(t, bctx, chromedp.Evaluate[string](`Array.from(document.querySelectorAll(".chart svg text")).map(t => t.textContent).join(" ")`))
	for _, label := range []string{"Nov", "Dec", "Jan", "Oct", "2025", "2026", "367K"} {
		if !strings.Contains(chartText, label) {
			t.Errorf("chart labels %q lack %q", chartText, label)
		}
	}
	save(t, "keyword-page.png", run(t, bctx, chromedp.FullScreenshot(100)))

	// The same page at phone width: nothing may be wider than the screen.
	do(chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile),
		chromedp.Navigate(page), chromedp.WaitVisible(chromedp.ID("related")))
	scrollWidth := run(t, bctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
	innerWidth := run(t, bctx, chromedp.Evaluate[int](`window.innerWidth`))
	if scrollWidth > innerWidth || innerWidth > 400 {
		t.Errorf("at phone width the page is %dpx wide in a %dpx window", scrollWidth, innerWidth)
	}
	save(t, "keyword-page-phone.png", run(t, bctx, chromedp.FullScreenshot(100)))
	do(chromedp.EmulateViewport(1200, 900))

	// Follow a related keyword to its own page.
	do(chromedp.Navigate(page), chromedp.WaitVisible(chromedp.ID("related")),
		chromedp.Click(chromedp.Search(`//table[@id="related"]//a[text()="wide running shoes"]`)),
		chromedp.WaitVisible(chromedp.Search(`//h1[text()="wide running shoes"]`)))
	if h1, volume, cpc := text("h1"), text("#volume"), text("#cpc"); h1 != "wide running shoes" || volume != "8,100" || cpc != "$0" {
		t.Errorf("related page shows %q volume %q cpc %q", h1, volume, cpc)
	}
	if loc := run(t, bctx, chromedp.Location()); !strings.HasSuffix(loc, "/keyword?q=wide+running+shoes&country=us") {
		t.Errorf("followed the link to %s", loc)
	}

	// An unknown keyword is a helpful 404 page with the search form; a used
	// up allowance a 429 page that says when it resets.
	do(chromedp.Navigate(hs.URL+"/keyword?q=running+sandals&country=us"), chromedp.WaitVisible(chromedp.CSS("form.search")))
	if n := run(t, bctx, chromedp.Evaluate[int](`document.querySelectorAll("form.search select option").length`)); n < 55 {
		t.Errorf("the 404 page's country list has %d options", n)
	}
	save(t, "keyword-not-found.png", run(t, bctx, chromedp.FullScreenshot(100)))
	ds.access.mu.Lock()
	ds.access.err = &QuotaError{RetryAfter: 19*time.Hour + 30*time.Minute}
	ds.access.mu.Unlock()
	do(chromedp.Navigate(page), chromedp.WaitVisible(chromedp.ID("reset")))
	if reset := text("#reset"); reset != "00:00 UTC on Mon 23 Nov 2026" {
		t.Errorf("reset shown as %q", reset)
	}
	save(t, "keyword-quota.png", run(t, bctx, chromedp.FullScreenshot(100)))
	ds.access.mu.Lock()
	ds.access.err = nil
	ds.access.mu.Unlock()
	do(chromedp.Navigate(hs.URL+"/"), chromedp.WaitVisible(chromedp.ID("tiers")))
	save(t, "home.png", run(t, bctx, chromedp.FullScreenshot(100)))
}

// run runs one browser action and returns its value.
// startBrowser starts headless Chromium for a page test, or skips the test
// (noted for make test) where Chromium is not installed. The browser and
// its 60-second deadline end with the test.
func startBrowser(t *testing.T) context.Context {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a browser")
	}
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		testservers.SkipForTool(t, "Chromium", "apt-get install -y chromium (.ci/run does it)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1200, 900))
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(cancelBrowser)
	return bctx
}

func run[T any](tb testing.TB, ctx context.Context, a chromedp.Action[T]) T {
	tb.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		tb.Fatalf("browser: %v", err)
	}
	return v
}

func save(tb testing.TB, name string, png []byte) {
	tb.Helper()
	if len(png) < 1000 {
		tb.Errorf("screenshot %s has only %d bytes", name, len(png))
		return
	}
	path := filepath.Join(artifactDir(tb), name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		tb.Fatal(err)
	}
	tb.Logf("saved %s", path)
}
