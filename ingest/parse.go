package ingest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kwdata/kwdata/kw"
)

// ParseStats counts what a parser read from one file.
type ParseStats struct {
	// Lines are the data lines: non-blank lines, after the header row of a
	// planner export. Lines == Records + Bad + Summaries.
	Lines int
	// Records are the lines accepted: keyword records, or SERPs emitted.
	Records int
	// Bad are the lines rejected; each was passed to the bad callback.
	Bad int
	// Summaries are planner rows without a keyword: a segmentation's "All"
	// row totals the others and is no keyword, so it is skipped, not bad.
	Summaries int

	Rows           int // SERP result rows emitted
	SkippedResults int // SERP results dropped: no valid rank or no valid URL key
	Truncated      int // SERP results dropped for a rank past kw.MaxRank, or beyond kw.MaxRank of a line

	// MissingColumns names the known planner columns the header lacks; the
	// fields they feed are left null.
	MissingColumns []string

	// Unreadable counts, by column, the planner cells other than the
	// keyword that held a word kwdata cannot read (a competition level or
	// a change in a language it does not know). Their rows are kept, with
	// the field null, or the level taken from the competition index.
	Unreadable []UnreadableCells
}

// UnreadableCells counts the cells of one planner column that kwdata
// could not read.
type UnreadableCells struct {
	Column    string // the header, as the export writes it
	Rows      int    // rows whose cell it could not read
	FromIndex int    // of them, rows whose level followed from Competition (indexed value)
	First     string // the first such cell
	Line      int    // its line
	col       int
}

// String says in one line what was unreadable and what became of it.
func (u UnreadableCells) String() string {
	return fmt.Sprintf("%s: %d rows hold a word kwdata cannot read (the first %q, line %d); the rows are kept, %s",
		u.Column, u.Rows, u.First, u.Line, u.keptAs())
}

// keptAs says what became of the fields of the rows.
func (u UnreadableCells) keptAs() string {
	switch {
	case u.FromIndex == u.Rows:
		return "their level follows from " + colCompetitionIndex
	case u.FromIndex > 0:
		return fmt.Sprintf("%d took their level from %s, the other %d have none", u.FromIndex, colCompetitionIndex, u.Rows-u.FromIndex)
	}
	return "the field is null"
}

// FormatError reports a file that is not the expected format at all. Run
// writes nothing when it meets one.
type FormatError struct {
	File     string
	Format   string // what the file should have been ("SERP JSONL")
	Expected string // what it should look like
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("%s: not %s: expected %s", e.File, e.Format, e.Expected)
}

// NoGoodRowsError reports a file in the expected format whose every data
// row is bad: a file for another country, or an export whose columns all
// fail. Ingesting it would replace the partition with nothing, so Run
// refuses it and writes nothing.
type NoGoodRowsError struct {
	File  string
	Bad   int    // bad rows in the file
	First BadRow // the first of them
}

func (e *NoGoodRowsError) Error() string {
	return fmt.Sprintf("%s: none of its %d data rows is usable, so nothing was written; the first, line %d: %s",
		e.File, e.Bad, e.First.Line, e.First.Reason)
}

// NoRowsError reports a file in the expected format without one data row:
// an empty file, or a header (and summaries) only. Run refuses it and
// writes nothing, as it does a file whose every row is bad.
type NoRowsError struct {
	File      string
	Summaries int // summary rows it had, which are no keywords
}

func (e *NoRowsError) Error() string {
	if e.Summaries > 0 {
		return fmt.Sprintf("%s: has no keyword rows (only %d summary rows without a keyword), so nothing was written", e.File, e.Summaries)
	}
	return fmt.Sprintf("%s: has no data rows, so nothing was written", e.File)
}

// CurrencyError reports a planner export whose amounts are in a currency
// that has no USD rate. Run writes nothing when it meets one.
type CurrencyError struct {
	File     string
	Line     int
	Currency string
}

func (e *CurrencyError) Error() string {
	return fmt.Sprintf("%s:%d: amounts are in %s and no USD rate for %s is given; pass --usd-rate %s=RATE (USD per %s)",
		e.File, e.Line, e.Currency, e.Currency, e.Currency, e.Currency)
}

// normalizeKeyword normalizes a keyword cell and says why it is refused.
// Beyond kw.NormalizeKeyword it refuses control characters and the
// replacement character, which only undecodable input produces.
func normalizeKeyword(s string) (string, string) {
	k, err := kw.NormalizeKeyword(s)
	if err != nil {
		return "", err.Error()
	}
	if strings.ContainsFunc(k, func(r rune) bool { return r == utf8.RuneError || unicode.IsControl(r) }) {
		return "", "keyword holds control characters or undecodable bytes"
	}
	return k, ""
}

// lineReader reads physical lines of any length up to max bytes.
type lineReader struct {
	br   *bufio.Reader
	long []byte
	max  int
	n    int // line number of the line last returned
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 256<<10), max: max}
}

// next returns the next line without its line ending. A line longer than
// max bytes is skipped and reported with tooLong. The line is valid until
// the next call.
func (l *lineReader) next() (line []byte, tooLong bool, err error) {
	l.long = l.long[:0]
	over := false
	for {
		frag, err := l.br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if !over && len(l.long)+len(frag) <= l.max {
				l.long = append(l.long, frag...)
			} else {
				over, l.long = true, l.long[:0]
			}
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, false, err
		}
		if err != nil && len(frag) == 0 && len(l.long) == 0 && !over {
			return nil, false, io.EOF
		}
		l.n++
		if len(l.long) > 0 {
			l.long = append(l.long, frag...)
			frag = l.long
		}
		if over || len(frag) > l.max+2 {
			return nil, true, nil
		}
		frag = trimEOL(frag)
		return frag, false, nil
	}
}

// trimEOL removes a trailing "\n" or "\r\n".
func trimEOL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	return b
}
