package kw

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// The keyword explorer: which keywords of a country hold some words,
// filtered on their numbers and sorted, a page at a time. This file holds
// its vocabulary (query, result, cursor), the one parser of a query from
// URL parameters and the interface an index implements to answer it; the
// index package answers it exactly (docs/perf/explore.md).

// ExploreMode says how the words of q must appear in a keyword.
type ExploreMode string

// The modes of an explore query.
const (
	// ModeTerms matches keywords holding every word of q, in any order.
	ModeTerms ExploreMode = "terms"
	// ModePhrase matches keywords holding the words of q in order and
	// adjacent.
	ModePhrase ExploreMode = "phrase"
	// ModeQuestions is ModeTerms for keywords that begin with a question
	// word of the country's language (QuestionWords).
	ModeQuestions ExploreMode = "questions"
)

// ExploreSort is the number an explore query sorts by.
type ExploreSort string

// The sort keys of an explore query.
const (
	SortVolume      ExploreSort = "volume"
	SortCPC         ExploreSort = "cpc" // by the stored micros
	SortCompetition ExploreSort = "competition"
	SortWords       ExploreSort = "words"
	SortKeyword     ExploreSort = "keyword" // byte order of the normalized text
)

// Limits of an explore query.
const (
	// DefaultExploreLimit is the page size when limit is not given.
	DefaultExploreLimit = 50
	// MaxExploreLimit is the largest page.
	MaxExploreLimit = 1000
	// MaxExploreWords bounds the distinct words of q, include and exclude
	// together: each is one postings read.
	MaxExploreWords = 32
	// ExploreTopMembers is how many members a group of group=intent lists.
	ExploreTopMembers = 3
)

// ExploreQuery is one explore request, parsed and normalized. A nil bound
// is unset; a set bound is inclusive, and a keyword without the metric
// never passes it.
type ExploreQuery struct {
	Country string // upper case, a supported country
	Q       string // normalized
	// Words are q's words: distinct, in q's order, for terms and
	// questions; all of them, in order, for phrase.
	Words   []string
	Mode    ExploreMode
	Include []string // any of these words (none given: no condition)
	Exclude []string // none of these words

	MinVolume, MaxVolume           *int64
	MinCPCMicros, MaxCPCMicros     *int64
	MinCompetition, MaxCompetition *float64
	MinWords, MaxWords             *int64
	Intent                         string // normalized leader; "" is no condition

	Sort  ExploreSort
	Desc  bool
	Limit int
	// GroupIntent answers one row per intent group (group=intent); Sort and
	// Desc do not apply to it.
	GroupIntent bool
	// After is where the previous page ended (from cursor); nil for the
	// first page.
	After *ExplorePosition
}

// ExplorePosition is a place in the order of an explore answer: the sort
// value of the last row given and its keyword text (for group=intent, the
// group's summed volume and its leader). It is seek-style: the next page
// starts after it, in whichever build is served then.
type ExplorePosition struct {
	Missing bool  // the row lacks the sort value
	Value   int64 // the sort value (competition: OrderedFloat's bits)
	Keyword string
}

// ExploreRow is one keyword of an explore answer.
type ExploreRow struct {
	Keyword     string
	Volume      *int64 // nil: no value (likewise CPCMicros, Competition)
	CPCMicros   *int64
	Competition *float64
	Intent      string // the intent leader's keyword (the keyword itself when alone)
}

// ExploreGroup is one intent group of a group=intent answer.
type ExploreGroup struct {
	Intent         string // the leader's keyword
	MembersMatched int64
	Volume         int64    // summed volume of the matched members; a missing volume adds 0
	Top            []string // up to ExploreTopMembers matched members, by volume descending then text
}

// ExploreResult is the answer to an ExploreQuery: the exact number of
// matching keywords, one page of rows (or of groups for group=intent),
// and the cursor of the next page ("" after the last).
type ExploreResult struct {
	Total       int64
	Rows        []ExploreRow
	TotalGroups int64
	Groups      []ExploreGroup
	NextCursor  string
}

// Explorer is an Index that also answers explore queries.
type Explorer interface {
	// Explore answers q exactly over the served build: ErrNoIndex,
	// ErrExploreUnavailable for a build without the explorer's tables, or
	// an error wrapping ErrIndexDamaged.
	Explore(ctx context.Context, q ExploreQuery) (ExploreResult, error)
}

// ErrExploreUnavailable is returned by Explorer.Explore while the served
// build predates the explorer's tables: the server answers 503 until a
// build made by a newer build-index is published.
var ErrExploreUnavailable = errors.New("the served index build has no explorer tables; publish a build made by this version of build-index")

// QueryError is a bad explore parameter: the server answers 400 with its
// message, which names the parameter and what to send.
type QueryError struct {
	Param string
	Msg   string
}

func (e *QueryError) Error() string { return e.Param + ": " + e.Msg }

func qerr(param, format string, args ...any) error {
	return &QueryError{Param: param, Msg: fmt.Sprintf(format, args...)}
}

// NoSpaceLanguage reports whether a language (a Country.LanguageCode) is
// written without spaces between words, so that an explore term matches
// as a substring of a keyword rather than as one of its words.
func NoSpaceLanguage(lang string) bool {
	switch lang {
	case "ja", "zh-CN", "zh-TW", "th":
		return true
	}
	return false
}

// questionWords are, per language code, the words a question begins with,
// normalized. For a language written without spaces a keyword is a
// question when it begins with one of them; otherwise when its first word
// is one.
var questionWords = map[string][]string{
	"en": {"how", "what", "when", "where", "which", "who", "whom", "whose", "why", "can", "could", "do", "does", "did", "is", "are", "was", "were", "will", "would", "should", "shall", "may", "might", "must", "has", "have", "had"},
	"de": {"wie", "was", "wann", "wo", "wohin", "woher", "warum", "weshalb", "wieso", "wer", "wen", "wem", "wessen", "welche", "welcher", "welches", "welchen", "wieviel", "wozu", "womit", "kann", "können", "ist", "sind", "gibt", "darf", "muss", "soll"},
	"fr": {"comment", "quoi", "quand", "où", "pourquoi", "qui", "que", "quel", "quelle", "quels", "quelles", "combien", "qu'est-ce", "est-ce", "peut-on", "faut-il", "lequel", "laquelle"},
	// Spanish searches often drop the accents: both spellings.
	"es": {"cómo", "qué", "cuándo", "dónde", "adónde", "por qué", "quién", "quiénes", "cuál", "cuáles", "cuánto", "cuánta", "cuántos", "cuántas", "para qué", "se puede",
		"como", "que", "cuando", "donde", "adonde", "por que", "quien", "quienes", "cual", "cuales", "cuanto", "cuanta", "cuantos", "cuantas", "para que"},
	"it": {"come", "cosa", "che", "quando", "dove", "perché", "perchè", "chi", "quale", "quali", "quanto", "quanta", "quanti", "quante", "qual"},
	"pt": {"como", "o que", "que", "quando", "onde", "por que", "porque", "quem", "qual", "quais", "quanto", "quanta", "quantos", "quantas", "pode", "posso"},
	"nl": {"hoe", "wat", "wanneer", "waar", "waarom", "wie", "welke", "welk", "hoeveel", "kan", "mag", "moet", "is", "zijn"},
	"sv": {"hur", "vad", "när", "var", "vart", "varför", "vem", "vilken", "vilket", "vilka", "kan", "får", "är"},
	"da": {"hvordan", "hvad", "hvornår", "hvor", "hvorfor", "hvem", "hvilken", "hvilket", "hvilke", "kan", "må", "er"},
	"no": {"hvordan", "hva", "når", "hvor", "hvorfor", "hvem", "hvilken", "hvilket", "hvilke", "kan", "må", "er"},
	"fi": {"miten", "kuinka", "mikä", "mitä", "milloin", "missä", "mistä", "mihin", "miksi", "kuka", "ketkä", "kumpi", "paljonko", "voiko"},
	"pl": {"jak", "co", "kiedy", "gdzie", "dlaczego", "czemu", "kto", "który", "która", "które", "ile", "czy"},
	"ja": {"なぜ", "なに", "何", "どう", "どうして", "どこ", "どれ", "どの", "いつ", "誰", "だれ", "いくら", "いくつ"},
}

// QuestionWords returns the question words of a language (a
// Country.LanguageCode), normalized, or nil for a language without a
// list, where mode=questions is refused. A word of the list may be two
// words ("por qué"): a keyword begins with it when its first words are
// those.
func QuestionWords(lang string) []string { return questionWords[lang] }

// ParseExploreQuery reads an explore query from URL parameters: country,
// q, mode, include, exclude, min_/max_volume, min_/max_cpc (USD, up to six
// decimals), min_/max_competition (0 to 1), min_/max_words, intent, sort,
// order, limit, cursor and group. Its error is a *QueryError naming the
// parameter and what to send.
func ParseExploreQuery(v url.Values) (ExploreQuery, error) {
	var q ExploreQuery
	for name, vals := range v {
		if len(vals) > 1 && exploreParams[name] {
			return q, qerr(name, "is given %d times; send it once", len(vals))
		}
	}
	code := v.Get("country")
	if code == "" {
		return q, qerr("country", "is missing; send a two-letter country code such as country=us")
	}
	c, ok := LookupCountry(code)
	if !ok {
		return q, qerr("country", "%q is not a supported country; send a two-letter code from /v1/countries", code)
	}
	q.Country = c.Code
	raw := v.Get("q")
	if strings.TrimSpace(raw) == "" {
		return q, qerr("q", "is empty; send one or more words, such as q=running+shoes")
	}
	norm, err := NormalizeKeyword(raw)
	if err != nil {
		return q, qerr("q", "%v; send at most %d characters of valid UTF-8", err, MaxKeywordChars)
	}
	q.Q = norm
	switch m := ExploreMode(v.Get("mode")); m {
	case "", ModeTerms:
		q.Mode = ModeTerms
	case ModePhrase, ModeQuestions:
		q.Mode = m
	default:
		return q, qerr("mode", "%q is not a mode; send terms, phrase or questions", v.Get("mode"))
	}
	if q.Mode == ModeQuestions && QuestionWords(c.LanguageCode) == nil {
		return q, qerr("mode", "questions is not available for %s (%s has no list of question words); send mode=terms or mode=phrase", c.Code, c.LanguageName)
	}
	all := strings.Split(norm, " ")
	if q.Mode == ModePhrase {
		q.Words = all
	} else {
		q.Words = distinct(all)
	}
	if q.Include, err = wordList(v, "include"); err != nil {
		return q, err
	}
	if q.Exclude, err = wordList(v, "exclude"); err != nil {
		return q, err
	}
	if n := len(distinct(slices.Concat(q.Words, q.Include, q.Exclude))); n > MaxExploreWords {
		return q, qerr("q", "q, include and exclude hold %d distinct words; send at most %d", n, MaxExploreWords)
	}
	if q.MinVolume, q.MaxVolume, err = intBounds(v, "volume", false); err != nil {
		return q, err
	}
	if q.MinCPCMicros, q.MaxCPCMicros, err = intBounds(v, "cpc", true); err != nil {
		return q, err
	}
	if q.MinWords, q.MaxWords, err = intBounds(v, "words", false); err != nil {
		return q, err
	}
	for _, b := range []struct {
		name string
		dst  **float64
	}{{"min_competition", &q.MinCompetition}, {"max_competition", &q.MaxCompetition}} {
		s := v.Get(b.name)
		if s == "" {
			continue
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || !(f >= 0 && f <= 1) {
			return q, qerr(b.name, "%q is not a number from 0 to 1; send one such as %s=0.5", s, b.name)
		}
		*b.dst = &f
	}
	if q.MinCompetition != nil && q.MaxCompetition != nil && *q.MinCompetition > *q.MaxCompetition {
		return q, qerr("min_competition", "is above max_competition; send min_competition ≤ max_competition")
	}
	if s := v.Get("intent"); s != "" {
		if q.Intent, err = NormalizeKeyword(s); err != nil {
			return q, qerr("intent", "%v; send the leader keyword of an intent group", err)
		}
	}
	switch s := ExploreSort(v.Get("sort")); s {
	case "":
		q.Sort = SortVolume
	case SortVolume, SortCPC, SortCompetition, SortWords, SortKeyword:
		q.Sort = s
	default:
		return q, qerr("sort", "%q is not a sort key; send volume, cpc, competition, words or keyword", v.Get("sort"))
	}
	switch o := v.Get("order"); o {
	case "":
		q.Desc = q.Sort != SortKeyword
	case "desc", "asc":
		q.Desc = o == "desc"
	default:
		return q, qerr("order", "%q is not an order; send desc or asc", o)
	}
	q.Limit = DefaultExploreLimit
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxExploreLimit {
			return q, qerr("limit", "%q is not a page size; send a whole number from 1 to %d", s, MaxExploreLimit)
		}
		q.Limit = n
	}
	switch g := v.Get("group"); g {
	case "":
	case "intent":
		q.GroupIntent = true
	default:
		return q, qerr("group", "%q is not a grouping; send group=intent or leave it out", g)
	}
	if s := v.Get("cursor"); s != "" {
		p, err := q.decodeCursor(s)
		if err != nil {
			return q, qerr("cursor", "%v; send the next_cursor of the previous answer to this same query, or leave it out for the first page", err)
		}
		q.After = &p
	}
	return q, nil
}

// exploreParams are the parameters ParseExploreQuery reads.
var exploreParams = map[string]bool{
	"country": true, "q": true, "mode": true, "include": true, "exclude": true,
	"min_volume": true, "max_volume": true, "min_cpc": true, "max_cpc": true,
	"min_competition": true, "max_competition": true, "min_words": true, "max_words": true,
	"intent": true, "sort": true, "order": true, "limit": true, "cursor": true, "group": true,
}

func distinct(words []string) []string {
	out := make([]string, 0, len(words))
	for _, w := range words {
		if w != "" && !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

// wordList reads comma-separated words, each normalized; a normalized
// item of several words is refused, since include and exclude take words.
func wordList(v url.Values, name string) ([]string, error) {
	s := v.Get(name)
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []string
	for item := range strings.SplitSeq(s, ",") {
		if strings.TrimSpace(item) == "" {
			continue
		}
		w, err := NormalizeKeyword(item)
		if err != nil {
			return nil, qerr(name, "%q: %v; send comma-separated words", item, err)
		}
		if strings.Contains(w, " ") {
			return nil, qerr(name, "%q is more than one word; send comma-separated single words", item)
		}
		if !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out, nil
}

// intBounds reads min_<name> and max_<name>: whole numbers, or USD with up
// to six decimals read exactly into micros when usd.
func intBounds(v url.Values, name string, usd bool) (lo, hi *int64, err error) {
	for i, p := range []string{"min_" + name, "max_" + name} {
		s := v.Get(p)
		if s == "" {
			continue
		}
		var n int64
		var ok bool
		if usd {
			n, ok = ParseUSDMicros(s)
		} else {
			var e error
			n, e = strconv.ParseInt(s, 10, 64)
			ok = e == nil && n >= 0
		}
		if !ok {
			what := "a whole number of 0 or more"
			if usd {
				what = "an amount in USD of 0 or more with at most six decimals, such as 1.25"
			}
			return nil, nil, qerr(p, "%q is not %s; send %s", s, what, what)
		}
		if i == 0 {
			lo = &n
		} else {
			hi = &n
		}
	}
	if lo != nil && hi != nil && *lo > *hi {
		return nil, nil, qerr("min_"+name, "is above max_%s; send min_%s ≤ max_%s", name, name, name)
	}
	return lo, hi, nil
}

// ParseUSDMicros reads a non-negative decimal amount of USD ("2", "0.35",
// "1.000001") exactly into micros, without a detour through floating
// point; ok is false for anything else, for more than six decimals and
// for amounts beyond int64 micros.
func ParseUSDMicros(s string) (micros int64, ok bool) {
	whole, frac, dot := strings.Cut(s, ".")
	if whole == "" && (!dot || frac == "") || len(frac) > 6 || (dot && frac == "" && whole == "") {
		return 0, false
	}
	for _, part := range []string{whole, frac} {
		for i := 0; i < len(part); i++ {
			if part[i] < '0' || part[i] > '9' {
				return 0, false
			}
		}
	}
	var w int64
	if whole != "" {
		var err error
		if w, err = strconv.ParseInt(whole, 10, 64); err != nil || w > math.MaxInt64/1_000_000-1 {
			return 0, false
		}
	}
	var f int64
	for i := 0; i < 6; i++ {
		f *= 10
		if i < len(frac) {
			f += int64(frac[i] - '0')
		}
	}
	return w*1_000_000 + f, true
}

// OrderedFloat maps a float64 to an int64 of the same order, so that
// competition sorts and pages as the other numbers do.
func OrderedFloat(f float64) int64 {
	u := math.Float64bits(f)
	if u>>63 != 0 {
		u = ^u
	} else {
		u |= 1 << 63
	}
	return int64(u ^ 1<<63)
}

// Cursors. A cursor is base64url of: version byte 1, flags (1: the sort
// value is missing), the value as a varint, the keyword's text, then the
// first 8 bytes of SHA-256 over the query's canonical form and the bytes
// before them. So a cursor given to another query, cut, or edited is
// refused with a 400 rather than read as something else; it is not a
// secret, only a check.
const cursorVersion = 1

// EncodeCursor returns the cursor of the page of q that follows p.
func (q *ExploreQuery) EncodeCursor(p ExplorePosition) string {
	b := []byte{cursorVersion, 0}
	if p.Missing {
		b[1] = 1
	}
	b = binary.AppendVarint(b, p.Value)
	b = append(b, p.Keyword...)
	sum := q.cursorSum(b)
	return base64.RawURLEncoding.EncodeToString(append(b, sum[:8]...))
}

func (q *ExploreQuery) decodeCursor(s string) (ExplorePosition, error) {
	var p ExplorePosition
	if len(s) > 512 {
		return p, errors.New("is too long to be a cursor")
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) < 11 {
		return p, errors.New("is not a cursor")
	}
	body, sum := b[:len(b)-8], b[len(b)-8:]
	if body[0] != cursorVersion {
		return p, fmt.Errorf("is a cursor of version %d, not %d", body[0], cursorVersion)
	}
	want := q.cursorSum(body)
	if !bytes.Equal(sum, want[:8]) {
		return p, errors.New("does not belong to this query (another query's, or altered)")
	}
	if body[1] > 1 {
		return p, errors.New("is not a cursor")
	}
	v, n := binary.Varint(body[2:])
	if n <= 0 {
		return p, errors.New("is not a cursor")
	}
	p.Missing, p.Value, p.Keyword = body[1] == 1, v, string(body[2+n:])
	return p, nil
}

// cursorSum is SHA-256 over the canonical form of what orders and selects
// q's answer (not its page size) and body.
func (q *ExploreQuery) cursorSum(body []byte) [32]byte {
	h := sha256.New()
	num := func(p *int64) string {
		if p == nil {
			return "-"
		}
		return strconv.FormatInt(*p, 10)
	}
	flt := func(p *float64) string {
		if p == nil {
			return "-"
		}
		return strconv.FormatFloat(*p, 'g', -1, 64)
	}
	fmt.Fprintf(h, "%s\x00%s\x00%q\x00%q\x00%q\x00%s %s %s %s %s %s %s %s\x00%s\x00%s %t %t\x00",
		q.Country, q.Mode, q.Words, q.Include, q.Exclude,
		num(q.MinVolume), num(q.MaxVolume), num(q.MinCPCMicros), num(q.MaxCPCMicros),
		flt(q.MinCompetition), flt(q.MaxCompetition), num(q.MinWords), num(q.MaxWords),
		q.Intent, q.Sort, q.Desc, q.GroupIntent)
	h.Write(body)
	var out [32]byte
	h.Sum(out[:0])
	return out
}
