package index

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/lake"
)

// suggestLake writes n random keywords of a small vocabulary (so that
// prefixes and words repeat, many beginning more than PrefixScanLimit
// keywords), with random volumes, some missing, some tied; it returns them.
func suggestLake(tb testing.TB, data string, n int, seed uint64) []kw.KeywordRecord {
	tb.Helper()
	vocab := []string{"run", "running", "runner", "shoes", "shoe", "trail", "best", "for", "women", "men", "cheap", "nike", "größe", "über", "a", "b"}
	rare := []string{"zebra", "ultra", "kids", "wide"}
	rng := rand.New(rand.NewPCG(seed, 7))
	seen := map[string]bool{}
	var recs []kw.KeywordRecord
	for len(recs) < n {
		words := make([]string, 1+rng.IntN(4))
		for i := range words {
			words[i] = vocab[rng.IntN(len(vocab))]
			if rng.IntN(40) == 0 {
				words[i] = rare[rng.IntN(len(rare))]
			}
		}
		k := strings.Join(words, " ")
		if seen[k] {
			continue
		}
		seen[k] = true
		r := kw.KeywordRecord{Keyword: k}
		if rng.IntN(10) != 0 {
			r.Volume = i64(int64(rng.IntN(50)) * 10) // ties on purpose
		}
		recs = append(recs, r)
	}
	slices.SortFunc(recs, func(a, b kw.KeywordRecord) int { return strings.Compare(a.Keyword, b.Keyword) })
	writeLake(tb, data, "2026-11-21", map[string]lakeCountry{"us": {keywords: recs, related: []kw.RelatedRow{}, intents: []kw.IntentRow{}}})
	return recs
}

// bruteSuggest is the oracle: every keyword that begins with prefix by
// volume then text, then those holding it as whole words after their
// first word.
func bruteSuggest(recs []kw.KeywordRecord, prefix string, n int) []string {
	rank := func(list []kw.KeywordRecord) []string {
		slices.SortFunc(list, func(a, b kw.KeywordRecord) int {
			return scoredCmp(scored{a.Keyword, kw.Deref(a.Volume)}, scored{b.Keyword, kw.Deref(b.Volume)})
		})
		var out []string
		for _, r := range list {
			out = append(out, r.Keyword)
		}
		return out
	}
	var begins, holds []kw.KeywordRecord
	for _, r := range recs {
		if strings.HasPrefix(r.Keyword, prefix) {
			begins = append(begins, r)
		} else if holdsWords(r.Keyword, prefix) {
			holds = append(holds, r)
		}
	}
	out := rank(begins)
	if len(out) >= n {
		return out[:n]
	}
	for _, k := range rank(holds) {
		if len(out) == n {
			break
		}
		out = append(out, k)
	}
	return out
}

// wordsExact reports whether wholeWords answers prefix exactly: a query of
// one word, or one of its words is held (after the first word) by fewer
// than wordCandidates keywords, or the wordCandidates most searched that
// hold it include enough matches. holders maps a word to the keywords
// holding it, most searched first (wordHolders).
func wordsExact(recs []kw.KeywordRecord, holders map[string][]string, prefix string, n int) bool {
	begins := 0
	for _, r := range recs {
		if strings.HasPrefix(r.Keyword, prefix) {
			begins++
		}
	}
	words := strings.Fields(prefix)
	if begins >= n || len(words) <= 1 {
		return true
	}
	for _, w := range words {
		list := holders[w]
		if len(list) < wordCandidates {
			return true
		}
		matches := 0
		for _, k := range list[:wordCandidates] {
			if !strings.HasPrefix(k, prefix) && holdsWords(k, prefix) {
				matches++
			}
		}
		if matches >= n-begins {
			return true
		}
	}
	return false
}

// wordHolders maps each word to the keywords holding it after their first
// word, most searched first.
func wordHolders(recs []kw.KeywordRecord) map[string][]string {
	sorted := slices.Clone(recs)
	slices.SortFunc(sorted, func(a, b kw.KeywordRecord) int {
		return scoredCmp(scored{a.Keyword, kw.Deref(a.Volume)}, scored{b.Keyword, kw.Deref(b.Volume)})
	})
	out := map[string][]string{}
	for _, r := range sorted {
		words := strings.Fields(r.Keyword)
		for i, w := range words {
			if i > 0 && !slices.Contains(words[1:i], w) {
				out[w] = append(out[w], r.Keyword)
			}
		}
	}
	return out
}

// TestSuggestMatchesBruteForce compares Suggest with the oracle over
// every prefix of every keyword and some that begin none: prefix answers
// are exact, and so are whole-word answers whenever one of the query's
// word records is complete or alone yields enough matches (wholeWords);
// otherwise each answer must at least hold the words. Rare words ("zebra",
// "ultra") make complete records of several-word queries common.
func TestSuggestMatchesBruteForce(t *testing.T) {
	for _, seed := range []uint64{1, 2} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			data := t.TempDir()
			recs := suggestLake(t, data, 1500, seed)
			buildIndex(t, data, "2026-11-21")
			s := openStore(t, data)
			ctx := context.Background()
			prefixes := map[string]bool{"zzz": true, "shoes": true, "women": true, "for women": true, "größe": true, "über": true, "shoes for": true}
			for _, r := range recs {
				for i := range r.Keyword {
					if i > 0 {
						prefixes[r.Keyword[:i]] = true
					}
				}
			}
			holders := wordHolders(recs)
			checked, severalWords := 0, 0
			for p := range prefixes {
				for _, n := range []int{3, 10} {
					got, err := s.Suggest(ctx, "us", p, n)
					if err != nil {
						t.Fatal(err)
					}
					want := bruteSuggest(recs, p, n)
					exact := wordsExact(recs, holders, p, n)
					if exact && strings.Contains(strings.TrimSpace(p), " ") {
						severalWords++
					}
					if exact || len(want) > 0 && strings.HasPrefix(want[len(want)-1], p) {
						if !slices.Equal(got, want) {
							t.Fatalf("Suggest(%q, %d) = %q, want %q", p, n, got, want)
						}
					} else {
						for i, k := range got {
							if i < len(want) && strings.HasPrefix(want[i], p) && k != want[i] {
								t.Fatalf("Suggest(%q, %d) = %q, want it to begin %q", p, n, got, want)
							}
							if !strings.HasPrefix(k, p) && !holdsWords(k, p) {
								t.Fatalf("Suggest(%q) answered %q, which neither begins with nor holds it", p, k)
							}
						}
					}
					checked++
				}
			}
			if checked < 1000 || severalWords < 100 {
				t.Fatalf("checked only %d prefixes, %d exactly with several words", checked, severalWords)
			}
			if got, err := s.Suggest(ctx, "gb", "run", 10); err != nil || len(got) != 0 {
				t.Errorf("another country: %q, %v", got, err)
			}
		})
	}
}

// TestSharedPrefixMatchesBruteForce checks the one-seek longest shared
// beginning against every keyword, for prefixes of keywords with a letter
// changed or added, words the index lacks, a country without keywords and
// multi-byte runes cut in the middle.
func TestSharedPrefixMatchesBruteForce(t *testing.T) {
	data := t.TempDir()
	recs := suggestLake(t, data, 1500, 3)
	buildIndex(t, data, "2026-11-21")
	s := openStore(t, data)
	ctx := context.Background()
	brute := func(q string) string {
		best := 0
		for _, r := range recs {
			n := commonPrefix(q, r.Keyword)
			for n > 0 && n < len(q) && !utf8.RuneStart(q[n]) {
				n--
			}
			best = max(best, n)
		}
		return q[:best]
	}
	qs := []string{"zzz", "a", "größx", "über alles", "ü", "\u00fc", "shoes for wom", "~"}
	for i, r := range recs {
		if i%7 != 0 {
			continue
		}
		k := r.Keyword
		qs = append(qs, k+"x", k+" zq", k[:len(k)/2]+"q", strings.ToUpper(k[:1])+k[1:])
		for j := range k {
			if j > 0 && utf8.RuneStart(k[j]) {
				qs = append(qs, k[:j]+"\xff") // past every keyword sharing k[:j]
			}
		}
	}
	for _, q := range qs {
		got, err := s.SharedPrefix(ctx, "us", q)
		if err != nil {
			t.Fatal(err)
		}
		if want := brute(q); got != want {
			t.Fatalf("SharedPrefix(%q) = %q, want %q", q, got, want)
		}
	}
	if got, err := s.SharedPrefix(ctx, "gb", "running"); err != nil || got != "" {
		t.Errorf("another country: %q, %v", got, err)
	}
}

// BenchmarkSuggest measures a suggestion at 100k and at 1M keywords: a
// prefix with a record (one seek), a rare prefix without one (a scan of
// at most PrefixScanLimit keys), and a word found only inside keywords
// (the word record). The cost must not grow with the index.
func BenchmarkSuggest(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		data, err := os.MkdirTemp("", "kwdata-suggest-bench-")
		if err != nil {
			b.Fatal(err)
		}
		defer os.RemoveAll(data)
		w, err := lake.Create[kw.KeywordRecord](data, kw.DatasetKeywords, "us", "2026-11-21")
		if err != nil {
			b.Fatal(err)
		}
		batch := make([]kw.KeywordRecord, 0, 8192)
		for i := 0; i < n; i++ {
			batch = append(batch, kw.KeywordRecord{Keyword: genKeyword(i), Volume: i64(int64(i*7919) % 100000)})
			if len(batch) == cap(batch) || i == n-1 {
				if err := w.Write(batch...); err != nil {
					b.Fatal(err)
				}
				batch = batch[:0]
			}
		}
		if err := w.Commit(); err != nil {
			b.Fatal(err)
		}
		m, err := Build(context.Background(), BuildOptions{Data: data, Date: "2026-11-21", AllowMissingRelated: true})
		if err != nil {
			b.Fatal(err)
		}
		s, err := OpenStore(context.Background(), data, StoreOptions{})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		b.Logf("%d keywords: %d index bytes", n, m.Bytes)
		for _, q := range []struct{ name, prefix string }{
			{"record", "k"},                 // every keyword
			{"scan", genKeyword(n / 2)[:7]}, // ten keywords: no record
			{"word", "grinder"},             // only inside keywords
			{"words", "coffee grinder"},     // two words inside keywords: two word records
			{"none", "zzz"},                 // nothing
		} {
			b.Run(fmt.Sprintf("keywords=%d/%s", n, q.name), func(b *testing.B) {
				ctx := context.Background()
				got, err := s.Suggest(ctx, "US", q.prefix, MaxSuggestions)
				if err != nil {
					b.Fatal(err)
				}
				if q.name != "none" && len(got) == 0 {
					b.Fatalf("no suggestions for %q", q.prefix)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					if _, err := s.Suggest(ctx, "US", q.prefix, MaxSuggestions); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func FuzzDecodeKeywords(f *testing.F) {
	f.Add(encodeKeywords(nil, []scored{{"a", 1}, {"b c", 2}}))
	f.Add([]byte{11})
	f.Fuzz(func(t *testing.T, b []byte) {
		list, err := decodeKeywords(b, MaxSuggestions)
		if err != nil {
			return
		}
		if len(list) > MaxSuggestions {
			t.Fatalf("decoded %d keywords", len(list))
		}
		var in []scored
		for _, k := range list {
			in = append(in, scored{keyword: k})
		}
		// Varints need not be minimal, so compare decoded lists.
		again, err := decodeKeywords(encodeKeywords(nil, in), MaxSuggestions)
		if err != nil || !slices.Equal(again, list) {
			t.Fatalf("round trip changed %q to %q (%v)", list, again, err)
		}
	})
}

// TestWordRecordsFromPostingsMatchSuggestBuilder holds the word records
// the explorer's builder makes from its postings to those the suggestion
// builder keeps as the keywords stream by, on keywords whose first word
// comes again, that begin with a space, of volumes positive, zero,
// negative, missing and tied, and of few and many candidates a word.
func TestWordRecordsFromPostingsMatchSuggestBuilder(t *testing.T) {
	vocab := []string{"a", "b", "c", "run", "shoe", "über", "x"}
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 11))
		texts := map[string]bool{}
		n := 1 + rng.IntN(400)
		for len(texts) < n {
			words := make([]string, 1+rng.IntN(4))
			for i := range words {
				words[i] = vocab[rng.IntN(len(vocab))]
			}
			k := strings.Join(words, " ")
			if rng.IntN(30) == 0 {
				k = " " + k
			}
			texts[k] = true
		}
		sb := suggestBuilder{}
		eb := newExploreBuilder("us", 0)
		if !eb.wordRecords {
			t.Fatal("the explorer's builder of us does not make word records")
		}
		for _, k := range slices.Sorted(maps.Keys(texts)) {
			m := member{keyword: k}
			switch rng.IntN(5) {
			case 0: // missing
			case 1:
				m.has = hasVolume // zero
			case 2:
				m.volume, m.has = -int64(rng.IntN(3)), hasVolume
			default:
				m.volume, m.has = int64(1+rng.IntN(20)), hasVolume
			}
			sb.add(k, m.volume)
			eb.add(0, m, alone(k), 0, false)
		}
		want := map[string][]string{}
		for w, top := range sb.words {
			for _, s := range top.list {
				want[w] = append(want[w], s.keyword)
			}
		}
		got := map[string][]string{}
		var words []string
		order := eb.rankOrder()
		err := eb.eachWordRecord(context.Background(), order, eb.postings(order), func(w string, list []scored) error {
			words = append(words, w)
			for _, s := range list {
				got[w] = append(got[w], s.keyword)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.IsSorted(words) {
			t.Errorf("seed %d: words not in key order: %q", seed, words)
		}
		if !reflect.DeepEqual(got, want) {
			for w := range want {
				if !reflect.DeepEqual(got[w], want[w]) {
					t.Errorf("seed %d, word %q:\n got %q\nwant %q", seed, w, got[w], want[w])
				}
			}
			for w := range got {
				if _, ok := want[w]; !ok {
					t.Errorf("seed %d: word %q has a record it should not have: %q", seed, w, got[w])
				}
			}
		}
	}
}
