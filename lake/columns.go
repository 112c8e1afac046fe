package lake

import (
	"errors"
	"fmt"

	"github.com/parquet-go/parquet-go"
)

// columnsWriter writes a partition of T by columns: it copies each row
// into a row group, as an R that holds no pointer (its strings are spans
// of the group's bytes), and has fill turn a run of rows into the values
// of one column. The row groups are encoded on several goroutines
// (groupWriter). Rows without pointers keep the garbage collector out of
// the groups, and the encoders read their strings in order.
type columnsWriter[T, R any] struct {
	w        *Writer[T]
	gw       *groupWriter[T, *rowGroup[R]]
	cols     []int                      // leaf index of each column fill knows, in fill's order
	add      func(g *rowGroup[R], r *T) // appends r to g
	fill     columnFill[R]
	cur      *rowGroup[R]
	err      error
	finished bool // the files are written; only the rename is left
}

// columnFill appends to vals the values of column c (of leaf index leaf)
// of rows, whose strings are in buf; null is that column's null value.
type columnFill[R any] func(c int, rows []R, buf []byte, vals []parquet.Value, null parquet.Value, leaf int) []parquet.Value

// rowGroup is one row group of rows, as R, with their strings in buf.
type rowGroup[R any] struct {
	rows []R
	buf  []byte
	last string // the last string stored with text
	at   span   // where it is in buf
	cols []int
	fill columnFill[R]
}

// span is a string stored in a rowGroup's buf: buf[span[0]:span[1]].
type span [2]uint32

// text stores s in the group's bytes, once for a run of rows that repeat
// it (a keyword's related rows), and returns where it is.
func (g *rowGroup[R]) text(s string) span {
	if len(s) > 0 && s == g.last && len(g.buf) > 0 {
		return g.at
	}
	start := len(g.buf)
	g.buf = append(g.buf, s...)
	g.last, g.at = s, span{uint32(start), uint32(len(g.buf))}
	return g.at
}

// bytesOf returns the bytes of a span of buf.
func bytesOf(buf []byte, s span) []byte { return buf[s[0]:s[1]:s[1]] }

// createColumns starts writing the partition of dataset for country and
// date; columns names the columns fill knows, in its order.
func createColumns[T, R any](data, dataset, country, date string, columns []string, add func(*rowGroup[R], *T), fill columnFill[R]) (*columnsWriter[T, R], error) {
	cols, err := columnsOf[T](columns...)
	if err != nil {
		return nil, fmt.Errorf("cannot write %s rows: %w", dataset, err)
	}
	w, err := Create[T](data, dataset, country, date)
	if err != nil {
		return nil, err
	}
	cw := &columnsWriter[T, R]{w: w, cols: cols, add: add, fill: fill}
	cw.gw = startGroups[T, *rowGroup[R]](w)
	return cw, nil
}

// write appends rows to the partition; it keeps no reference to them.
func (cw *columnsWriter[T, R]) write(rows []T) error {
	if cw.err != nil {
		return cw.err
	}
	for i := range rows {
		g := cw.cur
		if g == nil {
			var ok bool
			if g, ok = cw.gw.reuse(); ok {
				g.rows, g.buf = g.rows[:0], g.buf[:0]
			} else {
				// Room for 32 bytes of text a row, a little more than a
				// related row's: growing the bytes as rows come copies them.
				g = &rowGroup[R]{rows: make([]R, 0, rowsPerGroup), buf: make([]byte, 0, 32*rowsPerGroup), cols: cw.cols, fill: cw.fill}
			}
			g.last = ""
			cw.cur = g
		}
		cw.add(g, &rows[i])
		if len(g.rows) == rowsPerGroup {
			if cw.err = cw.flush(); cw.err != nil {
				return cw.err
			}
		}
	}
	return nil
}

// flush hands the current row group to the encoders.
func (cw *columnsWriter[T, R]) flush() error {
	g := cw.cur
	cw.cur = nil
	if g == nil || len(g.rows) == 0 {
		return nil
	}
	return cw.gw.send(g)
}

// encode writes the group column by column, 64 rows at a time as
// GenericWriter does (a page ends only after such a step).
func (g *rowGroup[R]) encode(cws []*parquet.ColumnWriter) error {
	vals := make([]parquet.Value, 0, 64)
	for c, leaf := range g.cols {
		cw := cws[leaf]
		null := parquet.NullValue().Level(0, 0, leaf)
		for i := 0; i < len(g.rows); i += 64 {
			vals = g.fill(c, g.rows[i:min(i+64, len(g.rows))], g.buf, vals[:0], null, leaf)
			if _, err := cw.WriteRowValues(vals); err != nil {
				return err
			}
		}
	}
	return nil
}

// commit writes the last row group, waits for the encoders, and renames
// the partition into place, as Writer.Commit does. After an error the
// writer is aborted.
func (cw *columnsWriter[T, R]) commit() error {
	if !cw.finished {
		err := cw.err
		if err == nil {
			err = cw.flush()
		}
		err = errors.Join(err, cw.gw.finish())
		if err != nil {
			cw.abort()
			return err
		}
		cw.finished = true
	}
	return cw.w.Commit()
}

// abort discards everything written; the lake is left as it was.
func (cw *columnsWriter[T, R]) abort() {
	cw.gw.abort()
	cw.w.Abort()
}

// optionalInt64 is the value of an optional INT64 column of leaf index
// leaf: null (the column's null value), or v at definition level 1.
func optionalInt64(v int64, ok bool, null parquet.Value, leaf int) parquet.Value {
	if !ok {
		return null
	}
	return parquet.Int64Value(v).Level(0, 1, leaf)
}
