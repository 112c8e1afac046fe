package pages

import (
	"embed"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/serve/web"
)

// The HTML pages are server-rendered with html/template, which escapes
// every value for its context; they need no JavaScript and load nothing
// from elsewhere (the Content-Security-Policy says so to the browser).

//go:embed templates/*.html
var templateFS embed.FS

// pageTemplates holds one template set per page, each the layout plus the
// page's "content".
var pageTemplates = web.ParsePages(templateFS, "home", "keyword", "intent", "explore", "error")

// renderPage renders the page name with the shared layout.
func (s *Pages) renderPage(w http.ResponseWriter, r *http.Request, status int, name string, d *web.PageData) error {
	return web.RenderPage(w, r, status, name, pageTemplates[name], d)
}

// maxHomeExamples bounds the example links of the home page.
const maxHomeExamples = 4

// homeExamples picks the example links from what the served index
// recorded at build time: the most searched keyword of each country, then
// the next ones, so a demo of three countries shows all three.
func homeExamples(info kw.IndexInfo, countries []kw.Country) []web.ExampleLink {
	var out []web.ExampleLink
	for rank := 0; len(out) < maxHomeExamples; rank++ {
		added := false
		for _, c := range countries {
			ex := info.Examples[c.Code]
			if rank >= len(ex) || len(out) == maxHomeExamples {
				continue
			}
			out = append(out, web.ExampleLink{Keyword: ex[rank], Country: c.Code, URL: keywordURL(ex[rank], c.Code),
				APIURL: "/v1/keyword?q=" + url.QueryEscape(ex[rank]) + "&country=" + strings.ToLower(c.Code)})
			added = true
		}
		if !added {
			break
		}
	}
	return out
}

// keywordView is the keyword page, every number already formatted.
type keywordView struct {
	Keyword, Country, CountryName, Updated string
	Intent, IntentURL                      string
	IntentIsSelf                           bool
	Volume, VolumeRange, CPC               string
	Competition                            string
	CompetitionPct                         int64
	YoY, ThreeMonth                        string     // "+900%", "−12.5%", "∞" or "—"
	Chart, ChartNarrow                     *chartView // the narrow one is for phones
	Trend                                  []trendRow
	Related                                []relatedView
	JSONURL                                string
	CSVURL                                 string
	MoreWith                               []web.ExampleLink // the explorer page of each word
}

type trendRow struct{ Month, Volume string }

type relatedView struct {
	Keyword, URL, Volume, CPC, Overlap string
	OverlapPct                         int
	SameIntent                         bool
}

// errorView is an error page.
type errorView struct {
	Status           int
	Title, Heading   string
	Detail           string
	ResetAt, ResetIn string // for 429
	Monthly          bool   // for 429: a registered key's monthly allowance, not the anonymous daily one
	ShowSearch       bool
	Suggestions      []web.ExampleLink // keywords to try instead of one the index lacks
}

// handleHome answers GET /.
func (s *Pages) handleHome(w http.ResponseWriter, r *http.Request) error {
	d := s.NewPage(r, "kwdata: keyword search data", web.FormData{Country: strings.ToUpper(web.DefaultCountry)})
	d.Description = "Monthly search volume, CPC, competition, trends and related keywords for people, programs and AI agents."
	if info, ok := s.Index.Info(); ok {
		d.Examples = homeExamples(info, d.Countries)
		// The form starts on a country with data.
		if len(d.OtherCountries) > 0 && len(d.Countries) > 0 && !slices.ContainsFunc(d.Countries, func(c kw.Country) bool { return c.Code == d.Form.Country }) {
			d.Form.Country = d.Countries[0].Code
		}
	}
	return s.renderPage(w, r, http.StatusOK, "home", d)
}

// pageQuery reads q and country of a page (the keyword and intent pages):
// the normalized keyword and the country, or the error to render, with the
// search form filled in as the person typed it when it can be shown again.
func pageQuery(r *http.Request) (web.FormData, string, kw.Country, error) {
	rawQ, _, _ := web.QueryValue(r.URL.RawQuery, "q")
	rawCountry, _, _ := web.QueryValue(r.URL.RawQuery, "country")
	form := web.FormData{Q: rawQ, Country: strings.ToUpper(web.DefaultCountry)}
	if c, ok := kw.LookupCountry(rawCountry); ok {
		form.Country = c.Code
	}
	if len(form.Q) > web.MaxRawQ || !isText(form.Q) {
		form.Q = ""
	}
	q, c, err := web.ParseKeywordQuery(r.URL.RawQuery)
	if err == nil {
		form.Q = q
	}
	return form, q, c, err
}

// handleKeywordPage answers GET /keyword?q=&country=. It admits and counts
// exactly like GET /v1/keyword; its failures are HTML pages with the same
// status codes.
func (s *Pages) handleKeywordPage(w http.ResponseWriter, r *http.Request) error {
	form, q, c, err := pageQuery(r)
	if err != nil {
		return s.renderPageError(w, r, err, form)
	}
	e, info, err := s.LookupOne(r.Context(), r, c, q, w.Header())
	if err != nil {
		return s.renderPageError(w, r, err, form)
	}
	d := s.NewPage(r, e.Keyword+" – search volume, CPC and related keywords in "+c.Code+" · kwdata", form)
	v := newKeywordView(&e, c, web.DataDate(&e, info))
	d.K = v
	d.JSONURL = v.JSONURL
	d.Description = fmt.Sprintf("%s in %s: %s searches a month, CPC %s, competition %s.", e.Keyword, c.Name, v.Volume, v.CPC, v.Competition)
	return s.renderPage(w, r, http.StatusOK, "keyword", d)
}

// isText reports whether s is valid UTF-8 without control characters, fit
// to be shown again in the search form.
func isText(s string) bool {
	for _, c := range s {
		if c == 0xFFFD || c < 0x20 || c == 0x7f {
			return false
		}
	}
	return true
}

// renderPageError answers a failed page view with an HTML page of the
// status web.Classify gives the error, carrying the same extra fields
// (Retry-After, RateLimit, WWW-Authenticate) as the API's problem.
func (s *Pages) renderPageError(w http.ResponseWriter, r *http.Request, err error, form web.FormData) error {
	if web.IsClientGone(r.Context(), err) {
		return err
	}
	he := web.Classify(err)
	if he.Status >= 500 && !web.IndexUnavailable(err) {
		s.Log.LogAttrs(r.Context(), slog.LevelError, "page failed", slog.String("route", "/keyword"),
			slog.Int("status", he.Status), slog.Any("err", err))
	}
	for k, v := range he.Header {
		w.Header()[k] = v
	}
	info := web.Problems[he.Code]
	ev := &errorView{Status: he.Status, Title: info.Title, Detail: he.Msg, ShowSearch: true}
	switch he.Code {
	case web.CodeKeywordNotFound:
		ev.Heading = fmt.Sprintf("No data for “%s”", form.Q)
		ev.Detail = "The index has no data for this keyword in " + countryName(form.Country) + ". Check the spelling, try a broader keyword, or pick another country."
		if !errors.Is(err, web.ErrNoGroup) {
			for _, k := range s.Similar(r.Context(), form.Country, form.Q) {
				ev.Suggestions = append(ev.Suggestions, web.ExampleLink{Keyword: k, Country: form.Country, URL: keywordURL(k, form.Country)})
			}
		}
	case web.CodeQuotaExhausted:
		ev.Heading = "You have used up your lookups for now"
		var qe *web.QuotaError
		if errors.As(err, &qe) {
			reset, d := s.QuotaReset(qe)
			ev.ResetAt = reset.Format("15:04 UTC on Mon 2 Jan 2006")
			ev.ResetIn = web.HumanDuration(d)
			ev.Detail = "Every keyword page view counts as a lookup, like a call to the API."
			if ev.Monthly = web.QuotaMonthly(qe); ev.Monthly {
				ev.Detail += " This API key's monthly allowance is used up."
			} else {
				ev.Detail += " Anonymous visitors get 20 lookups per UTC day."
			}
		}
		ev.ShowSearch = false
	case web.CodeMissingQ:
		ev.Heading = "Which keyword?"
		ev.Detail = "Type a keyword into the box and pick a country."
	case web.CodeQTooLong:
		ev.Heading = "That keyword is too long"
		ev.Detail = fmt.Sprintf("A keyword may have at most %d characters; shorten it and try again.", kw.MaxKeywordChars)
	case web.CodeInvalidQ:
		ev.Heading = "That keyword cannot be read"
		ev.Detail = "The keyword is not valid text; type it again."
	case web.CodeUnsupportedCountry:
		ev.Heading = "That country is not supported"
		ev.Detail = "Pick one of the supported countries from the list."
	case web.CodeCountryNotIndexed:
		ev.Heading = "No data for " + countryName(form.Country) + " yet"
		ev.Detail = "This country is supported, but the index holds no keywords of it. Pick a country from the list; those with data come first. This view did not count as a lookup."
	case web.CodeInvalidKey:
		ev.Heading = "That API key is not valid"
		ev.Detail = "The key sent with this request is unknown or revoked. Remove it to browse anonymously."
	case web.CodeIndexUnavailable:
		ev.Heading = "Keyword data is loading"
		ev.Detail = "No keyword index is loaded yet. Try again in a minute."
		ev.ShowSearch = false
	default:
		ev.Heading = "Something went wrong"
		ev.Detail = "The server failed to answer this request. Trying again may help."
		ev.ShowSearch = false
	}
	d := s.NewPage(r, ev.Title+" · kwdata", form)
	d.Err = ev
	return s.renderPage(w, r, he.Status, "error", d)
}

// formatChange shows a percent change as the planner does, with a sign:
// "+900%", "−12.5%", "0%", "∞" (rose from zero) or "—" (no value).
func formatChange(v *float64) string {
	switch {
	case v == nil || math.IsNaN(*v) || math.IsInf(*v, -1):
		return noValue
	case math.IsInf(*v, 1):
		return "∞"
	}
	num := string(web.AppendPercent(nil, math.Abs(*v)))
	switch {
	case *v > 0:
		return "+" + num + "%"
	case *v < 0:
		return "−" + num + "%"
	}
	return "0%"
}

func countryName(code string) string {
	if c, ok := kw.LookupCountry(code); ok {
		return c.Name
	}
	return code
}

// keywordURL is the keyword page of a keyword.
func keywordURL(keyword, country string) string {
	return "/keyword?q=" + url.QueryEscape(keyword) + "&country=" + strings.ToLower(country)
}

func newKeywordView(e *kw.Entry, c kw.Country, updated string) *keywordView {
	v := &keywordView{
		Keyword: e.Keyword, Country: c.Code, CountryName: c.Name, Updated: updated,
		Intent: e.Intent, IntentURL: intentURL(e.Keyword, c.Code), IntentIsSelf: e.Intent == e.Keyword || e.Intent == "",
		Volume: formatOptInt(e.Volume), VolumeRange: e.VolumeRange,
		CPC:         formatOptUSD(e.CPCMicros),
		Competition: noValue,
		YoY:         formatChange(e.YoYChange),
		ThreeMonth:  formatChange(e.ThreeMonthChange),
		JSONURL:     "/v1/keyword?q=" + url.QueryEscape(e.Keyword) + "&country=" + strings.ToLower(c.Code),
	}
	v.CSVURL = v.JSONURL + "&format=csv"
	v.MoreWith = moreWith(e.Keyword, c.Code)
	if e.Competition != nil {
		comp := web.CompetitionHundredths(*e.Competition)
		v.Competition, v.CompetitionPct = formatHundredths(comp), max(0, min(comp, 100))
	}
	trend := web.TrimTrend(e.Trend)
	for _, m := range trend {
		v.Trend = append(v.Trend, trendRow{Month: monthName(m.Month, "January 2006"), Volume: formatOptInt(m.Searches)})
	}
	v.Chart = newChart(e.Keyword, trend, wideChart)
	v.ChartNarrow = newChart(e.Keyword, trend, narrowChart)
	related := e.Related
	if len(related) > web.MaxRelated {
		related = related[:web.MaxRelated]
	}
	for _, rk := range related {
		v.Related = append(v.Related, relatedView{
			Keyword: rk.Keyword, URL: keywordURL(rk.Keyword, c.Code),
			Volume: formatOptInt(rk.Volume), CPC: formatOptUSD(rk.CPCMicros),
			Overlap:    strconv.Itoa(int(rk.Overlap)) + "/20",
			OverlapPct: int(max(0, min(rk.Overlap, 20))) * 5,
			SameIntent: rk.SameIntent,
		})
	}
	return v
}

// noValue stands on a page for a number the source did not give: a dash,
// never "0" or "$0", which are real measurements.
const noValue = "—"

// formatOptInt is formatInt, or noValue.
func formatOptInt(n *int64) string {
	if n == nil {
		return noValue
	}
	return formatInt(*n)
}

// formatOptUSD is the micros' formatUSD, or noValue.
func formatOptUSD(micros *int64) string {
	if micros == nil {
		return noValue
	}
	return formatUSD(web.MicrosToCents(*micros))
}

// formatInt writes n with thousands separators: 301000 → "301,000".
func formatInt(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// formatUSD writes cents as "$1.23", "$1,204.50", or "$0" for zero.
func formatUSD(cents int64) string {
	if cents == 0 {
		return "$0"
	}
	sign := ""
	if cents < 0 {
		sign, cents = "-", -cents
	}
	return fmt.Sprintf("%s$%s.%02d", sign, formatInt(cents/100), cents%100)
}

// formatHundredths writes v/100 with two decimals: 87 → "0.87", 50 → "0.50".
func formatHundredths(v int64) string {
	sign := ""
	if v < 0 {
		sign, v = "-", -v
	}
	return fmt.Sprintf("%s%d.%02d", sign, v/100, v%100)
}

// formatCompact writes a count for a chart label: 950, 1.2K, 301K, 2.5M.
func formatCompact(n int64) string {
	f := float64(n)
	switch a := math.Abs(f); {
	case a >= 1e9:
		return trimZero(f/1e9) + "B"
	case a >= 1e6:
		return trimZero(f/1e6) + "M"
	case a >= 1e3:
		return trimZero(f/1e3) + "K"
	}
	return strconv.FormatInt(n, 10)
}

func trimZero(f float64) string {
	if math.Abs(f) >= 100 {
		return strconv.FormatFloat(math.Round(f), 'f', 0, 64)
	}
	s := strconv.FormatFloat(f, 'f', 1, 64)
	return strings.TrimSuffix(s, ".0")
}

// monthName formats a "YYYY-MM" month with layout, or returns it as is.
func monthName(month, layout string) string {
	t, err := time.Parse("2006-01", month)
	if err != nil {
		return month
	}
	return t.Format(layout)
}

// chartView is the trend chart: bars in an SVG coordinate space that the
// browser scales to the page width.
type chartView struct {
	Width, Height int
	Label         string
	Grid          []gridLine
	Bars          []barView
}

type gridLine struct {
	X1, X2, Y      float64
	LabelX, LabelY float64
	Label          string
}

type barView struct {
	X, Y, W, H     float64
	CX             float64 // centre, for the labels
	ValueY, MonthY float64
	Value, Month   string
	Title          string
	Peak           bool
	Year           *yearLabel
}

type yearLabel struct {
	X, Y float64
	Text string
}

// chartGeom is the layout of a chart in SVG units. The browser scales the
// SVG to the page width, so a phone gets its own narrower layout whose
// labels stay readable once scaled.
type chartGeom struct {
	W, H                     int
	Left, Right, Top, Bottom float64
	Values                   bool // value labels above the bars
}

var (
	wideChart   = chartGeom{W: 720, H: 270, Left: 58, Right: 8, Top: 22, Bottom: 50, Values: true}
	narrowChart = chartGeom{W: 360, H: 230, Left: 38, Right: 2, Top: 10, Bottom: 44}
)

// Chart constants.
const (
	chartGridLines         = 4
	chartBarGap    float64 = 0.28 // of a slot
)

// newChart lays out a bar chart of trend (oldest first); nil without data.
func newChart(keyword string, trend []kw.MonthlySearches, g chartGeom) *chartView {
	if len(trend) == 0 {
		return nil
	}
	var peak int64
	for _, m := range trend {
		peak = max(peak, kw.Deref(m.Searches))
	}
	step := niceStep(float64(peak) / chartGridLines)
	top := step * chartGridLines
	plotW := float64(g.W) - g.Left - g.Right
	plotH := float64(g.H) - g.Top - g.Bottom
	base := g.Top + plotH
	c := &chartView{Width: g.W, Height: g.H,
		Label: fmt.Sprintf("Monthly searches for %s from %s to %s; the peak is %s.", keyword,
			monthName(trend[0].Month, "January 2006"), monthName(trend[len(trend)-1].Month, "January 2006"), formatInt(peak))}
	for i := 0; i <= chartGridLines; i++ {
		y := round1(base - plotH*float64(i)/chartGridLines)
		c.Grid = append(c.Grid, gridLine{X1: g.Left, X2: float64(g.W) - g.Right, Y: y,
			LabelX: g.Left - 6, LabelY: y + 4, Label: formatCompact(int64(step * float64(i)))})
	}
	slot := plotW / float64(max(len(trend), 6)) // few months: keep bars from getting fat
	barW := slot * (1 - chartBarGap)
	for i, m := range trend {
		searches := kw.Deref(m.Searches) // a month without a value has no bar
		h := 0.0
		if top > 0 && searches > 0 {
			h = math.Max(plotH*float64(searches)/top, 1.5)
		}
		x := g.Left + slot*float64(i) + (slot-barW)/2
		b := barView{
			X: round1(x), Y: round1(base - h), W: round1(barW), H: round1(h), CX: round1(x + barW/2),
			ValueY: round1(base - h - 6), MonthY: base + g.Bottom*0.4,
			Month: monthName(m.Month, "Jan"),
			Title: monthName(m.Month, "January 2006") + ": " + formatInt(searches) + " searches",
			Peak:  m.Searches != nil && searches == peak && peak > 0,
		}
		if m.Searches == nil {
			b.Title = monthName(m.Month, "January 2006") + ": no data"
		}
		if g.Values {
			b.Value = noValue
			if m.Searches != nil {
				b.Value = formatCompact(searches)
			}
		}
		if i == 0 || strings.HasSuffix(m.Month, "-01") {
			b.Year = &yearLabel{X: b.CX, Y: base + g.Bottom*0.8, Text: monthName(m.Month, "2006")}
		}
		c.Bars = append(c.Bars, b)
	}
	return c
}

// niceStep rounds x up to 1, 2, 2.5 or 5 times a power of ten (at least 1).
func niceStep(x float64) float64 {
	if x <= 1 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m == 2.5 && p < 10 {
			continue // labels stay whole numbers
		}
		if x <= m*p*(1+1e-9) {
			return m * p
		}
	}
	return 10 * p
}

func round1(f float64) float64 { return math.Round(f*10) / 10 }
