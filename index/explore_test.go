package index

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kwdata/kwdata/kw"
)

// exploreCorpus is one country's keywords and intents, as the lake holds
// them.
type exploreCorpus struct {
	recs    []kw.KeywordRecord
	intents map[string]string // keyword -> leader
	vocab   []string          // words (grams, for a no-space language) to query
}

// exploreShape makes a random corpus of n keywords: words from vocab
// (Zipf-like, so some words are common and some rare, and a keyword may
// repeat a word), numbers from small sets so that sorts tie, each number
// missing now and then, and intents that are the keyword itself, another
// keyword, or a leader that is no keyword of the country.
func exploreShape(rng *rand.Rand, n int, vocab []string, sep string, volumes []int64) exploreCorpus {
	c := exploreCorpus{intents: map[string]string{}, vocab: vocab}
	seen := map[string]bool{}
	zipf := rand.NewZipf(rng, 1.3, 2, uint64(len(vocab)-1))
	for len(c.recs) < n {
		k := 1 + rng.IntN(4)
		var ws []string
		for range k {
			ws = append(ws, vocab[zipf.Uint64()])
		}
		text := strings.Join(ws, sep)
		if seen[text] {
			continue
		}
		seen[text] = true
		r := kw.KeywordRecord{Keyword: text}
		if rng.IntN(8) != 0 {
			r.Volume = i64(volumes[rng.IntN(len(volumes))])
		}
		if rng.IntN(5) != 0 {
			r.CPCMicros = i64(int64(rng.IntN(5)) * 250_000)
		}
		if rng.IntN(6) != 0 {
			r.Competition = f64([]float64{0, 0.1, 0.25, 0.5, 1}[rng.IntN(5)])
		}
		c.recs = append(c.recs, r)
	}
	slices.SortFunc(c.recs, func(a, b kw.KeywordRecord) int { return strings.Compare(a.Keyword, b.Keyword) })
	for _, r := range c.recs {
		switch rng.IntN(4) {
		case 0: // alone: no intent row, or one naming itself
			if rng.IntN(2) == 0 {
				c.intents[r.Keyword] = r.Keyword
			}
		case 1:
			c.intents[r.Keyword] = "leader " + strconv.Itoa(rng.IntN(3))
		default:
			c.intents[r.Keyword] = c.recs[rng.IntN(min(len(c.recs), 12))].Keyword
		}
	}
	return c
}

func (c exploreCorpus) lake() lakeCountry {
	l := lakeCountry{keywords: c.recs, related: []kw.RelatedRow{}, intents: []kw.IntentRow{}}
	for _, r := range c.recs {
		if in, ok := c.intents[r.Keyword]; ok {
			l.intents = append(l.intents, kw.IntentRow{Keyword: r.Keyword, Intent: in, Overlap: 5})
		}
	}
	return l
}

// bruteExplore answers q over the corpus by the rules of the issue, by
// brute force: every keyword tested, all matches sorted.
func bruteExplore(c exploreCorpus, q kw.ExploreQuery) (rows []kw.ExploreRow, groups []kw.ExploreGroup) {
	lc, _ := kw.LookupCountry(q.Country)
	noSpace := kw.NoSpaceLanguage(lc.LanguageCode)
	has := func(words []string, text, w string) bool {
		if noSpace {
			return strings.Contains(text, w)
		}
		return slices.Contains(words, w)
	}
	var matches []kw.KeywordRecord
	for _, r := range c.recs {
		words := strings.Split(r.Keyword, " ")
		ok := true
		for _, w := range q.Words {
			ok = ok && has(words, r.Keyword, w)
		}
		switch q.Mode {
		case kw.ModePhrase:
			if noSpace {
				ok = ok && strings.Contains(r.Keyword, q.Q)
			} else {
				found := false
				for i := 0; i+len(q.Words) <= len(words); i++ {
					found = found || slices.Equal(words[i:i+len(q.Words)], q.Words)
				}
				ok = ok && found
			}
		case kw.ModeQuestions:
			found := false
			for _, qw := range kw.QuestionWords(lc.LanguageCode) {
				if noSpace {
					found = found || strings.HasPrefix(r.Keyword, qw)
				} else {
					qws := strings.Split(qw, " ")
					found = found || len(words) >= len(qws) && slices.Equal(words[:len(qws)], qws)
				}
			}
			ok = ok && found
		}
		if len(q.Include) > 0 {
			ok = ok && slices.ContainsFunc(q.Include, func(w string) bool { return has(words, r.Keyword, w) })
		}
		ok = ok && !slices.ContainsFunc(q.Exclude, func(w string) bool { return has(words, r.Keyword, w) })
		in := func(v *int64, lo, hi *int64) bool {
			return (lo == nil || v != nil && *v >= *lo) && (hi == nil || v != nil && *v <= *hi)
		}
		nw := int64(len(words))
		ok = ok && in(r.Volume, q.MinVolume, q.MaxVolume) && in(r.CPCMicros, q.MinCPCMicros, q.MaxCPCMicros) && in(&nw, q.MinWords, q.MaxWords)
		ok = ok && (q.MinCompetition == nil || r.Competition != nil && *r.Competition >= *q.MinCompetition)
		ok = ok && (q.MaxCompetition == nil || r.Competition != nil && *r.Competition <= *q.MaxCompetition)
		ok = ok && (q.Intent == "" || c.intent(r.Keyword) == q.Intent)
		if ok {
			matches = append(matches, r)
		}
	}
	key := func(r kw.KeywordRecord) (bool, float64) {
		switch q.Sort {
		case kw.SortVolume:
			return r.Volume == nil, float64(kw.Deref(r.Volume))
		case kw.SortCPC:
			return r.CPCMicros == nil, float64(kw.Deref(r.CPCMicros))
		case kw.SortCompetition:
			return r.Competition == nil, kw.Deref(r.Competition)
		case kw.SortWords:
			return false, float64(strings.Count(r.Keyword, " ") + 1)
		}
		return false, 0
	}
	byDefault := func(a, b kw.KeywordRecord) int {
		if (a.Volume == nil) != (b.Volume == nil) {
			if a.Volume == nil {
				return 1
			}
			return -1
		}
		if a.Volume != nil && *a.Volume != *b.Volume {
			if *a.Volume > *b.Volume {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Keyword, b.Keyword)
	}
	if q.GroupIntent {
		slices.SortFunc(matches, byDefault)
		idx := map[string]int{}
		for _, r := range matches {
			in := c.intent(r.Keyword)
			i, ok := idx[in]
			if !ok {
				i = len(groups)
				idx[in] = i
				groups = append(groups, kw.ExploreGroup{Intent: in, Top: []string{}})
			}
			g := &groups[i]
			g.MembersMatched++
			g.Volume += kw.Deref(r.Volume)
			if len(g.Top) < kw.ExploreTopMembers {
				g.Top = append(g.Top, r.Keyword)
			}
		}
		slices.SortFunc(groups, func(a, b kw.ExploreGroup) int {
			if a.Volume != b.Volume {
				if a.Volume > b.Volume {
					return -1
				}
				return 1
			}
			return strings.Compare(a.Intent, b.Intent)
		})
		return nil, groups
	}
	slices.SortFunc(matches, func(a, b kw.KeywordRecord) int {
		ma, va := key(a)
		mb, vb := key(b)
		switch {
		case ma != mb:
			if ma {
				return 1
			}
			return -1
		case !ma && va != vb:
			if (va > vb) == q.Desc {
				return -1
			}
			return 1
		}
		if q.Sort == kw.SortKeyword && q.Desc {
			return strings.Compare(b.Keyword, a.Keyword)
		}
		return strings.Compare(a.Keyword, b.Keyword)
	})
	for _, r := range matches {
		rows = append(rows, kw.ExploreRow{Keyword: r.Keyword, Volume: r.Volume, CPCMicros: r.CPCMicros, Competition: r.Competition, Intent: c.intent(r.Keyword)})
	}
	return rows, nil
}

func (c exploreCorpus) intent(k string) string {
	if in, ok := c.intents[k]; ok {
		return in
	}
	return k
}

func rowString(r kw.ExploreRow) string {
	f := func(p *int64) string {
		if p == nil {
			return "-"
		}
		return strconv.FormatInt(*p, 10)
	}
	comp := "-"
	if r.Competition != nil {
		comp = strconv.FormatFloat(*r.Competition, 'g', -1, 64)
	}
	return fmt.Sprintf("%q v=%s c=%s k=%s i=%q", r.Keyword, f(r.Volume), f(r.CPCMicros), comp, r.Intent)
}

// randomExploreQuery draws the parameters of a query over c.
func randomExploreQuery(rng *rand.Rand, cc string, c exploreCorpus) url.Values {
	v := url.Values{"country": {cc}}
	word := func() string {
		if rng.IntN(15) == 0 {
			return "absent"
		}
		return c.vocab[rng.IntN(len(c.vocab))]
	}
	var ws []string
	for range 1 + rng.IntN(3) {
		ws = append(ws, word())
	}
	if rng.IntN(4) == 0 { // the words of a keyword, for phrases that match
		k := c.recs[rng.IntN(len(c.recs))].Keyword
		parts := strings.Split(k, " ")
		i := rng.IntN(len(parts))
		ws = parts[i : i+1+rng.IntN(len(parts)-i)]
	}
	v.Set("q", strings.Join(ws, " "))
	switch rng.IntN(4) {
	case 1:
		v.Set("mode", "phrase")
	case 2:
		if cc != "RO" {
			v.Set("mode", "questions")
		}
	}
	if rng.IntN(4) == 0 {
		v.Set("include", word()+","+word())
	}
	if rng.IntN(4) == 0 {
		v.Set("exclude", word())
	}
	bound := func(name string, vals ...string) {
		if rng.IntN(5) == 0 {
			v.Set(name, vals[rng.IntN(len(vals))])
		}
	}
	bound("min_volume", "0", "10", "100")
	bound("max_volume", "10", "1000")
	bound("min_cpc", "0", "0.25", "0.5")
	bound("max_cpc", "0.5", "0.75", "1.000000")
	bound("min_competition", "0", "0.25")
	bound("max_competition", "0.5", "1")
	bound("min_words", "1", "2")
	bound("max_words", "2", "3")
	if rng.IntN(8) == 0 {
		v.Set("intent", c.intent(c.recs[rng.IntN(len(c.recs))].Keyword))
	}
	if rng.IntN(3) != 0 {
		v.Set("sort", []string{"volume", "cpc", "competition", "words", "keyword"}[rng.IntN(5)])
	}
	if rng.IntN(2) == 0 {
		v.Set("order", []string{"asc", "desc"}[rng.IntN(2)])
	}
	v.Set("limit", strconv.Itoa([]int{1, 2, 3, 7, 50}[rng.IntN(5)]))
	if rng.IntN(6) == 0 {
		v.Set("group", "intent")
	}
	return v
}

// exploreCorpora builds one index of several corpus shapes: an English
// one with a long tail of words and question words, one where every
// volume ties, a Japanese one matched by substrings, and a tiny one.
func exploreCorpora(t *testing.T, seed uint64) (*Store, map[string]exploreCorpus) {
	data, corpora := exploreCorporaLake(t, seed)
	return openStore(t, data), corpora
}

// exploreCorporaLake writes and builds exploreCorpora's lake.
func exploreCorporaLake(t *testing.T, seed uint64) (string, map[string]exploreCorpus) {
	rng := rand.New(rand.NewPCG(seed, 7))
	var en []string
	for i := range 60 {
		en = append(en, fmt.Sprintf("w%d", i))
	}
	en = append([]string{"shoes", "how", "what", "running", "red", "why", "por"}, en...)
	ja := strings.Split("東 京 ホ テ ル 安 い 何 どう 大 阪 の", " ")
	corpora := map[string]exploreCorpus{
		"US": exploreShape(rng, 1500, en, " ", []int64{0, 10, 10, 20, 100, 1000, 5000}),
		"GB": exploreShape(rng, 400, en[:12], " ", []int64{30}),
		"JP": exploreShape(rng, 800, ja, "", []int64{0, 10, 100, 100, 2000}),
		"RO": exploreShape(rng, 5, []string{"a", "b"}, " ", []int64{1, 2}),
	}
	// Japanese keywords with a space too.
	jp := corpora["JP"]
	jp.recs = append(jp.recs, kw.KeywordRecord{Keyword: "東京 ホテル", Volume: i64(50)}, kw.KeywordRecord{Keyword: "東京ホテル", Volume: i64(50)})
	slices.SortFunc(jp.recs, func(a, b kw.KeywordRecord) int { return strings.Compare(a.Keyword, b.Keyword) })
	jp.recs = slices.CompactFunc(jp.recs, func(a, b kw.KeywordRecord) bool { return a.Keyword == b.Keyword })
	corpora["JP"] = jp
	data := t.TempDir()
	lakes := map[string]lakeCountry{}
	for cc, c := range corpora {
		lakes[strings.ToLower(cc)] = c.lake()
	}
	writeLake(t, data, "2026-11-21", lakes)
	buildIndex(t, data, "2026-11-21")
	return data, corpora
}

// TestExploreMatchesBruteForce walks random queries to their last page
// and compares them with a brute-force filter and sort, with every list
// kept as ranks, with the common words' lists as bitmaps, and with every
// list a bitmap.
func TestExploreMatchesBruteForce(t *testing.T) {
	data, corpora := exploreCorporaLake(t, 1)
	for _, share := range []int{0, 32, 1 << 30} {
		t.Run(fmt.Sprintf("dense share %d", share), func(t *testing.T) {
			defer func(old int) { exploreDenseShare = old }(exploreDenseShare)
			exploreDenseShare = share
			exploreMatchesBruteForce(t, openStore(t, data), corpora)
		})
	}
	// A build of the first version, without the postings of pairs of
	// common words: phrases are told by their texts alone.
	t.Run("first version", func(t *testing.T) {
		id := readCurrent(t, data)
		editManifest(t, filepath.Join(kw.IndexDir(data), id), func(s string) string {
			return strings.Replace(s, `"explore": 2`, `"explore": 1`, 1)
		})
		exploreMatchesBruteForce(t, openStore(t, data), corpora)
	})
}

func exploreMatchesBruteForce(t *testing.T, s *Store, corpora map[string]exploreCorpus) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(2, 3))
	queries, nonEmpty, paged := 0, 0, 0
	for _, cc := range []string{"US", "GB", "JP", "RO"} {
		c := corpora[cc]
		n := 400
		if cc == "RO" {
			n = 40
		}
		for range n {
			v := randomExploreQuery(rng, cc, c)
			q, err := kw.ParseExploreQuery(v)
			var qe *kw.QueryError
			if errors.As(err, &qe) && strings.Contains(qe.Msg, "is above") {
				continue // crossed bounds, refused as they should be
			}
			if err != nil {
				t.Fatalf("%s: %v", v.Encode(), err)
			}
			wantRows, wantGroups := bruteExplore(c, q)
			var gotRows []string
			var gotGroups []kw.ExploreGroup
			for page := 0; ; page++ {
				if page > 2000 {
					t.Fatalf("%s: more than 2000 pages", v.Encode())
				}
				res, err := s.Explore(ctx, q)
				if err != nil {
					t.Fatalf("%s: %v", v.Encode(), err)
				}
				if q.GroupIntent {
					if res.TotalGroups != int64(len(wantGroups)) {
						t.Fatalf("%s: total_groups %d, want %d", v.Encode(), res.TotalGroups, len(wantGroups))
					}
					gotGroups = append(gotGroups, res.Groups...)
				} else {
					if res.Total != int64(len(wantRows)) {
						t.Fatalf("%s: total %d, want %d", v.Encode(), res.Total, len(wantRows))
					}
					if len(res.Rows) > q.Limit || res.NextCursor != "" && len(res.Rows) != q.Limit {
						t.Fatalf("%s: page of %d rows, limit %d, next %q", v.Encode(), len(res.Rows), q.Limit, res.NextCursor)
					}
					for _, r := range res.Rows {
						gotRows = append(gotRows, rowString(r))
					}
				}
				if res.NextCursor == "" {
					break
				}
				v.Set("cursor", res.NextCursor)
				if q, err = kw.ParseExploreQuery(v); err != nil {
					t.Fatalf("%s: own cursor refused: %v", v.Encode(), err)
				}
			}
			if v.Get("cursor") != "" {
				paged++
			}
			if len(wantRows)+len(wantGroups) > 0 {
				nonEmpty++
			}
			v.Del("cursor")
			if q.GroupIntent {
				if fmt.Sprint(gotGroups) != fmt.Sprint(wantGroups) {
					t.Fatalf("%s:\n got groups %v\nwant groups %v", v.Encode(), gotGroups, wantGroups)
				}
			} else {
				var want []string
				for _, r := range wantRows {
					want = append(want, rowString(r))
				}
				if !slices.Equal(gotRows, want) {
					t.Fatalf("%s:\n got %d rows %q\nwant %d rows %q", v.Encode(), len(gotRows), gotRows, len(want), want)
				}
			}
			queries++
		}
	}
	t.Logf("%d queries walked to the end, %d with matches, %d of several pages", queries, nonEmpty, paged)
	if nonEmpty < queries/3 || paged < queries/5 {
		t.Errorf("too few queries match (%d) or page (%d) to prove anything", nonEmpty, paged)
	}
}

// TestExploreNoTables: a build made before the explorer's tables answers
// kw.ErrExploreUnavailable, and lookups still work.
func TestExploreNoTables(t *testing.T) {
	data := t.TempDir()
	simpleLake(t, data, "2026-11-21", "us", 10, 5)
	m := buildIndex(t, data, "2026-11-21")
	if m.Explore != explorePairsVersion {
		t.Fatalf("manifest explore version %d, want %d", m.Explore, explorePairsVersion)
	}
	// An older build: the same, with the manifest saying nothing of
	// explorer tables.
	editManifest(t, filepath.Join(kw.IndexDir(data), m.BuildID), func(s string) string {
		return strings.Replace(s, `"explore": 2`, `"explore_was": 2`, 1)
	})
	s := openStore(t, data)
	q, err := kw.ParseExploreQuery(url.Values{"country": {"us"}, "q": {"kw"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Explore(context.Background(), q); !errors.Is(err, kw.ErrExploreUnavailable) {
		t.Fatalf("Explore on a build without tables: %v, want ErrExploreUnavailable", err)
	}
	if _, err := s.Lookup(context.Background(), "us", "kw 000001"); err != nil {
		t.Fatal(err)
	}
}

// TestExploreCountryWithoutKeywords answers no match, not an error.
func TestExploreCountryWithoutKeywords(t *testing.T) {
	data := t.TempDir()
	simpleLake(t, data, "2026-11-21", "us", 10, 5)
	buildIndex(t, data, "2026-11-21")
	s := openStore(t, data)
	q, err := kw.ParseExploreQuery(url.Values{"country": {"de"}, "q": {"kw"}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Explore(context.Background(), q)
	if err != nil || res.Total != 0 || len(res.Rows) != 0 {
		t.Fatalf("Explore in a country without keywords: %+v, %v", res, err)
	}
	q, _ = kw.ParseExploreQuery(url.Values{"country": {"us"}, "q": {"kw"}, "limit": {"3"}})
	res, err = s.Explore(context.Background(), q)
	if err != nil || res.Total != 10 || len(res.Rows) != 3 || res.NextCursor == "" {
		t.Fatalf("Explore kw: %+v, %v", res, err)
	}
}

func TestDecodePostingsRefuses(t *testing.T) {
	good := appendPostings(nil, []uint32{0, 5, 300})
	if got, err := decodePostings(good); err != nil || !slices.Equal(got, []uint32{0, 5, 300}) {
		t.Fatalf("decodePostings = %v, %v", got, err)
	}
	for _, bad := range [][]byte{nil, {9}, good[:len(good)-1], append(slices.Clone(good), 1), {exploreVersion, 2, 1, 0}, {exploreVersion, 0xff, 0xff, 0xff, 0xff, 0x0f}} {
		if _, err := decodePostings(bad); err == nil {
			t.Errorf("decodePostings(%x) accepted", bad)
		}
	}
}

func FuzzDecodePostings(f *testing.F) {
	f.Add(appendPostings(nil, []uint32{0, 5, 300}))
	f.Add([]byte{exploreVersion, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := decodePostings(b)
		if err != nil {
			return
		}
		for i := 1; i < len(l); i++ {
			if l[i] <= l[i-1] {
				t.Fatalf("postings out of order: %v", l)
			}
		}
	})
}

func TestIntersect(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	for range 500 {
		var a, b []uint32
		for i := uint32(0); i < 3000; i++ {
			if rng.IntN(40) == 0 {
				a = append(a, i)
			}
			if rng.IntN([]int{1, 2, 50}[rng.IntN(3)]) == 0 {
				b = append(b, i)
			}
		}
		var want []uint32
		for _, x := range a {
			if slices.Contains(b, x) {
				want = append(want, x)
			}
		}
		if got := intersect(slices.Clone(a), b); !slices.Equal(got, want) {
			t.Fatalf("intersect(%v, %v) = %v, want %v", a, b, got, want)
		}
	}
}

// FuzzDecodeExploreColumns: the meta record and a column block decode
// or fail, never panic nor index out of range.
func FuzzDecodeExploreColumns(f *testing.F) {
	meta := []byte{exploreVersion, 2, 0, 1, 1, 'x'}
	block := []byte{exploreVersion, 2,
		1, hasVolume, 10, 0, 1, 'b',
		0, hasCPC | hasCompetition, 4, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 2, 1, 'a'}
	f.Add(meta, block)
	f.Add([]byte{exploreVersion, 0, 0, 0}, []byte{exploreVersion, 0})
	f.Fuzz(func(t *testing.T, meta, block []byte) {
		c := &exploreCountry{}
		if c.decodeMeta(meta) != nil || c.n > 1<<16 {
			return
		}
		n := c.n
		c.id, c.rankOf = make([]uint32, n), make([]uint32, n)
		c.vol, c.cpc, c.comp = make([]int64, n), make([]int64, n), make([]float64, n)
		c.has, c.words, c.group = make([]uint8, n), make([]uint8, n), make([]uint32, n)
		c.off = []uint32{0}
		r, text, err := c.decodeBlock(block, 0, nil)
		if err != nil {
			return
		}
		if r > n || len(c.off) != r+1 || int(c.off[r]) != len(text) {
			t.Fatalf("decoded %d keywords of %d, offsets %v, %d bytes of text", r, n, c.off, len(text))
		}
	})
}

// TestExploreConcurrent runs queries of one country from several
// goroutines while its columns load (run with -race).
func TestExploreConcurrent(t *testing.T) {
	s, corpora := exploreCorpora(t, 9)
	var qs []kw.ExploreQuery
	rng := rand.New(rand.NewPCG(9, 9))
	for len(qs) < 40 {
		q, err := kw.ParseExploreQuery(randomExploreQuery(rng, "US", corpora["US"]))
		if err == nil {
			qs = append(qs, q)
		}
	}
	want := make([]kw.ExploreResult, len(qs))
	done := make(chan error, 4)
	for g := range 4 {
		go func() {
			for i := range qs {
				res, err := s.Explore(context.Background(), qs[(i+g*10)%len(qs)])
				if err != nil {
					done <- err
					return
				}
				if g == 0 {
					want[i] = res
				}
			}
			done <- nil
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	for i, q := range qs {
		res, err := s.Explore(context.Background(), q)
		if err != nil || resultString(res) != resultString(want[i]) {
			t.Fatalf("query %d answered %v (%v) alone, %v among others", i, res, err, want[i])
		}
	}
}

func resultString(res kw.ExploreResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "total %d groups %d next %q\n", res.Total, res.TotalGroups, res.NextCursor)
	for _, r := range res.Rows {
		b.WriteString(rowString(r) + "\n")
	}
	fmt.Fprintln(&b, res.Groups)
	return b.String()
}

// explorePages walks query q (parsed from v, which it leaves holding the
// last cursor) to its last page, at most 1,000 pages, holding every
// page's total to wantTotal, and returns the rows.
func explorePages(t *testing.T, s *Store, v url.Values, q kw.ExploreQuery, wantTotal int) []string {
	t.Helper()
	var got []string
	for page := 0; ; page++ {
		res, err := s.Explore(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		if res.Total != int64(wantTotal) {
			t.Fatalf("%s page %d: total %d, want %d", v.Encode(), page, res.Total, wantTotal)
		}
		for _, r := range res.Rows {
			got = append(got, rowString(r))
		}
		if res.NextCursor == "" || page > 1000 {
			return got
		}
		v.Set("cursor", res.NextCursor)
		if q, err = kw.ParseExploreQuery(v); err != nil {
			t.Fatal(err)
		}
	}
}

// TestExploreOneWordPages walks the default query of every word of each
// corpus, a few rows a page: the queries answered from the head of one
// postings list, checked against brute force like the others.
func TestExploreOneWordPages(t *testing.T) {
	s, corpora := exploreCorpora(t, 5)
	checked := 0
	for _, cc := range []string{"US", "GB", "JP", "RO"} {
		c := corpora[cc]
		for _, w := range append(slices.Clone(c.vocab), "absent") {
			for _, mode := range []string{"terms", "phrase"} {
				v := url.Values{"country": {cc}, "q": {w}, "limit": {"3"}, "mode": {mode}}
				q, err := kw.ParseExploreQuery(v)
				if err != nil {
					t.Fatal(err)
				}
				wantRows, _ := bruteExplore(c, q)
				var want []string
				for _, r := range wantRows {
					want = append(want, rowString(r))
				}
				got := explorePages(t, s, v, q, len(wantRows))
				if !slices.Equal(got, want) {
					t.Fatalf("%s:\n got %q\nwant %q", v.Encode(), got, want)
				}
				checked++
			}
		}
	}
	t.Logf("%d one-word queries walked", checked)
}

// TestPairMask: a text holding a phrase as whole words holds every bit of
// the phrase's mask; a phrase of two words has one bit; a single word
// none.
func TestPairMask(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	words := []string{"a", "bb", "run", "shoe", "red", "x", "かばん"}
	for range 2000 {
		ws := make([]string, 1+rng.IntN(7))
		for i := range ws {
			ws[i] = words[rng.IntN(len(words))]
		}
		i := rng.IntN(len(ws))
		j := i + 1 + rng.IntN(len(ws)-i)
		text, phrase := strings.Join(ws, " "), strings.Join(ws[i:j], " ")
		if m, p := pairMask(text), pairMask(phrase); m&p != p {
			t.Fatalf("pairMask(%q) = %016b lacks bits of pairMask(%q) = %016b", text, m, phrase, p)
		}
	}
	if m := pairMask("run shoe"); bits.OnesCount16(m) != 1 {
		t.Errorf("pairMask of two words = %016b, want one bit", m)
	}
	if m := pairMask("shoe"); m != 0 {
		t.Errorf("pairMask of one word = %016b, want none", m)
	}
}

// TestExplorePhraseOfCommonWords: a phrase of two common words is
// answered from its pair's postings once both words' lists are kept (the
// second query on), and walks to the same rows as a brute-force filter,
// on every page.
func TestExplorePhraseOfCommonWords(t *testing.T) {
	s, corpora := exploreCorpora(t, 3)
	c := corpora["US"]
	checked := 0
	for _, phrase := range []string{"shoes shoes", "how shoes", "shoes running", "running shoes", "red shoes", "what red", "shoes w0"} {
		for round := range 2 {
			v := url.Values{"country": {"US"}, "q": {phrase}, "mode": {"phrase"}, "limit": {"7"}}
			q, err := kw.ParseExploreQuery(v)
			if err != nil {
				t.Fatal(err)
			}
			wantRows, _ := bruteExplore(c, q)
			got := explorePages(t, s, v, q, len(wantRows))
			var want []string
			for _, r := range wantRows {
				want = append(want, rowString(r))
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%q round %d:\n got %q\nwant %q", phrase, round, got, want)
			}
			checked += len(want)
		}
	}
	h := s.acquire()
	defer s.release(h)
	ec, err := h.exploreCountry("US")
	if err != nil {
		t.Fatal(err)
	}
	if !ec.keptCommon("shoes") {
		t.Fatal(`"shoes" is not kept as a common word: the pair path was not taken`)
	}
	if checked < 20 {
		t.Fatalf("only %d rows checked", checked)
	}
}

// TestRadixHigh32 holds radixHigh32 to a stable sort by the upper half.
func TestRadixHigh32(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 2, 1000, 70000} {
		keys := make([]uint64, n)
		for i := range keys {
			// Few distinct upper halves, so that ties are many; the lower
			// half is the position, as rankOrder's ids are.
			hi := uint64(r.IntN(50))
			if r.IntN(10) == 0 {
				hi = uint64(r.Uint32())
			}
			keys[i] = hi<<32 | uint64(i)
		}
		want := slices.Clone(keys)
		slices.SortStableFunc(want, func(a, b uint64) int { return cmp.Compare(a>>32, b>>32) })
		radixHigh32(keys)
		if !slices.Equal(keys, want) {
			t.Fatalf("n=%d: radixHigh32 differs from a stable sort by the upper half", n)
		}
	}
}

// TestExploreBuilderWordIDs holds the builder's packed word ids to each
// keyword's distinct words, in order, across the one-, two- and
// three-byte ids (more than 16,384 distinct words).
func TestExploreBuilderWordIDs(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	eb := newExploreBuilder("us", 0)
	var texts []string
	for i := range 30000 {
		// A new word in every keyword, beside a few of the earlier ones
		// and a repeat now and then.
		words := []string{fmt.Sprintf("w%05d", i)}
		for range rng.IntN(4) {
			words = append(words, fmt.Sprintf("w%05d", rng.IntN(i+1)))
		}
		texts = append(texts, strings.Join(words, " "))
	}
	slices.Sort(texts)
	texts = slices.Compact(texts)
	for _, k := range texts {
		eb.add(0, member{keyword: k}, alone(k), 0, false)
	}
	if len(eb.words) <= 1<<14 {
		t.Fatalf("%d distinct words, want more than %d to reach three-byte ids", len(eb.words), 1<<14)
	}
	var got []uint32
	for id, k := range texts {
		var want []uint32
		for _, w := range strings.Fields(k) {
			wid, ok := eb.wordID[w]
			if !ok {
				t.Fatalf("word %q of %q has no id", w, k)
			}
			if !slices.Contains(want, wid) {
				want = append(want, wid)
			}
		}
		if got = eb.appendWordIDs(got[:0], uint32(id)); !slices.Equal(got, want) {
			t.Fatalf("keyword %d %q: word ids %v, want %v", id, k, got, want)
		}
		if first, _ := nextWordID(eb.kwWords[eb.kwOff[id]:]); first != want[0] {
			t.Fatalf("keyword %d %q: first word id %d, want %d", id, k, first, want[0])
		}
	}
}

// alone is the place of a keyword that is a block of its own.
func alone(k string) textIn { return textIn{block: k} }

// TestExploreBuilderTexts holds the builder's texts to the keywords
// added: keywords in shared blocks, each its own block, and places that do
// not fit a reference (a keyword of 64 KiB, a start past 16 MiB).
func TestExploreBuilderTexts(t *testing.T) {
	eb := newExploreBuilder("us", 0)
	var want []string
	add := func(k string, in textIn) {
		t.Helper()
		if in.block[in.start:int(in.start)+len(k)] != k {
			t.Fatalf("bad test: %q is not at %d of its block", k, in.start)
		}
		eb.add(0, member{keyword: k}, in, 0, false)
		want = append(want, k)
	}
	block := "alpha betagamma"
	add("alpha", textIn{block, 0})
	add("beta", textIn{block, 6})
	add("gamma", textIn{block, 10})
	add("delta", alone("delta"))
	add("epsilon", alone("epsilon"))
	long := "k" + strings.Repeat("x", 1<<16)
	add(long, alone(long))
	big := strings.Repeat(" ", 1<<24) + "omega"
	add("omega", textIn{big, 1 << 24})
	add("zeta", textIn{"zeta", 0})
	if len(eb.blocks) != 6 {
		t.Errorf("%d blocks, want 6", len(eb.blocks))
	}
	if len(eb.long) != 2 {
		t.Errorf("%d texts held whole, want 2", len(eb.long))
	}
	for id, k := range want {
		if got := eb.text(uint32(id)); got != k {
			t.Errorf("text %d = %.20q, want %.20q", id, got, k)
		}
	}
}
