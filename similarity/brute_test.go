package similarity

import (
	"context"
	"slices"
	"testing"

	"github.com/kwdata/kwdata/kw"
)

// urls returns n URL keys "<prefix>0".."<prefix>n-1".
func urls(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + string(rune('a'+i%26)) + string(rune('a'+i/26))
	}
	return out
}

func cat(parts ...[]string) []string { return slices.Concat(parts...) }

type relatedWant struct {
	related    string
	overlap    int32
	sameIntent bool
}

func relatedOf(rows []kw.RelatedRow, k string) []relatedWant {
	var out []relatedWant
	for _, r := range rows {
		if r.Keyword == k {
			out = append(out, relatedWant{r.Related, r.Overlap, r.SameIntent})
		}
	}
	return out
}

func intentOf(rows []kw.IntentRow, k string) string {
	for _, r := range rows {
		if r.Keyword == k {
			return r.Intent
		}
	}
	return ""
}

// TestHandMade checks Brute and Compute on cases worked out by hand.
func TestHandMade(t *testing.T) {
	shared := urls("s/", 20)
	tests := []struct {
		name    string
		kws     []Keyword
		serps   [][]string
		opt     Options
		k       string
		related []relatedWant
		intents map[string]string
	}{
		{
			name: "overlap first, then closeness, then volume, then text",
			kws: []Keyword{
				{Text: "k", Volume: 23}, {Text: "a", Volume: 11}, // closeness 24/12 = 2
				{Text: "b", Volume: 47}, // 48/24 = 2, higher volume than a
				{Text: "c", Volume: 11}, // ties a; text after a
				{Text: "d", Volume: 23}, // closeness 1
				{Text: "e", Volume: 1000},
			},
			serps: [][]string{
				shared[:5], shared[:2], shared[:2], shared[:2], shared[:2], shared[:3],
			},
			k: "k",
			related: []relatedWant{
				{"e", 3, false}, {"d", 2, false}, {"b", 2, false}, {"a", 2, false}, {"c", 2, false},
			},
		},
		{
			name: "duplicates count once and empty SERPs have no candidates",
			kws:  []Keyword{{Text: "x", Volume: 5}, {Text: "y", Volume: 5}, {Text: "z", Volume: 5}},
			serps: [][]string{
				{"p", "p", "q", "q"}, {"p", "q", "p"}, nil,
			},
			k:       "x",
			related: []relatedWant{{"y", 2, false}},
			intents: map[string]string{"x": "x", "y": "y", "z": "z"},
		},
		{
			name: "same intent needs overlap 8 and ratio 2, both inclusive",
			kws: []Keyword{
				{Text: "lead", Volume: 99}, // 100
				{Text: "half", Volume: 49}, // 50: ratio exactly 2
				{Text: "less", Volume: 48}, // 49: ratio > 2
				{Text: "seven", Volume: 99},
			},
			serps: [][]string{shared[:10], shared[:8], shared[:10], cat(shared[:7], []string{"x"})},
			k:     "lead",
			related: []relatedWant{
				{"less", 10, false}, {"half", 8, true}, {"seven", 7, false},
			},
			intents: map[string]string{"lead": "lead", "half": "lead", "less": "less", "seven": "seven"},
		},
		{
			name: "leaders do not chain: a member does not recruit",
			kws: []Keyword{
				{Text: "a", Volume: 100}, {Text: "b", Volume: 60}, {Text: "c", Volume: 35},
			},
			// a~b (8 shared, ratio 101/61), b~c (8 shared, 61/36), a,c share 4.
			serps: [][]string{
				cat(shared[0:4], shared[4:12], urls("a/", 2)),
				cat(shared[4:12], shared[12:20], urls("b/", 2)),
				cat(shared[12:20], shared[0:4], urls("c/", 2)),
			},
			k:       "b",
			related: []relatedWant{{"a", 8, true}, {"c", 8, true}},
			intents: map[string]string{"a": "a", "b": "a", "c": "c"},
		},
		{
			name: "a leader recruits beyond its top K",
			kws: []Keyword{
				{Text: "l", Volume: 1000}, {Text: "m1", Volume: 900}, {Text: "m2", Volume: 800},
				{Text: "m3", Volume: 700},
			},
			serps:   [][]string{shared[:10], shared[:9], shared[:9], shared[:8]},
			opt:     Options{TopK: 1},
			k:       "l",
			related: []relatedWant{{"m1", 9, true}},
			intents: map[string]string{"l": "l", "m1": "l", "m2": "l", "m3": "l"},
		},
		{
			name: "volume ties break by text, huge volumes compare exactly",
			kws: []Keyword{
				{Text: "k", Volume: 9_999_999_999}, {Text: "b", Volume: 9_999_999_998},
				{Text: "a", Volume: 9_999_999_998}, {Text: "c", Volume: 10_000_000_000},
			},
			serps: [][]string{{"u"}, {"u"}, {"u"}, {"u"}},
			k:     "k",
			// b,a: 1e10/9999999999; c: 10000000001/1e10, which is smaller.
			related: []relatedWant{{"c", 1, false}, {"a", 1, false}, {"b", 1, false}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bRel, bInt := Brute(tt.kws, tt.serps, tt.opt)
			fRel, fInt, err := Compute(context.Background(), tt.kws, tt.serps, tt.opt)
			if err != nil {
				t.Fatal(err)
			}
			for name, got := range map[string][]kw.RelatedRow{"Brute": bRel, "Compute": fRel} {
				if g := relatedOf(got, tt.k); !slices.Equal(g, tt.related) {
					t.Errorf("%s related(%s) = %v, want %v", name, tt.k, g, tt.related)
				}
			}
			for name, got := range map[string][]kw.IntentRow{"Brute": bInt, "Compute": fInt} {
				if len(got) != len(tt.kws) {
					t.Errorf("%s: %d intent rows, want %d", name, len(got), len(tt.kws))
				}
				for k, want := range tt.intents {
					if g := intentOf(got, k); g != want {
						t.Errorf("%s intent(%s) = %q, want %q", name, k, g, want)
					}
				}
			}
		})
	}
}

func TestComputeRejectsBadInput(t *testing.T) {
	tests := []struct {
		name  string
		kws   []Keyword
		serps [][]string
	}{
		{"duplicate text", []Keyword{{Text: "a"}, {Text: "a"}}, [][]string{nil, nil}},
		{"missing SERP slice", []Keyword{{Text: "a"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := Compute(context.Background(), tt.kws, tt.serps, Options{}); err == nil {
				t.Fatal("Compute accepted bad input")
			}
		})
	}
}
