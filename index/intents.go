package index

import (
	"context"
	"errors"
	"iter"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/lake"
)

// intentColumns are the intents partition's columns, in the order of the
// intent* indexes.
var intentColumns = []string{"keyword", "intent", "overlap?"} // overlap came later: 0 when absent

const (
	intentKeyword = iota
	intentIntent
	intentOverlap
)

// intentsCursor turns the scan of the intents partition into a pull
// cursor, so that the merge reads it on its own goroutine in step with the
// keywords. It reads columns, not rows: the rows' reconstruction allocated
// two strings a row, one row per keyword. A batch's texts are slices of
// one string per column; a batch stays valid until the cursor pulls the
// next one. A missing partition reads as empty.
func intentsCursor(ctx context.Context, data, country, date string) *cursor[kw.IntentRow] {
	c := &cursor[kw.IntentRow]{}
	seq := func(yield func([]kw.IntentRow) bool) {
		var (
			rows []kw.IntentRow
			text []byte
			offs [2][]uint32
		)
		err := lake.Scan(ctx, data, kw.DatasetIntents, country, date, intentColumns, lake.ScanOptions{}, func(b *lake.Batch) error {
			var all [2]string
			for j, col := range [2]int{intentKeyword, intentIntent} {
				text, offs[j] = text[:0], append(offs[j][:0], 0)
				for i := 0; i < b.Rows; i++ {
					text = append(text, b.Bytes(col, i)...)
					offs[j] = append(offs[j], uint32(len(text)))
				}
				all[j] = string(text)
			}
			rows = grow(rows, b.Rows)
			for i := 0; i < b.Rows; i++ {
				rows = append(rows, kw.IntentRow{
					Keyword: all[0][offs[0][i]:offs[0][i+1]],
					Intent:  all[1][offs[1][i]:offs[1][i+1]],
					Overlap: b.Int32(intentOverlap, i),
				})
			}
			if !yield(rows) {
				return errStopScan
			}
			return nil
		})
		switch {
		case errors.Is(err, lake.ErrNoPartition):
			c.missing = true
		case err != nil && !errors.Is(err, errStopScan):
			c.scanErr = err
		}
	}
	c.pull, c.stop = iter.Pull(iter.Seq[[]kw.IntentRow](seq))
	return c
}
