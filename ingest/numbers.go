package ingest

import (
	"errors"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Numbers in planner exports are English-formatted decimal text: digits,
// optionally grouped in threes by commas or spaces, optionally a point and
// a fraction. They are parsed exactly, in integers, so that "1.23" is
// 1_230_000 micros and never 1_229_999.

// decimal is a parsed non-negative decimal number.
type decimal struct {
	whole uint64 // integer part
	frac  string // fraction digits, possibly empty
}

var errNotNumber = errors.New("not a number")

// maxWholeDigits keeps whole*10^6 inside int64.
const maxWholeDigits = 12

// isGroupSep reports whether r may separate groups of three digits: a
// comma, or a space, no-break space (U+00A0) or narrow no-break space
// (U+202F), which locales and spreadsheets put there.
func isGroupSep(r rune) bool {
	return r == ',' || r == ' ' || r == '\u00A0' || r == '\u202F'
}

// parseDecimal parses "1234", "1,234", "1 234", "1,234.56" or ".5". A
// separator must separate groups of exactly three digits, and one number
// uses one kind of separator, so "1,23" (a decimal comma) and "1,234 567"
// are refused rather than guessed at.
func parseDecimal(s string) (decimal, error) {
	whole, frac, hasPoint := strings.Cut(s, ".")
	if hasPoint && frac == "" || whole == "" && frac == "" {
		return decimal{}, errNotNumber
	}
	for i := 0; i < len(frac); i++ {
		if frac[i] < '0' || frac[i] > '9' {
			return decimal{}, errNotNumber
		}
	}
	var d decimal
	var sep rune           // the group separator, once one is seen
	digits, group := 0, -1 // group counts digits since the last separator; -1 before any
	for _, c := range whole {
		switch {
		case c >= '0' && c <= '9':
			digits++
			if digits > maxWholeDigits {
				return decimal{}, errors.New("number is too large")
			}
			d.whole = d.whole*10 + uint64(c-'0')
			if group >= 0 {
				group++
			}
		case isGroupSep(c) && (sep == 0 || c == sep):
			if digits == 0 || (group >= 0 && group != 3) || (group < 0 && digits > 3) {
				return decimal{}, errNotNumber
			}
			sep, group = c, 0
		default:
			return decimal{}, errNotNumber
		}
	}
	if group >= 0 && group != 3 {
		return decimal{}, errNotNumber
	}
	d.frac = frac
	return d, nil
}

// scaled returns d * 10^scale, rounded half up (scale ≤ 6).
func (d decimal) scaled(scale int) int64 {
	v := int64(d.whole)
	for i := 0; i < scale; i++ {
		v *= 10
		if i < len(d.frac) {
			v += int64(d.frac[i] - '0')
		}
	}
	if len(d.frac) > scale && d.frac[scale] >= '5' {
		v++
	}
	return v
}

// trimUSD removes the marks of a USD amount: a leading "$" or "US$" and a
// trailing " USD". marked says whether it had any.
func trimUSD(s string) (amount string, marked bool) {
	if t, ok := strings.CutPrefix(s, "US$"); ok {
		s, marked = t, true
	} else if t, ok := strings.CutPrefix(s, "$"); ok {
		s, marked = t, true
	}
	if t, ok := strings.CutSuffix(s, "USD"); ok && t != strings.TrimRightFunc(t, unicode.IsSpace) {
		s, marked = strings.TrimRightFunc(t, unicode.IsSpace), true
	}
	return s, marked
}

// parseMicros parses an amount of money into micros of its currency.
func parseMicros(s string) (int64, error) {
	d, err := parseDecimal(s)
	if err != nil {
		return 0, err
	}
	return d.scaled(6), nil
}

// parseCount parses a whole count that may carry a K, M or B suffix
// ("1,200", "1K", "1.5M") or be written in float notation ("5000000.0",
// "1.74483905E9", as spreadsheets re-save exports); the value must come out
// whole.
func parseCount(s string) (int64, error) {
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		t, err := expandExponent(s[:i], s[i+1:])
		if err != nil {
			return 0, err
		}
		s = t
	}
	mult, digits := uint64(1), 0
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 'k', 'K':
			mult, digits = 1e3, 3
		case 'm', 'M':
			mult, digits = 1e6, 6
		case 'b', 'B':
			mult, digits = 1e9, 9
		}
		if mult > 1 {
			s = strings.TrimSpace(s[:n-1])
		}
	}
	d, err := parseDecimal(s)
	if err != nil {
		return 0, err
	}
	frac := strings.TrimRight(d.frac, "0")
	if len(frac) > digits {
		return 0, errors.New("not a whole number")
	}
	hi, v := bits.Mul64(d.whole, mult)
	if hi != 0 || v > math.MaxInt64/2 {
		return 0, errors.New("number is too large")
	}
	if frac != "" {
		f, _ := strconv.ParseUint(frac, 10, 64) // at most 9 digits
		for i := len(frac); i < digits; i++ {
			f *= 10
		}
		v += f
	}
	return int64(v), nil
}

// expandExponent writes mantissa×10^exp as plain decimal text ("1.5", "3"
// → "1500"), exactly: the mantissa is plain digits with an optional point,
// and exp a small signed integer.
func expandExponent(mantissa, exp string) (string, error) {
	e, err := strconv.Atoi(exp)
	if err != nil || e < -maxWholeDigits || e > maxWholeDigits {
		return "", errNotNumber
	}
	whole, frac, _ := strings.Cut(mantissa, ".")
	digits := whole + frac
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return "", errNotNumber
	}
	point := len(whole) + e // position of the point in digits
	switch {
	case point <= 0:
		return "0." + strings.Repeat("0", -point) + digits, nil
	case point >= len(digits):
		return digits + strings.Repeat("0", point-len(digits)), nil
	default:
		return digits[:point] + "." + digits[point:], nil
	}
}

// rangeDashes separate the bounds of a volume range ("1K – 10K").
const rangeDashes = "–—-"

// parseVolume parses average monthly searches: a count, or a range whose
// lower bound is returned with isRange set.
func parseVolume(s string) (v int64, isRange bool, err error) {
	i := strings.IndexAny(s, rangeDashes)
	if i < 0 {
		v, err = parseCount(s)
		return v, false, err
	}
	lo := strings.TrimSpace(s[:i])
	_, size := utf8.DecodeRuneInString(s[i:])
	hi := strings.TrimSpace(s[i+size:])
	if lo == "" || hi == "" {
		return 0, false, errNotNumber
	}
	if v, err = parseCount(lo); err != nil {
		return 0, false, err
	}
	up, err := parseCount(hi)
	if err != nil {
		return 0, false, err
	}
	if up < v {
		return 0, false, errors.New("range ends below its start")
	}
	return v, true, nil
}
