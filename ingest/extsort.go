package ingest

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"

	"github.com/klauspost/compress/s2"
	"github.com/kwdata/kwdata/lake"
)

// sorterBlock is the size of the blocks a recordSorter holds records in:
// blocks, not one growing slice, so that memory grows in steps instead of
// doubling (and copying) at the budget.
const sorterBlock = 32 << 20

// recordSorter sorts records, each a key and an opaque payload, by key
// (byte order), keeping the order they were added in among equal keys.
// It holds them encoded, in a few large blocks without pointers (the
// garbage collector does not look inside), up to a budget; past it, it
// sorts them and spills them to a run file in the lake's staging folder.
// From then on it spills every half budget, on a goroutine of its own,
// while the other half fills: the parse does not wait for the sort and
// the write, and memory stays within the budget.
// Merge hands every key with its payloads to a function in key order,
// runs and memory merged, whatever their number.
//
// Both partitions of an ingest go through one: the keyword records of the
// planner exports and the SERPs, so that memory is bounded for either.
type recordSorter struct {
	data, prefix string // staging folder of the runs: lake.TempDir(data, prefix)
	what         string // what the records are, for messages: "SERP", "keyword"
	budget       int

	memRecords          // the records added since the last spill
	spare      [][]byte // emptied by a spill, for the next records
	spareRefs  [][]recordRef
	size       int      // bytes held in blocks and refs
	dir        string   // run files, created on the first spill
	runs       []string // in the order they were spilled

	// After the first spill, memory holds two halves of the budget: one
	// being filled and one being spilled by a goroutine (bg), so that the
	// parse goes on while a run is sorted and written.
	bg     chan error  // the background spill's result; nil when none runs
	bgRecs *memRecords // what it spills, its blocks to reuse once done
}

// memRecords are records held in memory: the blocks they are in and a
// reference to each, in the order added until they are sorted.
type memRecords struct {
	blocks [][]byte // full ones, then the current one last
	refs   []recordRef
	merged []recordRef // sort's buffer
}

// recordRef locates one record held in memory; seq is its position among
// the records added since the last spill.
type recordRef struct {
	prefix     uint64 // the key's first 8 bytes, big-endian: most comparisons end here, without a cache miss
	blk, off   uint32
	klen, plen uint32
	seq        uint32
}

// refSize is what a recordRef costs, counted in the budget: itself and
// its place in sort's buffer.
const refSize = 64

// keyPrefix is the first 8 bytes of key as a big-endian number, zero
// padded: keys compare as their prefixes do, unless the prefixes are equal.
func keyPrefix(key []byte) uint64 {
	var b [8]byte
	copy(b[:], key)
	return binary.BigEndian.Uint64(b[:])
}

func newRecordSorter(data, prefix, what string, budget int) *recordSorter {
	return &recordSorter{data: data, prefix: prefix, what: what, budget: max(budget, 1)}
}

// add copies one record in; it spills when the budget is reached: all of
// it the first time, half of it after.
func (s *recordSorter) add(key, payload []byte) error {
	n := len(key) + len(payload)
	if len(s.blocks) == 0 || cap(s.cur())-len(s.cur()) < n {
		s.blocks = append(s.blocks, s.newBlock(n))
	}
	b := &s.blocks[len(s.blocks)-1]
	off := len(*b)
	*b = append(append(*b, key...), payload...)
	s.refs = append(s.refs, recordRef{prefix: keyPrefix(key), blk: uint32(len(s.blocks) - 1), off: uint32(off),
		klen: uint32(len(key)), plen: uint32(len(payload)), seq: uint32(len(s.refs))})
	s.size += n + refSize
	limit := s.budget
	if s.spilled() {
		limit = max(s.budget/2, 1)
	}
	if s.size >= limit || len(s.refs) == 1<<32-1 {
		if !s.spilled() {
			return s.spill()
		}
		return s.spillBackground()
	}
	return nil
}

// newBlock returns an empty block with room for n bytes, a spare one if
// one is big enough: reusing them keeps the heap from holding emptied and
// new blocks at once until the garbage collector runs.
func (s *recordSorter) newBlock(n int) []byte {
	if k := len(s.spare); k > 0 && cap(s.spare[k-1]) >= n {
		b := s.spare[k-1]
		s.spare = s.spare[:k-1]
		return b[:0]
	}
	return make([]byte, 0, max(sorterBlock, n))
}

func (s *recordSorter) cur() []byte { return s.blocks[len(s.blocks)-1] }

func (m *memRecords) key(r recordRef) []byte {
	return m.blocks[r.blk][r.off : r.off+r.klen]
}

func (m *memRecords) payload(r recordRef) []byte {
	start := r.off + r.klen
	return m.blocks[r.blk][start : start+r.plen]
}

// compare orders records by key, then by the order added.
func (m *memRecords) compare(a, b recordRef) int {
	if a.prefix != b.prefix {
		return cmp.Compare(a.prefix, b.prefix)
	}
	if c := bytes.Compare(m.key(a), m.key(b)); c != 0 {
		return c
	}
	return cmp.Compare(a.seq, b.seq)
}

// parallelSort is the number of records from which sort uses two
// goroutines: the sort of a spill or of the last records otherwise runs
// while every other goroutine waits for it.
const parallelSort = 1 << 16

// sort orders the records by key, then by the order added: two halves
// sorted at once, then merged.
func (m *memRecords) sort() {
	n := len(m.refs)
	if n < parallelSort || runtime.GOMAXPROCS(0) < 2 {
		slices.SortFunc(m.refs, m.compare)
		return
	}
	a, b := m.refs[:n/2], m.refs[n/2:]
	var wg sync.WaitGroup
	wg.Go(func() { slices.SortFunc(a, m.compare) })
	slices.SortFunc(b, m.compare)
	wg.Wait()
	out := slices.Grow(m.merged[:0], n)
	for len(a) > 0 && len(b) > 0 {
		if m.compare(b[0], a[0]) < 0 {
			out, b = append(out, b[0]), b[1:]
		} else {
			out, a = append(out, a[0]), a[1:]
		}
	}
	out = append(append(out, a...), b...)
	m.refs, m.merged = out, m.refs
}

// nextRun creates the staging folder on the first spill and returns the
// name of the next run, which it counts as spilled.
func (s *recordSorter) nextRun() (string, error) {
	if s.dir == "" {
		dir, err := lake.TempDir(s.data, s.prefix)
		if err != nil {
			return "", err
		}
		s.dir = dir
	}
	name := filepath.Join(s.dir, fmt.Sprintf("run-%05d", len(s.runs)))
	s.runs = append(s.runs, name)
	return name, nil
}

// spill writes the records in memory as the next sorted run and empties
// memory, after the background spill, if one runs.
func (s *recordSorter) spill() error {
	if err := s.wait(); err != nil {
		return err
	}
	if len(s.refs) == 0 {
		return nil
	}
	name, err := s.nextRun()
	if err != nil {
		return err
	}
	if err := s.writeSorted(&s.memRecords, name); err != nil {
		return err
	}
	s.reuse(&s.memRecords)
	return nil
}

// writeSorted sorts m and writes it as the run name.
func (s *recordSorter) writeSorted(m *memRecords, name string) error {
	m.sort()
	if err := m.writeRun(name); err != nil {
		return fmt.Errorf("cannot spill %s records to %s: %w", s.what, name, err)
	}
	return nil
}

// spillBackground hands the records in memory to a goroutine that sorts
// them and writes them as the next run, once the one before is done, and
// goes on with the blocks that one emptied.
func (s *recordSorter) spillBackground() error {
	if err := s.wait(); err != nil {
		return err
	}
	name, err := s.nextRun()
	if err != nil {
		return err
	}
	recs := s.memRecords
	s.memRecords = memRecords{refs: s.spareRef(), merged: s.spareRef()}
	s.size = 0
	done := make(chan error, 1)
	s.bgRecs, s.bg = &recs, done
	go func() { done <- s.writeSorted(&recs, name) }()
	return nil
}

// spareRef returns an emptied reference array, or nil.
func (s *recordSorter) spareRef() []recordRef {
	k := len(s.spareRefs)
	if k == 0 {
		return nil
	}
	r := s.spareRefs[k-1]
	s.spareRefs = s.spareRefs[:k-1]
	return r[:0]
}

// wait waits for the background spill, if one runs, and takes its blocks
// back.
func (s *recordSorter) wait() error {
	if s.bg == nil {
		return nil
	}
	err := <-s.bg
	s.bg = nil
	s.reuse(s.bgRecs)
	s.bgRecs = nil
	return err
}

// reuse empties m and keeps its blocks and reference arrays for the
// records that come next.
func (s *recordSorter) reuse(m *memRecords) {
	for _, b := range m.blocks {
		if cap(b) == sorterBlock {
			s.spare = append(s.spare, b[:0])
		}
	}
	if m == &s.memRecords {
		s.blocks, s.refs, s.size = s.blocks[:0], s.refs[:0], 0
		return
	}
	for _, r := range [][]recordRef{m.refs, m.merged} {
		if cap(r) > 0 {
			s.spareRefs = append(s.spareRefs, r[:0])
		}
	}
	*m = memRecords{}
}

// spilled reports whether a run was written (or is being written).
func (s *recordSorter) spilled() bool { return len(s.runs) > 0 }

// A run file is an S2-compressed stream of records sorted by key, each a
// uvarint key length, the key, a uvarint payload length and the payload.
func (m *memRecords) writeRun(name string) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	zw := s2.NewWriter(f)
	bw := bufio.NewWriterSize(zw, 1<<16)
	var tmp [2 * binary.MaxVarintLen64]byte
	for _, r := range m.refs {
		n := binary.PutUvarint(tmp[:], uint64(r.klen))
		bw.Write(tmp[:n])
		bw.Write(m.key(r))
		n = binary.PutUvarint(tmp[:], uint64(r.plen))
		bw.Write(tmp[:n])
		bw.Write(m.payload(r))
	}
	err = bw.Flush()
	if err == nil {
		err = zw.Close()
	}
	return errors.Join(err, f.Close())
}

// remove drops everything and removes the run files, once the background
// spill is done. It is safe to call more than once.
func (s *recordSorter) remove() {
	s.wait()
	s.memRecords, s.spare, s.spareRefs = memRecords{}, nil, nil
	if s.dir != "" {
		os.RemoveAll(s.dir)
		s.dir = ""
	}
	s.runs = nil
}

// merge calls fn once a key, in key order, with the key's payloads in the
// order they were added. key and payloads are valid only during the call.
func (s *recordSorter) merge(fn func(key []byte, payloads [][]byte) error) error {
	if err := s.wait(); err != nil {
		return err
	}
	s.spare, s.spareRefs = nil, nil // no more records come
	s.memRecords.sort()
	var group [][]byte
	if len(s.runs) == 0 {
		for i := 0; i < len(s.refs); {
			k := s.key(s.refs[i])
			group = group[:0]
			j := i
			for ; j < len(s.refs) && bytes.Equal(s.key(s.refs[j]), k); j++ {
				group = append(group, s.payload(s.refs[j]))
			}
			if err := fn(k, group); err != nil {
				return err
			}
			i = j
		}
		return nil
	}
	var srcs []*mergeSource
	defer func() {
		for _, src := range srcs {
			src.close()
		}
	}()
	for _, name := range s.runs {
		r, err := openSortedRun(s.what, name)
		if err != nil {
			return err
		}
		srcs = append(srcs, &mergeSource{run: r})
	}
	srcs = append(srcs, &mergeSource{mem: &s.memRecords})
	var h mergeHeap
	for i, src := range srcs {
		src.index = i
		ok, err := src.next()
		if err != nil {
			return err
		}
		if ok {
			h = append(h, src)
		}
	}
	h.init()
	var key, buf []byte
	var ends []int
	for len(h) > 0 {
		key = append(key[:0], h[0].key...)
		buf, ends = buf[:0], ends[:0]
		for len(h) > 0 && bytes.Equal(h[0].key, key) {
			buf = append(buf, h[0].payload...)
			ends = append(ends, len(buf))
			if err := h.advance(); err != nil {
				return err
			}
		}
		group = group[:0]
		start := 0
		for _, e := range ends {
			group = append(group, buf[start:e])
			start = e
		}
		if err := fn(key, group); err != nil {
			return err
		}
	}
	return nil
}

// mergeSource is one sorted input of a merge: a run file, or the records
// in memory.
type mergeSource struct {
	run          *sortedRun
	mem          *memRecords
	pos          int
	index        int // sources at the same key come out by index: runs in spill order, memory last
	key, payload []byte
}

func (m *mergeSource) next() (bool, error) {
	if m.mem != nil {
		if m.pos == len(m.mem.refs) {
			return false, nil
		}
		r := m.mem.refs[m.pos]
		m.pos++
		m.key, m.payload = m.mem.key(r), m.mem.payload(r)
		return true, nil
	}
	return m.run.next(&m.key, &m.payload)
}

func (m *mergeSource) close() {
	if m.run != nil {
		m.run.f.Close()
	}
}

// mergeHeap is a min-heap of sources by current key, then index.
type mergeHeap []*mergeSource

func (h mergeHeap) less(i, j int) bool {
	if c := bytes.Compare(h[i].key, h[j].key); c != 0 {
		return c < 0
	}
	return h[i].index < h[j].index
}

func (h mergeHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h mergeHeap) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// advance moves the smallest source on, dropping it at its end.
func (h *mergeHeap) advance() error {
	src := (*h)[0]
	ok, err := src.next()
	if err != nil {
		return err
	}
	if !ok {
		src.close()
		last := len(*h) - 1
		(*h)[0] = (*h)[last]
		*h = (*h)[:last]
	}
	if len(*h) > 0 {
		h.down(0)
	}
	return nil
}

// maxRunRecord bounds a key or payload read from a run: any more is damage.
const maxRunRecord = 1 << 30

// sortedRun reads a run file back, into buffers it reuses.
type sortedRun struct {
	what, name   string
	f            *os.File
	br           *bufio.Reader
	key, payload []byte
}

func openSortedRun(what, name string) (*sortedRun, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("cannot read %s run: %w", what, err)
	}
	return &sortedRun{what: what, name: name, f: f, br: bufio.NewReaderSize(s2.NewReader(f), 1<<16)}, nil
}

// next reads the next record; false at the end of the run.
func (r *sortedRun) next(key, payload *[]byte) (bool, error) {
	var err error
	r.key, err = r.bytes(r.key)
	if err == io.EOF {
		return false, nil
	}
	if err == nil {
		r.payload, err = r.bytes(r.payload)
		err = noEOF(err)
	}
	if err != nil {
		return false, fmt.Errorf("cannot read %s run %s: %w", r.what, r.name, err)
	}
	*key, *payload = r.key, r.payload
	return true, nil
}

// bytes reads one uvarint-prefixed byte string into buf; io.EOF only
// before its first byte.
func (r *sortedRun) bytes(buf []byte) ([]byte, error) {
	n, err := binary.ReadUvarint(r.br)
	if err != nil {
		return buf, err
	}
	if n > maxRunRecord {
		return buf, fmt.Errorf("record of %d bytes", n)
	}
	buf = slices.Grow(buf[:0], int(n))[:n]
	if _, err := io.ReadFull(r.br, buf); err != nil {
		return buf, noEOF(err)
	}
	return buf, nil
}

func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
