package sample

import (
	"fmt"
	"math"
	"strconv"
	"time"

	xunicode "golang.org/x/text/encoding/unicode"

	"github.com/kwdata/kwdata/kw"
)

// plannerColumns are the export's columns before the monthly ones, in the
// planner's order.
var plannerColumns = []string{
	"Keyword", "Currency", "Avg. monthly searches", "Three month change", "YoY change",
	"Competition", "Competition (indexed value)", "Top of page bid (low range)",
	"Top of page bid (high range)", "Ad impression share", "Organic average position",
	"Organic impression share", "In Account?", "In Plan?",
}

// monthsBefore returns the first days of the n calendar months before now's
// month, oldest first.
func monthsBefore(now time.Time, n int) []time.Time {
	first := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, now.Location())
	ms := make([]time.Time, n)
	for i := range ms {
		ms[i] = first.AddDate(0, i-n, 0)
	}
	return ms
}

// plannerHeader is the preamble and the header row, in UTF-8 with CRLF line
// ends, as the planner writes them.
func plannerHeader(now time.Time, months []time.Time) []byte {
	var b []byte
	b = append(b, "Keyword Stats "...)
	b = now.AppendFormat(b, "2006-01-02 at 15_04_05")
	b = append(b, "\r\n"...)
	last := months[len(months)-1].AddDate(0, 1, -1)
	b = months[0].AppendFormat(b, "January 2, 2006")
	b = append(b, " - "...)
	b = last.AppendFormat(b, "January 2, 2006")
	b = append(b, "\r\n"...)
	for i, c := range plannerColumns {
		if i > 0 {
			b = append(b, '\t')
		}
		b = append(b, c...)
	}
	for _, m := range months {
		b = append(b, "\tSearches: "...)
		b = m.AppendFormat(b, "Jan 2006")
	}
	return append(b, "\r\n"...)
}

// plannerRow writes one export row for keyword text raw with average
// monthly searches vol. The row's other figures come from the worker's
// current keyword stream.
func (w *worker) plannerRow(b []byte, raw string, vol int64, g *group) []byte {
	rng := w.rng
	r := w.r
	cat := &r.p.voc.cats[r.p.topics[g.topic].cat]

	// Seasonality is the topic's: one peak month and one amplitude.
	th := mix(uint64(g.topic) ^ r.p.seed)
	amp := 0.05 + 0.4*float64(th>>11)/float64(1<<53)
	peak := int(th % 12)
	blank := 0
	if rng.Float64() < shareBlankMonths {
		blank = 1 + rng.IntN(max(len(w.monthly)/2, 1))
	}
	// The phase counts columns, not calendar months, so that Options.Now
	// changes the labels only.
	for i := range r.months {
		d := float64(i-peak) * (2 * math.Pi / 12)
		f := (1 + amp*math.Cos(d)) * math.Exp(0.15*rng.NormFloat64())
		w.monthly[i] = bucket(float64(vol) * f)
		if i < blank {
			w.monthly[i] = -1
		}
	}

	b = append(b, raw...)
	b = append(b, "\tUSD\t"...)
	if rng.Float64() < shareRange {
		b = appendRange(b, vol)
	} else {
		b = appendThousands(b, vol)
	}
	b = append(b, '\t')
	// The planner's three month change is the latest month against the
	// month two before it (real exports: 90 searches after 40 is "125%");
	// its YoY change needs the same month a year earlier, a 13th month the
	// sample does not have, so it states none (" --"), as the series
	// kwdata would compute it from, and the API serves, cannot give one.
	n := len(w.monthly)
	if n >= 3 {
		b = appendChange(b, w.monthly[n-3], w.monthly[n-1])
	}
	b = append(b, '\t')
	b = append(b, " --"...)
	b = append(b, '\t')

	if rng.Float64() >= shareNoComp {
		// Competition rises with the price of clicks.
		idx := int(math.Round(100 * math.Pow(rng.Float64(), 1/(0.5+cat.cpc/2))))
		switch {
		case idx <= 33:
			b = append(b, "Low"...)
		case idx <= 66:
			b = append(b, "Medium"...)
		default:
			b = append(b, "High"...)
		}
		b = append(b, '\t')
		b = strconv.AppendInt(b, int64(idx), 10)
	} else {
		b = append(b, '\t')
	}
	b = append(b, '\t')

	if rng.Float64() >= shareNoBid {
		low := max(int64(math.Round(100*cat.cpc*math.Exp(0.6*rng.NormFloat64())*0.4)), 1)
		high := low + int64(float64(low)*(1+2*rng.Float64())) + 1
		b = appendCents(b, low)
		b = append(b, '\t')
		b = appendCents(b, high)
	} else {
		b = append(b, '\t')
	}
	// Ad and organic shares are blank without a linked account.
	b = append(b, "\t\t\t\tN\tN"...)
	for _, m := range w.monthly {
		b = append(b, '\t')
		if m >= 0 {
			b = appendThousands(b, m)
		}
	}
	return append(b, "\r\n"...)
}

// appendThousands writes v with commas between groups of three digits.
func appendThousands(b []byte, v int64) []byte {
	if v < 1000 {
		return strconv.AppendInt(b, v, 10)
	}
	b = appendThousands(b, v/1000)
	r := v % 1000
	return append(b, ',', byte('0'+r/100), byte('0'+r/10%10), byte('0'+r%10))
}

// appendRange writes the planner's range for v ("1K – 10K"), the decade it
// falls in.
func appendRange(b []byte, v int64) []byte {
	switch {
	case v < 100:
		return append(b, "10 – 100"...)
	case v < 1000:
		return append(b, "100 – 1K"...)
	case v < 10000:
		return append(b, "1K – 10K"...)
	case v < 100000:
		return append(b, "10K – 100K"...)
	case v < 1000000:
		return append(b, "100K – 1M"...)
	}
	return append(b, "1M – 10M"...)
}

// appendChange writes the change from a to b as the planner does ("-18%",
// "∞" from zero), nothing where a month is blank (negative).
func appendChange(dst []byte, a, b int64) []byte {
	if a < 0 || b < 0 {
		return dst
	}
	pct := kw.PercentChange(&a, &b)
	if math.IsInf(*pct, 1) {
		return append(dst, "∞"...)
	}
	return append(strconv.AppendInt(dst, int64(*pct), 10), '%')
}

// appendCents writes an amount of cents as "1.23".
func appendCents(b []byte, c int64) []byte {
	b = strconv.AppendInt(b, c/100, 10)
	return append(b, '.', byte('0'+c/10%10), byte('0'+c%10))
}

// encodeUTF16 encodes UTF-8 text as UTF-16LE without a byte order mark.
func encodeUTF16(b []byte) ([]byte, error) {
	out, err := xunicode.UTF16(xunicode.LittleEndian, xunicode.IgnoreBOM).NewEncoder().Bytes(b)
	if err != nil {
		return nil, fmt.Errorf("cannot encode planner header as UTF-16: %w", err)
	}
	return out, nil
}
