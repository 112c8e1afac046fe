package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/kwdata/kwdata/kw"
)

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

// ErrNoGroup is the cause of a 404 for a keyword whose build holds no
// groups (built before they existed).
var ErrNoGroup = errors.New("the served index holds no intent groups")

// LookupGroup answers one validated intent-group request: one counted
// lookup of q (a 404 counts, as on GET /v1/keyword), then the group of its
// leader. It returns the group and the keyword's entry.
func (s *Core) LookupGroup(ctx context.Context, r *http.Request, c kw.Country, q string, h http.Header) (kw.IntentGroup, kw.Entry, kw.IndexInfo, error) {
	e, info, err := s.LookupOne(ctx, r, c, q, h)
	if err != nil {
		return kw.IntentGroup{}, e, info, err
	}
	leader := e.Intent
	if leader == "" {
		leader = e.Keyword
	}
	gi, ok := s.Index.(kw.GroupIndex)
	if !ok {
		return kw.IntentGroup{}, e, info, fmt.Errorf("cannot find the intent group of %q in %s: %w", q, c.Code, ErrNoGroup)
	}
	g, err := gi.IntentGroup(ctx, c.Code, leader)
	switch {
	case errors.Is(err, kw.ErrNotFound):
		return kw.IntentGroup{}, e, info, fmt.Errorf("cannot find the intent group of %q in %s: %w", q, c.Code, ErrNoGroup)
	case err != nil:
		return kw.IntentGroup{}, e, info, fmt.Errorf("cannot read the intent group of %q in %s: %w", q, c.Code, err)
	}
	if g.DataDate == "" {
		g.DataDate = DataDate(&e, info)
	}
	return g, e, info, nil
}

// GroupNotFound is the 404 of a keyword whose group the build lacks.
func GroupNotFound(q, country string, err error) HTTPError {
	return HTTPError{Status: http.StatusNotFound, Code: CodeKeywordNotFound,
		Msg: fmt.Sprintf("The served index has no intent group for %q in %s: it was built before intent groups existed; the next build has them.", q, country),
		Err: err}
}

// IntentError maps the failures of lookupGroup to what the client sees.
func (s *Core) IntentError(ctx context.Context, q string, c kw.Country, err error) error {
	switch {
	case errors.Is(err, ErrNoGroup):
		return GroupNotFound(q, c.Code, err)
	case errors.Is(err, kw.ErrNotFound):
		return s.NotFound(ctx, q, c.Code, err)
	}
	return err
}

// AppendIntentJSON appends the GET /v1/intent document of g, asked for
// keyword q.
func AppendIntentJSON(dst []byte, g *kw.IntentGroup, q string) []byte {
	dst = append(dst, `{"keyword":`...)
	dst = AppendString(dst, q)
	dst = append(dst, `,"leader":`...)
	dst = AppendString(dst, g.Leader)
	dst = append(dst, `,"country":`...)
	dst = AppendString(dst, g.Country)
	dst = append(dst, `,"updated":`...)
	dst = AppendString(dst, g.DataDate)
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
		dst = AppendString(dst, m.Keyword)
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
