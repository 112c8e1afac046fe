package index

import (
	"context"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/lake"
)

// The keywords partition is read on a goroutine of its own, like the
// related one, and by columns, not rows: rebuilding every row (and its
// twelve months) through reflection took a third of a build's CPU. Each
// row group becomes a chunk that owns its records, the numbers and months
// they point to, and one string per text column that their texts are
// slices of, so a row costs no allocation of its own; chunks the merge
// has passed go back to the reader.

// kwChunksAhead is how many chunks of read keywords may wait for the
// merge; a chunk holds at most kwChunkRows of them, a slice of a row group
// (of 128Ki rows), so that the chunks in flight stay at a few MiB.
const (
	kwChunksAhead = 2
	kwChunkRows   = 8192
)

// kwColumns are the keywords partition's columns the build reads, in the
// order of the kw* indexes; source is not indexed.
// Every column but the keyword is optional: a partition written before a
// column existed reads it as null, as the lake's readers do.
var kwColumns = []string{"keyword", "volume?", "volume_range?", "cpc_micros?", "competition?", "competition_level?",
	"bid_low_micros?", "bid_high_micros?", "yoy_change?", "three_month_change?",
	"monthly.list.element.month?", "monthly.list.element.searches?"}

const (
	kwKeyword = iota
	kwVolume
	kwVolumeRange
	kwCPC
	kwCompetition
	kwCompetitionLevel
	kwBidLow
	kwBidHigh
	kwYoY
	kwThreeMonth
	kwMonth
	kwSearches
)

// kwChunk is a batch of keyword records and the numbers and months they
// point into.
type kwChunk struct {
	recs   []kw.KeywordRecord
	ints   []int64
	floats []float64
	months []kw.MonthlySearches
	kws    textColumn  // the keywords' texts
	small  [3][]string // volume_range, competition_level, month
	// intern holds the texts of the columns of few values (ranges, levels
	// and months, a dozen months a keyword), so that those cost no
	// allocation and no copy a row.
	intern map[string]string
	first  [3][]string // each column's first kwFirstTexts distinct texts
	hint   [3]int      // where in first to look first
}

// kwFirstTexts is how many of a column's texts are compared before the
// intern map is looked up: a month list's dozen or two months, a handful
// of ranges and levels.
const kwFirstTexts = 24

// kwInternMax bounds a chunk's interned texts; past it, a text is
// copied.
const kwInternMax = 4096

// kwStream is the merge's end of the keywords stream.
type kwStream struct {
	*pipe[kwChunk]
	i int // the current record of the pipe's chunk
}

// streamKeywords starts reading a keywords partition. The caller must call
// close.
func streamKeywords(ctx context.Context, data, country, date string) *kwStream {
	return &kwStream{pipe: startPipe(kwChunksAhead, func(p *pipe[kwChunk]) error {
		return lake.Scan(ctx, data, kw.DatasetKeywords, country, date, kwColumns, lake.ScanOptions{}, func(b *lake.Batch) error {
			for from := 0; from < b.Rows; from += kwChunkRows {
				c := p.reuse()
				if c == nil {
					c = &kwChunk{}
				}
				c.fill(b, from, min(from+kwChunkRows, b.Rows))
				if err := p.send(c); err != nil {
					return err
				}
			}
			return nil
		})
	})}
}

// fill makes c the records of rows [from, to) of batch b, sharing nothing
// with it.
func (c *kwChunk) fill(b *lake.Batch, from, to int) {
	n := to - from
	clear(c.recs) // drop the strings of the chunk's last use
	c.recs = grow(c.recs, n)[:n]
	mFrom, mTo := 0, 0
	if n > 0 {
		mFrom, _ = b.Span(kwMonth, from)
		_, mTo = b.Span(kwMonth, to-1)
	}
	nMonths := mTo - mFrom
	// Sized once, so that the pointers into them stay valid.
	c.ints = grow(c.ints, 4*n+nMonths)
	c.floats = grow(c.floats, 3*n)
	c.months = grow(c.months, nMonths)
	optInt := func(col, row int) *int64 {
		v, ok := b.Int64(col, row)
		if !ok {
			return nil
		}
		c.ints = append(c.ints, v)
		return &c.ints[len(c.ints)-1]
	}
	optFloat := func(col, row int) *float64 {
		v, ok := b.Float64(col, row)
		if !ok {
			return nil
		}
		c.floats = append(c.floats, v)
		return &c.floats[len(c.floats)-1]
	}
	keywords := c.texts(b, kwKeyword, from, to)
	ranges := c.interned(0, b, kwVolumeRange, from, to)
	levels := c.interned(1, b, kwCompetitionLevel, from, to)
	months := c.interned(2, b, kwMonth, mFrom, mTo)
	for j := range c.recs {
		r, i := &c.recs[j], from+j
		*r = kw.KeywordRecord{
			Keyword:          keywords.at(j),
			Volume:           optInt(kwVolume, i),
			VolumeRange:      ranges[j],
			CPCMicros:        optInt(kwCPC, i),
			Competition:      optFloat(kwCompetition, i),
			CompetitionLevel: levels[j],
			BidLowMicros:     optInt(kwBidLow, i),
			BidHighMicros:    optInt(kwBidHigh, i),
			YoYChange:        optFloat(kwYoY, i),
			ThreeMonthChange: optFloat(kwThreeMonth, i),
		}
		lo, hi := b.Span(kwMonth, i)
		if slo, shi := b.Span(kwSearches, i); slo != lo || shi != hi {
			// The two leaves of one list always agree; a file where they
			// do not is damaged, and the row keeps no months.
			continue
		}
		if hi > lo {
			start := len(c.months)
			for k := lo; k < hi; k++ {
				c.months = append(c.months, kw.MonthlySearches{Month: months[k-mFrom], Searches: optInt(kwSearches, k)})
			}
			r.Monthly = c.months[start:len(c.months):len(c.months)]
		}
	}
}

// textColumn is the texts of one column of a batch, in one string.
type textColumn struct {
	all  string
	offs []uint32 // n+1 offsets into all
}

func (t *textColumn) at(i int) string { return t.all[t.offs[i]:t.offs[i+1]] }

// texts copies values [from, to) of text column col of b into one string,
// so that a chunk costs one allocation a column, not one a row; at(i) is
// value from+i. The texts are copied once, into an array of their size
// that becomes the string (a copy into scratch, then the scratch into a
// string, was a third of a GiB copied twice at 10M keywords).
func (c *kwChunk) texts(b *lake.Batch, col, from, to int) *textColumn {
	t := &c.kws
	t.offs = append(t.offs[:0], 0)
	n := 0
	for i := from; i < to; i++ {
		n += len(b.Bytes(col, i))
		t.offs = append(t.offs, uint32(n))
	}
	all := make([]byte, 0, n)
	for i := from; i < to; i++ {
		all = append(all, b.Bytes(col, i)...)
	}
	// all is never written again.
	t.all = inPlace(all)
	return t
}

// interned returns values [from, to) of text column col of b, interned
// in the chunk's slot.
func (c *kwChunk) interned(slot int, b *lake.Batch, col, from, to int) []string {
	if c.intern == nil {
		c.intern = map[string]string{}
	}
	out := c.small[slot][:0]
	first := &c.first[slot]
next:
	for i := from; i < to; i++ {
		v := b.Bytes(col, i)
		// The column's first few texts, most often all it has, are
		// compared before the map is hashed, from the one after the last
		// found: a month list repeats its months in order.
		for k := range *first {
			j := (c.hint[slot] + k) % len(*first)
			if s := (*first)[j]; string(v) == s {
				out = append(out, s)
				c.hint[slot] = j + 1
				continue next
			}
		}
		s, ok := c.intern[string(v)]
		if !ok {
			s = string(v)
			if len(c.intern) < kwInternMax {
				c.intern[s] = s
			}
		}
		if len(*first) < kwFirstTexts {
			*first = append(*first, s)
		}
		out = append(out, s)
	}
	c.small[slot] = out
	return out
}

// grow returns s emptied, with room for n elements.
func grow[T any](s []T, n int) []T {
	clear(s)
	if cap(s) < n {
		return make([]T, 0, n)
	}
	return s[:0]
}

// peek returns the current record, or nil at the end. It stays valid
// until the next call of peek after next.
func (s *kwStream) peek() *kw.KeywordRecord {
	for s.chunk == nil || s.i >= len(s.chunk.recs) {
		if s.advance() == nil {
			return nil
		}
		s.i = 0
	}
	return &s.chunk.recs[s.i]
}

func (s *kwStream) next() { s.i++ }

// textIn is where the current record's keyword lies: in its chunk's one
// string of texts, which stays valid for as long as it is referenced.
func (s *kwStream) textIn() textIn {
	return textIn{s.chunk.kws.all, s.chunk.kws.offs[s.i]}
}
