package ingest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/lake"
)

// keywordWriter writes the keywords partition of one country and date from
// records added in any order, as an external sort like SERPWriter: it
// holds records encoded up to a budget, spills sorted runs past it, and
// merges them at commit. Of the records of one keyword it keeps the one
// with the largest volume (a record without one counts below a volume of
// 0), the first added on ties.
//
// Each record comes from a source, numbered by the caller (a planner
// export, say); the months a source drops from all its records
// (dropMonths) are applied when the record is written.
type keywordWriter struct {
	data, country, date string
	sorter              *recordSorter
	drops               map[int]map[string]bool
	keys                *keySet // when set, gets every keyword written
	added               int64   // records added
	rows                rowCounter
	buf                 []byte
	err                 error
}

// keywordSpillBytes is the default budget of a keywordWriter: two thirds
// of the SERPs', because the planner reader leaves more garbage behind
// than the SERP parser (a string a line, numbers and months in blocks),
// which the garbage collector lets grow to about the live heap. Run
// gives it less when the SERPs are read at once (spillBudgets).
const keywordSpillBytes = DefaultSpillBytes * 2 / 3

func newKeywordWriter(data, country, date string, spillBytes int) *keywordWriter {
	if spillBytes <= 0 {
		spillBytes = keywordSpillBytes
	}
	return &keywordWriter{data: data, country: country, date: date, drops: map[int]map[string]bool{},
		sorter: newRecordSorter(data, "keyword-runs-"+country+"-"+date+"-", "keyword", spillBytes)}
}

// add adds one record of source src; it copies what it keeps.
func (w *keywordWriter) add(rec *kw.KeywordRecord, src int) error {
	if w.err == nil {
		w.buf = appendKeywordRecord(w.buf[:0], rec, src)
		w.err = w.sorter.add([]byte(rec.Keyword), w.buf)
		w.added++
	}
	return w.err
}

// dropMonths drops months from every record of source src.
func (w *keywordWriter) dropMonths(src int, months map[string]bool) {
	if len(months) > 0 {
		w.drops[src] = months
	}
}

// commit writes the partition, atomically, replacing one of the same
// date, and removes the run files.
func (w *keywordWriter) commit(ctx context.Context) (WriteResult, error) {
	res, lw, err := w.write(ctx)
	if err != nil {
		return res, err
	}
	if err := lw.Commit(); err != nil {
		return res, fmt.Errorf("cannot write keywords of %s: %w", w.country, err)
	}
	return res, nil
}

// write writes the partition into the staging folder and removes the run
// files; the caller publishes the partition (Commit) or drops it (Abort).
func (w *keywordWriter) write(ctx context.Context) (WriteResult, *lake.Writer[kw.KeywordRecord], error) {
	defer w.abort()
	var res WriteResult
	if w.err != nil {
		return res, nil, w.err
	}
	lw, err := lake.Create[kw.KeywordRecord](w.data, kw.DatasetKeywords, w.country, w.date)
	if err != nil {
		return res, nil, fmt.Errorf("cannot write keywords of %s: %w", w.country, err)
	}
	bw := newBatchWriter(ctx, func(recs []kw.KeywordRecord) error {
		if err := lw.Write(recs...); err != nil {
			return fmt.Errorf("cannot write keywords of %s: %w", w.country, err)
		}
		return nil
	})
	var d keywordDecoder
	batch := make([]kw.KeywordRecord, 0, writeBatch)
	err = w.sorter.merge(func(key []byte, payloads [][]byte) error {
		k := string(key)
		var best kw.KeywordRecord
		bestSrc := 0
		for i, p := range payloads {
			rec, src, err := d.decode(k, p)
			if err != nil {
				return fmt.Errorf("cannot write keywords of %s: keyword %q: %w", w.country, k, err)
			}
			if i == 0 || kw.MoreVolume(rec.Volume, best.Volume) {
				best, bestSrc = rec, src
			}
		}
		best.Monthly = dropMonths(best.Monthly, w.drops[bestSrc])
		// A source without change figures (the Google Ads API gives only
		// the series) gets them from its series; the planner export states
		// or computes its own, and its "--" stays null.
		if best.Source != SourcePlanner && best.YoYChange == nil && best.ThreeMonthChange == nil {
			best.YoYChange, best.ThreeMonthChange = kw.Changes(best.Monthly)
		}
		res.Keywords++
		res.Duplicates += len(payloads) - 1
		w.rows.add(len(payloads))
		if w.keys != nil {
			w.keys.add(key)
		}
		batch = append(batch, best)
		if len(batch) == cap(batch) {
			err := bw.send(batch)
			batch = make([]kw.KeywordRecord, 0, writeBatch)
			return err
		}
		return nil
	})
	if err == nil {
		err = bw.send(batch)
	}
	err = errors.Join(err, bw.close())
	if err == nil {
		w.rows.flush()
	}
	if err != nil {
		lw.Abort()
		return res, nil, err
	}
	res.Rows = res.Keywords
	return res, lw, nil
}

// abort drops what was added and removes the run files.
func (w *keywordWriter) abort() { w.sorter.remove() }

// A keyword record's payload (the keyword is the sorter's key): its
// source as a uvarint; per nullable number a byte, 0 for none, else 1 and
// the value (integers as varints, floats as their 8 IEEE 754 bytes, so
// that every value, +Inf included, comes back exact); strings as a
// uvarint length and the bytes; Monthly as a uvarint 0 for nil, else its
// length plus one, then each month's text and searches.

func appendKeywordRecord(dst []byte, r *kw.KeywordRecord, src int) []byte {
	dst = binary.AppendUvarint(dst, uint64(src))
	dst = appendOptInt(dst, r.Volume)
	dst = appendRecord(dst, r.VolumeRange)
	dst = appendOptInt(dst, r.CPCMicros)
	dst = appendOptFloat(dst, r.Competition)
	dst = appendRecord(dst, r.CompetitionLevel)
	dst = appendOptInt(dst, r.BidLowMicros)
	dst = appendOptInt(dst, r.BidHighMicros)
	if r.Monthly == nil {
		dst = append(dst, 0)
	} else {
		dst = binary.AppendUvarint(dst, uint64(len(r.Monthly))+1)
		for _, m := range r.Monthly {
			dst = appendRecord(dst, m.Month)
			dst = appendOptInt(dst, m.Searches)
		}
	}
	dst = appendOptFloat(dst, r.YoYChange)
	dst = appendOptFloat(dst, r.ThreeMonthChange)
	return appendRecord(dst, r.Source)
}

func appendOptInt(dst []byte, v *int64) []byte {
	if v == nil {
		return append(dst, 0)
	}
	return binary.AppendVarint(append(dst, 1), *v)
}

func appendOptFloat(dst []byte, v *float64) []byte {
	if v == nil {
		return append(dst, 0)
	}
	return binary.BigEndian.AppendUint64(append(dst, 1), math.Float64bits(*v))
}

// errBadKeyword is a keyword payload that does not decode: damage.
var errBadKeyword = errors.New("damaged keyword record")

// keywordDecoder decodes keyword payloads, taking the records' numbers
// and months from blocks shared by many records and the repeated texts
// (sources, levels, months, ranges) from a small table, as the planner
// reader does: millions of records must not cost millions of allocations.
type keywordDecoder struct {
	p      []byte
	err    bool
	ints   []int64
	floats []float64
	months []kw.MonthlySearches
	texts  map[string]string
}

func (d *keywordDecoder) decode(keyword string, p []byte) (rec kw.KeywordRecord, src int, err error) {
	d.p, d.err = p, false
	src = int(d.uvarint())
	rec.Keyword = keyword
	rec.Volume = d.optInt()
	rec.VolumeRange = d.text()
	rec.CPCMicros = d.optInt()
	rec.Competition = d.optFloat()
	rec.CompetitionLevel = d.text()
	rec.BidLowMicros = d.optInt()
	rec.BidHighMicros = d.optInt()
	if n := d.uvarint(); n > 0 && !d.err {
		n--
		if n > uint64(len(d.p)) {
			return rec, 0, errBadKeyword
		}
		if len(d.months) < int(n) {
			d.months = make([]kw.MonthlySearches, max(4096, int(n)))
		}
		rec.Monthly, d.months = d.months[:n:n], d.months[n:]
		for i := range rec.Monthly {
			rec.Monthly[i] = kw.MonthlySearches{Month: d.text(), Searches: d.optInt()}
		}
	}
	rec.YoYChange = d.optFloat()
	rec.ThreeMonthChange = d.optFloat()
	rec.Source = d.text()
	if d.err || len(d.p) != 0 {
		return rec, 0, errBadKeyword
	}
	return rec, src, nil
}

func (d *keywordDecoder) uvarint() uint64 {
	v, k := binary.Uvarint(d.p)
	if k <= 0 {
		d.err, d.p = true, nil
		return 0
	}
	d.p = d.p[k:]
	return v
}

func (d *keywordDecoder) flag() bool {
	if len(d.p) == 0 || d.p[0] > 1 {
		d.err, d.p = true, nil
		return false
	}
	f := d.p[0] == 1
	d.p = d.p[1:]
	return f
}

func (d *keywordDecoder) optInt() *int64 {
	if !d.flag() {
		return nil
	}
	v, k := binary.Varint(d.p)
	if k <= 0 {
		d.err, d.p = true, nil
		return nil
	}
	d.p = d.p[k:]
	if len(d.ints) == 0 {
		d.ints = make([]int64, 16384)
	}
	x := &d.ints[0]
	*x, d.ints = v, d.ints[1:]
	return x
}

func (d *keywordDecoder) optFloat() *float64 {
	if !d.flag() {
		return nil
	}
	if len(d.p) < 8 {
		d.err, d.p = true, nil
		return nil
	}
	v := math.Float64frombits(binary.BigEndian.Uint64(d.p))
	d.p = d.p[8:]
	if len(d.floats) == 0 {
		d.floats = make([]float64, 4096)
	}
	x := &d.floats[0]
	*x, d.floats = v, d.floats[1:]
	return x
}

// text decodes a string; texts of up to 32 bytes are shared through a
// table of at most 4096.
func (d *keywordDecoder) text() string {
	n := d.uvarint()
	if n > uint64(len(d.p)) {
		d.err, d.p = true, nil
		return ""
	}
	b := d.p[:n]
	d.p = d.p[n:]
	if n == 0 {
		return ""
	}
	if n > 32 {
		return string(b)
	}
	if s, ok := d.texts[string(b)]; ok {
		return s
	}
	s := string(b)
	if d.texts == nil {
		d.texts = map[string]string{}
	}
	if len(d.texts) < 4096 {
		d.texts[s] = s
	}
	return s
}

// batchWriter hands batches to write on a goroutine of its own, one batch
// ahead of the sender, so that decoding the merge and encoding Parquet
// overlap.
type batchWriter[T any] struct {
	ctx    context.Context
	ch     chan []T
	failed chan struct{} // closed when write failed; err says why
	done   chan struct{}
	err    error
}

func newBatchWriter[T any](ctx context.Context, write func([]T) error) *batchWriter[T] {
	bw := &batchWriter[T]{ctx: ctx, ch: make(chan []T, 1), failed: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(bw.done)
		for rows := range bw.ch {
			if err := write(rows); err != nil {
				bw.err = err
				close(bw.failed)
				for range bw.ch {
				}
				return
			}
		}
	}()
	return bw
}

// send queues a batch; it returns an error once writing has failed or ctx
// is done.
func (bw *batchWriter[T]) send(rows []T) error {
	if err := bw.ctx.Err(); err != nil {
		return err
	}
	if len(rows) == 0 {
		return nil
	}
	select {
	case bw.ch <- rows:
		return nil
	case <-bw.failed:
		return bw.err
	}
}

// close waits for the queued batches and returns the first error.
func (bw *batchWriter[T]) close() error {
	close(bw.ch)
	<-bw.done
	return bw.err
}
