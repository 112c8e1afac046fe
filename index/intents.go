package index

import (
	"context"
	"errors"
	"iter"
	"strings"
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
// two strings a row, one row per keyword. A row's keyword and intent point
// into the scan's batch, which stays valid until the cursor pulls the
// next one: the merge copies what it keeps (an intent leader's text, by
// intentLeaders). A missing partition reads as empty.
func intentsCursor(ctx context.Context, data, country, date string) *cursor[kw.IntentRow] {
	c := &cursor[kw.IntentRow]{}
	seq := func(yield func([]kw.IntentRow) bool) {
		var rows []kw.IntentRow
		err := lake.Scan(ctx, data, kw.DatasetIntents, country, date, intentColumns, lake.ScanOptions{}, func(b *lake.Batch) error {
			rows = grow(rows, b.Rows)
			for i := 0; i < b.Rows; i++ {
				rows = append(rows, kw.IntentRow{
					Keyword: inPlace(b.Bytes(intentKeyword, i)),
					Intent:  inPlace(b.Bytes(intentIntent, i)),
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

// intentLeaders names each keyword's intent leader as the merge meets it,
// while the intents batch that holds the leader's text is still valid: a
// leader met before is found in a map, a new one copied into it. The
// side builders then get a number, not a text: the intents were copied
// out of every batch for them before (half a GiB at 10M keywords) and
// looked up on their goroutine.
type intentLeaders struct {
	// The leaders another keyword names, in order of first appearance.
	names []string
	idx   map[string]uint32 // 1 + a leader's place in names
	// The last leader found, since keywords of one group often come one
	// after another.
	last   string
	lastID uint32
}

// leadersPerKeyword sizes the map of leaders: the leaders other keywords
// name were a quarter of the keywords of the 10M sample (2.4M), and the
// growth of the map to that size was 1.3 s of a build's CPU.
const leadersPerKeyword = 4

// newIntentLeaders returns the leaders of about n keywords (0 if not known).
func newIntentLeaders(n int) *intentLeaders {
	return &intentLeaders{idx: make(map[string]uint32, max(n, 0)/leadersPerKeyword)}
}

// of returns keyword's intent leader, given its intent: 0 when it leads
// its own group (its intent is itself, or none), else 1 + the leader's
// place in names. intent need not outlive the call.
func (ls *intentLeaders) of(intent, keyword string) uint32 {
	switch {
	case intent == keyword || intent == "":
		return 0
	case intent == ls.last && ls.lastID != 0:
		return ls.lastID
	}
	l, ok := ls.idx[intent]
	if !ok {
		ls.names = append(ls.names, strings.Clone(intent))
		l = uint32(len(ls.names))
		ls.idx[ls.names[l-1]] = l
	}
	ls.last, ls.lastID = ls.names[l-1], l
	return l
}
