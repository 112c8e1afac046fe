package index

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/lake"
)

// The related partition holds ten rows a keyword and takes most of a
// build's Parquet decoding, so it is read on its own goroutine (the second
// core) and handed to the merge already grouped by keyword and encoded, in
// chunks that own their bytes: lake.Scan reuses its batch, so nothing of
// a batch may outlive its callback.

// relChunkGroups is the number of keywords' related rows in one chunk;
// with relChunksAhead chunks queued, memory stays at a few MiB.
const (
	relChunkGroups = 4096
	relChunksAhead = 2
)

// relChunk is a run of keywords with their encoded related sections.
type relChunk struct {
	arena  []byte
	groups []relGroup
}

// relGroup locates one keyword and its related section (a count, then
// appendRelated entries) in the chunk's arena.
type relGroup struct {
	kwOff, kwEnd, relOff, relEnd int
}

// relStream is the merge's end of the related stream.
type relStream struct {
	ch      chan *relChunk
	done    chan struct{}
	finish  chan struct{} // closed when the producer has returned
	err     error         // the producer's error; read after finish
	missing bool          // no related partition: every keyword has none

	chunk *relChunk
	i     int
}

// streamRelated starts reading a related partition. The caller must call
// close.
func streamRelated(ctx context.Context, data, country, date string) *relStream {
	s := &relStream{ch: make(chan *relChunk, relChunksAhead), done: make(chan struct{}), finish: make(chan struct{})}
	go func() {
		defer close(s.finish)
		defer close(s.ch)
		err := s.produce(ctx, data, country, date)
		switch {
		case errors.Is(err, lake.ErrNoPartition):
			s.missing = true
		case errors.Is(err, errStopScan):
		default:
			s.err = err
		}
	}()
	return s
}

func (s *relStream) produce(ctx context.Context, data, country, date string) error {
	var (
		chunk    = &relChunk{}
		entries  []byte // related entries of the current keyword
		count    int
		open     bool // a keyword's group is being collected
		prevRank int32
		rk       kw.RelatedKeyword
	)
	// endGroup closes the current group: its count and entries follow its
	// keyword in the arena.
	endGroup := func() {
		g := &chunk.groups[len(chunk.groups)-1]
		g.relOff = len(chunk.arena)
		chunk.arena = binary.AppendUvarint(chunk.arena, uint64(count))
		chunk.arena = append(chunk.arena, entries...)
		g.relEnd = len(chunk.arena)
		entries, count, open = entries[:0], 0, false
	}
	send := func() error {
		select {
		case s.ch <- chunk:
		case <-s.done:
			return errStopScan
		}
		chunk = &relChunk{arena: make([]byte, 0, cap(chunk.arena)), groups: make([]relGroup, 0, relChunkGroups)}
		return nil
	}
	err := lake.Scan(ctx, data, kw.DatasetRelated, country, date, func(batch []kw.RelatedRow) error {
		for i := range batch {
			r := &batch[i]
			if open {
				g := chunk.groups[len(chunk.groups)-1]
				last := chunk.arena[g.kwOff:g.kwEnd]
				switch {
				case string(last) > r.Keyword || (string(last) == r.Keyword && r.Rank < prevRank):
					return fmt.Errorf("related partition of %s is not sorted by keyword then rank: %q rank %d after %q rank %d", country, r.Keyword, r.Rank, last, prevRank)
				case string(last) != r.Keyword:
					endGroup()
					if len(chunk.groups) >= relChunkGroups {
						if err := send(); err != nil {
							return err
						}
					}
				}
			}
			if !open {
				off := len(chunk.arena)
				chunk.arena = append(chunk.arena, r.Keyword...)
				chunk.groups = append(chunk.groups, relGroup{kwOff: off, kwEnd: len(chunk.arena)})
				open = true
			}
			prevRank = r.Rank
			if count < maxRelated {
				rk = kw.RelatedKeyword{Keyword: r.Related, Volume: r.Volume, CPCMicros: r.CPCMicros, Overlap: r.Overlap, SameIntent: r.SameIntent}
				entries = appendRelated(entries, &rk)
				count++
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if open {
		endGroup()
	}
	if len(chunk.groups) > 0 {
		return send()
	}
	return nil
}

// peek returns the keyword and encoded related section of the next group,
// or ok false at the end.
func (s *relStream) peek() (keyword, related []byte, ok bool) {
	for s.chunk == nil || s.i >= len(s.chunk.groups) {
		c, more := <-s.ch
		if !more {
			return nil, nil, false
		}
		s.chunk, s.i = c, 0
	}
	g := s.chunk.groups[s.i]
	return s.chunk.arena[g.kwOff:g.kwEnd], s.chunk.arena[g.relOff:g.relEnd], true
}

func (s *relStream) next() { s.i++ }

// close stops the producer and waits for it; then err and missing are
// final.
func (s *relStream) close() error {
	select {
	case <-s.done:
	default:
		close(s.done)
	}
	for range s.ch { // unblock a producer mid-send
	}
	<-s.finish
	return s.err
}
