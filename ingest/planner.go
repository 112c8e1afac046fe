package ingest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/kwdata/kwdata/ingest/internal/money"
	"github.com/kwdata/kwdata/kw"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"
)

// SourcePlanner is the source of keyword records read from planner exports.
const SourcePlanner = "planner-csv"

// Limits of the planner reader. The real preamble is two lines and a row a
// few hundred bytes; the limits only stop a wrong file from being read
// whole before it is refused.
const (
	maxPreambleLines = 100
	maxPlannerLine   = 1 << 20
)

// plannerFormat is the FormatError of a file that is no planner export.
func plannerFormat(name string) *FormatError {
	return &FormatError{File: name, Format: "a Keyword Planner export",
		Expected: `a header row starting with "Keyword" (tab-separated, UTF-16 or UTF-8)`}
}

// Planner column names, compared case-insensitively after trimming.
const (
	colKeyword          = "Keyword"
	colCurrency         = "Currency"
	colVolume           = "Avg. monthly searches"
	colCompetition      = "Competition"
	colCompetitionIndex = "Competition (indexed value)"
	colBidLow           = "Top of page bid (low range)"
	colBidHigh          = "Top of page bid (high range)"
	colAvgCPC           = "Avg. CPC"  // older exports; preferred over the bid midpoint
	monthPrefix         = "Searches:" // then " Mon YYYY", the space optional
)

// plannerColumns maps the fields to their column index (-1 when absent).
type plannerColumns struct {
	names                                                   []string // header cells as written
	currency, volume, level, index, bidLow, bidHigh, avgCPC int
	months                                                  []monthColumn // oldest first
}

type monthColumn struct {
	col   int
	month string // "YYYY-MM"
}

func mapColumns(header []string) (plannerColumns, []string) {
	c := plannerColumns{names: header}
	want := []struct {
		name string
		idx  *int
	}{
		{colCurrency, &c.currency}, {colVolume, &c.volume}, {colCompetition, &c.level},
		{colCompetitionIndex, &c.index}, {colBidLow, &c.bidLow}, {colBidHigh, &c.bidHigh},
		{colAvgCPC, &c.avgCPC},
	}
	for _, w := range want {
		*w.idx = -1
	}
	seen := map[string]bool{}
	for i, h := range header {
		h = strings.TrimSpace(h)
		for _, w := range want {
			if *w.idx < 0 && strings.EqualFold(h, w.name) {
				*w.idx = i
			}
		}
		if len(h) > len(monthPrefix) && strings.EqualFold(h[:len(monthPrefix)], monthPrefix) {
			t, err := time.Parse("Jan 2006", strings.TrimSpace(h[len(monthPrefix):]))
			if m := t.Format("2006-01"); err == nil && !seen[m] {
				seen[m] = true
				c.months = append(c.months, monthColumn{col: i, month: m})
			}
		}
	}
	sort.Slice(c.months, func(i, j int) bool { return c.months[i].month < c.months[j].month })
	var missing []string
	for _, w := range want {
		if *w.idx < 0 && w.name != colAvgCPC {
			missing = append(missing, w.name)
		}
	}
	if len(c.months) == 0 {
		missing = append(missing, monthPrefix+" Mon YYYY")
	}
	return c, missing
}

// headerRow reports whether line is the header row, and its separator: tab,
// or comma when the row is comma-separated.
func headerRow(line string) ([]string, byte, bool) {
	line = strings.TrimPrefix(line, "\uFEFF")
	for _, sep := range []byte{'\t', ','} {
		cells := splitCells(line, sep, nil)
		if strings.EqualFold(strings.TrimSpace(cells[0]), colKeyword) {
			return cells, sep, true
		}
	}
	return nil, 0, false
}

// splitCells splits a line at sep. A cell that starts with a double quote
// is quoted: "" inside it is one quote, and it ends at the next lone quote
// (text between that and the separator is kept). Cells never span lines;
// an unterminated quote runs to the end of the line.
func splitCells(s string, sep byte, out []string) []string {
	out = out[:0]
	for {
		if len(s) > 0 && s[0] == '"' {
			cell, rest, ok := unquote(s, sep)
			out = append(out, cell)
			if !ok {
				return out
			}
			s = rest
			continue
		}
		i := strings.IndexByte(s, sep)
		if i < 0 {
			return append(out, s)
		}
		out = append(out, s[:i])
		s = s[i+1:]
	}
}

// unquote reads the quoted cell at the start of s; rest follows its
// separator, and ok is false at the end of the line.
func unquote(s string, sep byte) (cell, rest string, ok bool) {
	var b strings.Builder
	i := 1
	for {
		j := strings.IndexByte(s[i:], '"')
		if j < 0 { // unterminated
			if b.Len() == 0 {
				return s[i:], "", false
			}
			b.WriteString(s[i:])
			return b.String(), "", false
		}
		j += i
		if j+1 < len(s) && s[j+1] == '"' {
			b.WriteString(s[i : j+1])
			i = j + 2
			continue
		}
		if b.Len() == 0 {
			cell = s[i:j]
		} else {
			b.WriteString(s[i:j])
			cell = b.String()
		}
		tail := s[j+1:]
		k := strings.IndexByte(tail, sep)
		if k < 0 {
			return cell + tail, "", false
		}
		return cell + tail[:k], tail[k+1:], true
	}
}

// plannerParser turns data rows into keyword records.
type plannerParser struct {
	name   string
	cols   plannerColumns
	rates  map[string]money.Rate
	ranges map[string]string // interned volume range texts
	slab   []kw.MonthlySearches
}

// ParsePlanner reads a Keyword Planner export: UTF-16LE or UTF-16BE with a
// byte order mark (or without one, told by the zero byte of the first
// character), or UTF-8 with or without one; preamble lines before the
// header row (the first row whose first cell is "Keyword"); tab-separated,
// or comma-separated when the header row is; columns found by name.
//
// Every data row becomes a record (source SourcePlanner) or a bad row passed
// to bad (which may be nil), and the parse goes on. Records are returned in
// file order, not deduplicated (WriteKeywords does that). usdRate maps
// currency codes, either case, to USD per unit. A file without a header row
// is refused with a *FormatError, a row in a currency without a rate with a
// *CurrencyError; either way no records are returned.
func ParsePlanner(r io.Reader, name string, usdRate map[string]float64, bad func(BadRow)) ([]kw.KeywordRecord, ParseStats, error) {
	var st ParseStats
	rates := make(map[string]money.Rate, len(usdRate))
	for cur, f := range usdRate {
		rt, err := money.NewRate(f)
		if err != nil {
			return nil, st, fmt.Errorf("cannot use USD rate of %s: %w", cur, err)
		}
		rates[strings.ToUpper(strings.TrimSpace(cur))] = rt
	}
	lr := newLineReader(decodePlanner(r), maxPlannerLine)

	var header []string
	var sep byte
	for header == nil {
		line, tooLong, err := lr.next()
		switch {
		case errors.Is(err, io.EOF):
			return nil, st, plannerFormat(name)
		case err != nil:
			return nil, st, fmt.Errorf("cannot read %s: %w", name, err)
		case lr.n > maxPreambleLines:
			return nil, st, plannerFormat(name)
		case tooLong:
			continue
		}
		header, sep, _ = headerRow(string(line))
	}
	p := &plannerParser{name: name, rates: rates, ranges: map[string]string{}}
	p.cols, st.MissingColumns = mapColumns(header)
	if p.cols.volume < 0 {
		// Without volumes every record would say 0 searches, which looks
		// like data; an export of some other report is refused instead.
		return nil, st, &FormatError{File: name, Format: "a Keyword Planner export",
			Expected: fmt.Sprintf("a header row with an %q column; the one at line %d has none", colVolume, lr.n)}
	}

	var recs []kw.KeywordRecord
	var cells []string
	reject := func(line int, reason string) {
		st.Lines++
		st.Bad++
		if bad != nil {
			bad(BadRow{File: name, Line: line, Reason: reason})
		}
	}
	for {
		line, tooLong, err := lr.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, st, fmt.Errorf("cannot read %s: %w", name, err)
		}
		if tooLong {
			reject(lr.n, fmt.Sprintf("line is longer than %d bytes", maxPlannerLine))
			continue
		}
		cells = splitCells(string(line), sep, cells)
		if blankRow(cells) {
			continue
		}
		rec, reason, err := p.row(cells, lr.n)
		if err != nil {
			return nil, st, err
		}
		if reason != "" {
			reject(lr.n, reason)
			continue
		}
		st.Lines++
		st.Records++
		recs = append(recs, rec)
	}
	return recs, st, nil
}

// decodePlanner decodes an export to UTF-8: by its byte order mark, else
// as UTF-16 when the first character has a zero byte (a file re-saved
// without the mark), else as UTF-8.
func decodePlanner(r io.Reader) io.Reader {
	br := bufio.NewReader(r)
	dec := unicode.BOMOverride(unicode.UTF8.NewDecoder())
	if b, _ := br.Peek(2); len(b) == 2 {
		switch {
		case b[0] != 0 && b[1] == 0:
			dec = unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM).NewDecoder()
		case b[0] == 0 && b[1] != 0:
			dec = unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM).NewDecoder()
		}
	}
	return transform.NewReader(br, dec)
}

func blankRow(cells []string) bool {
	for _, c := range cells {
		if strings.TrimSpace(c) != "" {
			return false
		}
	}
	return true
}

// cell returns the trimmed cell of column i, "" when the row lacks it.
func cell(cells []string, i int) string {
	if i < 0 || i >= len(cells) {
		return ""
	}
	return strings.TrimSpace(cells[i])
}

// numeric returns the cell of a column where dashes, like a blank, mean no
// value: the numbers, and the competition level.
func numeric(cells []string, i int) string {
	switch c := cell(cells, i); c {
	case "-", "--", "–", "—":
		return ""
	default:
		return c
	}
}

// row converts one data row. A non-empty reason rejects the row; an error
// rejects the file.
func (p *plannerParser) row(cells []string, line int) (rec kw.KeywordRecord, reason string, err error) {
	rec.Source = SourcePlanner
	if rec.Keyword, reason = normalizeKeyword(cells[0]); reason != "" {
		return rec, reason, nil
	}
	c := &p.cols

	var conv *money.Rate
	if cur := strings.ToUpper(cell(cells, c.currency)); cur != "" && cur != "USD" {
		if !isCurrencyCode(cur) {
			return rec, fmt.Sprintf("%s %q is not a currency code", p.cols.names[c.currency], cur), nil
		}
		rt, ok := p.rates[cur]
		if !ok {
			return rec, "", &CurrencyError{File: p.name, Line: line, Currency: cur}
		}
		conv = &rt
	}
	money := func(col int) (v int64, ok bool, reason string) {
		s := numeric(cells, col)
		if s == "" {
			return 0, false, ""
		}
		amount, usd := trimUSD(s)
		if usd && conv != nil {
			return 0, false, fmt.Sprintf("%s %q is in USD but the row's currency is %s", p.cols.names[col], s, cell(cells, c.currency))
		}
		v, err := parseMicros(amount)
		if err == nil && conv != nil {
			var fits bool
			if v, fits = conv.Convert(v); !fits {
				err = errors.New("too large")
			}
		}
		if err != nil {
			return 0, false, fmt.Sprintf("%s %q is not an amount", p.cols.names[col], s)
		}
		return v, true, ""
	}
	var hasLow, hasHigh, hasAvg bool
	var avg int64
	if rec.BidLowMicros, hasLow, reason = money(c.bidLow); reason != "" {
		return rec, reason, nil
	}
	if rec.BidHighMicros, hasHigh, reason = money(c.bidHigh); reason != "" {
		return rec, reason, nil
	}
	if avg, hasAvg, reason = money(c.avgCPC); reason != "" {
		return rec, reason, nil
	}
	switch {
	case hasAvg:
		rec.CPCMicros = avg
	case hasLow && hasHigh:
		rec.CPCMicros = (rec.BidLowMicros + rec.BidHighMicros + 1) / 2 // midpoint, half up
	case hasLow:
		rec.CPCMicros = rec.BidLowMicros
	default:
		rec.CPCMicros = rec.BidHighMicros
	}

	if s := numeric(cells, c.volume); s != "" {
		v, isRange, err := parseVolume(s)
		if err != nil {
			return rec, fmt.Sprintf("%s %q is not a search volume", p.cols.names[c.volume], s), nil
		}
		rec.Volume = v
		if isRange {
			rec.VolumeRange = p.intern(s)
		}
	}

	switch s := numeric(cells, c.level); strings.ToLower(s) {
	case "":
	case "low":
		rec.CompetitionLevel = "LOW"
	case "medium":
		rec.CompetitionLevel = "MEDIUM"
	case "high":
		rec.CompetitionLevel = "HIGH"
	default:
		return rec, fmt.Sprintf("%s %q is not Low, Medium or High", p.cols.names[c.level], s), nil
	}

	if s := numeric(cells, c.index); s != "" {
		m, err := parseMicros(s)
		if err != nil || m > 100*kw.MicrosPerUnit {
			return rec, fmt.Sprintf("%s %q is not a number from 0 to 100", p.cols.names[c.index], s), nil
		}
		// index/100 to two decimals is the index rounded half up, in hundredths.
		rec.Competition = float64((m+kw.MicrosPerUnit/2)/kw.MicrosPerUnit) / 100
	}

	if len(c.months) > 0 {
		monthly := p.monthly()
		for _, mc := range c.months {
			s := numeric(cells, mc.col)
			if s == "" {
				continue
			}
			v, _, err := parseVolume(s)
			if err != nil {
				return rec, fmt.Sprintf("%s %q is not a search volume", p.cols.names[mc.col], s), nil
			}
			monthly = append(monthly, kw.MonthlySearches{Month: mc.month, Searches: v})
		}
		if len(monthly) > 0 {
			rec.Monthly = monthly
			p.slab = p.slab[len(monthly):]
		}
	}
	return rec, "", nil
}

// monthly returns an empty slice with room for every month column, carved
// from a shared slab so that a million rows do not cost a million
// allocations.
func (p *plannerParser) monthly() []kw.MonthlySearches {
	n := len(p.cols.months)
	if len(p.slab) < n {
		p.slab = make([]kw.MonthlySearches, 4096*n)
	}
	return p.slab[:0:n]
}

// intern returns a copy of s shared by equal texts; range texts repeat.
func (p *plannerParser) intern(s string) string {
	if v, ok := p.ranges[s]; ok {
		return v
	}
	v := strings.Clone(s)
	if len(p.ranges) < 4096 {
		p.ranges[v] = v
	}
	return v
}

func isCurrencyCode(s string) bool {
	if len(s) != 3 {
		return false
	}
	for i := 0; i < 3; i++ {
		if s[i] < 'A' || s[i] > 'Z' {
			return false
		}
	}
	return true
}
