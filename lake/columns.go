package lake

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/parquet-go/parquet-go"
)

// columnsWriter writes a partition of T by columns: it copies each row
// into a row group of R, a form that holds what the row's pointers point
// to, and has fill turn a run of rows into the values of one column.
// The row groups are encoded on several goroutines (groupWriter).
type columnsWriter[T, R any] struct {
	w        *Writer[T]
	gw       *groupWriter[T, *rowGroup[R]]
	cols     []int // leaf index of each column fill knows, in fill's order
	row      func(*T) R
	fill     columnFill[R]
	cur      *rowGroup[R]
	err      error
	finished bool // the files are written; only the rename is left
}

// columnFill appends to vals the values of column c (of leaf index leaf)
// of rows; null is that column's null value.
type columnFill[R any] func(c int, rows []R, vals []parquet.Value, null parquet.Value, leaf int) []parquet.Value

// rowGroup is one row group of rows, as R.
type rowGroup[R any] struct {
	rows []R
	cols []int
	fill columnFill[R]
}

// createColumns starts writing the partition of dataset for country and
// date; columns names the columns fill knows, in its order.
func createColumns[T, R any](data, dataset, country, date string, columns []string, row func(*T) R, fill columnFill[R]) (*columnsWriter[T, R], error) {
	cols, err := columnsOf[T](columns...)
	if err != nil {
		return nil, fmt.Errorf("cannot write %s rows: %w", dataset, err)
	}
	w, err := Create[T](data, dataset, country, date)
	if err != nil {
		return nil, err
	}
	cw := &columnsWriter[T, R]{w: w, cols: cols, row: row, fill: fill}
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
				g.rows = g.rows[:0]
			} else {
				g = &rowGroup[R]{rows: make([]R, 0, rowsPerGroup), cols: cw.cols, fill: cw.fill}
			}
			cw.cur = g
		}
		g.rows = append(g.rows, cw.row(&rows[i]))
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
			vals = g.fill(c, g.rows[i:min(i+64, len(g.rows))], vals[:0], null, leaf)
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

// stringBytes returns the bytes of s without copying them; the column
// writers copy what they are given and never write to it.
func stringBytes(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}
