package serve

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestExplorePageInBrowser fills in the explorer's form in headless
// Chromium, submits it, sorts by a column header, pages forward and back,
// switches to the grouped view, fetches the CSV link, and saves desktop
// and phone-width screenshots.
func TestExplorePageInBrowser(t *testing.T) {
	bctx := startBrowser(t)
	ds := newDemoServer(t)
	hs := httptest.NewServer(ds) // listens on 127.0.0.1
	defer hs.Close()
	do, text := pageSteps(t, bctx)
	rows := func() []string {
		t.Helper()
		return run(t, bctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#results tbody tr td:first-child")).map(c => c.innerText.trim())`))
	}

	// The home page leads to the form; the form is submitted as a person would.
	do(chromedp.Navigate(hs.URL+"/"), chromedp.WaitVisible(chromedp.ID("explore")),
		chromedp.Click(chromedp.ID("explore")), chromedp.WaitVisible(chromedp.CSS("form.explore")),
		chromedp.SetValue(chromedp.CSS(`form.explore input[name=q]`), "running"),
		chromedp.SetValue(chromedp.CSS(`form.explore select[name=limit]`), "25"),
		chromedp.Click(chromedp.CSS(`form.explore button`)), chromedp.WaitVisible(chromedp.ID("results")))
	if total, got := text("#total"), rows(); total != "11" || len(got) != 11 || got[0] != "running shoes" {
		t.Errorf("submitted form: total %q rows %q", total, got)
	}
	// The CPC header sorts by CPC, high to low.
	do(chromedp.Click(chromedp.Search(`//table[@id="results"]//th/a[starts-with(text(),"CPC")]`)),
		chromedp.WaitVisible(chromedp.Search(`//th/a[text()="CPC ↓"]`)))
	if got := rows(); len(got) != 11 || got[0] != "best running shoes" {
		t.Errorf("sorted by CPC: %q", got)
	}
	save(t, "explore-page.png", run(t, bctx, chromedp.FullScreenshot(100)))

	// Pages of 3: next, next, previous.
	do(chromedp.Navigate(hs.URL+"/explore?q=running&country=us&limit=3"), chromedp.WaitVisible(chromedp.ID("results")))
	page1 := rows()
	do(chromedp.Click(chromedp.ID("next")), chromedp.WaitVisible(chromedp.ID("prev")))
	page2 := rows()
	do(chromedp.Click(chromedp.ID("next")), chromedp.WaitVisible(chromedp.ID("prev")),
		chromedp.Click(chromedp.ID("prev")), chromedp.WaitVisible(chromedp.ID("prev")))
	if back := rows(); strings.Join(back, "|") != strings.Join(page2, "|") || strings.Join(page1, "|") == strings.Join(page2, "|") {
		t.Errorf("page 1 %q, page 2 %q, back from page 3 %q", page1, page2, back)
	}
	csvText := run(t, bctx, chromedp.Evaluate[string](`fetch(document.getElementById("csv").href).then(r => r.text())`, chromedp.EvalAwaitPromise))
	if !strings.HasPrefix(csvText, "keyword,volume,cpc,competition,intent\r\n") || strings.Count(csvText, "\r\n") != 4 {
		t.Errorf("CSV of the page: %q", csvText)
	}

	// The grouped view.
	do(chromedp.Navigate(hs.URL+"/explore?q=running&country=us"), chromedp.WaitVisible(chromedp.ID("grouped")),
		chromedp.Click(chromedp.ID("grouped")), chromedp.WaitVisible(chromedp.ID("groups")))
	first := run(t, bctx, chromedp.Evaluate[string](`document.querySelector("#groups tbody tr").innerText.replace(/\s+/g, " ").trim()`))
	if !strings.HasPrefix(first, "running shoes 3 712,000 running shoes, running shoe, running sneakers") {
		t.Errorf("first group %q", first)
	}
	save(t, "explore-groups.png", run(t, bctx, chromedp.FullScreenshot(100)))

	// At phone width nothing is wider than the screen.
	do(chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile),
		chromedp.Navigate(hs.URL+"/explore?q=running&country=us&min_volume=1000"), chromedp.WaitVisible(chromedp.ID("results")))
	if sw, iw := run(t, bctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`)), run(t, bctx, chromedp.Evaluate[int](`window.innerWidth`)); sw > iw {
		t.Errorf("at phone width the explorer is %dpx wide in a %dpx window", sw, iw)
	}
	save(t, "explore-page-phone.png", run(t, bctx, chromedp.FullScreenshot(100)))
}
