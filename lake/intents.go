package lake

import (
	"github.com/kwdata/kwdata/kw"
	"github.com/parquet-go/parquet-go"
)

// IntentWriter writes the intents partition by columns, its row groups
// encoded on several goroutines, as RelatedWriter does the related one:
// the similarity stage writes it after everything else, so the time
// Writer[kw.IntentRow] took on one goroutine was all wall time. Its files
// are the ones Writer[kw.IntentRow] writes when given every row in one
// call (TestIntentWriterMatchesWriter).
//
// An IntentWriter is not safe for concurrent use. Nothing is visible in
// the lake until Commit; Abort discards everything.
type IntentWriter struct {
	cw *columnsWriter[kw.IntentRow, intentRow]
}

// intentRow is a kw.IntentRow with its texts as spans of its row group's
// bytes.
type intentRow struct {
	keyword, intent span
	overlap         int32
}

func addIntent(g *rowGroup[intentRow], r *kw.IntentRow) {
	x := intentRow{intent: g.text(r.Intent), overlap: r.Overlap}
	if r.Keyword == r.Intent {
		x.keyword = x.intent // a leader's own row
	} else {
		start := len(g.buf)
		g.buf = append(g.buf, r.Keyword...)
		x.keyword = span{uint32(start), uint32(len(g.buf))}
	}
	g.rows = append(g.rows, x)
}

// CreateIntents starts writing the intents partition of country and date.
func CreateIntents(data, country, date string) (*IntentWriter, error) {
	cw, err := createColumns(data, kw.DatasetIntents, country, date,
		[]string{"keyword", "intent", "overlap"},
		addIntent, fillIntents)
	if err != nil {
		return nil, err
	}
	return &IntentWriter{cw: cw}, nil
}

// fillIntents is the columnFill of CreateIntents' columns.
func fillIntents(c int, rows []intentRow, buf []byte, vals []parquet.Value, _ parquet.Value, _ int) []parquet.Value {
	switch c {
	case 0:
		for k := range rows {
			vals = append(vals, parquet.ByteArrayValue(bytesOf(buf, rows[k].keyword)))
		}
	case 1:
		for k := range rows {
			vals = append(vals, parquet.ByteArrayValue(bytesOf(buf, rows[k].intent)))
		}
	case 2:
		for k := range rows {
			vals = append(vals, parquet.Int32Value(rows[k].overlap))
		}
	}
	return vals
}

// Write appends rows to the partition. It keeps no reference to rows.
func (iw *IntentWriter) Write(rows ...kw.IntentRow) error { return iw.cw.write(rows) }

// Commit writes the last row group, waits for the encoders, and renames
// the partition into place, as Writer.Commit does. After an error the
// writer is aborted.
func (iw *IntentWriter) Commit() error { return iw.cw.commit() }

// Abort discards everything written; the lake is left as it was.
func (iw *IntentWriter) Abort() { iw.cw.abort() }
