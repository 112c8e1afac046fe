package lake

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/kwdata/kwdata/kw"
	"github.com/parquet-go/parquet-go"
)

// RelatedWriter writes the related partition, ten rows a keyword and the
// lake's most rows, by columns, and encodes and compresses its row groups
// on several goroutines while the caller computes the next rows:
// Writer[kw.RelatedRow] reads the rows by reflection on the calling
// goroutine, one row group after another, and it was a quarter of the CPU
// of a similarity run and the part of it no other core could take. The
// files hold the same rows, in the same row groups and files, and are the
// ones Writer[kw.RelatedRow] writes when given every row in one call, byte
// for byte (TestRelatedWriterMatchesWriter). Writer ends its pages at steps
// of 64 rows counted from the start of each call, so its files depend on
// how the rows were split into calls; a RelatedWriter's do not.
//
// A RelatedWriter is not safe for concurrent use. Nothing is visible in
// the lake until Commit; Abort discards everything.
type RelatedWriter struct {
	w        *Writer[kw.RelatedRow]
	gw       *groupWriter[kw.RelatedRow, *relatedGroup]
	cols     *[relatedColumns]int
	cur      *relatedGroup
	err      error
	finished bool // Commit's Finish part succeeded; only the rename is left
}

// relatedColumns is the number of columns of kw.RelatedRow.
const relatedColumns = 7

// relatedGroup is one row group of related rows, as values.
type relatedGroup struct {
	rows []relatedRow
	cols *[relatedColumns]int
}

// relatedRow is a kw.RelatedRow with its optional values held in place:
// the row is copied, the pointers are not kept. The strings are kept as
// they are (Go strings do not change).
type relatedRow struct {
	keyword, related  string
	rank, overlap     int32
	volume, cpc       int64
	hasVolume, hasCPC bool
	sameIntent        bool
}

// CreateRelated starts writing the related partition of country and date.
func CreateRelated(data, country, date string) (*RelatedWriter, error) {
	cols, err := columnsOf[kw.RelatedRow]("keyword", "rank", "related", "overlap", "volume", "cpc_micros", "same_intent")
	if err != nil {
		return nil, fmt.Errorf("cannot write related rows: %w", err)
	}
	w, err := Create[kw.RelatedRow](data, kw.DatasetRelated, country, date)
	if err != nil {
		return nil, err
	}
	rw := &RelatedWriter{w: w, cols: (*[relatedColumns]int)(cols)}
	rw.gw = startGroups[kw.RelatedRow, *relatedGroup](w)
	return rw, nil
}

// Write appends rows to the partition. It keeps no reference to rows or
// to what their pointers point to.
func (rw *RelatedWriter) Write(rows ...kw.RelatedRow) error {
	if rw.err != nil {
		return rw.err
	}
	for i := range rows {
		g := rw.cur
		if g == nil {
			var ok bool
			if g, ok = rw.gw.reuse(); ok {
				g.rows = g.rows[:0]
			} else {
				g = &relatedGroup{rows: make([]relatedRow, 0, rowsPerGroup), cols: rw.cols}
			}
			rw.cur = g
		}
		r := &rows[i]
		x := relatedRow{keyword: r.Keyword, related: r.Related, rank: r.Rank, overlap: r.Overlap, sameIntent: r.SameIntent}
		if r.Volume != nil {
			x.volume, x.hasVolume = *r.Volume, true
		}
		if r.CPCMicros != nil {
			x.cpc, x.hasCPC = *r.CPCMicros, true
		}
		g.rows = append(g.rows, x)
		if len(g.rows) == rowsPerGroup {
			if rw.err = rw.flush(); rw.err != nil {
				return rw.err
			}
		}
	}
	return nil
}

// flush hands the current row group to the encoders.
func (rw *RelatedWriter) flush() error {
	g := rw.cur
	rw.cur = nil
	if g == nil || len(g.rows) == 0 {
		return nil
	}
	return rw.gw.send(g)
}

// encode writes the group column by column, 64 rows at a time as
// GenericWriter does (a page ends only after such a step).
func (g *relatedGroup) encode(cws []*parquet.ColumnWriter) error {
	vals := make([]parquet.Value, 0, 64)
	for c, leaf := range g.cols {
		cw := cws[leaf]
		null := parquet.NullValue().Level(0, 0, leaf)
		for i := 0; i < len(g.rows); i += 64 {
			vals = vals[:0]
			rows := g.rows[i:min(i+64, len(g.rows))]
			switch c {
			case 0:
				for k := range rows {
					vals = append(vals, parquet.ByteArrayValue(stringBytes(rows[k].keyword)))
				}
			case 1:
				for k := range rows {
					vals = append(vals, parquet.Int32Value(rows[k].rank))
				}
			case 2:
				for k := range rows {
					vals = append(vals, parquet.ByteArrayValue(stringBytes(rows[k].related)))
				}
			case 3:
				for k := range rows {
					vals = append(vals, parquet.Int32Value(rows[k].overlap))
				}
			case 4:
				for k := range rows {
					vals = append(vals, optionalInt64(rows[k].volume, rows[k].hasVolume, null, leaf))
				}
			case 5:
				for k := range rows {
					vals = append(vals, optionalInt64(rows[k].cpc, rows[k].hasCPC, null, leaf))
				}
			case 6:
				for k := range rows {
					vals = append(vals, parquet.BooleanValue(rows[k].sameIntent))
				}
			}
			if _, err := cw.WriteRowValues(vals); err != nil {
				return err
			}
		}
	}
	return nil
}

// optionalInt64 is the value of an optional INT64 column of leaf index
// leaf: null (at definition level 0), or v at level 1.
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

// Commit writes the last row group, waits for the encoders, and renames
// the partition into place, as Writer.Commit does. After an error the
// writer is aborted.
func (rw *RelatedWriter) Commit() error {
	if !rw.finished {
		err := rw.err
		if err == nil {
			err = rw.flush()
		}
		err = errors.Join(err, rw.gw.finish())
		if err != nil {
			rw.Abort()
			return err
		}
		rw.finished = true
	}
	return rw.w.Commit()
}

// Abort discards everything written; the lake is left as it was.
func (rw *RelatedWriter) Abort() {
	rw.gw.abort()
	rw.w.Abort()
}
