package index

import (
	"bytes"
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

// relColumns are the related partition's columns the build reads, in the
// order of the rel* indexes.
var relColumns = []string{"keyword", "rank", "related", "overlap", "volume", "cpc_micros", "same_intent"}

const (
	relKeyword = iota
	relRank
	relRelated
	relOverlap
	relVolume
	relCPC
	relSameIntent
)

// appendRelatedColumns is appendRelated of row i of a related batch.
func appendRelatedColumns(dst []byte, b *lake.Batch, i int) []byte {
	rel := b.Bytes(relRelated, i)
	dst = binary.AppendUvarint(dst, uint64(len(rel)))
	dst = append(dst, rel...)
	for _, col := range [2]int{relVolume, relCPC} {
		if v, ok := b.Int64(col, i); ok {
			dst = appendOpt(dst, &v)
		} else {
			dst = appendOpt(dst, nil)
		}
	}
	bits := uint64(uint32(b.Int32(relOverlap, i))) << 1
	if b.Bool(relSameIntent, i) {
		bits |= 1
	}
	return binary.AppendUvarint(dst, bits)
}

// relStream is the merge's end of the related stream.
type relStream struct {
	*pipe[relChunk]
	i       int  // the current group of the pipe's chunk
	missing bool // no related partition: every keyword has none; final after close
}

// streamRelated starts reading a related partition. The caller must call
// close.
func streamRelated(ctx context.Context, data, country, date string) *relStream {
	s := &relStream{}
	s.pipe = startPipe(relChunksAhead, func(p *pipe[relChunk]) error {
		err := produceRelated(ctx, p, data, country, date)
		if errors.Is(err, lake.ErrNoPartition) {
			s.missing = true
			return nil
		}
		return err
	})
	return s
}

func produceRelated(ctx context.Context, p *pipe[relChunk], data, country, date string) error {
	var (
		chunk    = &relChunk{}
		entries  []byte // related entries of the current keyword
		count    int
		open     bool // a keyword's group is being collected
		prevRank int32
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
		if err := p.send(chunk); err != nil {
			return err
		}
		if c := p.reuse(); c != nil {
			chunk = c
			chunk.arena, chunk.groups = chunk.arena[:0], chunk.groups[:0]
		} else {
			chunk = &relChunk{arena: make([]byte, 0, cap(chunk.arena)), groups: make([]relGroup, 0, relChunkGroups)}
		}
		return nil
	}
	// Columns, not rows: the rows' reconstruction allocated two strings and
	// two numbers a row and took most of a build's time.
	err := lake.Scan(ctx, data, kw.DatasetRelated, country, date, relColumns, lake.ScanOptions{}, func(b *lake.Batch) error {
		for i := 0; i < b.Rows; i++ {
			keyword, rank := b.Bytes(relKeyword, i), b.Int32(relRank, i)
			if open {
				g := chunk.groups[len(chunk.groups)-1]
				last := chunk.arena[g.kwOff:g.kwEnd]
				switch c := bytes.Compare(last, keyword); {
				case c > 0 || (c == 0 && rank < prevRank):
					return fmt.Errorf("related partition of %s is not sorted by keyword then rank: %q rank %d after %q rank %d", country, keyword, rank, last, prevRank)
				case c != 0:
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
				chunk.arena = append(chunk.arena, keyword...)
				chunk.groups = append(chunk.groups, relGroup{kwOff: off, kwEnd: len(chunk.arena)})
				open = true
			}
			prevRank = rank
			if count < maxRelated {
				entries = appendRelatedColumns(entries, b, i)
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
// or ok false at the end. Both are valid until the next call of peek: a
// chunk the merge has passed is handed back to the producer.
func (s *relStream) peek() (keyword, related []byte, ok bool) {
	for s.chunk == nil || s.i >= len(s.chunk.groups) {
		if s.advance() == nil {
			return nil, nil, false
		}
		s.i = 0
	}
	g := s.chunk.groups[s.i]
	return s.chunk.arena[g.kwOff:g.kwEnd], s.chunk.arena[g.relOff:g.relEnd], true
}

func (s *relStream) next() { s.i++ }
