package servetest

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/kwdata/kwdata/kw"
)

// Explore answers q by brute force over the entries: every mode, filter,
// sort, cursor and group=intent, the way the index answers it. It makes
// Index a kw.Explorer; NoExplorer makes it answer as a build without the
// explorer's tables does.
func (f *Index) Explore(ctx context.Context, q kw.ExploreQuery) (kw.ExploreResult, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	switch {
	case f.Err != nil:
		return kw.ExploreResult{}, f.Err
	case !f.OK:
		return kw.ExploreResult{}, kw.ErrNoIndex
	case f.NoExplorer:
		return kw.ExploreResult{}, kw.ErrExploreUnavailable
	}
	f.Explores++
	var match []kw.Entry
	for k, e := range f.Entries {
		if k[0] == q.Country && exploreMatch(&q, &e) {
			match = append(match, e)
		}
	}
	res := kw.ExploreResult{Total: int64(len(match))}
	if q.GroupIntent {
		return exploreGroups(q, match, res), nil
	}
	slices.SortFunc(match, func(a, b kw.Entry) int { return cmpPos(q, rowPos(q, &a), rowPos(q, &b)) })
	i := 0
	if q.After != nil {
		i = len(match)
		for j := range match {
			if cmpPos(q, rowPos(q, &match[j]), *q.After) > 0 {
				i = j
				break
			}
		}
	}
	page := match[i:min(i+q.Limit, len(match))]
	for _, e := range page {
		res.Rows = append(res.Rows, kw.ExploreRow{Keyword: e.Keyword, Volume: e.Volume, CPCMicros: e.CPCMicros, Competition: e.Competition, Intent: e.Intent})
	}
	if i+len(page) < len(match) && len(page) > 0 {
		res.NextCursor = q.EncodeCursor(rowPos(q, &page[len(page)-1]))
	}
	return res, nil
}

func exploreGroups(q kw.ExploreQuery, match []kw.Entry, res kw.ExploreResult) kw.ExploreResult {
	byLeader := map[string][]kw.Entry{}
	for _, e := range match {
		byLeader[e.Intent] = append(byLeader[e.Intent], e)
	}
	var groups []kw.ExploreGroup
	for leader, ms := range byLeader {
		slices.SortFunc(ms, func(a, b kw.Entry) int {
			return cmp.Or(cmp.Compare(vol(&b), vol(&a)), strings.Compare(a.Keyword, b.Keyword))
		})
		g := kw.ExploreGroup{Intent: leader, MembersMatched: int64(len(ms))}
		for i, m := range ms {
			g.Volume += vol(&m)
			if i < kw.ExploreTopMembers {
				g.Top = append(g.Top, m.Keyword)
			}
		}
		groups = append(groups, g)
	}
	res.TotalGroups = int64(len(groups))
	after := func(g kw.ExploreGroup) bool {
		return q.After == nil || g.Volume < q.After.Value || g.Volume == q.After.Value && g.Intent > q.After.Keyword
	}
	slices.SortFunc(groups, func(a, b kw.ExploreGroup) int {
		return cmp.Or(cmp.Compare(b.Volume, a.Volume), strings.Compare(a.Intent, b.Intent))
	})
	i := slices.IndexFunc(groups, after)
	if i < 0 {
		return res
	}
	res.Groups = groups[i:min(i+q.Limit, len(groups))]
	if i+len(res.Groups) < len(groups) {
		last := res.Groups[len(res.Groups)-1]
		res.NextCursor = q.EncodeCursor(kw.ExplorePosition{Value: last.Volume, Keyword: last.Intent})
	}
	return res
}

func vol(e *kw.Entry) int64 {
	if e.Volume == nil {
		return 0
	}
	return *e.Volume
}

// exploreMatch reports whether e passes q (a language with spaces only).
func exploreMatch(q *kw.ExploreQuery, e *kw.Entry) bool {
	words := strings.Split(e.Keyword, " ")
	switch q.Mode {
	case kw.ModePhrase:
		if !strings.Contains(" "+e.Keyword+" ", " "+strings.Join(q.Words, " ")+" ") {
			return false
		}
	case kw.ModeQuestions:
		c, _ := kw.LookupCountry(q.Country)
		if !slices.ContainsFunc(kw.QuestionWords(c.LanguageCode), func(w string) bool { return strings.HasPrefix(e.Keyword+" ", w+" ") }) {
			return false
		}
		fallthrough
	default:
		for _, w := range q.Words {
			if !slices.Contains(words, w) {
				return false
			}
		}
	}
	if len(q.Include) > 0 && !slices.ContainsFunc(q.Include, func(w string) bool { return slices.Contains(words, w) }) ||
		slices.ContainsFunc(q.Exclude, func(w string) bool { return slices.Contains(words, w) }) {
		return false
	}
	nw := int64(len(words))
	comp := (*int64)(nil)
	if e.Competition != nil {
		v := kw.OrderedFloat(*e.Competition)
		comp = &v
	}
	var minC, maxC *int64
	if q.MinCompetition != nil {
		v := kw.OrderedFloat(*q.MinCompetition)
		minC = &v
	}
	if q.MaxCompetition != nil {
		v := kw.OrderedFloat(*q.MaxCompetition)
		maxC = &v
	}
	return within(e.Volume, q.MinVolume, q.MaxVolume) && within(e.CPCMicros, q.MinCPCMicros, q.MaxCPCMicros) &&
		within(comp, minC, maxC) && within(&nw, q.MinWords, q.MaxWords) &&
		(q.Intent == "" || e.Intent == q.Intent)
}

func within(v, lo, hi *int64) bool {
	if lo == nil && hi == nil {
		return true
	}
	return v != nil && (lo == nil || *v >= *lo) && (hi == nil || *v <= *hi)
}

// rowPos is e's place in q's order.
func rowPos(q kw.ExploreQuery, e *kw.Entry) kw.ExplorePosition {
	p := kw.ExplorePosition{Keyword: e.Keyword}
	opt := func(v *int64) {
		if v == nil {
			p.Missing = true
		} else {
			p.Value = *v
		}
	}
	switch q.Sort {
	case kw.SortVolume:
		opt(e.Volume)
	case kw.SortCPC:
		opt(e.CPCMicros)
	case kw.SortCompetition:
		if e.Competition == nil {
			p.Missing = true
		} else {
			p.Value = kw.OrderedFloat(*e.Competition)
		}
	case kw.SortWords:
		p.Value = int64(strings.Count(e.Keyword, " ") + 1)
	}
	return p
}

// cmpPos orders two positions in q's order: present values before missing
// ones, then by value in the order asked, then by keyword text ascending.
func cmpPos(q kw.ExploreQuery, a, b kw.ExplorePosition) int {
	switch {
	case a.Missing != b.Missing:
		if a.Missing {
			return 1
		}
		return -1
	case !a.Missing && a.Value != b.Value && q.Sort != kw.SortKeyword:
		c := cmp.Compare(a.Value, b.Value)
		if q.Desc {
			c = -c
		}
		return c
	}
	c := strings.Compare(a.Keyword, b.Keyword)
	if q.Sort == kw.SortKeyword && q.Desc {
		c = -c
	}
	return c
}
