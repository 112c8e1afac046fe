package similarity

import (
	"sort"

	"github.com/kwdata/kwdata/kw"
)

// Brute is the reference implementation of the package doc's rules: it compares every pair
// of keywords and sorts each keyword's candidates with the full ranking. It
// costs O(N²) and is kept as the oracle that Compute is tested against, and
// as the baseline of the benchmarks. Keyword texts must be unique; serps[i]
// is the SERP of keywords[i] (missing entries count as empty).
func Brute(keywords []Keyword, serps [][]string, opt Options) ([]kw.RelatedRow, []kw.IntentRow) {
	opt = opt.withDefaults()
	n := len(keywords)
	// Sets as sorted, distinct URL ids.
	ids := map[string]int32{}
	sets := make([][]int32, n)
	for i := 0; i < n && i < len(serps); i++ {
		seen := map[int32]bool{}
		for _, u := range serps[i] {
			id, ok := ids[u]
			if !ok {
				id = int32(len(ids))
				ids[u] = id
			}
			if !seen[id] {
				seen[id] = true
				sets[i] = append(sets[i], id)
			}
		}
	}
	mark := make([]int32, len(ids))
	for i := range mark {
		mark[i] = -1
	}
	overlapWith := func(k int) []int {
		for _, u := range sets[k] {
			mark[u] = int32(k)
		}
		ov := make([]int, n)
		for c := 0; c < n; c++ {
			for _, u := range sets[c] {
				if mark[u] == int32(k) {
					ov[c]++
				}
			}
		}
		return ov
	}
	sameIntent := func(k, c, overlap int) bool {
		hi, lo := hiLo(smooth(keywords[k].Volume), smooth(keywords[c].Volume))
		return overlap >= opt.MinOverlap && ratioWithin(hi, lo, opt.MaxRatio)
	}

	var related []kw.RelatedRow
	for k := 0; k < n; k++ {
		ov := overlapWith(k)
		var cands []int
		for c := 0; c < n; c++ {
			if c != k && ov[c] >= 1 {
				cands = append(cands, c)
			}
		}
		vk := smooth(keywords[k].Volume)
		sort.Slice(cands, func(i, j int) bool {
			a, b := cands[i], cands[j]
			if ov[a] != ov[b] {
				return ov[a] > ov[b]
			}
			ah, al := hiLo(smooth(keywords[a].Volume), vk)
			bh, bl := hiLo(smooth(keywords[b].Volume), vk)
			if x := cmpRatio(ah, al, bh, bl); x != 0 {
				return x < 0
			}
			if va, vb := rankVolume(keywords[a].Volume), rankVolume(keywords[b].Volume); va != vb {
				return va > vb
			}
			return keywords[a].Text < keywords[b].Text
		})
		if len(cands) > opt.TopK {
			cands = cands[:opt.TopK]
		}
		for r, c := range cands {
			related = append(related, kw.RelatedRow{
				Keyword: keywords[k].Text, Rank: int32(r + 1), Related: keywords[c].Text,
				Overlap: int32(ov[c]), Volume: valueOf(&keywords[c].Volume), CPCMicros: valueOf(&keywords[c].CPCMicros),
				SameIntent: sameIntent(k, c, ov[c]),
			})
		}
	}
	sort.SliceStable(related, func(i, j int) bool {
		if related[i].Keyword != related[j].Keyword {
			return related[i].Keyword < related[j].Keyword
		}
		return related[i].Rank < related[j].Rank
	})

	// Leader clustering: by volume descending, then text ascending.
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(i, j int) bool {
		a, b := keywords[order[i]], keywords[order[j]]
		if va, vb := rankVolume(a.Volume), rankVolume(b.Volume); va != vb {
			return va > vb
		}
		return a.Text < b.Text
	})
	leader := make([]int, n)
	leaderOverlap := make([]int, n)
	for i := range leader {
		leader[i] = -1
	}
	for _, l := range order {
		if leader[l] >= 0 {
			continue
		}
		leader[l] = l
		ov := overlapWith(l)
		leaderOverlap[l] = len(sets[l])
		for c := 0; c < n; c++ {
			if leader[c] < 0 && sameIntent(l, c, ov[c]) {
				leader[c], leaderOverlap[c] = l, ov[c]
			}
		}
	}
	intents := make([]kw.IntentRow, n)
	for i := range keywords {
		intents[i] = kw.IntentRow{Keyword: keywords[i].Text, Intent: keywords[leader[i]].Text, Overlap: int32(leaderOverlap[i])}
	}
	sort.Slice(intents, func(i, j int) bool { return intents[i].Keyword < intents[j].Keyword })
	return related, intents
}
