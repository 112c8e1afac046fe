package serve

import (
	"fmt"
	"html"
	"regexp"
	"strings"
	"testing"
)

// pageHref returns the unescaped href of the element with id in body, or "".
func pageHref(body, id string) string {
	m := regexp.MustCompile(`id="` + id + `" href="([^"]*)"`).FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return html.UnescapeString(m[1])
}

// pageRows returns the keyword cells of the results table.
func pageRows(body string) []string {
	i := strings.Index(body, `<table id="results">`)
	if i < 0 {
		return nil
	}
	body = body[i:]
	body = body[:strings.Index(body, "</table>")]
	var out []string
	for _, m := range regexp.MustCompile(`<tr><td class="kw"><a href="[^"]*">([^<]*)</a>`).FindAllStringSubmatch(body, -1) {
		out = append(out, html.UnescapeString(m[1]))
	}
	return out
}

// TestExplorePage: the explorer page without script. The empty form is
// free; a query shows the total and a page of rows, each counted; the
// column headers sort; Next, Previous and First walk the pages through a
// stack of cursors in the links; the grouped view and the CSV link carry
// the same query; a bad parameter shows the form again with the problem.
func TestExplorePage(t *testing.T) {
	ds := newDemoServer(t)
	w := do(t, ds, "GET", "/explore", nil)
	if w.Code != 200 || !strings.Contains(w.Body.String(), `<form class="explore" action="/explore" method="get">`) || strings.Contains(w.Body.String(), `id="results"`) {
		t.Fatalf("empty form: %d %s", w.Code, w.Body)
	}
	if len(ds.access.admits) != 0 {
		t.Errorf("the empty form admitted %v", ds.access.admits)
	}

	first := "/explore?q=running&country=us&limit=3"
	w = do(t, ds, "GET", first, nil)
	body := w.Body.String()
	if w.Code != 200 || !strings.Contains(body, `<b id="total">11</b>`) {
		t.Fatalf("first page: %d %s", w.Code, body)
	}
	if c := ds.access.committed; fmt.Sprint(c) != "[3]" {
		t.Errorf("committed %v, want [3]", c)
	}
	if got := pageRows(body); fmt.Sprint(got) != "[running shoes running shoe running sneakers]" {
		t.Errorf("first page rows %q", got)
	}
	if pageHref(body, "prev") != "" || pageHref(body, "first") != "" {
		t.Error("the first page links to a previous one")
	}
	if csv := pageHref(body, "csv"); csv != "/v1/explore?country=us&format=csv&limit=3&q=running" {
		t.Errorf("CSV link %q", csv)
	}
	if !strings.Contains(body, `href="/explore?country=us&amp;limit=3&amp;order=desc&amp;q=running&amp;sort=cpc"`) {
		t.Error("no CPC column header sorting by CPC, high to low")
	}
	if !strings.Contains(body, `href="/explore?country=us&amp;limit=3&amp;order=asc&amp;q=running&amp;sort=volume"`) || !strings.Contains(body, "Volume ↓") {
		t.Error("the volume header (the current sort) does not sort the other way")
	}

	// Walk forward to the end, then back.
	pages := [][]string{pageRows(body)}
	bodies := []string{body}
	for next := pageHref(body, "next"); next != ""; next = pageHref(body, "next") {
		w = do(t, ds, "GET", next, nil)
		body = w.Body.String()
		if w.Code != 200 {
			t.Fatalf("%s: %d", next, w.Code)
		}
		pages, bodies = append(pages, pageRows(body)), append(bodies, body)
		if len(pages) > 5 {
			t.Fatal("the next links do not end")
		}
	}
	var all []string
	for _, p := range pages {
		all = append(all, p...)
	}
	api := do(t, ds, "GET", "/v1/explore?q=running&country=us&limit=50", nil).Body.String()
	for _, k := range all {
		if !strings.Contains(api, `"keyword":"`+k+`"`) {
			t.Errorf("page shows %q, the API does not", k)
		}
	}
	if len(all) != 11 || len(pages) != 4 {
		t.Fatalf("walked %d pages, %d rows: %q", len(pages), len(all), pages)
	}
	for i := len(bodies) - 1; i > 0; i-- {
		prev := pageHref(bodies[i], "prev")
		if got := pageRows(do(t, ds, "GET", prev, nil).Body.String()); fmt.Sprint(got) != fmt.Sprint(pages[i-1]) {
			t.Errorf("previous of page %d (%s) shows %q, want %q", i+1, prev, got, pages[i-1])
		}
		if f := pageHref(bodies[i], "first"); f != "/explore?country=us&limit=3&q=running" {
			t.Errorf("first-page link %q", f)
		}
		if !strings.Contains(bodies[i], fmt.Sprintf("page %d", i+1)) {
			t.Errorf("page %d does not say its number", i+1)
		}
	}

	// Grouped view.
	body = do(t, ds, "GET", pageHref(bodies[0], "grouped"), nil).Body.String()
	if !strings.Contains(body, `<table id="groups">`) || !strings.Contains(body, `>running shoes</a></td><td class="num"><a href="/explore?country=us&amp;intent=running&#43;shoes&amp;limit=3&amp;q=running">3</a>`) {
		t.Errorf("grouped view: %s", body)
	}

	// A bad parameter: the form again, filled in, with the problem.
	w = do(t, ds, "GET", "/explore?q=running&min_cpc=abc&country=us", nil)
	if w.Code != 400 || !strings.Contains(w.Body.String(), `id="problem"`) || !strings.Contains(w.Body.String(), "min_cpc") || !strings.Contains(w.Body.String(), `name="min_cpc" value="abc"`) {
		t.Errorf("bad parameter: %d %s", w.Code, w.Body)
	}

	// A page cut by the allowance says so.
	ds.Server = New(Options{Index: ds.index, Access: &quotaAccess{quota: 20, used: 18}, Now: ds.Now})
	body = do(t, ds, "GET", first, nil).Body.String()
	if !strings.Contains(body, `id="truncated"`) || len(pageRows(body)) != 2 {
		t.Errorf("a page cut by the allowance: %q", pageRows(body))
	}
}

// TestExploreLinks: the home page links the explorer, and each keyword
// page links "more keywords with" each of its words.
func TestExploreLinks(t *testing.T) {
	ds := newDemoServer(t)
	if body := do(t, ds, "GET", "/", nil).Body.String(); pageHref(body, "explore") != "/explore" {
		t.Error("the home page does not link the explorer")
	}
	body := do(t, ds, "GET", "/keyword?q=running+shoes+for+women&country=us", nil).Body.String()
	for _, w := range []string{"running", "shoes", "for", "women"} {
		if !strings.Contains(body, `<a href="/explore?q=`+w+`&amp;country=us">“`+w+`”</a>`) {
			t.Errorf("the keyword page does not link more keywords with %q", w)
		}
	}
}
