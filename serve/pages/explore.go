package pages

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/serve/web"
)

// The /explore page: the keyword explorer's form, one page of results with
// sortable column headers, and links to the next and previous pages. It
// works without script: the form is a GET form, sorting and paging are
// links. Each row shown counts as a lookup, as on GET /v1/explore.
//
// Paging back: a cursor only leads forward, so the page carries the
// cursors of the pages before it in prev (dot-separated, the page before
// last at the end, the first page implied). "Previous" pops one; the stack
// keeps the last maxPrevCursors pages, beyond which "Previous" leads to
// the first page.

// maxPrevCursors bounds the prev stack of the explorer page's links.
const maxPrevCursors = 20

// exploreParams are the explore parameters a page link carries over.
var exploreParams = []string{"q", "country", "mode", "include", "exclude",
	"min_volume", "max_volume", "min_cpc", "max_cpc", "min_competition", "max_competition",
	"min_words", "max_words", "intent", "sort", "order", "limit", "group"}

// exploreView is the explorer page.
type exploreView struct {
	F                exploreForm
	Asked            bool   // a query was sent (else only the form is shown)
	Problem          string // a bad parameter, shown above the form
	Country          string
	CountryName      string
	Mode             string
	Total, Shown     string
	Page             int
	Grouped          bool
	Rows             []exploreRowView
	Groups           []exploreGroupView
	Cols             []exploreCol
	NextURL, PrevURL string
	FirstURL         string
	TruncatedByQuota bool
	JSONURL, CSVURL  string
	UngroupedURL     string
	GroupedURL       string
}

// exploreForm is the form as the person filled it in.
type exploreForm struct {
	Q, Mode, Include, Exclude               string
	MinVolume, MaxVolume, MinCPC, MaxCPC    string
	MinCompetition, MaxCompetition          string
	MinWords, MaxWords, Intent, Sort, Order string
	Limit                                   string
	Group                                   bool
}

type exploreRowView struct {
	Keyword, URL, Volume, CPC, Competition string
	Intent, IntentURL                      string
}

type exploreGroupView struct {
	Intent, IntentURL, Members, Volume string
	Top                                []web.ExampleLink
	ExploreURL                         string // the matches of this group
}

// exploreCol is a sortable column header: a link sorting by it, the other
// way round when it is the current sort.
type exploreCol struct {
	Label, URL, Arrow string
	Num               bool
}

// handleExplorePage answers GET /explore.
func (s *Pages) handleExplorePage(w http.ResponseWriter, r *http.Request) error {
	v, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		v = url.Values{}
	}
	form := web.FormData{Country: strings.ToUpper(web.DefaultCountry)}
	if c, ok := kw.LookupCountry(v.Get("country")); ok {
		form.Country = c.Code
	}
	view := &exploreView{F: readExploreForm(v)}
	d := s.NewPage(r, "Keyword explorer · kwdata", form)
	d.Description = "Find the keywords holding some words, filtered on volume, CPC and competition, sorted exactly, and grouped by search intent."
	d.X = view
	if strings.TrimSpace(v.Get("q")) == "" {
		// The empty form: nothing asked, nothing counted.
		return s.renderPage(w, r, http.StatusOK, "explore", d)
	}
	view.Asked = true
	if err != nil {
		view.Problem = "The address is not correctly encoded; submit the form again."
		return s.renderPage(w, r, http.StatusBadRequest, "explore", d)
	}
	q, err := web.ParseExplore(v)
	var he web.HTTPError
	if errors.As(err, &he) && he.Status == http.StatusBadRequest {
		view.Problem = he.Msg
		return s.renderPage(w, r, http.StatusBadRequest, "explore", d)
	}
	if err != nil {
		return s.renderPageError(w, r, err, form)
	}
	ans, err := s.Explore(r, q, w.Header())
	if err != nil {
		return s.renderPageError(w, r, err, form)
	}
	view.fill(v, &ans)
	d.JSONURL = view.JSONURL
	d.Title = "Keywords with " + q.Q + " in " + q.Country + " · kwdata"
	return s.renderPage(w, r, http.StatusOK, "explore", d)
}

func readExploreForm(v url.Values) exploreForm {
	clip := func(name string) string {
		s := v.Get(name)
		if len(s) > web.MaxRawQ || !isText(s) {
			return ""
		}
		return s
	}
	return exploreForm{
		Q: clip("q"), Mode: clip("mode"), Include: clip("include"), Exclude: clip("exclude"),
		MinVolume: clip("min_volume"), MaxVolume: clip("max_volume"), MinCPC: clip("min_cpc"), MaxCPC: clip("max_cpc"),
		MinCompetition: clip("min_competition"), MaxCompetition: clip("max_competition"),
		MinWords: clip("min_words"), MaxWords: clip("max_words"), Intent: clip("intent"),
		Sort: clip("sort"), Order: clip("order"), Limit: clip("limit"), Group: v.Get("group") == "intent",
	}
}

// fill lays out an answer: rows or groups, headers, paging links.
func (view *exploreView) fill(v url.Values, a *web.ExploreAnswer) {
	q := &a.Query
	c, _ := kw.LookupCountry(q.Country)
	view.Country, view.CountryName, view.Mode = c.Code, c.Name, string(q.Mode)
	view.Grouped, view.TruncatedByQuota = q.GroupIntent, a.TruncatedByQuota
	// base holds the query's parameters, without the page's place.
	base := url.Values{}
	for _, name := range exploreParams {
		if s := v.Get(name); s != "" {
			base.Set(name, s)
		}
	}
	base.Set("country", strings.ToLower(c.Code))
	link := func(change func(url.Values)) string {
		u := url.Values{}
		for k, vs := range base {
			u[k] = vs
		}
		change(u)
		return "/explore?" + u.Encode()
	}
	api := url.Values{}
	for k, vs := range base {
		api[k] = vs
	}
	if cur := v.Get("cursor"); cur != "" {
		api.Set("cursor", cur)
	}
	view.JSONURL = "/v1/explore?" + api.Encode()
	api.Set("format", "csv")
	view.CSVURL = "/v1/explore?" + api.Encode()

	// Paging.
	cur := v.Get("cursor")
	var prev []string
	if p := v.Get("prev"); p != "" && cur != "" {
		prev = strings.Split(p, ".")
	}
	view.Page = 1
	if cur != "" {
		view.Page = len(prev) + 2
		view.FirstURL = link(func(url.Values) {})
		view.PrevURL = view.FirstURL
		if n := len(prev); n > 0 {
			view.PrevURL = link(func(u url.Values) {
				u.Set("cursor", prev[n-1])
				if n > 1 {
					u.Set("prev", strings.Join(prev[:n-1], "."))
				}
			})
		}
	}
	if next := a.Result.NextCursor; next != "" {
		stack := prev
		if cur != "" {
			stack = append(stack[:len(stack):len(stack)], cur)
		}
		if len(stack) > maxPrevCursors {
			stack = stack[len(stack)-maxPrevCursors:]
		}
		view.NextURL = link(func(u url.Values) {
			u.Set("cursor", next)
			if len(stack) > 0 {
				u.Set("prev", strings.Join(stack, "."))
			}
		})
	}
	view.GroupedURL = link(func(u url.Values) { u.Set("group", "intent") })
	view.UngroupedURL = link(func(u url.Values) { u.Del("group") })

	if q.GroupIntent {
		view.Total = formatInt(a.Result.TotalGroups)
		view.Shown = formatInt(int64(len(a.Result.Groups)))
		for _, g := range a.Result.Groups {
			gv := exploreGroupView{Intent: g.Intent, IntentURL: intentURL(g.Intent, c.Code),
				Members: formatInt(g.MembersMatched), Volume: formatInt(g.Volume),
				ExploreURL: link(func(u url.Values) { u.Del("group"); u.Set("intent", g.Intent) })}
			for _, k := range g.Top {
				gv.Top = append(gv.Top, web.ExampleLink{Keyword: k, Country: c.Code, URL: keywordURL(k, c.Code)})
			}
			view.Groups = append(view.Groups, gv)
		}
		return
	}
	view.Total = formatInt(a.Result.Total)
	view.Shown = formatInt(int64(len(a.Result.Rows)))
	for _, row := range a.Result.Rows {
		rv := exploreRowView{Keyword: row.Keyword, URL: keywordURL(row.Keyword, c.Code),
			Volume: formatOptInt(row.Volume), CPC: formatOptUSD(row.CPCMicros), Competition: noValue,
			Intent: row.Intent, IntentURL: intentURL(row.Keyword, c.Code)}
		if row.Competition != nil {
			rv.Competition = formatHundredths(web.CompetitionHundredths(*row.Competition))
		}
		view.Rows = append(view.Rows, rv)
	}
	for _, col := range []struct {
		label string
		sort  kw.ExploreSort
		num   bool
	}{{"Keyword", kw.SortKeyword, false}, {"Volume", kw.SortVolume, true}, {"CPC", kw.SortCPC, true}, {"Competition", kw.SortCompetition, true}} {
		order := "desc"
		if col.sort == kw.SortKeyword {
			order = "asc"
		}
		ec := exploreCol{Label: col.label, Num: col.num}
		if q.Sort == col.sort {
			ec.Arrow = "↓"
			if !q.Desc {
				ec.Arrow = "↑"
			}
			order = map[bool]string{true: "asc", false: "desc"}[q.Desc]
		}
		ec.URL = link(func(u url.Values) { u.Set("sort", string(col.sort)); u.Set("order", order) })
		view.Cols = append(view.Cols, ec)
	}
}

// exploreURL is the explorer page of the keywords holding word.
func exploreURL(word, country string) string {
	return "/explore?q=" + url.QueryEscape(word) + "&country=" + strings.ToLower(country)
}

// moreWith links the explorer page of each distinct word of a keyword
// ("more keywords with …").
func moreWith(keyword, country string) []web.ExampleLink {
	var out []web.ExampleLink
	seen := map[string]bool{}
	for _, w := range strings.Fields(keyword) {
		if seen[w] || len(out) == 8 {
			continue
		}
		seen[w] = true
		out = append(out, web.ExampleLink{Keyword: w, Country: country, URL: exploreURL(w, country)})
	}
	return out
}
