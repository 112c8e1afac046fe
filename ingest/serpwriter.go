package ingest

import (
	"bufio"
	"cmp"
	"container/heap"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/klauspost/compress/s2"
	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/lake"
)

// DefaultSpillBytes is the memory a SERPWriter holds SERPs in before it
// spills them to a sorted run on disk: about 1 GiB of strings and rows, a
// few GiB of process memory once the runtime's overhead is counted. A
// country of 10M keywords (200M result rows) then takes about ten runs.
const DefaultSpillBytes = 1 << 30

// SERPWriter writes the serps partition of one country and date from SERPs
// added in any order, as an external sort: it holds SERPs in memory up to
// a budget, then sorts them by keyword and spills them to a compressed run
// file in the lake's staging folder; Commit merges the runs with what is
// left in memory. Memory stays bounded whatever the number of SERPs, and
// the partition is the same as if everything had been sorted at once: rows
// sorted by keyword then rank, one SERP a keyword: the last one added with
// rows, or the last one added when none of the keyword's has rows.
//
// A SERPWriter is not safe for concurrent use. Commit or Abort it; either
// removes the run files.
type SERPWriter struct {
	data, country, date string
	budget              int

	mem  []SERP
	size int      // estimated bytes held in mem
	dir  string   // run files, created on the first spill
	runs []string // in the order they were spilled
	dups int      // SERPs dropped within runs for a later one
	err  error    // the first spill error; Add and Commit return it
}

// NewSERPWriter starts a serps partition of country and date under data.
// spillBytes bounds the SERPs held in memory (0: DefaultSpillBytes).
func NewSERPWriter(data, country, date string, spillBytes int) *SERPWriter {
	if spillBytes <= 0 {
		spillBytes = DefaultSpillBytes
	}
	return &SERPWriter{data: data, country: country, date: date, budget: spillBytes}
}

// serpOverhead is the estimated bookkeeping of one SERP and of one row
// beyond their strings' bytes.
const (
	serpOverhead = 64
	rowOverhead  = 64
)

// Add adds one keyword's SERP. It keeps s.Rows; the caller must not change
// them afterwards. An error means a spill failed; the writer is then
// unusable and must be aborted.
func (w *SERPWriter) Add(s SERP) error {
	if w.err != nil {
		return w.err
	}
	w.mem = append(w.mem, s)
	w.size += serpOverhead + len(s.Keyword)
	for _, r := range s.Rows {
		w.size += rowOverhead + len(r.URL) + len(r.URLKey)
	}
	if w.size >= w.budget {
		w.err = w.spill()
	}
	return w.err
}

// sortMem sorts the SERPs in memory by keyword and keeps one of each
// keyword (see wins), and returns how many it dropped.
func (w *SERPWriter) sortMem() int {
	slices.SortStableFunc(w.mem, func(a, b SERP) int { return strings.Compare(a.Keyword, b.Keyword) })
	out := w.mem[:0]
	for i := 0; i < len(w.mem); {
		keep := w.mem[i]
		j := i + 1
		for ; j < len(w.mem) && w.mem[j].Keyword == keep.Keyword; j++ {
			if wins(w.mem[j], keep) {
				keep = w.mem[j]
			}
		}
		out = append(out, keep)
		i = j
	}
	dups := len(w.mem) - len(out)
	clear(w.mem[len(out):])
	w.mem = out
	return dups
}

// spill writes the SERPs in memory as the next sorted run and empties mem.
// Duplicates within a run are dropped here; those across runs at merge.
func (w *SERPWriter) spill() error {
	if w.dir == "" {
		dir, err := lake.TempDir(w.data, "serp-runs-"+w.country+"-"+w.date+"-")
		if err != nil {
			return err
		}
		w.dir = dir
	}
	w.dups += w.sortMem()
	name := filepath.Join(w.dir, fmt.Sprintf("run-%05d", len(w.runs)))
	if err := writeRun(name, w.mem); err != nil {
		return fmt.Errorf("cannot spill SERPs to %s: %w", name, err)
	}
	w.runs = append(w.runs, name)
	clear(w.mem)
	w.mem, w.size = w.mem[:0], 0
	return nil
}

// Commit writes the partition, atomically, replacing one of the same date,
// and removes the run files.
func (w *SERPWriter) Commit(ctx context.Context) (WriteResult, error) {
	defer w.Abort()
	var res WriteResult
	if w.err != nil {
		return res, w.err
	}
	lw, err := lake.Create[kw.SERPRow](w.data, kw.DatasetSERPs, w.country, w.date)
	if err != nil {
		return res, fmt.Errorf("cannot write SERPs of %s: %w", w.country, err)
	}
	batch := make([]kw.SERPRow, 0, writeBatch)
	flush := func() error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := lw.Write(batch...); err != nil {
			return fmt.Errorf("cannot write SERPs of %s: %w", w.country, err)
		}
		res.Rows += len(batch)
		batch = batch[:0]
		return nil
	}
	put := func(s SERP) error {
		res.Keywords++
		slices.SortStableFunc(s.Rows, func(a, b kw.SERPRow) int { return cmp.Compare(a.Rank, b.Rank) })
		for _, r := range s.Rows {
			r.Keyword = s.Keyword
			batch = append(batch, r)
			if len(batch) == cap(batch) {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		return nil
	}
	res.Duplicates, err = w.merge(put)
	if err == nil {
		err = flush()
	}
	if err != nil {
		lw.Abort()
		return res, err
	}
	if err := lw.Commit(); err != nil {
		return res, fmt.Errorf("cannot write SERPs of %s: %w", w.country, err)
	}
	return res, nil
}

// Abort drops what was added and removes the run files. It is safe to call
// more than once, and after Commit.
func (w *SERPWriter) Abort() {
	w.mem = nil
	if w.dir != "" {
		os.RemoveAll(w.dir)
		w.dir = ""
	}
	w.runs = nil
}

// wins reports whether later, added after earlier for the same keyword,
// replaces it: the last SERP with rows wins, and an empty one (every result
// dropped, or none fetched) only replaces another empty one. A keyword's
// results are not erased by a later failed fetch of the same keyword.
func wins(later, earlier SERP) bool {
	return len(later.Rows) > 0 || len(earlier.Rows) == 0
}

// merge hands every keyword's SERP (see wins) to put in keyword order and
// returns the number of SERPs dropped for another of the same keyword,
// spills included. The runs come in the order they were spilled and mem
// after them, so among equal keywords sources come out in the order their
// SERPs were added; each run already holds one SERP a keyword, chosen the
// same way, so choosing again across runs gives what one sort would.
func (w *SERPWriter) merge(put func(SERP) error) (dups int, err error) {
	dups = w.dups + w.sortMem()
	if len(w.runs) == 0 {
		for _, s := range w.mem {
			if err := put(s); err != nil {
				return dups, err
			}
		}
		return dups, nil
	}
	h := &runHeap{}
	defer func() {
		for _, s := range h.srcs {
			s.close()
		}
	}()
	for i, name := range w.runs {
		r, err := openRun(name)
		if err != nil {
			return dups, err
		}
		src := &runSource{run: r, index: i}
		if err := h.push(src); err != nil {
			return dups, err
		}
	}
	if err := h.push(&runSource{mem: w.mem, index: len(w.runs)}); err != nil {
		return dups, err
	}
	// Sources at the same keyword come out by index, oldest first.
	for h.Len() > 0 {
		s := h.srcs[0].cur
		if err := h.advance(); err != nil {
			return dups, err
		}
		for h.Len() > 0 && h.srcs[0].cur.Keyword == s.Keyword {
			if next := h.srcs[0].cur; wins(next, s) {
				s = next
			}
			dups++
			if err := h.advance(); err != nil {
				return dups, err
			}
		}
		if err := put(s); err != nil {
			return dups, err
		}
	}
	return dups, nil
}

// runSource is one sorted input of the merge: a run file or the SERPs left
// in memory. cur is its current SERP.
type runSource struct {
	run   *runReader
	mem   []SERP
	index int
	cur   SERP
}

// next moves to the next SERP; false at the end.
func (s *runSource) next() (bool, error) {
	if s.run == nil {
		if len(s.mem) == 0 {
			return false, nil
		}
		s.cur, s.mem = s.mem[0], s.mem[1:]
		return true, nil
	}
	return s.run.next(&s.cur)
}

func (s *runSource) close() {
	if s.run != nil {
		s.run.close()
	}
}

// runHeap orders sources by their current keyword, then by index.
type runHeap struct{ srcs []*runSource }

func (h *runHeap) Len() int { return len(h.srcs) }
func (h *runHeap) Less(i, j int) bool {
	a, b := h.srcs[i], h.srcs[j]
	if c := strings.Compare(a.cur.Keyword, b.cur.Keyword); c != 0 {
		return c < 0
	}
	return a.index < b.index
}
func (h *runHeap) Swap(i, j int) { h.srcs[i], h.srcs[j] = h.srcs[j], h.srcs[i] }
func (h *runHeap) Push(x any)    { h.srcs = append(h.srcs, x.(*runSource)) }
func (h *runHeap) Pop() any {
	s := h.srcs[len(h.srcs)-1]
	h.srcs = h.srcs[:len(h.srcs)-1]
	return s
}

// push adds src at its first SERP, or closes it if it has none.
func (h *runHeap) push(src *runSource) error {
	ok, err := src.next()
	if err != nil || !ok {
		src.close()
		return err
	}
	heap.Push(h, src)
	return nil
}

// advance moves the smallest source on, dropping it at its end.
func (h *runHeap) advance() error {
	src := h.srcs[0]
	ok, err := src.next()
	if err != nil {
		return err
	}
	if ok {
		heap.Fix(h, 0)
		return nil
	}
	src.close()
	heap.Pop(h)
	return nil
}

// A run file is an S2-compressed stream of SERPs sorted by keyword:
// uvarint-prefixed keyword, uvarint row count, and per row a varint rank
// and the uvarint-prefixed URL and URL key. Row keywords are not stored;
// the writer sets them.

func writeRun(name string, serps []SERP) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	zw := s2.NewWriter(f)
	bw := bufio.NewWriterSize(zw, 1<<16)
	var tmp [binary.MaxVarintLen64]byte
	putStr := func(s string) {
		bw.Write(tmp[:binary.PutUvarint(tmp[:], uint64(len(s)))])
		bw.WriteString(s)
	}
	for _, s := range serps {
		putStr(s.Keyword)
		bw.Write(tmp[:binary.PutUvarint(tmp[:], uint64(len(s.Rows)))])
		for _, r := range s.Rows {
			bw.Write(tmp[:binary.PutVarint(tmp[:], int64(r.Rank))])
			putStr(r.URL)
			putStr(r.URLKey)
		}
	}
	err = bw.Flush()
	if err == nil {
		err = zw.Close()
	}
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// maxRunRows bounds a SERP's rows when reading a run: any more is damage.
const maxRunRows = 1 << 16

// runReader reads a run file back.
type runReader struct {
	name string
	f    *os.File
	br   *bufio.Reader
	buf  []byte
}

func openRun(name string) (*runReader, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("cannot read SERP run: %w", err)
	}
	return &runReader{name: name, f: f, br: bufio.NewReaderSize(s2.NewReader(f), 1<<16)}, nil
}

func (r *runReader) close() { r.f.Close() }

// next reads the next SERP into s; false at the end of the run.
func (r *runReader) next(s *SERP) (bool, error) {
	k, err := r.str()
	if err == io.EOF {
		return false, nil
	}
	if err == nil {
		*s = SERP{Keyword: k}
		var n uint64
		if n, err = binary.ReadUvarint(r.br); err == nil && n > maxRunRows {
			err = fmt.Errorf("%d rows in one SERP", n)
		}
		if err == nil {
			s.Rows = make([]kw.SERPRow, n)
			for i := range s.Rows {
				row := &s.Rows[i]
				var rank int64
				if rank, err = binary.ReadVarint(r.br); err != nil {
					break
				}
				row.Rank = int32(rank)
				if row.URL, err = r.str(); err != nil {
					break
				}
				if row.URLKey, err = r.str(); err != nil {
					break
				}
			}
		}
	}
	if err != nil {
		return false, fmt.Errorf("cannot read SERP run %s: %w", r.name, noEOF(err))
	}
	return true, nil
}

// str reads one uvarint-prefixed string; io.EOF only before its first byte.
func (r *runReader) str() (string, error) {
	n, err := binary.ReadUvarint(r.br)
	if err != nil {
		return "", err
	}
	if n > 1<<20 {
		return "", fmt.Errorf("string of %d bytes", n)
	}
	if cap(r.buf) < int(n) {
		r.buf = make([]byte, n)
	}
	b := r.buf[:n]
	if _, err := io.ReadFull(r.br, b); err != nil {
		return "", noEOF(err)
	}
	return string(b), nil
}

func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
