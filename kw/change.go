package kw

import (
	"math"
	"slices"
)

// Changes computes the planner's "YoY change" and "Three month change" from
// a monthly series (oldest first), the way the planner states them: the
// latest month against the same month a year earlier, and against the month
// two before it (the last three months' first), in whole percent rounded
// half away from zero; +Inf when the earlier month had no searches and the
// latest has some. A change is nil when the series lacks either month or
// either month has no value: a series of 12 months has no YoY change.
func Changes(monthly []MonthlySearches) (yoy, threeMonth *float64) {
	if len(monthly) == 0 {
		return nil, nil
	}
	if !slices.IsSortedFunc(monthly, func(a, b MonthlySearches) int { return cmpString(a.Month, b.Month) }) {
		monthly = slices.Clone(monthly)
		slices.SortStableFunc(monthly, func(a, b MonthlySearches) int { return cmpString(a.Month, b.Month) })
	}
	last := monthly[len(monthly)-1]
	lm, ok := monthNumber(last.Month)
	if !ok || last.Searches == nil {
		return nil, nil
	}
	find := func(m int) *int64 {
		for i := len(monthly) - 1; i >= 0; i-- {
			if n, ok := monthNumber(monthly[i].Month); ok && n == m {
				return monthly[i].Searches
			}
		}
		return nil
	}
	return PercentChange(find(lm-12), last.Searches), PercentChange(find(lm-2), last.Searches)
}

// PercentChange is the change from before to now in whole percent, rounded
// half away from zero; +Inf when before is 0 and now is not, nil when either
// is missing.
func PercentChange(before, now *int64) *float64 {
	if before == nil || now == nil || *before < 0 || *now < 0 {
		return nil
	}
	b, n := *before, *now
	if b == 0 {
		if n == 0 {
			return Ptr(0.0)
		}
		return Ptr(math.Inf(1))
	}
	// Integers, so 29% of 90/70 does not depend on float rounding.
	num := (n - b) * 100
	q, r := num/b, num%b
	if 2*abs(r) >= b {
		if num < 0 {
			q--
		} else {
			q++
		}
	}
	return Ptr(float64(q))
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// monthNumber turns "YYYY-MM" into year*12+month-1.
func monthNumber(s string) (int, bool) {
	if len(s) != 7 || s[4] != '-' {
		return 0, false
	}
	n := 0
	for i, c := range []byte(s) {
		if i == 4 {
			continue
		}
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	y, m := n/100, n%100
	if m < 1 || m > 12 {
		return 0, false
	}
	return y*12 + m - 1, true
}
