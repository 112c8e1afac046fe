package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/kwdata/kwdata/kw"
)

// CodeRateLimited is the problem code of a client asking for suggestions
// faster than SuggestRate a second.
const CodeRateLimited = "rate_limited"

// DidYouMean is the most keywords a 404 offers instead.
const DidYouMean = 3

// minSharedRunes is the shortest beginning a 404's keyword must share with
// a keyword of the index for that keyword to be offered; it must also be
// at least half of the keyword asked.
const minSharedRunes = 3

// Suggest forwards to the wrapped index when it suggests, counting damage
// like Lookup; an index that does not suggests nothing.
func (d damageCounter) Suggest(ctx context.Context, country, prefix string, n int) ([]string, error) {
	si, ok := d.Index.(kw.SuggestIndex)
	if !ok {
		return nil, nil
	}
	out, err := si.Suggest(ctx, country, prefix, n)
	if err != nil && errors.Is(err, kw.ErrIndexDamaged) {
		d.n.Inc()
	}
	return out, err
}

// SharedPrefix forwards like Suggest.
func (d damageCounter) SharedPrefix(ctx context.Context, country, q string) (string, error) {
	si, ok := d.Index.(kw.SuggestIndex)
	if !ok {
		return "", nil
	}
	p, err := si.SharedPrefix(ctx, country, q)
	if err != nil && errors.Is(err, kw.ErrIndexDamaged) {
		d.n.Inc()
	}
	return p, err
}

// Suggester returns the index's suggestions, or nil when it has none.
func (s *Core) Suggester() kw.SuggestIndex {
	si, _ := s.Index.(kw.SuggestIndex)
	return si
}

// SecondsText writes n seconds in words: "1 second", "2 seconds".
func SecondsText(n int64) string {
	if n == 1 {
		return "1 second"
	}
	return fmt.Sprintf("%d seconds", n)
}

// Similar returns up to DidYouMean keywords close to a keyword the
// index lacks: the suggestions of the longest beginning of q that begins
// some keyword (its trailing spaces dropped), when that beginning is at
// least half of q and minSharedRunes long. That costs one seek for the
// prefix and one suggestion read, so a bulk answer can offer them for
// each of its 404s. Failures give none: the answer is a 404 either way.
func (s *Core) Similar(ctx context.Context, country, q string) []string {
	si := s.Suggester()
	if si == nil {
		return nil
	}
	p, err := si.SharedPrefix(ctx, country, q)
	// A beginning shorter than half of q ("r" of "rainbow unicorns") would
	// offer keywords that merely start with the same letter.
	n := utf8.RuneCountInString(strings.TrimRight(p, " "))
	if p = strings.TrimRight(p, " "); err != nil || n < minSharedRunes || 2*n < utf8.RuneCountInString(q) {
		return nil
	}
	got, err := si.Suggest(ctx, country, p, DidYouMean+1)
	if err != nil {
		return nil
	}
	got = removeString(got, q)
	return got[:min(len(got), DidYouMean)]
}

func removeString(list []string, s string) []string {
	out := list[:0]
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}

// didYouMeanText is the sentence a 404 ends with: ` Did you mean "a",
// "b" or "c"?`, empty without suggestions.
func didYouMeanText(list []string) string {
	if len(list) == 0 {
		return ""
	}
	quoted := make([]string, len(list))
	for i, k := range list {
		quoted[i] = fmt.Sprintf("%q", k)
	}
	last := quoted[len(quoted)-1]
	if len(quoted) == 1 {
		return " Did you mean " + last + "?"
	}
	return " Did you mean " + strings.Join(quoted[:len(quoted)-1], ", ") + " or " + last + "?"
}

// NotFound is the 404 of a keyword the index lacks, in the words of GET
// /v1/keyword, with up to DidYouMean keywords to try instead.
func (s *Core) NotFound(ctx context.Context, q, country string, err error) HTTPError {
	he := keywordNotFound(q, country, err)
	he.Msg += didYouMeanText(s.Similar(ctx, country, q))
	return he
}

// keywordNotFound is the answer about a keyword the index lacks, in the
// words of GET /v1/keyword: it names the keyword and the country.
func keywordNotFound(q, country string, err error) HTTPError {
	return HTTPError{Status: http.StatusNotFound, Code: CodeKeywordNotFound,
		Msg: fmt.Sprintf("The index has no data for %q in %s; check the spelling or try another country.", q, country),
		Err: err}
}
