package index

import (
	"context"
	"errors"
	"iter"
	"unsafe"

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

// inPlace returns b as a string without copying it: b must not change
// while the string is in use.
func inPlace(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// intentsCursor turns the scan of the intents partition into a pull
// cursor, so that the merge reads it on its own goroutine in step with the
// keywords. It reads columns, not rows: the rows' reconstruction allocated
// two strings a row, one row per keyword. A batch's intents are slices of
// one string, its keywords point into the scan's batch; a batch stays
// valid until the cursor pulls the next one, and only its intents may be
// kept past that. A missing partition reads as empty.
func intentsCursor(ctx context.Context, data, country, date string) *cursor[kw.IntentRow] {
	c := &cursor[kw.IntentRow]{}
	seq := func(yield func([]kw.IntentRow) bool) {
		var (
			rows []kw.IntentRow
			text []byte
			offs []uint32
		)
		err := lake.Scan(ctx, data, kw.DatasetIntents, country, date, intentColumns, lake.ScanOptions{}, func(b *lake.Batch) error {
			// The intents are kept by the builders, so they are copied, into
			// one string; a keyword is only compared with the keywords
			// stream's, so it is read in place, in the batch, which the
			// scan reuses only once the cursor pulls the next one.
			text, offs = text[:0], append(offs[:0], 0)
			for i := 0; i < b.Rows; i++ {
				text = append(text, b.Bytes(intentIntent, i)...)
				offs = append(offs, uint32(len(text)))
			}
			all := string(text)
			rows = grow(rows, b.Rows)
			for i := 0; i < b.Rows; i++ {
				rows = append(rows, kw.IntentRow{
					Keyword: inPlace(b.Bytes(intentKeyword, i)),
					Intent:  all[offs[i]:offs[i+1]],
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
