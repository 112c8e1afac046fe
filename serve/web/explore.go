package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/kwdata/kwdata/kw"
)

// The keyword explorer as served: GET /v1/explore, the keyword_explore
// tool and the /explore page share its parsing, its counting and its JSON.

// Problem codes of the explorer.
const (
	// CodeInvalidParameter is a bad explore parameter; the detail names it.
	CodeInvalidParameter = "invalid_parameter"
	// CodeExploreUnavailable is a served build without the explorer's
	// tables.
	CodeExploreUnavailable = "explore_unavailable"
)

func init() {
	Problems[CodeInvalidParameter] = ProblemInfo{"Invalid parameter", "A parameter of the keyword explorer is malformed or out of range; the detail names it and says what to send. The request is not counted."}
	Problems[CodeExploreUnavailable] = ProblemInfo{"Keyword explorer unavailable", "The served index build was made without the keyword explorer's tables. The operator rebuilds it with kwdata build-index and publishes it; lookups keep working meanwhile."}
}

// exploreRetries bounds how often Explore asks again for fewer lookups
// when other requests of the same caller spend the allowance meanwhile.
const exploreRetries = 3

// ParseExplore reads an explore query from URL parameters as
// kw.ParseExploreQuery does, with the country defaulting and refused as
// everywhere else (DefaultCountry, 400 unsupported_country). Its error is
// an HTTPError: 400 invalid_parameter naming the parameter.
func ParseExplore(v url.Values) (kw.ExploreQuery, error) {
	if len(v["country"]) <= 1 {
		c, err := CountryInput(v.Get("country"))
		if err != nil {
			return kw.ExploreQuery{}, err
		}
		v = cloneValues(v)
		v.Set("country", c.Code)
	}
	q, err := kw.ParseExploreQuery(v)
	var qe *kw.QueryError
	if errors.As(err, &qe) {
		return q, HTTPError{Status: http.StatusBadRequest, Code: CodeInvalidParameter, Msg: qe.Param + " " + qe.Msg + ".", Err: err}
	}
	return q, err
}

func cloneValues(v url.Values) url.Values {
	out := make(url.Values, len(v)+1)
	for k, vs := range v {
		out[k] = vs
	}
	return out
}

// ExploreAnswer is one page of an explore query as served: the index's
// answer cut to the rows the caller's allowance covers.
type ExploreAnswer struct {
	Query  kw.ExploreQuery
	Result kw.ExploreResult
	// TruncatedByQuota says the page holds fewer rows than the index
	// gave, because the allowance had no more; Result.NextCursor then
	// continues after the last row given.
	TruncatedByQuota bool
}

// Explore answers an explore query for r's caller. Each row (a keyword
// with its numbers, or a group with its summed volume) counts as one
// lookup; the total, the cursor and an empty page are free. When the
// allowance covers fewer rows than the page holds, the page is cut to
// what is left and says so; only a caller with nothing left gets the
// *QuotaError (429). The key is authenticated (Admit of 0) before the
// index is asked, so a bad key learns nothing. The rate-limit fields of
// the counted rows go to h.
func (s *Core) Explore(r *http.Request, q kw.ExploreQuery, h http.Header) (ExploreAnswer, error) {
	a := ExploreAnswer{Query: q}
	info, ok := s.Index.Info()
	if !ok {
		return a, fmt.Errorf("cannot explore %q: %w", q.Q, kw.ErrNoIndex)
	}
	c, _ := kw.LookupCountry(q.Country)
	if err := CountryIndexed(info, c); err != nil {
		return a, err
	}
	ctx := r.Context()
	t, err := s.Access.Admit(ctx, r, s.ClientAddr(r), 0)
	if err != nil {
		return a, fmt.Errorf("cannot admit an explore request: %w", err)
	}
	ex, ok := s.Index.(kw.Explorer)
	if !ok {
		t.Cancel()
		return a, exploreUnavailable(kw.ErrExploreUnavailable)
	}
	a.Result, err = ex.Explore(ctx, q)
	switch {
	case errors.Is(err, kw.ErrExploreUnavailable):
		t.Cancel()
		return a, exploreUnavailable(err)
	case err != nil:
		t.Cancel()
		return a, fmt.Errorf("cannot explore %q in %s: %w", q.Q, q.Country, err)
	}
	n := len(a.Result.Rows)
	if q.GroupIntent {
		n = len(a.Result.Groups)
	}
	if n == 0 {
		t.Commit(0, h)
		return a, nil
	}
	t.Cancel()
	want := n
	for attempt := 0; ; attempt++ {
		t, err = s.Access.Admit(ctx, r, s.ClientAddr(r), want)
		if err == nil {
			break
		}
		var qe *QuotaError
		if !errors.As(err, &qe) || qe.Remaining <= 0 || qe.Remaining >= int64(want) || attempt == exploreRetries {
			return a, fmt.Errorf("cannot admit an explore page of %d rows: %w", want, err)
		}
		want = int(qe.Remaining)
	}
	t.Commit(want, h)
	if want < n {
		a.TruncatedByQuota = true
		a.cut(want)
	}
	return a, nil
}

// cut keeps the first n rows (or groups) and points the cursor after the
// last of them.
func (a *ExploreAnswer) cut(n int) {
	q := &a.Query
	if q.GroupIntent {
		a.Result.Groups = a.Result.Groups[:n]
		last := a.Result.Groups[n-1]
		a.Result.NextCursor = q.EncodeCursor(kw.ExplorePosition{Value: last.Volume, Keyword: last.Intent})
		return
	}
	a.Result.Rows = a.Result.Rows[:n]
	a.Result.NextCursor = q.EncodeCursor(RowPosition(q.Sort, &a.Result.Rows[n-1]))
}

// RowPosition is the place of row in the order of sort, as the index
// writes it into a cursor.
func RowPosition(sort kw.ExploreSort, row *kw.ExploreRow) kw.ExplorePosition {
	p := kw.ExplorePosition{Keyword: row.Keyword}
	opt := func(v *int64) {
		if v == nil {
			p.Missing = true
		} else {
			p.Value = *v
		}
	}
	switch sort {
	case kw.SortVolume:
		opt(row.Volume)
	case kw.SortCPC:
		opt(row.CPCMicros)
	case kw.SortCompetition:
		if row.Competition == nil {
			p.Missing = true
		} else {
			p.Value = kw.OrderedFloat(*row.Competition)
		}
	case kw.SortWords:
		p.Value = int64(min(strings.Count(row.Keyword, " ")+1, 255))
	}
	return p
}

func exploreUnavailable(err error) HTTPError {
	return HTTPError{Status: http.StatusServiceUnavailable, Code: CodeExploreUnavailable,
		Msg: "The served index build has no keyword explorer tables; the operator must rebuild it with kwdata build-index and publish it. Lookups keep working meanwhile.",
		Err: err}
}

// AppendExploreJSON appends the answer of an explore query:
//
//	{"q":"shoes","country":"US","mode":"terms","total":2,"results":[
//	  {"keyword":"running shoes","volume":301000,"cpc":1.23,"competition":0.87,"intent":"running shoes"}],
//	 "next_cursor":"…"}
//
// or with group=intent
//
//	{"q":"shoes","country":"US","total_groups":1,"groups":[
//	  {"intent":"running shoes","members_matched":2,"volume":350500,"top":["running shoes","trail shoes"]}],
//	 "next_cursor":null}
//
// cpc is USD rounded to cents and competition to hundredths, as in the
// keyword answer. "truncated_by_quota":true is added when the allowance
// cut the page.
func AppendExploreJSON(dst []byte, a *ExploreAnswer) []byte {
	q, res := &a.Query, &a.Result
	dst = append(dst, `{"q":`...)
	dst = AppendString(dst, q.Q)
	dst = append(dst, `,"country":`...)
	dst = AppendString(dst, q.Country)
	if q.GroupIntent {
		dst = append(dst, `,"total_groups":`...)
		dst = strconv.AppendInt(dst, res.TotalGroups, 10)
		dst = append(dst, `,"groups":[`...)
		for i := range res.Groups {
			g := &res.Groups[i]
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"intent":`...)
			dst = AppendString(dst, g.Intent)
			dst = append(dst, `,"members_matched":`...)
			dst = strconv.AppendInt(dst, g.MembersMatched, 10)
			dst = append(dst, `,"volume":`...)
			dst = strconv.AppendInt(dst, g.Volume, 10)
			dst = append(dst, `,"top":[`...)
			for j, k := range g.Top {
				if j > 0 {
					dst = append(dst, ',')
				}
				dst = AppendString(dst, k)
			}
			dst = append(dst, "]}"...)
		}
	} else {
		dst = append(dst, `,"mode":`...)
		dst = AppendString(dst, string(q.Mode))
		dst = append(dst, `,"total":`...)
		dst = strconv.AppendInt(dst, res.Total, 10)
		dst = append(dst, `,"results":[`...)
		for i := range res.Rows {
			row := &res.Rows[i]
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"keyword":`...)
			dst = AppendString(dst, row.Keyword)
			dst = append(dst, `,"volume":`...)
			dst = appendOptInt(dst, row.Volume)
			dst = append(dst, `,"cpc":`...)
			dst = appendOptCents(dst, row.CPCMicros)
			dst = append(dst, `,"competition":`...)
			if row.Competition == nil {
				dst = append(dst, "null"...)
			} else {
				dst = AppendHundredths(dst, CompetitionHundredths(*row.Competition))
			}
			dst = append(dst, `,"intent":`...)
			dst = AppendString(dst, row.Intent)
			dst = append(dst, '}')
		}
	}
	dst = append(dst, `],"next_cursor":`...)
	if res.NextCursor == "" {
		dst = append(dst, "null"...)
	} else {
		dst = AppendString(dst, res.NextCursor)
	}
	if a.TruncatedByQuota {
		dst = append(dst, `,"truncated_by_quota":true`...)
	}
	return append(dst, "}\n"...)
}

// Explore forwards to the wrapped index when it is a kw.Explorer, counting
// damage like Lookup; any other index answers kw.ErrExploreUnavailable.
func (d damageCounter) Explore(ctx context.Context, q kw.ExploreQuery) (kw.ExploreResult, error) {
	ex, ok := d.Index.(kw.Explorer)
	if !ok {
		return kw.ExploreResult{}, kw.ErrExploreUnavailable
	}
	res, err := ex.Explore(ctx, q)
	if err != nil && errors.Is(err, kw.ErrIndexDamaged) {
		d.n.Inc()
	}
	return res, err
}
