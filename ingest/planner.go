package ingest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
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
		Expected: `a header row with a "Keyword" column (tab-separated, UTF-16 or UTF-8)`}
}

// Planner column names, compared case-insensitively after trimming. Two
// generations of exports exist: today's Keyword Planner and the legacy
// AdWords one (an "Ad group" column first, an exact-match volume column, a
// decimal competition and a suggested bid).
const (
	colKeyword          = "Keyword"
	colCurrency         = "Currency"
	colVolume           = "Avg. monthly searches" // also matches "Avg. Monthly Searches (exact match only)"
	colMinVolume        = "Min search volume"     // 2020 exports: the range when the volume is N/A
	colMaxVolume        = "Max search volume"
	colCompetition      = "Competition"
	colCompetitionIndex = "Competition (indexed value)"
	colBidLow           = "Top of page bid (low range)"
	colBidHigh          = "Top of page bid (high range)"
	colAvgCPC           = "Avg. CPC"      // older exports; preferred over the bid midpoint
	colSuggestedBid     = "Suggested bid" // the legacy export's CPC
	colThreeMonth       = "Three month change"
	colYoY              = "YoY change"
	monthPrefix         = "Searches:" // then " Mon YYYY", the space optional
)

// otherEnglishHeaders are, folded, the English headers of planner
// exports that kwdata does not read: a column with one of them is never
// taken for a change column by its position.
var otherEnglishHeaders = map[string]bool{
	"segmentation": true, "ad impression share": true, "organic impression share": true,
	"organic average position": true, "in account?": true, "in account": true, "in plan?": true,
	"impr. share": true, "extracted from": true, "ad group": true, "currency": true,
}

// plannerColumns maps the fields to their column index (-1 when absent).
type plannerColumns struct {
	names                                                   []string // header cells as written
	keyword                                                 int
	currency, volume, level, index, bidLow, bidHigh, avgCPC int
	minVolume, maxVolume                                    int
	threeMonth, yoy                                         int
	months                                                  []monthColumn // oldest first
}

type monthColumn struct {
	col   int
	month string // "YYYY-MM"
	seen  bool   // some row has a value in it
}

// mapColumns finds the columns by name. missing lists the columns an
// export of today's shape has and this one lacks (their fields stay null).
func mapColumns(header []string) (c plannerColumns, missing []string) {
	c = plannerColumns{names: header}
	want := []struct {
		name     string
		idx      *int
		optional bool // absent from some export generations without loss
	}{
		{colKeyword, &c.keyword, false},
		{colCurrency, &c.currency, false}, {colVolume, &c.volume, false}, {colCompetition, &c.level, false},
		{colCompetitionIndex, &c.index, false}, {colBidLow, &c.bidLow, false}, {colBidHigh, &c.bidHigh, false},
		{colAvgCPC, &c.avgCPC, true}, {colSuggestedBid, &c.avgCPC, true},
		{colMinVolume, &c.minVolume, true}, {colMaxVolume, &c.maxVolume, true},
		{colThreeMonth, &c.threeMonth, true}, {colYoY, &c.yoy, true},
	}
	for _, w := range want {
		*w.idx = -1
	}
	seen := map[string]bool{}
	for i, h := range header {
		h = strings.TrimSpace(h)
		if en, ok := changeHeaders[foldWord(h)]; ok {
			h = en // a change column's header in another language
		}
		for _, w := range want {
			if *w.idx < 0 && (strings.EqualFold(h, w.name) ||
				w.name == colVolume && len(h) > len(colVolume) && strings.EqualFold(h[:len(colVolume)], colVolume)) {
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
	if c.threeMonth < 0 && c.yoy < 0 && c.volume >= 0 && c.volume+2 < len(header) {
		// An interface language whose change headers the table lacks:
		// the planner writes the two change columns right after the
		// average monthly searches, three month change first.
		claimed := map[int]bool{}
		for _, w := range want {
			claimed[*w.idx] = true
		}
		for _, m := range c.months {
			claimed[m.col] = true
		}
		foreign := func(i int) bool {
			h := foldWord(header[i])
			return !claimed[i] && h != "" && !otherEnglishHeaders[h] &&
				!strings.HasPrefix(h, strings.ToLower(monthPrefix)) && !strings.HasPrefix(h, "concept:")
		}
		if a, b := c.volume+1, c.volume+2; foreign(a) && foreign(b) {
			c.threeMonth, c.yoy = a, b
		}
	}
	legacy := c.avgCPC >= 0 && c.bidLow < 0 && c.bidHigh < 0 // the CPC column stands in for the bids
	for _, w := range want {
		switch {
		case *w.idx >= 0 || w.optional:
		case legacy && (w.name == colBidLow || w.name == colBidHigh || w.name == colCompetitionIndex):
		default:
			missing = append(missing, w.name)
		}
	}
	if len(c.months) == 0 {
		missing = append(missing, monthPrefix+" Mon YYYY")
	}
	return c, missing
}

// headerRow reports whether line is the header row (the first row with a
// cell "Keyword", in any column: the legacy export has "Ad group" first),
// and its separator: tab, or comma when the row is comma-separated.
func headerRow(line string) ([]string, byte, bool) {
	line = strings.TrimPrefix(line, "\uFEFF")
	for _, sep := range []byte{'\t', ','} {
		cells := splitCells(line, sep, nil)
		for _, c := range cells {
			if strings.EqualFold(strings.TrimSpace(c), colKeyword) {
				return cells, sep, true
			}
		}
	}
	return nil, 0, false
}

// splitCells splits a line at sep. A cell that starts with a double quote
// is quoted: "" inside it is one quote, and it ends at the next lone quote
// (text between that and the separator is kept). Cells never span lines;
// an unterminated quote runs to the end of the line.
//
// encoding/csv (Comma '\t', LazyQuotes, FieldsPerRecord -1) is not used,
// for three reasons: with it an unterminated quote in one keyword cell
// swallows every following line into that cell, so one bad row would lose
// the rest of the export (TestUnterminatedQuoteStaysOnItsLine); it reads a
// record of any length, where the line reader bounds a line before it is
// refused; and the separator is known only once the header row is found,
// after the preamble has been read. It is also about 3× slower on the
// sample export (BenchmarkSplitCells: 5.5 ms against 17.1 ms for 20,000
// rows, medians of 5).
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
	ints   []int64   // backing store of the records' nullable numbers
	floats []float64 // likewise for competition

	unreadable []UnreadableCells // by column, in the order first met
}

// ParsePlanner reads a Keyword Planner export: UTF-16LE or UTF-16BE with a
// byte order mark (or without one, told by the zero byte of the first
// character), or UTF-8 with or without one; preamble lines before the
// header row (the first row with a cell "Keyword", in any column);
// tab-separated, or comma-separated when the header row is; columns found
// by name, today's planner names or the legacy AdWords ones. The planner's
// interface language shows in the competition levels and the change
// columns' headers: the words of the languages in plannerLanguages are
// read, and change columns whose header is in another language are the
// two after the average monthly searches.
//
// Every data row becomes a record (source SourcePlanner), a summary (a row
// without a keyword, such as a segmentation's "All" row: counted in
// ParseStats.Summaries) or a bad row passed to bad (which may be nil), and
// the parse goes on. A metric the row gives no value for (blank, a dash,
// "N/A", "Unknown") is nil in the record, never 0; a month column that has
// no value in any row is left out of every record. A competition level or
// a change holding a word kwdata cannot read never costs the row: the
// field is nil (the level follows from the competition index where the
// row has one), and ParseStats.Unreadable counts the cells. Records are returned in
// file order, not deduplicated (WriteKeywords does that). usdRate maps
// currency codes, either case, to USD per unit. A file without a header row
// is refused with a *FormatError, a row in a currency without a rate with a
// *CurrencyError; either way no records are returned.
func ParsePlanner(r io.Reader, name string, usdRate map[string]float64, bad func(BadRow)) ([]kw.KeywordRecord, ParseStats, error) {
	var recs []kw.KeywordRecord
	st, empty, err := parsePlanner(r, name, usdRate, bad, func(rec *kw.KeywordRecord) error {
		recs = append(recs, *rec)
		return nil
	})
	if err != nil {
		return nil, st, err
	}
	for i := range recs {
		recs[i].Monthly = dropMonths(recs[i].Monthly, empty)
	}
	return recs, st, nil
}

// parsePlanner is ParsePlanner handing each record to emit as it is read
// (emit must copy what it keeps), so that an export of tens of millions of
// rows is never held whole. The months to drop from every record of the
// file (see dropMonths) are known only at its end: it returns them, and
// the caller drops them.
func parsePlanner(r io.Reader, name string, usdRate map[string]float64, bad func(BadRow), emit func(*kw.KeywordRecord) error) (st ParseStats, empty map[string]bool, err error) {
	rates := make(map[string]money.Rate, len(usdRate))
	for cur, f := range usdRate {
		rt, err := money.NewRate(f)
		if err != nil {
			return st, nil, fmt.Errorf("cannot use USD rate of %s: %w", cur, err)
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
			return st, nil, plannerFormat(name)
		case err != nil:
			return st, nil, fmt.Errorf("cannot read %s: %w", name, err)
		case lr.n > maxPreambleLines:
			return st, nil, plannerFormat(name)
		case tooLong:
			continue
		}
		header, sep, _ = headerRow(string(line))
	}
	p := &plannerParser{name: name, rates: rates, ranges: map[string]string{}}
	p.cols, st.MissingColumns = mapColumns(header)
	if p.cols.volume < 0 && p.cols.minVolume < 0 {
		// Without volumes every record would be a bare keyword; an export
		// of some other report is refused instead.
		return st, nil, &FormatError{File: name, Format: "a Keyword Planner export",
			Expected: fmt.Sprintf("a header row with an %q column; the one at line %d has none", colVolume, lr.n)}
	}

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
			return st, nil, fmt.Errorf("cannot read %s: %w", name, err)
		}
		if tooLong {
			reject(lr.n, fmt.Sprintf("line is longer than %d bytes", maxPlannerLine))
			continue
		}
		cells = splitCells(string(line), sep, cells)
		if blankRow(cells) {
			continue
		}
		if cell(cells, p.cols.keyword) == "" {
			st.Lines++
			st.Summaries++
			continue
		}
		rec, reason, err := p.row(cells, lr.n)
		if err != nil {
			return st, nil, err
		}
		if reason != "" {
			reject(lr.n, reason)
			continue
		}
		st.Lines++
		st.Records++
		if err := emit(&rec); err != nil {
			return st, nil, err
		}
	}
	st.Unreadable = p.unreadable
	return st, p.emptyMonths(), nil
}

// emptyMonths returns the months of columns that no row has a value in:
// the export lists the month but has no data for it (a year of empty
// "Searches:" columns is common), which is not the same as a month the
// planner reports no value for beside months it does. They are dropped
// from every record of the file.
func (p *plannerParser) emptyMonths() map[string]bool {
	var empty map[string]bool
	for _, mc := range p.cols.months {
		if !mc.seen {
			if empty == nil {
				empty = map[string]bool{}
			}
			empty[mc.month] = true
		}
	}
	return empty
}

// dropMonths returns m without the months in drop (nil when none is
// left), reusing m's array.
func dropMonths(m []kw.MonthlySearches, drop map[string]bool) []kw.MonthlySearches {
	if len(drop) == 0 {
		return m
	}
	out := m[:0]
	for _, x := range m {
		if !drop[x.Month] {
			out = append(out, x)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
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

// numeric returns the cell of a column where dashes, "N/A" and "Unknown",
// like a blank, mean no value: the numbers, and the competition level.
func numeric(cells []string, i int) string {
	switch c := cell(cells, i); strings.ToLower(c) {
	case "-", "--", "–", "—", "n/a", "unknown":
		return ""
	default:
		return c
	}
}

// row converts one data row. A non-empty reason rejects the row; an error
// rejects the file.
func (p *plannerParser) row(cells []string, line int) (rec kw.KeywordRecord, reason string, err error) {
	rec.Source = SourcePlanner
	c := &p.cols
	if rec.Keyword, reason = normalizeKeyword(cell(cells, c.keyword)); reason != "" {
		return rec, reason, nil
	}

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
	money := func(col int) (v *int64, reason string) {
		s := numeric(cells, col)
		if s == "" {
			return nil, ""
		}
		amount, usd := trimUSD(s)
		if usd && conv != nil {
			return nil, fmt.Sprintf("%s %q is in USD but the row's currency is %s", p.cols.names[col], s, cell(cells, c.currency))
		}
		m, err := parseMicros(amount)
		if err == nil && conv != nil {
			var fits bool
			if m, fits = conv.Convert(m); !fits {
				err = errors.New("too large")
			}
		}
		if err != nil {
			return nil, fmt.Sprintf("%s %q is not an amount", p.cols.names[col], s)
		}
		return p.int64(m), ""
	}
	var avg *int64
	if rec.BidLowMicros, reason = money(c.bidLow); reason != "" {
		return rec, reason, nil
	}
	if rec.BidHighMicros, reason = money(c.bidHigh); reason != "" {
		return rec, reason, nil
	}
	if avg, reason = money(c.avgCPC); reason != "" {
		return rec, reason, nil
	}
	switch lo, hi := rec.BidLowMicros, rec.BidHighMicros; {
	case avg != nil:
		rec.CPCMicros = avg
	case lo != nil && hi != nil:
		rec.CPCMicros = p.int64((*lo + *hi + 1) / 2) // midpoint, half up
	case lo != nil:
		rec.CPCMicros = lo
	default:
		rec.CPCMicros = hi
	}

	if reason = p.volume(&rec, cells); reason != "" {
		return rec, reason, nil
	}

	// A level word of any interface language in the table; the legacy
	// export writes competition as a decimal 0–1 instead. A word kwdata
	// cannot read never costs the row: the level then follows from the
	// index, or stays null.
	unreadLevel := ""
	if s := numeric(cells, c.level); s != "" {
		if level, ok := levelWords[foldWord(s)]; ok {
			rec.CompetitionLevel = level
		} else if m, err := parseMicros(s); err == nil && m <= kw.MicrosPerUnit {
			rec.Competition = p.float64(float64((m+kw.MicrosPerUnit/200)/(kw.MicrosPerUnit/100)) / 100)
		} else {
			unreadLevel = s
		}
	}

	if s := numeric(cells, c.index); s != "" {
		m, err := parseMicros(s)
		if err != nil || m > 100*kw.MicrosPerUnit {
			return rec, fmt.Sprintf("%s %q is not a number from 0 to 100", p.cols.names[c.index], s), nil
		}
		// index/100 to two decimals is the index rounded half up, in hundredths.
		index := (m + kw.MicrosPerUnit/2) / kw.MicrosPerUnit
		rec.Competition = p.float64(float64(index) / 100)
		if unreadLevel != "" {
			rec.CompetitionLevel = levelFromIndex(index)
		}
	}
	if unreadLevel != "" {
		p.unread(c.level, line, unreadLevel, rec.CompetitionLevel != "")
	}

	if len(c.months) > 0 {
		monthly := p.monthly()
		for i := range c.months {
			mc := &c.months[i]
			ms := kw.MonthlySearches{Month: mc.month}
			if s := numeric(cells, mc.col); s != "" {
				v, _, err := parseVolume(s)
				if err != nil {
					return rec, fmt.Sprintf("%s %q is not a search volume", p.cols.names[mc.col], s), nil
				}
				ms.Searches = p.int64(v)
				mc.seen = true
			}
			monthly = append(monthly, ms)
		}
		rec.Monthly = monthly
		p.slab = p.slab[len(monthly):]
	}

	// The changes the export states win; an export without their columns
	// gets them from its monthly series. A stated "--" stays null.
	var yoy, tri *float64
	if c.yoy < 0 || c.threeMonth < 0 {
		yoy, tri = kw.Changes(rec.Monthly)
	}
	if c.yoy >= 0 {
		yoy = p.change(cells, c.yoy, line)
	}
	if c.threeMonth >= 0 {
		tri = p.change(cells, c.threeMonth, line)
	}
	rec.YoYChange, rec.ThreeMonthChange = yoy, tri
	return rec, "", nil
}

// change parses a percent change cell: "0%", "-90%", "1,900%", "12.5%" or
// "∞" (searches rose from zero, +Inf); a dash or a blank is no value. A
// cell it cannot read is no value too, counted in the parse's stats: the
// change is derived data, and never costs the row.
func (p *plannerParser) change(cells []string, col, line int) *float64 {
	s := numeric(cells, col)
	switch s {
	case "":
		return nil
	case "∞", "+∞", "inf", "Infinity":
		return p.float64(math.Inf(1))
	}
	num := strings.ReplaceAll(strings.TrimSpace(strings.TrimSuffix(s, "%")), ",", "")
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < -100 {
		p.unread(col, line, s, false)
		return nil
	}
	return p.float64(v)
}

// unread counts a cell of column col that kwdata cannot read, kept as
// null (or, for the level, taken from the index: fromIndex).
func (p *plannerParser) unread(col, line int, cell string, fromIndex bool) {
	i := slices.IndexFunc(p.unreadable, func(u UnreadableCells) bool { return u.col == col })
	if i < 0 {
		i = len(p.unreadable)
		p.unreadable = append(p.unreadable, UnreadableCells{Column: strings.TrimSpace(p.cols.names[col]),
			First: strings.Clone(cell), Line: line, col: col})
	}
	u := &p.unreadable[i]
	u.Rows++
	if fromIndex {
		u.FromIndex++
	}
}

// volume sets the record's volume: the average monthly searches, a count
// or a range ("1K – 10K", keeping its lower bound and its text), or, where
// the export says N/A there, the range of its min and max search volume
// columns.
func (p *plannerParser) volume(rec *kw.KeywordRecord, cells []string) (reason string) {
	c := &p.cols
	if s := numeric(cells, c.volume); s != "" {
		v, isRange, err := parseVolume(s)
		if err != nil {
			return fmt.Sprintf("%s %q is not a search volume", p.cols.names[c.volume], s)
		}
		rec.Volume = p.int64(v)
		if isRange {
			rec.VolumeRange = p.intern(s)
		}
		return ""
	}
	lo, hi := numeric(cells, c.minVolume), numeric(cells, c.maxVolume)
	if lo == "" {
		return "" // no value: a hi alone says too little to stand for a volume
	}
	v, err := parseCount(lo)
	if err != nil {
		return fmt.Sprintf("%s %q is not a search volume", p.cols.names[c.minVolume], lo)
	}
	rec.Volume = p.int64(v)
	if hi == "" {
		return ""
	}
	up, err := parseCount(hi)
	if err != nil || up < v {
		return fmt.Sprintf("%s %q is not a search volume of at least %s", p.cols.names[c.maxVolume], hi, lo)
	}
	rec.VolumeRange = p.intern(formatRange(v, up))
	return ""
}

// formatRange writes a volume range as the planner does: "10K – 100K".
func formatRange(lo, hi int64) string {
	return compactCount(lo) + " – " + compactCount(hi)
}

// compactCount writes 1500 as "1.5K", 10000 as "10K", 2000000 as "2M".
func compactCount(v int64) string {
	for _, u := range []struct {
		n      int64
		suffix string
	}{{1e9, "B"}, {1e6, "M"}, {1e3, "K"}} {
		if v >= u.n {
			s := strconv.FormatFloat(float64(v)/float64(u.n), 'f', 2, 64)
			s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
			return s + u.suffix
		}
	}
	return strconv.FormatInt(v, 10)
}

// int64 and float64 return pointers into blocks shared by many records, so
// that a million rows do not cost millions of small allocations.
func (p *plannerParser) int64(v int64) *int64 {
	if len(p.ints) == 0 {
		p.ints = make([]int64, 16384)
	}
	x := &p.ints[0]
	*x, p.ints = v, p.ints[1:]
	return x
}

func (p *plannerParser) float64(v float64) *float64 {
	if len(p.floats) == 0 {
		p.floats = make([]float64, 4096)
	}
	x := &p.floats[0]
	*x, p.floats = v, p.floats[1:]
	return x
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
