package index

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/kwdata/kwdata/kw"
)

// The intent groups, the suggestion tables and the explorer's tables of a
// country are built from the same stream of keywords as its entries, but
// nothing of them goes into an entry: the merge hands each keyword's
// intent, text and numbers to two goroutines of their own, in batches
// (the suggestion builder; the explorer's builder, which also collects
// what the groups need), and each writes its tables into SSTables of its
// own once the country's keywords end. The merge had carried the
// builders and their writes, beside the encoding and the SSTable writer
// of every entry: more than half of a build's CPU, on one core.

// noted is what the side builders take of one keyword.
// Its member owns its numbers, since a keyword record points into a chunk
// the keywords stream reuses; the texts are slices of strings no one
// changes.
type noted struct {
	leader  uint32 // the keyword's intent leader (intentLeaders.of)
	m       member
	in      textIn  // where m.keyword lies
	comp    float64 // competition, for the explorer's tables
	hasComp bool
}

// notesBatchLen is the number of keywords in a batch; with notesAhead
// batches queued for each builder, a few MiB are in flight.
const (
	notesBatchLen = 4096
	notesAhead    = 4
)

// notesBatch is a run of noted keywords, read by both builders; the last
// of them to be done with it returns it for reuse.
type notesBatch struct {
	notes []noted
	users atomic.Int32
}

// sideBuilders runs the suggestion and the explorer builders of one
// country; the latter writes its intent groups too.
type sideBuilders struct {
	cancel           context.CancelFunc
	suggest, explore chan *notesBatch
	free             chan *notesBatch
	cur              *notesBatch
	wg               sync.WaitGroup
	closed           bool
	// leaders names the keywords' intent leaders for the explorer's
	// builder, which reads it once the last batch is handed over.
	leaders *intentLeaders

	// Set by the builders; read after wg.Wait.
	groupsErr, suggestErr, exploreErr     error
	nGroups, nPrefixes, nWords, nPostings int
	nWordRecords                          int // the word records the explorer's builder wrote
}

// startSideBuilders starts the builders of country cc; they write into
// tables of set. The caller must call finish or abort.
func startSideBuilders(ctx context.Context, set *tableSet, cc string, keywords int) *sideBuilders {
	ctx, cancel := context.WithCancel(ctx)
	eb := newExploreBuilder(cc, keywords)
	s := &sideBuilders{
		cancel:  cancel,
		leaders: eb.leaders,
		suggest: make(chan *notesBatch, notesAhead),
		explore: make(chan *notesBatch, notesAhead),
		free:    make(chan *notesBatch, 2*notesAhead+2),
	}
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		sb := suggestBuilder{noWords: eb.wordRecords}
		for b := range s.suggest {
			if ctx.Err() == nil {
				for i := range b.notes {
					sb.add(b.notes[i].m.keyword, b.notes[i].m.volume)
				}
			}
			s.release(b)
		}
		s.nPrefixes, s.suggestErr = writeTables(ctx, set, func(tw *tableWriter) (int, error) {
			p, w, err := sb.write(ctx, tw, cc)
			s.nWords = w
			return p, err
		})
	}()
	go func() {
		defer s.wg.Done()
		for b := range s.explore {
			if ctx.Err() == nil {
				for i := range b.notes {
					n := &b.notes[i]
					eb.add(n.leader, n.m, n.in, n.comp, n.hasComp)
				}
			}
			s.release(b)
		}
		if s.groupsErr = ctx.Err(); s.groupsErr != nil {
			return
		}
		// Both only read the builder.
		var wg sync.WaitGroup
		if eb.tables {
			wg.Go(func() { s.nPostings, s.exploreErr = eb.write(ctx, set, cc) })
		}
		s.nGroups, s.groupsErr = eb.writeGroups(ctx, set, cc)
		wg.Wait()
		s.nWordRecords = eb.nWordRecords
	}()
	return s
}

// writeTables runs write with a table writer of set and finishes its last
// table; nothing is written once ctx is done (a failed build).
func writeTables(ctx context.Context, set *tableSet, write func(tw *tableWriter) (int, error)) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	tw := set.writer()
	n, err := write(tw)
	if err == nil {
		err = tw.finish()
	}
	if err != nil {
		tw.abort()
		return 0, err
	}
	return n, nil
}

// note hands the builders the next keyword of the country, in key order,
// and its intent (which need not outlive the call).
func (s *sideBuilders) note(intent string, m member, in textIn, competition *float64) {
	leader := s.leaders.of(intent, m.keyword)
	if s.cur == nil {
		select {
		case s.cur = <-s.free:
			s.cur.notes = s.cur.notes[:0]
		default:
			s.cur = &notesBatch{notes: make([]noted, 0, notesBatchLen)}
		}
	}
	s.cur.notes = append(s.cur.notes, noted{leader: leader, m: m, in: in, comp: kw.Deref(competition), hasComp: competition != nil})
	if len(s.cur.notes) == notesBatchLen {
		s.send()
	}
}

// leadersAhead is how many rows ahead of the merge its intents' lookups
// are asked for: the slot at twice the distance, the leader's text at
// the distance.
const leadersAhead = 8

// fetchLeaders asks for the memory the lookups of the intents ahead of
// the current row will read.
func (s *sideBuilders) fetchLeaders(intents *cursor[kw.IntentRow]) {
	if r := intents.ahead(2 * leadersAhead); r != nil {
		s.leaders.fetchSlot(r.Intent, r.Keyword)
	}
	if r := intents.ahead(leadersAhead); r != nil {
		s.leaders.fetchRecord(r.Intent, r.Keyword)
	}
}

func (s *sideBuilders) send() {
	b := s.cur
	s.cur = nil
	b.users.Store(2)
	s.suggest <- b
	s.explore <- b
}

func (s *sideBuilders) release(b *notesBatch) {
	if b.users.Add(-1) == 0 {
		clear(b.notes) // the texts may go
		select {
		case s.free <- b:
		default:
		}
	}
}

// finish hands over the last batch and waits for both builders to write
// their tables.
func (s *sideBuilders) finish() error {
	if s.cur != nil && len(s.cur.notes) > 0 {
		s.send()
	}
	s.stop()
	defer s.cancel()
	if s.groupsErr != nil {
		return fmt.Errorf("cannot write intent groups: %w", s.groupsErr)
	}
	if s.suggestErr != nil {
		return fmt.Errorf("cannot write suggestion tables: %w", s.suggestErr)
	}
	if s.exploreErr != nil {
		return fmt.Errorf("cannot write explorer tables: %w", s.exploreErr)
	}
	return nil
}

// abort stops the builders without writing anything more and waits for
// them. It may follow finish.
func (s *sideBuilders) abort() {
	s.cancel()
	s.stop()
}

func (s *sideBuilders) stop() {
	if !s.closed {
		s.closed = true
		close(s.suggest)
		close(s.explore)
	}
	s.wg.Wait()
}

// The keyword entries are written into their tables on a goroutine of
// their own too: the merge encodes them into batches and goes on, while
// the SSTable writer builds and compresses blocks (snappy) and hands them
// to its own goroutine for the file. Pebble's writer blocks on that
// handover, one data block at a time, so with the merge writing there
// the merge waited for the disk and the scheduler as well.

// kvBatchBytes is the size at which a batch of entries is handed to the
// writer; with kvBatchesAhead of them queued, about a MiB is in flight.
const (
	kvBatchBytes   = 256 << 10
	kvBatchesAhead = 4
)

// kvBatch is a run of keys and values, back to back in buf; ends holds,
// per entry, the end of its key and the end of its value.
type kvBatch struct {
	buf  []byte
	ends []int
}

// asyncTables feeds a tableWriter from another goroutine.
type asyncTables struct {
	cancel context.CancelFunc
	ch     chan *kvBatch
	free   chan *kvBatch
	cur    *kvBatch
	done   chan struct{} // closed when the writer has returned
	failed atomic.Bool
	err    error // the writer's; read after done
	closed bool
}

// startAsyncTables starts writing sorted entries into tables of tw. The
// caller must call finish or abort.
func startAsyncTables(ctx context.Context, tw *tableWriter) *asyncTables {
	ctx, cancel := context.WithCancel(ctx)
	a := &asyncTables{
		cancel: cancel,
		ch:     make(chan *kvBatch, kvBatchesAhead),
		free:   make(chan *kvBatch, kvBatchesAhead+2),
		done:   make(chan struct{}),
	}
	go func() {
		defer close(a.done)
		var err error
		for b := range a.ch {
			if err == nil {
				err = ctx.Err()
			}
			for i, off := 0, 0; err == nil && i < len(b.ends); i += 2 {
				k, v := b.buf[off:b.ends[i]], b.buf[b.ends[i]:b.ends[i+1]]
				err = tw.add(k, v)
				off = b.ends[i+1]
			}
			if err != nil {
				a.failed.Store(true)
			}
			select {
			case a.free <- b:
			default:
			}
		}
		if err == nil {
			err = ctx.Err()
		}
		if err == nil {
			err = tw.finish()
		}
		if err != nil {
			tw.abort()
		}
		a.err = err
	}()
	return a
}

// add queues an entry; it reports false once the writer has failed,
// whose error finish then returns.
func (a *asyncTables) add(key, val []byte) bool {
	if a.cur == nil {
		select {
		case a.cur = <-a.free:
			a.cur.buf, a.cur.ends = a.cur.buf[:0], a.cur.ends[:0]
		default:
			a.cur = &kvBatch{buf: make([]byte, 0, kvBatchBytes+4<<10)}
		}
	}
	a.cur.buf = append(a.cur.buf, key...)
	a.cur.ends = append(a.cur.ends, len(a.cur.buf))
	a.cur.buf = append(a.cur.buf, val...)
	a.cur.ends = append(a.cur.ends, len(a.cur.buf))
	if len(a.cur.buf) >= kvBatchBytes {
		b := a.cur
		a.cur = nil
		a.ch <- b
	}
	return !a.failed.Load()
}

// finish writes the queued entries, finishes the last table and returns
// the writer's error.
func (a *asyncTables) finish() error {
	if a.cur != nil && len(a.cur.ends) > 0 {
		a.ch <- a.cur
		a.cur = nil
	}
	a.stop()
	a.cancel()
	return a.err
}

// abort stops the writer; its tables are left unfinished. It may follow
// finish.
func (a *asyncTables) abort() {
	a.cancel()
	a.stop()
}

func (a *asyncTables) stop() {
	if !a.closed {
		a.closed = true
		close(a.ch)
	}
	<-a.done
}
