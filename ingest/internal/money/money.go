// Package money converts amounts in micros of a currency to USD micros
// exactly, for every importer (planner exports and the Google Ads API).
package money

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// Rate is a USD exchange rate held as an exact decimal fraction num/den,
// so that converting an amount rounds exactly once.
type Rate struct{ num, den uint64 }

// NewRate converts a positive rate (USD per unit, 1.08 for EUR) to the
// decimal it prints as: 1.08 is exactly 108/100, not the nearest float64.
func NewRate(f float64) (Rate, error) {
	s := strconv.FormatFloat(f, 'f', -1, 64)
	whole, frac, _ := strings.Cut(s, ".")
	num, err := strconv.ParseUint(whole+frac, 10, 64)
	if err != nil || len(frac) > 19 || num == 0 {
		return Rate{}, fmt.Errorf("rate %v is out of range", f)
	}
	den := uint64(1)
	for range len(frac) {
		den *= 10
	}
	return Rate{num, den}, nil
}

// Convert returns micros*rate rounded half up, or false on overflow or a
// negative amount.
func (r Rate) Convert(micros int64) (int64, bool) {
	if micros < 0 {
		return 0, false
	}
	hi, lo := bits.Mul64(uint64(micros), r.num)
	lo, carry := bits.Add64(lo, r.den/2, 0)
	hi += carry
	if hi >= r.den {
		return 0, false
	}
	q, _ := bits.Div64(hi, lo, r.den)
	if q > math.MaxInt64 {
		return 0, false
	}
	return int64(q), true
}
