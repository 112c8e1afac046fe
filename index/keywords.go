package index

import (
	"context"
	"errors"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/lake"
)

// The keywords partition is read on a goroutine of its own, like the
// related one: reconstructing its rows (twelve months each) was a third
// of the merge's time, and the merge itself (encoding, the suggestion and
// group tables, the SSTable writer) keeps the other core busy. lake.Scan
// reuses its batch, so each batch is copied into a chunk that owns every
// number and month it points to; chunks the merge has passed go back to
// the reader.

// kwChunksAhead is how many chunks of read keywords may wait for the merge.
const kwChunksAhead = 2

// kwChunk is a batch of keyword records and the numbers and months they
// point into.
type kwChunk struct {
	recs   []kw.KeywordRecord
	ints   []int64
	floats []float64
	months []kw.MonthlySearches
}

// kwStream is the merge's end of the keywords stream.
type kwStream struct {
	ch     chan *kwChunk
	free   chan *kwChunk
	done   chan struct{}
	finish chan struct{} // closed when the reader has returned
	err    error         // the reader's error; read after finish

	chunk *kwChunk
	i     int
}

// streamKeywords starts reading a keywords partition. The caller must call
// close.
func streamKeywords(ctx context.Context, data, country, date string) *kwStream {
	s := &kwStream{ch: make(chan *kwChunk, kwChunksAhead), free: make(chan *kwChunk, kwChunksAhead+2),
		done: make(chan struct{}), finish: make(chan struct{})}
	go func() {
		defer close(s.finish)
		defer close(s.ch)
		err := lake.Scan(ctx, data, kw.DatasetKeywords, country, date, func(batch []kw.KeywordRecord) error {
			var c *kwChunk
			select {
			case c = <-s.free:
			default:
				c = &kwChunk{}
			}
			c.fill(batch)
			select {
			case s.ch <- c:
				return nil
			case <-s.done:
				return errStopScan
			}
		})
		if !errors.Is(err, errStopScan) {
			s.err = err
		}
	}()
	return s
}

// fill makes c a copy of batch that shares nothing with it but strings,
// which never change.
func (c *kwChunk) fill(batch []kw.KeywordRecord) {
	clear(c.recs) // drop the strings of the chunk's last use
	c.recs = append(c.recs[:0], batch...)
	nInts, nFloats, nMonths := 0, 0, 0
	for i := range batch {
		nInts += 4 + len(batch[i].Monthly)
		nFloats += 3
		nMonths += len(batch[i].Monthly)
	}
	// Sized once, so that the pointers into them stay valid.
	c.ints = grow(c.ints, nInts)
	c.floats = grow(c.floats, nFloats)
	c.months = grow(c.months, nMonths)
	cloneInt := func(p *int64) *int64 {
		if p == nil {
			return nil
		}
		c.ints = append(c.ints, *p)
		return &c.ints[len(c.ints)-1]
	}
	cloneFloat := func(p *float64) *float64 {
		if p == nil {
			return nil
		}
		c.floats = append(c.floats, *p)
		return &c.floats[len(c.floats)-1]
	}
	for i := range c.recs {
		r := &c.recs[i]
		r.Volume, r.CPCMicros = cloneInt(r.Volume), cloneInt(r.CPCMicros)
		r.BidLowMicros, r.BidHighMicros = cloneInt(r.BidLowMicros), cloneInt(r.BidHighMicros)
		r.Competition, r.YoYChange, r.ThreeMonthChange = cloneFloat(r.Competition), cloneFloat(r.YoYChange), cloneFloat(r.ThreeMonthChange)
		if r.Monthly != nil {
			start := len(c.months)
			for _, m := range r.Monthly {
				c.months = append(c.months, kw.MonthlySearches{Month: m.Month, Searches: cloneInt(m.Searches)})
			}
			r.Monthly = c.months[start:len(c.months):len(c.months)]
		}
	}
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
		if s.chunk != nil {
			select {
			case s.free <- s.chunk:
			default:
			}
			s.chunk = nil
		}
		c, more := <-s.ch
		if !more {
			return nil
		}
		s.chunk, s.i = c, 0
	}
	return &s.chunk.recs[s.i]
}

func (s *kwStream) next() { s.i++ }

// close stops the reader and waits for it; it returns the reader's error.
func (s *kwStream) close() error {
	select {
	case <-s.done:
	default:
		close(s.done)
	}
	for range s.ch { // unblock a reader mid-send
	}
	<-s.finish
	return s.err
}
