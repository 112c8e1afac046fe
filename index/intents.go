package index

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/maphash"
	"iter"
	"unsafe"

	"github.com/kwdata/kwdata/internal/prefetch"
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
// leader met before is found in a hash table, a new one copied into it.
// The side builders then get a number, not a text: the intents were
// copied out of every batch for them before (half a GiB at 10M
// keywords). The table is its own, not a map, so that the merge can ask
// for a lookup's memory a few keywords ahead (fetchSlot, fetchRecord):
// looking 7.6M intents up at random in a map of 2.4M leaders took 4 s of
// a 10M build's CPU, most of it waiting for the memory.
type intentLeaders struct {
	// Each leader another keyword names, in order of first appearance:
	// its number (4 bytes, little-endian), the uvarint length of its text,
	// then its text, in blocks of leaderBlock bytes that are never copied
	// as they fill (but for a record longer than that, which is a block of
	// its own). A record's place is its block << 32 | its start.
	blocks [][]byte
	starts []uint64 // leader l's record is at place starts[l-1]
	// slots is an open-addressing table of the leaders, a power of two
	// long and at most three quarters full; an empty slot has a zero at.
	slots []leaderSlot
	seed  maphash.Seed
	// The last leader found, since keywords of one group often come one
	// after another.
	last   string
	lastID uint32
}

// leaderBlock is the size of a block of leaders' records.
const leaderBlock = 1 << 20

// leaderSlot is a leader's hash and 1 + the place of its record.
type leaderSlot struct {
	hash uint64
	at   uint64
}

// newIntentLeaders returns the leaders of about n keywords (0 if not known).
func newIntentLeaders(n int) *intentLeaders {
	// The leaders other keywords name were a quarter of the 10M sample's
	// keywords (2.4M): room for them (64 MiB at 10M keywords), the table
	// growing past that.
	slots := 1 << 10
	for 3*slots < max(n, 0) {
		slots <<= 1
	}
	return &intentLeaders{slots: make([]leaderSlot, slots), seed: maphash.MakeSeed()}
}

// len returns the number of leaders.
func (ls *intentLeaders) len() int { return len(ls.starts) }

// name returns the text of leader l, a place in [0, len()).
func (ls *intentLeaders) name(l int) string {
	_, t := ls.record(ls.starts[l])
	return t
}

// record returns the number and the text of the record at place at.
func (ls *intentLeaders) record(at uint64) (uint32, string) {
	b := ls.blocks[at>>32][uint32(at):]
	id := binary.LittleEndian.Uint32(b)
	n, k := binary.Uvarint(b[4:])
	return id, inPlace(b[4+k : 4+k+int(n)])
}

// of returns keyword's intent leader, given its intent: 0 when it leads
// its own group (its intent is itself, or none), else 1 + the leader's
// place. intent need not outlive the call.
func (ls *intentLeaders) of(intent, keyword string) uint32 {
	switch {
	case leadsItself(intent, keyword):
		return 0
	case intent == ls.last && ls.lastID != 0:
		return ls.lastID
	}
	h, i := ls.home(intent)
	mask := uint64(len(ls.slots) - 1)
	for ; ls.slots[i].at != 0; i = (i + 1) & mask {
		if ls.slots[i].hash != h {
			continue
		}
		if id, t := ls.record(ls.slots[i].at - 1); t == intent {
			ls.last, ls.lastID = t, id
			return id
		}
	}
	// A new leader.
	id := uint32(len(ls.starts) + 1)
	size := 4 + binary.MaxVarintLen64 + len(intent)
	if k := len(ls.blocks); k == 0 || len(ls.blocks[k-1])+size > cap(ls.blocks[k-1]) {
		ls.blocks = append(ls.blocks, make([]byte, 0, max(size, leaderBlock)))
	}
	k := len(ls.blocks) - 1
	b := ls.blocks[k]
	at := uint64(k)<<32 | uint64(len(b))
	b = binary.LittleEndian.AppendUint32(b, id)
	b = binary.AppendUvarint(b, uint64(len(intent)))
	ls.blocks[k] = append(b, intent...)
	ls.starts = append(ls.starts, at)
	ls.slots[i] = leaderSlot{hash: h, at: at + 1}
	if 4*len(ls.starts) > 3*len(ls.slots) {
		ls.grow()
	}
	ls.last, ls.lastID = ls.name(int(id-1)), id
	return id
}

// grow doubles the table.
func (ls *intentLeaders) grow() {
	slots := make([]leaderSlot, 2*len(ls.slots))
	mask := uint64(len(slots) - 1)
	for _, s := range ls.slots {
		if s.at == 0 {
			continue
		}
		i := s.hash & mask
		for slots[i].at != 0 {
			i = (i + 1) & mask
		}
		slots[i] = s
	}
	ls.slots = slots
}

// leadsItself reports whether a keyword of intent intent leads its own
// group.
func leadsItself(intent, keyword string) bool { return intent == keyword || intent == "" }

// home returns intent's hash and the slot its probe starts at.
func (ls *intentLeaders) home(intent string) (hash, slot uint64) {
	h := maphash.String(ls.seed, intent)
	return h, h & uint64(len(ls.slots)-1)
}

// fetchSlot asks for the slot a lookup of intent (by of, a few keywords
// on) starts at.
func (ls *intentLeaders) fetchSlot(intent, keyword string) {
	if !leadsItself(intent, keyword) {
		_, i := ls.home(intent)
		prefetch.At(ls.slots, int(i))
	}
}

// fetchRecord asks for the record of intent's leader, if its slot, asked
// for before, holds it first.
func (ls *intentLeaders) fetchRecord(intent, keyword string) {
	if leadsItself(intent, keyword) {
		return
	}
	if h, i := ls.home(intent); ls.slots[i].hash == h && ls.slots[i].at != 0 {
		at := ls.slots[i].at - 1
		prefetch.At(ls.blocks[at>>32], int(uint32(at)))
	}
}
