package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kwdata/kwdata/kw"
)

// The intent group of a keyword (GET /v1/intent, the /intent page and the
// intent_group tool) is the group of its intent leader, computed when the
// index was built: the keyword's entry names the leader, and the group is
// one more point read. It is one counted lookup, as GET /v1/keyword is.

// IntentGroup forwards to the wrapped index when it holds groups, counting
// damage like Lookup; an index without groups finds none.
func (d damageCounter) IntentGroup(ctx context.Context, country, leader string) (kw.IntentGroup, error) {
	gi, ok := d.Index.(kw.GroupIndex)
	if !ok {
		return kw.IntentGroup{}, kw.ErrNotFound
	}
	g, err := gi.IntentGroup(ctx, country, leader)
	if err != nil && errors.Is(err, kw.ErrIndexDamaged) {
		d.n.Inc()
	}
	return g, err
}

// errNoGroup is the cause of a 404 for a keyword whose build holds no
// groups (built before they existed).
var errNoGroup = errors.New("the served index holds no intent groups")

// lookupGroup answers one validated intent-group request: one counted
// lookup of q (a 404 counts, as on GET /v1/keyword), then the group of its
// leader. It returns the group and the keyword's entry.
func (s *Server) lookupGroup(ctx context.Context, r *http.Request, c kw.Country, q string, h http.Header) (kw.IntentGroup, kw.Entry, kw.IndexInfo, error) {
	e, info, err := s.lookupOne(ctx, r, c, q, h)
	if err != nil {
		return kw.IntentGroup{}, e, info, err
	}
	leader := e.Intent
	if leader == "" {
		leader = e.Keyword
	}
	gi, ok := s.index.(kw.GroupIndex)
	if !ok {
		return kw.IntentGroup{}, e, info, fmt.Errorf("cannot find the intent group of %q in %s: %w", q, c.Code, errNoGroup)
	}
	g, err := gi.IntentGroup(ctx, c.Code, leader)
	switch {
	case errors.Is(err, kw.ErrNotFound):
		return kw.IntentGroup{}, e, info, fmt.Errorf("cannot find the intent group of %q in %s: %w", q, c.Code, errNoGroup)
	case err != nil:
		return kw.IntentGroup{}, e, info, fmt.Errorf("cannot read the intent group of %q in %s: %w", q, c.Code, err)
	}
	if g.DataDate == "" {
		g.DataDate = dataDate(&e, info)
	}
	return g, e, info, nil
}

// groupNotFound is the 404 of a keyword whose group the build lacks.
func groupNotFound(q, country string, err error) HTTPError {
	return HTTPError{Status: http.StatusNotFound, Code: CodeKeywordNotFound,
		Msg: fmt.Sprintf("The served index has no intent group for %q in %s: it was built before intent groups existed; the next build has them.", q, country),
		Err: err}
}

// intentError maps the failures of lookupGroup to what the client sees.
func (s *Server) intentError(ctx context.Context, q string, c kw.Country, err error) error {
	switch {
	case errors.Is(err, errNoGroup):
		return groupNotFound(q, c.Code, err)
	case errors.Is(err, kw.ErrNotFound):
		return s.notFound(ctx, q, c.Code, err)
	}
	return err
}

// handleIntent answers GET /v1/intent?q=&country=.
func (s *Server) handleIntent(w http.ResponseWriter, r *http.Request) error {
	q, c, err := parseKeywordQuery(r.URL.RawQuery)
	if err != nil {
		return err
	}
	g, _, _, err := s.lookupGroup(r.Context(), r, c, q, w.Header())
	if err != nil {
		return s.intentError(r.Context(), q, c, err)
	}
	if wantsCSV(r) {
		return writeCSVDownload(w, r, csvName("intent", q, c.Code), appendIntentCSV(&g))
	}
	return writeBody(w, r, contentTypeJSON, appendIntentJSON(nil, &g, q))
}

// writeBody writes a complete 200 answer.
func writeBody(w http.ResponseWriter, r *http.Request, contentType []string, body []byte) error {
	h := w.Header()
	h["Content-Type"] = contentType
	h["Content-Length"] = contentLength(len(body))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
	return nil
}

// appendIntentJSON appends the GET /v1/intent document of g, asked for
// keyword q.
func appendIntentJSON(dst []byte, g *kw.IntentGroup, q string) []byte {
	dst = append(dst, `{"keyword":`...)
	dst = appendString(dst, q)
	dst = append(dst, `,"leader":`...)
	dst = appendString(dst, g.Leader)
	dst = append(dst, `,"country":`...)
	dst = appendString(dst, g.Country)
	dst = append(dst, `,"updated":`...)
	dst = appendString(dst, g.DataDate)
	dst = append(dst, `,"size":`...)
	dst = strconv.AppendInt(dst, g.Size, 10)
	dst = append(dst, `,"total_volume":`...)
	dst = strconv.AppendInt(dst, g.TotalVolume, 10)
	dst = append(dst, `,"members":[`...)
	members := g.Members
	if len(members) > kw.MaxGroupMembers {
		members = members[:kw.MaxGroupMembers]
	}
	for i := range members {
		m := &members[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"keyword":`...)
		dst = appendString(dst, m.Keyword)
		dst = append(dst, `,"volume":`...)
		dst = appendOptInt(dst, m.Volume)
		dst = append(dst, `,"cpc":`...)
		dst = appendOptCents(dst, m.CPCMicros)
		dst = append(dst, `,"overlap":"`...)
		dst = strconv.AppendInt(dst, int64(m.Overlap), 10)
		dst = append(dst, `/20"}`...)
	}
	return append(dst, "]}\n"...)
}

// toolIntentGroup is the intent_group tool: GET /v1/intent as a tool.
func (s *Server) toolIntentGroup(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	call, err := toolCall(ctx)
	if err != nil {
		return nil, err
	}
	q, c, err := keywordArgs(req)
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	g, _, _, err := s.lookupGroup(ctx, call.r, c, q, h)
	call.setHeader(h)
	if err != nil {
		if errors.Is(err, kw.ErrNotFound) || errors.Is(err, errNoGroup) {
			return toolError(s.intentError(ctx, q, c, err).(HTTPError).Msg), nil
		}
		return s.toolFailure(call, err)
	}
	return toolDocument(appendIntentJSON(nil, &g, q)), nil
}

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
func (s *Server) handleIntentPage(w http.ResponseWriter, r *http.Request) error {
	form, q, c, err := pageQuery(r)
	if err != nil {
		return s.renderPageError(w, r, err, form)
	}
	g, _, _, err := s.lookupGroup(r.Context(), r, c, q, w.Header())
	if err != nil {
		if errors.Is(err, errNoGroup) {
			err = groupNotFound(q, c.Code, err)
		}
		return s.renderPageError(w, r, err, form)
	}
	d := s.newPage(r, "Intent group of "+q+" in "+c.Code+" · kwdata", form)
	d.G = newIntentView(&g, q, c)
	d.JSONURL = d.G.JSONURL
	d.Description = fmt.Sprintf("The intent group of %s in %s: %s keywords led by %s, %s searches a month in all.", q, c.Name, d.G.Size, g.Leader, d.G.TotalVolume)
	return s.renderPage(w, r, http.StatusOK, "intent", d)
}
