package lake

import (
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
	cw *columnsWriter[kw.RelatedRow, relatedRow]
}

// relatedRow is a kw.RelatedRow without pointers: its texts are spans of
// its row group's bytes, its optional values held in place.
type relatedRow struct {
	keyword, related  span
	rank, overlap     int32
	volume, cpc       int64
	hasVolume, hasCPC bool
	sameIntent        bool
}

// CreateRelated starts writing the related partition of country and date.
func CreateRelated(data, country, date string) (*RelatedWriter, error) {
	cw, err := createColumns(data, kw.DatasetRelated, country, date,
		[]string{"keyword", "rank", "related", "overlap", "volume", "cpc_micros", "same_intent"},
		addRelated, fillRelated)
	if err != nil {
		return nil, err
	}
	return &RelatedWriter{cw: cw}, nil
}

func addRelated(g *rowGroup[relatedRow], r *kw.RelatedRow) {
	x := relatedRow{keyword: g.text(r.Keyword), rank: r.Rank, overlap: r.Overlap, sameIntent: r.SameIntent}
	start := len(g.buf)
	g.buf = append(g.buf, r.Related...)
	x.related = span{uint32(start), uint32(len(g.buf))}
	if r.Volume != nil {
		x.volume, x.hasVolume = *r.Volume, true
	}
	if r.CPCMicros != nil {
		x.cpc, x.hasCPC = *r.CPCMicros, true
	}
	g.rows = append(g.rows, x)
}

// fillRelated is the columnFill of CreateRelated's columns.
func fillRelated(c int, rows []relatedRow, buf []byte, vals []parquet.Value, null parquet.Value, leaf int) []parquet.Value {
	switch c {
	case 0:
		for k := range rows {
			vals = append(vals, parquet.ByteArrayValue(bytesOf(buf, rows[k].keyword)))
		}
	case 1:
		for k := range rows {
			vals = append(vals, parquet.Int32Value(rows[k].rank))
		}
	case 2:
		for k := range rows {
			vals = append(vals, parquet.ByteArrayValue(bytesOf(buf, rows[k].related)))
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
	return vals
}

// Write appends rows to the partition. It keeps no reference to rows or
// to what their pointers point to.
func (rw *RelatedWriter) Write(rows ...kw.RelatedRow) error { return rw.cw.write(rows) }

// Commit writes the last row group, waits for the encoders, and renames
// the partition into place, as Writer.Commit does. After an error the
// writer is aborted.
func (rw *RelatedWriter) Commit() error { return rw.cw.commit() }

// Abort discards everything written; the lake is left as it was.
func (rw *RelatedWriter) Abort() { rw.cw.abort() }
