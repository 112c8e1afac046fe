package pages

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/serve/web"
)

// The intent group of a keyword (GET /v1/intent, the /intent page and the
// intent_group tool) is the group of its intent leader, computed when the
// index was built: the keyword's entry names the leader, and the group is
// one more point read. It is one counted lookup, as GET /v1/keyword is.

// intentView is the intent group page, every number formatted.
type intentView struct {
	Keyword, Leader, LeaderURL, Country, CountryName, Updated string
	Size, TotalVolume                                         string
	Shown                                                     int
	Members                                                   []memberView
	JSONURL, CSVURL                                           string
}

type memberView struct {
	Keyword, URL, Volume, CPC, Overlap string
	OverlapPct                         int
	IsLeader, IsQuery                  bool
}

func newIntentView(g *kw.IntentGroup, q string, c kw.Country) *intentView {
	v := &intentView{
		Keyword: q, Leader: g.Leader, LeaderURL: keywordURL(g.Leader, c.Code), Country: c.Code, CountryName: c.Name,
		Updated: g.DataDate, Size: formatInt(g.Size), TotalVolume: formatInt(g.TotalVolume), Shown: len(g.Members),
		JSONURL: "/v1/intent?q=" + url.QueryEscape(q) + "&country=" + strings.ToLower(c.Code),
	}
	v.CSVURL = v.JSONURL + "&format=csv"
	for _, m := range g.Members {
		v.Members = append(v.Members, memberView{
			Keyword: m.Keyword, URL: keywordURL(m.Keyword, c.Code), Volume: formatOptInt(m.Volume), CPC: formatOptUSD(m.CPCMicros),
			Overlap: fmt.Sprintf("%d/20", m.Overlap), OverlapPct: int(max(0, min(m.Overlap, 20))) * 5,
			IsLeader: m.Keyword == g.Leader, IsQuery: m.Keyword == q,
		})
	}
	return v
}

// intentURL is the intent group page of a keyword.
func intentURL(keyword, country string) string {
	return "/intent?q=" + url.QueryEscape(keyword) + "&country=" + strings.ToLower(country)
}

// handleIntentPage answers GET /intent?q=&country=: counted like the
// keyword page, failing with the same HTML error pages.
func (s *Pages) handleIntentPage(w http.ResponseWriter, r *http.Request) error {
	form, q, c, err := pageQuery(r)
	if err != nil {
		return s.renderPageError(w, r, err, form)
	}
	g, _, _, err := s.LookupGroup(r.Context(), r, c, q, w.Header())
	if err != nil {
		if errors.Is(err, web.ErrNoGroup) {
			err = web.GroupNotFound(q, c.Code, err)
		}
		return s.renderPageError(w, r, err, form)
	}
	d := s.NewPage(r, "Intent group of "+q+" in "+c.Code+" · kwdata", form)
	v := newIntentView(&g, q, c)
	d.G = v
	d.JSONURL = v.JSONURL
	d.Description = fmt.Sprintf("The intent group of %s in %s: %s keywords led by %s, %s searches a month in all.", q, c.Name, v.Size, g.Leader, v.TotalVolume)
	return s.renderPage(w, r, http.StatusOK, "intent", d)
}
