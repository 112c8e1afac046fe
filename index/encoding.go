package index

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/kwdata/kwdata/kw"
)

// ValueVersion is the first byte of every value EncodeEntry writes. A
// reader refuses any version but this, valueVersion2 and valueVersion1
// (older layouts, whose builds stay readable until the next build) rather
// than guess at its layout.
const ValueVersion = 3

// valueVersion1 held every number, missing or not, as a plain value.
const valueVersion1 = 1

// valueVersion2 had no YoY and three month changes.
const valueVersion2 = 2

// Bounds of a value. They are the API's limits (12 trend months, 10
// related keywords), and they keep DecodeEntry from allocating more than a
// small multiple of its input whatever bytes it is given.
const (
	maxTrend   = 12
	maxRelated = 10
)

// Competition levels have a one-byte code; any other level text follows
// levelOther as a string.
const (
	levelNone   = 0
	levelLow    = 1
	levelMedium = 2
	levelHigh   = 3
	levelOther  = 4
)

// Month numbers are year*12 + month-1, so consecutive months differ by one
// and a trend is stored as a first month and small deltas.
const maxMonth = 9999*12 + 11

// EncodeEntry appends the value encoding of e to dst and returns the
// extended slice. Version 3 is, in order:
//
//	version   byte 3
//	volume    opt
//	range     string (uvarint length, bytes)
//	cpc       opt micros
//	comp      uvarint: 0 missing, else hundredths+1 (competition 0.87 is 88;
//	          hundredths clamped to 0..65534)
//	level     byte: 0 "", 1 LOW, 2 MEDIUM, 3 HIGH, 4 followed by a string
//	yoy       change
//	3 month   change
//	intent    string; empty when the intent is the keyword itself
//	trend     uvarint n (≤ 12); then the first month as uvarint year*12+month-1
//	          and opt searches; then n-1 times a uvarint month delta (≥ 1)
//	          and opt searches
//	related   uvarint n (≤ 10); n times: keyword string, volume opt,
//	          cpc opt, uvarint overlap<<1 | same_intent
//
// where opt is a number that may be missing: uvarint 0 when it is, else
// the zig-zag encoding of the number plus one, and change is a percent
// change: uvarint 0 when missing, 1 for +Inf (rose from zero), else the
// zig-zag encoding of the change in hundredths of a percent plus two.
// Version 2 was the same without the two changes; version 1 also had every
// opt a plain varint and comp plain hundredths.
//
// Keyword and Country are not stored: they are the key. Only the last 12
// trend months and the first 10 related keywords are kept, and a month that
// is not "YYYY-MM" or not later than the one before it is dropped.
func EncodeEntry(dst []byte, e *kw.Entry) []byte {
	dst = append(dst, ValueVersion)
	dst = appendOpt(dst, e.Volume)
	dst = appendString(dst, e.VolumeRange)
	dst = appendOpt(dst, e.CPCMicros)
	if e.Competition == nil || math.IsNaN(*e.Competition) {
		dst = binary.AppendUvarint(dst, 0)
	} else {
		dst = binary.AppendUvarint(dst, uint64(competitionHundredths(*e.Competition))+1)
	}
	switch e.CompetitionLevel {
	case "":
		dst = append(dst, levelNone)
	case "LOW":
		dst = append(dst, levelLow)
	case "MEDIUM":
		dst = append(dst, levelMedium)
	case "HIGH":
		dst = append(dst, levelHigh)
	default:
		dst = append(dst, levelOther)
		dst = appendString(dst, e.CompetitionLevel)
	}
	dst = appendChange(dst, e.YoYChange)
	dst = appendChange(dst, e.ThreeMonthChange)
	if e.Intent == e.Keyword {
		dst = appendString(dst, "")
	} else {
		dst = appendString(dst, e.Intent)
	}
	dst = appendTrend(dst, e.Trend)
	rel := e.Related
	if len(rel) > maxRelated {
		rel = rel[:maxRelated]
	}
	dst = binary.AppendUvarint(dst, uint64(len(rel)))
	for i := range rel {
		dst = appendRelated(dst, &rel[i])
	}
	return dst
}

// encodeEntryWithRelated is EncodeEntry with the related section already
// encoded (a count and that many appendRelated entries), as the build's
// related stream produces it.
func encodeEntryWithRelated(dst []byte, e *kw.Entry, related []byte) []byte {
	rel := e.Related
	e.Related = nil
	dst = EncodeEntry(dst, e)
	e.Related = rel
	return append(dst[:len(dst)-1], related...) // replace the empty count
}

// appendRelated appends one related keyword of the related section.
func appendRelated(dst []byte, r *kw.RelatedKeyword) []byte {
	dst = appendString(dst, r.Keyword)
	dst = appendOpt(dst, r.Volume)
	dst = appendOpt(dst, r.CPCMicros)
	bits := uint64(uint32(r.Overlap)) << 1
	if r.SameIntent {
		bits |= 1
	}
	return binary.AppendUvarint(dst, bits)
}

// appendTrend writes the last maxTrend valid, strictly ascending months.
func appendTrend(dst []byte, trend []kw.MonthlySearches) []byte {
	// Pick the months first: the count precedes them.
	var months [maxTrend]int
	var idx [maxTrend]int
	n, last := 0, -1
	for i := range trend {
		m, ok := parseMonth(trend[i].Month)
		if !ok || m <= last {
			continue
		}
		last = m
		if n == maxTrend {
			copy(months[:], months[1:])
			copy(idx[:], idx[1:])
			n--
		}
		months[n], idx[n] = m, i
		n++
	}
	dst = binary.AppendUvarint(dst, uint64(n))
	prev := 0
	for i := 0; i < n; i++ {
		if i == 0 {
			dst = binary.AppendUvarint(dst, uint64(months[0]))
		} else {
			dst = binary.AppendUvarint(dst, uint64(months[i]-prev))
		}
		prev = months[i]
		dst = appendOpt(dst, trend[idx[i]].Searches)
	}
	return dst
}

// appendOpt appends a number that may be missing: 0 for nil, else its
// zig-zag encoding plus one. The least int64, whose code would wrap to 0,
// is stored as the next one: no count or amount comes near it.
func appendOpt(dst []byte, v *int64) []byte {
	if v == nil {
		return binary.AppendUvarint(dst, 0)
	}
	x := max(*v, math.MinInt64+1)
	return binary.AppendUvarint(dst, uint64(x<<1^x>>63)+1)
}

// maxChange bounds a change in hundredths of a percent: far beyond any
// real one (a billion percent), and small enough that a float64 holds it
// exactly.
const maxChange = 1e11

// appendChange appends a percent change: 0 missing, 1 +Inf, else its
// zig-zag hundredths plus two. NaN and -Inf, which no change can be, are
// missing; finite values are clamped to ±maxChange.
func appendChange(dst []byte, v *float64) []byte {
	switch {
	case v == nil || math.IsNaN(*v) || math.IsInf(*v, -1):
		return binary.AppendUvarint(dst, 0)
	case math.IsInf(*v, 1):
		return binary.AppendUvarint(dst, 1)
	}
	x := int64(max(min(math.Round(*v*100), maxChange), -maxChange))
	return binary.AppendUvarint(dst, uint64(x<<1^x>>63)+2)
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// competitionHundredths rounds a 0.00–1.00 competition to hundredths, the
// precision the planner gives it in (an index 0–100).
func competitionHundredths(c float64) uint16 {
	h := math.Round(c * 100)
	switch {
	case !(h > 0): // also NaN
		return 0
	case h > math.MaxUint16-1:
		return math.MaxUint16 - 1
	}
	return uint16(h)
}

// parseMonth turns "YYYY-MM" into year*12+month-1.
func parseMonth(s string) (int, bool) {
	if len(s) != 7 || s[4] != '-' {
		return 0, false
	}
	y, m := 0, 0
	for i := 0; i < 4; i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		y = y*10 + int(c-'0')
	}
	for i := 5; i < 7; i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		m = m*10 + int(c-'0')
	}
	if m < 1 || m > 12 {
		return 0, false
	}
	return y*12 + m - 1, true
}

// Month names of the years a trend nearly always falls in, made once so
// that decoding a trend allocates no strings.
const firstCachedYear, lastCachedYear = 2000, 2099

var monthNames = func() []string {
	names := make([]string, 0, (lastCachedYear-firstCachedYear+1)*12)
	for y := firstCachedYear; y <= lastCachedYear; y++ {
		for m := 1; m <= 12; m++ {
			names = append(names, fmt.Sprintf("%04d-%02d", y, m))
		}
	}
	return names
}()

func monthName(n int) string {
	if i := n - firstCachedYear*12; i >= 0 && i < len(monthNames) {
		return monthNames[i]
	}
	y, m := n/12, n%12+1
	b := [7]byte{byte('0' + y/1000), byte('0' + y/100%10), byte('0' + y/10%10), byte('0' + y%10),
		'-', byte('0' + m/10), byte('0' + m%10)}
	return string(b[:])
}

// errCorrupt is wrapped by every DecodeEntry error.
var errCorrupt = errors.New("corrupt index value")

// DecodeEntry decodes a value EncodeEntry wrote. Keyword and Country are
// left empty (they are the key), and so is Intent when the keyword is its
// own intent leader; Store.Lookup fills all three. The strings of the entry
// share one copy of b, so b may be reused as soon as DecodeEntry returns.
func DecodeEntry(b []byte) (kw.Entry, error) {
	var e kw.Entry
	if len(b) == 0 {
		return e, fmt.Errorf("%w: empty", errCorrupt)
	}
	if b[0] != ValueVersion && b[0] != valueVersion2 && b[0] != valueVersion1 {
		return e, fmt.Errorf("%w: unknown format version %d (this build reads %d to %d)", errCorrupt, b[0], valueVersion1, ValueVersion)
	}
	// The numbers of one entry share one allocation.
	nums := new(entryNumbers)
	d := decoder{s: string(b), off: 1, v1: b[0] == valueVersion1, nums: nums.ints[:0]}
	e.Volume = d.opt()
	e.VolumeRange = d.str()
	e.CPCMicros = d.opt()
	switch h := d.uvarint(); {
	case h > math.MaxUint16:
		d.fail("competition out of range")
	case d.v1:
		nums.comp = float64(h) / 100
		e.Competition = &nums.comp
	case h > 0:
		nums.comp = float64(h-1) / 100
		e.Competition = &nums.comp
	}
	switch d.byte() {
	case levelNone:
	case levelLow:
		e.CompetitionLevel = "LOW"
	case levelMedium:
		e.CompetitionLevel = "MEDIUM"
	case levelHigh:
		e.CompetitionLevel = "HIGH"
	case levelOther:
		e.CompetitionLevel = d.str()
	default:
		d.fail("unknown competition level code")
	}
	if b[0] >= 3 {
		e.YoYChange = d.change(&nums.changes[0])
		e.ThreeMonthChange = d.change(&nums.changes[1])
	}
	e.Intent = d.str()
	if n := d.count(maxTrend, 2); n > 0 {
		e.Trend = make([]kw.MonthlySearches, n)
		m := 0
		for i := range e.Trend {
			step := d.uvarint()
			if i > 0 && step == 0 {
				d.fail("trend months not ascending")
			}
			if step > maxMonth || uint64(m)+step > maxMonth {
				d.fail("trend month out of range")
				break
			}
			m += int(step)
			e.Trend[i] = kw.MonthlySearches{Month: monthName(m), Searches: d.opt()}
		}
	}
	if n := d.count(maxRelated, 4); n > 0 {
		e.Related = make([]kw.RelatedKeyword, n)
		for i := range e.Related {
			r := &e.Related[i]
			r.Keyword = d.str()
			r.Volume = d.opt()
			r.CPCMicros = d.opt()
			bits := d.uvarint()
			if bits>>1 > math.MaxUint32 {
				d.fail("overlap out of range")
			}
			r.Overlap = int32(uint32(bits >> 1))
			r.SameIntent = bits&1 == 1
		}
	}
	if d.err == nil && d.off != len(d.s) {
		d.fail("trailing bytes")
	}
	if d.err != nil {
		return kw.Entry{}, d.err
	}
	return e, nil
}

// entryNumbers holds the numbers of one decoded entry: every number a value
// can hold, so that their pointers cost one allocation.
type entryNumbers struct {
	ints    [2 + maxTrend + 2*maxRelated]int64
	comp    float64
	changes [2]float64
}

// decoder reads a value; the first error sticks and later reads return
// zero values, so DecodeEntry checks once at the end.
type decoder struct {
	s    string
	off  int
	err  error
	v1   bool    // the value is version 1: numbers are never missing
	nums []int64 // where opt puts the numbers it returns
}

// opt reads a number that may be missing.
func (d *decoder) opt() *int64 {
	var v int64
	if d.v1 {
		v = d.varint()
	} else {
		u := d.uvarint()
		if u == 0 {
			return nil
		}
		u--
		v = int64(u>>1) ^ -int64(u&1)
	}
	if len(d.nums) == cap(d.nums) {
		d.fail("more numbers than a value holds")
		return nil
	}
	d.nums = append(d.nums, v)
	return &d.nums[len(d.nums)-1]
}

// change reads a percent change into *dst and returns dst, or nil when
// the value has none.
func (d *decoder) change(dst *float64) *float64 {
	switch u := d.uvarint(); {
	case u == 0:
		return nil
	case u == 1:
		*dst = math.Inf(1)
	default:
		u -= 2
		x := int64(u>>1) ^ -int64(u&1)
		if x > maxChange || x < -maxChange {
			d.fail("change out of range")
			return nil
		}
		*dst = float64(x) / 100
	}
	return dst
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s at byte %d", errCorrupt, what, d.off)
	}
	d.off = len(d.s)
}

func (d *decoder) uvarint() uint64 {
	// Most numbers of a value (lengths, months, overlaps) fit in one byte.
	if d.off < len(d.s) && d.s[d.off] < 0x80 {
		d.off++
		return uint64(d.s[d.off-1])
	}
	var x uint64
	var s uint
	for i := 0; i < binary.MaxVarintLen64; i++ {
		if d.off >= len(d.s) {
			d.fail("truncated number")
			return 0
		}
		c := d.s[d.off]
		d.off++
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				d.fail("number overflows 64 bits")
				return 0
			}
			return x | uint64(c)<<s
		}
		x |= uint64(c&0x7f) << s
		s += 7
	}
	d.fail("number overflows 64 bits")
	return 0
}

func (d *decoder) varint() int64 {
	ux := d.uvarint()
	x := int64(ux >> 1)
	if ux&1 != 0 {
		x = ^x
	}
	return x
}

func (d *decoder) byte() byte {
	if d.off >= len(d.s) {
		d.fail("truncated")
		return 0
	}
	c := d.s[d.off]
	d.off++
	return c
}

func (d *decoder) str() string {
	n := d.uvarint()
	if n > uint64(len(d.s)-d.off) {
		d.fail("string longer than the value")
		return ""
	}
	s := d.s[d.off : d.off+int(n)]
	d.off += int(n)
	return s
}

// count reads an element count, refusing more than max or more than the
// remaining bytes could hold at minBytes each, so that no input makes
// DecodeEntry allocate beyond its size.
func (d *decoder) count(max int, minBytes int) int {
	n := d.uvarint()
	if n > uint64(max) || n*uint64(minBytes) > uint64(len(d.s)-d.off) {
		d.fail("element count out of range")
		return 0
	}
	return int(n)
}
