package kw

import (
	"math"
	"testing"
)

func TestChanges(t *testing.T) {
	series := func(start string, vals ...int64) []MonthlySearches {
		m, _ := monthNumber(start)
		out := make([]MonthlySearches, len(vals))
		for i, v := range vals {
			n := m + i
			out[i] = MonthlySearches{Month: monthName(n)}
			if v >= 0 {
				out[i].Searches = Ptr(v)
			}
		}
		return out
	}
	inf := math.Inf(1)
	none := math.NaN() // stands for nil in the table
	tests := []struct {
		name     string
		monthly  []MonthlySearches
		yoy, tri float64
	}{
		// The planner export's "taller mecanico": 125% over three months.
		{"planner row", series("2020-10", 30, 40, 30, 40, 20, 30, 30, 140, 50, 40, 50, 90), none, 125},
		{"thirteen months", series("2020-09", 70, 30, 40, 30, 40, 20, 30, 30, 140, 50, 40, 50, 90), 29, 125},
		{"from zero", series("2021-01", 0, 5, 10), none, inf},
		{"zero to zero", series("2021-01", 0, 5, 0), none, 0},
		{"fall", series("2021-01", 100, 5, 10), none, -90},
		{"half rounds away", series("2021-01", 8, 0, 9), none, 13},
		{"negative half", series("2021-01", 8, 0, 7), none, -13},
		{"missing latest", series("2021-01", 8, 0, -1), none, none},
		{"missing earlier", series("2021-01", -1, 0, 7), none, none},
		{"too short", series("2021-01", 1, 2), none, none},
		{"empty", nil, none, none},
		{"unsorted", []MonthlySearches{{Month: "2021-03", Searches: Ptr[int64](20)}, {Month: "2021-01", Searches: Ptr[int64](10)}}, none, 100},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			yoy, tri := Changes(tc.monthly)
			check := func(what string, got *float64, want float64) {
				t.Helper()
				switch {
				case math.IsNaN(want) && got != nil:
					t.Errorf("%s = %v, want nil", what, *got)
				case !math.IsNaN(want) && got == nil:
					t.Errorf("%s = nil, want %v", what, want)
				case got != nil && *got != want:
					t.Errorf("%s = %v, want %v", what, *got, want)
				}
			}
			check("yoy", yoy, tc.yoy)
			check("three_month", tri, tc.tri)
		})
	}
}

func monthName(n int) string {
	y, m := n/12, n%12+1
	return string([]byte{byte('0' + y/1000), byte('0' + y/100%10), byte('0' + y/10%10), byte('0' + y%10), '-', byte('0' + m/10), byte('0' + m%10)})
}
