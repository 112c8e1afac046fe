package kw

import (
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"
)

func TestParseExploreQuery(t *testing.T) {
	for _, tc := range []struct {
		in    string
		param string // of the error; "" for success
		check func(t *testing.T, q ExploreQuery)
	}{
		{in: "country=us&q=Running++Shoes", check: func(t *testing.T, q ExploreQuery) {
			if q.Country != "US" || q.Q != "running shoes" || q.Mode != ModeTerms || q.Sort != SortVolume || !q.Desc || q.Limit != DefaultExploreLimit {
				t.Errorf("defaults: %+v", q)
			}
			if q.MinVolume != nil || q.MaxCPCMicros != nil || q.MinCompetition != nil || q.MinWords != nil {
				t.Errorf("bounds set without parameters: %+v", q)
			}
		}},
		{in: "country=us&q=shoes+red+shoes", check: func(t *testing.T, q ExploreQuery) {
			if strings.Join(q.Words, "|") != "shoes|red" {
				t.Errorf("terms words %q", q.Words)
			}
		}},
		{in: "country=us&q=shoes+red+shoes&mode=phrase", check: func(t *testing.T, q ExploreQuery) {
			if strings.Join(q.Words, "|") != "shoes|red|shoes" {
				t.Errorf("phrase words %q", q.Words)
			}
		}},
		{in: "country=us&q=a&min_volume=0&max_cpc=1.5&min_cpc=0.000001&min_competition=0&max_words=3", check: func(t *testing.T, q ExploreQuery) {
			if q.MinVolume == nil || *q.MinVolume != 0 {
				t.Error("min_volume=0 must be set, to 0")
			}
			if *q.MaxCPCMicros != 1_500_000 || *q.MinCPCMicros != 1 {
				t.Errorf("cpc micros %d %d", *q.MinCPCMicros, *q.MaxCPCMicros)
			}
			if q.MinCompetition == nil || *q.MinCompetition != 0 || *q.MaxWords != 3 {
				t.Errorf("bounds %+v", q)
			}
		}},
		{in: "country=us&q=a&sort=keyword", check: func(t *testing.T, q ExploreQuery) {
			if q.Desc {
				t.Error("sort=keyword must default to asc")
			}
		}},
		{in: "country=us&q=a&sort=cpc&order=asc&include=x,+Y+,x&exclude=z&group=intent&limit=1000", check: func(t *testing.T, q ExploreQuery) {
			if q.Desc || q.Sort != SortCPC || strings.Join(q.Include, "|") != "x|y" || q.Exclude[0] != "z" || !q.GroupIntent || q.Limit != 1000 {
				t.Errorf("%+v", q)
			}
		}},
		{in: "q=a", param: "country"},
		{in: "country=zz&q=a", param: "country"},
		{in: "country=us", param: "q"},
		{in: "country=us&q=+", param: "q"},
		{in: "country=us&q=" + strings.Repeat("a", 81), param: "q"},
		{in: "country=us&q=a&mode=fuzzy", param: "mode"},
		{in: "country=ro&q=a&mode=questions", param: "mode"},
		{in: "country=us&q=a&min_volume=-1", param: "min_volume"},
		{in: "country=us&q=a&min_volume=1.5", param: "min_volume"},
		{in: "country=us&q=a&min_volume=5&max_volume=4", param: "min_volume"},
		{in: "country=us&q=a&min_cpc=1.0000001", param: "min_cpc"},
		{in: "country=us&q=a&max_cpc=1e3", param: "max_cpc"},
		{in: "country=us&q=a&max_cpc=.", param: "max_cpc"},
		{in: "country=us&q=a&min_competition=1.1", param: "min_competition"},
		{in: "country=us&q=a&max_competition=NaN", param: "max_competition"},
		{in: "country=us&q=a&sort=price", param: "sort"},
		{in: "country=us&q=a&order=up", param: "order"},
		{in: "country=us&q=a&limit=0", param: "limit"},
		{in: "country=us&q=a&limit=1001", param: "limit"},
		{in: "country=us&q=a&group=topic", param: "group"},
		{in: "country=us&q=a&include=red+shoes", param: "include"},
		{in: "country=us&q=a&cursor=xyz", param: "cursor"},
		{in: "country=us&q=a&q=b", param: "q"},
	} {
		v, err := url.ParseQuery(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		q, err := ParseExploreQuery(v)
		if tc.param == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.in, err)
			} else {
				tc.check(t, q)
			}
			continue
		}
		var qe *QueryError
		if !errors.As(err, &qe) || qe.Param != tc.param {
			t.Errorf("%s: error %v, want one naming %s", tc.in, err, tc.param)
		} else if strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "send") {
			t.Errorf("%s: %q is not one line saying what to send", tc.in, err)
		}
	}
}

func TestQuestionsRefusalNamesModes(t *testing.T) {
	_, err := ParseExploreQuery(url.Values{"country": {"RO"}, "q": {"a"}, "mode": {"questions"}})
	if err == nil || !strings.Contains(err.Error(), "mode=terms") || !strings.Contains(err.Error(), "mode=phrase") {
		t.Fatalf("error %v does not name the modes Romanian has", err)
	}
}

func TestExploreCursor(t *testing.T) {
	parse := func(s string) ExploreQuery {
		t.Helper()
		v, _ := url.ParseQuery(s)
		q, err := ParseExploreQuery(v)
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	q := parse("country=us&q=shoes&sort=cpc")
	for _, p := range []ExplorePosition{{Value: 1_250_000, Keyword: "red shoes"}, {Missing: true, Keyword: "é"}, {Value: -5}, {Value: OrderedFloat(0.25), Keyword: "x"}} {
		c := q.EncodeCursor(p)
		got := parse("country=us&q=shoes&sort=cpc&limit=7&cursor=" + c)
		if got.After == nil || *got.After != p {
			t.Errorf("cursor of %+v reads back as %+v", p, got.After)
		}
		// Another query refuses it.
		v, _ := url.ParseQuery("country=us&q=shoes&sort=volume&cursor=" + c)
		if _, err := ParseExploreQuery(v); err == nil {
			t.Errorf("cursor of another query accepted")
		}
		// Every single-byte change is refused.
		raw := []byte(c)
		for i := range raw {
			for _, r := range []byte{'A', 'z', '_'} {
				if raw[i] == r {
					continue
				}
				old := raw[i]
				raw[i] = r
				v := url.Values{"country": {"us"}, "q": {"shoes"}, "sort": {"cpc"}, "cursor": {string(raw)}}
				if got, err := ParseExploreQuery(v); err == nil && *got.After != p {
					t.Errorf("altered cursor %s accepted as %+v", raw, got.After)
				}
				raw[i] = old
			}
		}
	}
}

func TestParseUSDMicros(t *testing.T) {
	for s, want := range map[string]int64{"0": 0, "2": 2_000_000, "0.35": 350_000, ".5": 500_000, "1.": 1_000_000, "1.000001": 1_000_001, "0000.1": 100_000} {
		if got, ok := ParseUSDMicros(s); !ok || got != want {
			t.Errorf("%q: %d %v, want %d", s, got, ok, want)
		}
	}
	for _, s := range []string{"", ".", "-1", "1e3", "1.0000001", "1,5", " 1", "99999999999999999999", "9223372036854.775807"} {
		if _, ok := ParseUSDMicros(s); ok {
			t.Errorf("%q accepted", s)
		}
	}
}

func TestOrderedFloat(t *testing.T) {
	fs := []float64{-1, -0.5, 0, 1e-300, 0.25, 0.5, 1, 2}
	for i := 1; i < len(fs); i++ {
		if OrderedFloat(fs[i-1]) >= OrderedFloat(fs[i]) {
			t.Errorf("OrderedFloat(%v) >= OrderedFloat(%v)", fs[i-1], fs[i])
		}
	}
}

func FuzzParseExploreQuery(f *testing.F) {
	f.Add("country=us&q=running+shoes&mode=phrase&min_cpc=1.5&sort=cpc&order=asc&limit=3")
	f.Add("country=jp&q=東京&mode=questions&include=a,b&exclude=c&group=intent")
	f.Add("country=us&q=a&cursor=AQAAYQ")
	f.Fuzz(func(t *testing.T, s string) {
		v, err := url.ParseQuery(s)
		if err != nil {
			return
		}
		q, err := ParseExploreQuery(v)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error of several lines: %q", err)
			}
			return
		}
		if len(q.Words) == 0 || q.Limit < 1 || q.Limit > MaxExploreLimit {
			t.Fatalf("accepted %+v", q)
		}
		c := q.EncodeCursor(ExplorePosition{Value: 3, Keyword: q.Q})
		if p, err := q.decodeCursor(c); err != nil || p.Keyword != q.Q {
			t.Fatalf("own cursor refused: %v", err)
		}
	})
}

// TestSpanishQuestionsWithoutAccents: Spanish searches often drop the
// accents ("como cambiar el aceite", "a cuantos km"), so both spellings
// begin a question.
func TestSpanishQuestionsWithoutAccents(t *testing.T) {
	words := QuestionWords("es")
	for _, w := range []string{"cómo", "como", "cuántos", "cuantos", "por qué", "por que"} {
		if !slices.Contains(words, w) {
			t.Errorf("QuestionWords(es) lacks %q", w)
		}
	}
}
