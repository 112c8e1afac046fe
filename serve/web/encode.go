package web

import (
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/kwdata/kwdata/kw"
)

// The JSON of GET /v1/keyword is written by hand with append calls: it is the
// hot path, and reflection-based encoding costs several times as much. The
// output is byte for byte what encoding/json prints for the same document
// (encode_test.go proves it), including its HTML-safe escaping of <, > and &.

// Limits of the answer: up to 12 trend months and 10 related keywords.
const (
	maxTrend   = 12
	MaxRelated = 10
)

// AppendKeywordJSON appends the GET /v1/keyword document of e to dst.
// country is the upper-case code, updated the data date. Trend and related
// are trimmed here, so the document keeps those limits whatever the index holds.
func AppendKeywordJSON(dst []byte, e *kw.Entry, country, updated string) []byte {
	dst = append(dst, `{"keyword":`...)
	dst = AppendString(dst, e.Keyword)
	dst = append(dst, `,"country":`...)
	dst = AppendString(dst, country)
	dst = append(dst, `,"volume":`...)
	dst = appendOptInt(dst, e.Volume)
	if e.VolumeRange != "" {
		dst = append(dst, `,"volume_range":`...)
		dst = AppendString(dst, e.VolumeRange)
	}
	dst = append(dst, `,"cpc":`...)
	dst = appendOptCents(dst, e.CPCMicros)
	dst = append(dst, `,"competition":`...)
	if e.Competition == nil {
		dst = append(dst, "null"...)
	} else {
		dst = AppendHundredths(dst, CompetitionHundredths(*e.Competition))
	}
	dst = appendChange(dst, `,"yoy":`, `,"yoy_from_zero":true`, e.YoYChange)
	dst = appendChange(dst, `,"three_month":`, `,"three_month_from_zero":true`, e.ThreeMonthChange)
	dst = append(dst, `,"updated":`...)
	dst = AppendString(dst, updated)
	dst = append(dst, `,"intent":`...)
	dst = AppendString(dst, e.Intent)
	dst = append(dst, `,"trend":[`...)
	for i, m := range TrimTrend(e.Trend) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"month":`...)
		dst = AppendString(dst, m.Month)
		dst = append(dst, `,"volume":`...)
		dst = appendOptInt(dst, m.Searches)
		dst = append(dst, '}')
	}
	dst = append(dst, `],"related":[`...)
	related := e.Related
	if len(related) > MaxRelated {
		related = related[:MaxRelated]
	}
	for i := range related {
		rk := &related[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"keyword":`...)
		dst = AppendString(dst, rk.Keyword)
		dst = append(dst, `,"volume":`...)
		dst = appendOptInt(dst, rk.Volume)
		dst = append(dst, `,"cpc":`...)
		dst = appendOptCents(dst, rk.CPCMicros)
		dst = append(dst, `,"overlap":"`...)
		dst = strconv.AppendInt(dst, int64(rk.Overlap), 10)
		dst = append(dst, `/20","same_intent":`...)
		dst = strconv.AppendBool(dst, rk.SameIntent)
		dst = append(dst, '}')
	}
	return append(dst, "]}\n"...)
}

// appendChange appends a percent change field: a number, or null where the
// source gave none. JSON has no infinity, so the planner's "∞" (searches
// rose from zero) is null followed by the field fromZero.
func appendChange(dst []byte, field, fromZero string, v *float64) []byte {
	dst = append(dst, field...)
	switch {
	case v == nil || math.IsNaN(*v) || math.IsInf(*v, -1):
		return append(dst, "null"...)
	case math.IsInf(*v, 1):
		return append(append(dst, "null"...), fromZero...)
	}
	return AppendPercent(dst, *v)
}

// AppendPercent appends a change as encoding/json prints a float64 of at
// most two decimals.
func AppendPercent(dst []byte, v float64) []byte {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.AppendInt(dst, int64(v), 10)
	}
	return strconv.AppendFloat(dst, v, 'f', -1, 64)
}

// appendOptInt appends a number, or null where the source gave none.
func appendOptInt(dst []byte, v *int64) []byte {
	if v == nil {
		return append(dst, "null"...)
	}
	return strconv.AppendInt(dst, *v, 10)
}

// appendOptCents appends micros of USD as dollars and cents, or null.
func appendOptCents(dst []byte, v *int64) []byte {
	if v == nil {
		return append(dst, "null"...)
	}
	return AppendHundredths(dst, MicrosToCents(*v))
}

// TrimTrend returns the last maxTrend months oldest first. The index already
// stores them that way; sorting a copy only guards against an index that
// does not.
func TrimTrend(t []kw.MonthlySearches) []kw.MonthlySearches {
	less := func(a, b kw.MonthlySearches) int {
		switch {
		case a.Month < b.Month:
			return -1
		case a.Month > b.Month:
			return 1
		}
		return 0
	}
	if !slices.IsSortedFunc(t, less) {
		t = slices.Clone(t)
		slices.SortStableFunc(t, less)
	}
	if len(t) > maxTrend {
		t = t[len(t)-maxTrend:]
	}
	return t
}

// MicrosToCents rounds micros of USD to cents, halves away from zero (half
// up for every real price, which is never negative).
func MicrosToCents(m int64) int64 {
	const microsPerCent = kw.MicrosPerUnit / 100
	q, r := m/microsPerCent, m%microsPerCent
	switch {
	case r >= microsPerCent/2:
		q++
	case r <= -microsPerCent/2:
		q--
	}
	return q
}

// CompetitionHundredths rounds a competition value to two decimals, halves
// up. A value that is a decimal half in intent (0.285) but slightly below it
// in binary still rounds up. NaN and infinities, which JSON cannot carry,
// become 0.
func CompetitionHundredths(c float64) int64 {
	x := c * 100
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	const limit = 1 << 50 // far beyond any real value; keeps the int64 exact
	x = max(min(x, limit), -limit)
	f := math.Floor(x)
	if x-f >= 0.5-1e-9 {
		f++
	}
	return int64(f)
}

// AppendHundredths appends v/100 as the shortest JSON number: 123 → 1.23,
// 120 → 1.2, 100 → 1, 0 → 0. encoding/json prints float64(v)/100 the same
// way for every |v| < 2^53.
func AppendHundredths(dst []byte, v int64) []byte {
	u := uint64(v)
	if v < 0 {
		dst = append(dst, '-')
		u = -u
	}
	dst = strconv.AppendUint(dst, u/100, 10)
	switch frac := u % 100; {
	case frac == 0:
	case frac%10 == 0:
		dst = append(dst, '.', byte('0'+frac/10))
	default:
		dst = append(dst, '.', byte('0'+frac/10), byte('0'+frac%10))
	}
	return dst
}

const hexDigits = "0123456789abcdef"

// jsonSafe marks the ASCII bytes that appear in a JSON string unescaped:
// everything printable except the quote, the backslash and the HTML
// characters <, > and &.
var jsonSafe = func() (t [utf8.RuneSelf]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		t[b] = true
	}
	t['"'], t['\\'], t['<'], t['>'], t['&'] = false, false, false, false, false
	return t
}()

// AppendString appends s as a JSON string with encoding/json's escaping:
// short escapes for \b \f \n \r \t, \u00XX for other control bytes and for
// <, > and &, \ufffd for each invalid UTF-8 byte, and \u2028 and \u2029 for
// the two line separators JavaScript does not allow in strings.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if jsonSafe[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
