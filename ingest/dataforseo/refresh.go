package dataforseo

import (
	"sort"
	"time"
)

// PickRefresh returns the keywords whose SERPs a run should fetch, at most
// budget of them: first every keyword without an entry in lastFetched (or
// with a zero time), by keyword text, then the rest from the oldest to the
// newest, ties by keyword text. lastFetched holds, per keyword, the later
// of its newest SERP and its last attempt (Attempts), so that a keyword
// whose task keeps failing waits its turn like one that was fetched. Duplicates in keywords count once. It
// is pure and deterministic; keywords are compared as given, so pass
// normalized keywords. A budget ≤ 0 picks nothing.
func PickRefresh(keywords []string, lastFetched map[string]time.Time, budget int) []string {
	if budget <= 0 {
		return nil
	}
	seen := make(map[string]bool, len(keywords))
	uniq := make([]string, 0, len(keywords))
	for _, k := range keywords {
		if !seen[k] {
			seen[k] = true
			uniq = append(uniq, k)
		}
	}
	sort.Slice(uniq, func(i, j int) bool {
		ti, tj := lastFetched[uniq[i]], lastFetched[uniq[j]]
		if !ti.Equal(tj) {
			// The zero time sorts first: never fetched.
			return ti.Before(tj)
		}
		return uniq[i] < uniq[j]
	})
	if len(uniq) > budget {
		uniq = uniq[:budget]
	}
	return uniq
}
