package ingest

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/lake"
)

// DefaultSpillBytes is the memory an ingest holds SERPs (or keyword
// records) in before it spills them to a sorted run on disk: 1.5 GiB of
// encoded records (a SERP result row takes about 78 bytes with its share
// of the keyword), held in large blocks the garbage collector does not
// scan. The 1M-keyword sample's SERPs (19.2M rows, 1.49 GB encoded) then
// never reach the disk, and a country of 10M keywords (192M rows) takes
// about twenty runs (the first at the budget, the rest at half of it,
// spilled while the other half fills), S2-compressed to about an eighth
// of their JSONL. Read beside planner exports, the SERPs get five sixths
// of it (spillBudgets).
const DefaultSpillBytes = 3 << 29

// SERPWriter writes the serps partition of one country and date from SERPs
// added in any order, as an external sort: it holds SERPs, encoded, in
// memory up to a budget, then sorts them by keyword and spills them to a
// compressed run file in the lake's staging folder; Commit merges the runs
// with what is left in memory. Memory stays bounded whatever the number of
// SERPs, and the partition is the same as if everything had been sorted at
// once: rows sorted by keyword then rank, one SERP a keyword: the last one
// added with rows, or the last one added when none of the keyword's has
// rows.
//
// A SERPWriter is not safe for concurrent use. Commit or Abort it; either
// removes the run files.
type SERPWriter struct {
	data, country, date string
	sorter              *recordSorter
	buf                 []byte
	err                 error   // the first spill error; Add and Commit return it
	keys                *keySet // when set, gets every keyword written with rows
	added               int64   // SERPs added
	rows                rowCounter
}

// NewSERPWriter starts a serps partition of country and date under data.
// spillBytes bounds the SERPs held in memory (0: DefaultSpillBytes).
func NewSERPWriter(data, country, date string, spillBytes int) *SERPWriter {
	if spillBytes <= 0 {
		spillBytes = DefaultSpillBytes
	}
	return &SERPWriter{data: data, country: country, date: date,
		sorter: newRecordSorter(data, "serp-runs-"+country+"-"+date+"-", "SERP", spillBytes)}
}

// Add adds one keyword's SERP. It sorts s.Rows by rank (ties keep their
// order). An error means a spill failed; the writer is then unusable and
// must be aborted.
func (w *SERPWriter) Add(s SERP) error {
	slices.SortStableFunc(s.Rows, func(a, b kw.SERPRow) int { return cmp.Compare(a.Rank, b.Rank) })
	w.buf = binary.AppendUvarint(w.buf[:0], uint64(len(s.Rows)))
	for _, r := range s.Rows {
		w.buf = appendSERPRow(w.buf, r.Rank, r.URL, r.URLKey, -1)
	}
	return w.addEncoded([]byte(s.Keyword), w.buf)
}

// addEncoded adds one SERP as the parser encodes it: the keyword and the
// rows (see appendSERPRow), in rank order.
func (w *SERPWriter) addEncoded(keyword, rows []byte) error {
	if w.err == nil {
		w.err = w.sorter.add(keyword, rows)
		w.added++
	}
	return w.err
}

// A SERP's payload is a uvarint row count, then per row its rank (a
// varint), the uvarint-prefixed URL and its key: most often a part of the
// URL, stored as a uvarint 2*offset+1 and a uvarint length; else a uvarint
// 2*length and the key's bytes.

// appendSERPRow appends one encoded row to dst. at, if not negative, is
// where the caller expects key in url, which saves searching for it.
func appendSERPRow[S string | []byte](dst []byte, rank int32, url, key S, at int) []byte {
	dst = binary.AppendVarint(dst, int64(rank))
	dst = binary.AppendUvarint(dst, uint64(len(url)))
	dst = append(dst, url...)
	i := -1
	if at >= 0 && at+len(key) <= len(url) && string(url[at:at+len(key)]) == string(key) {
		i = at
	} else if len(key) > 0 {
		i = strings.Index(string(url), string(key))
	}
	if i >= 0 && len(key) > 0 {
		dst = binary.AppendUvarint(dst, uint64(2*i+1))
		return binary.AppendUvarint(dst, uint64(len(key)))
	}
	dst = binary.AppendUvarint(dst, uint64(2*len(key)))
	return append(dst, key...)
}

// errBadPayload is a SERP payload that does not decode: damage.
var errBadPayload = errors.New("damaged SERP record")

// serpRows reads the encoded rows of a SERP payload. url and key point
// into the payload.
type serpRows struct {
	p []byte
	n int // rows left
}

func newSERPRows(p []byte) (serpRows, error) {
	n, k := binary.Uvarint(p)
	if k <= 0 || n > uint64(len(p)) {
		return serpRows{}, errBadPayload
	}
	return serpRows{p: p[k:], n: int(n)}, nil
}

// serpRow is one decoded row; url and key point into the payload, and
// keyOff is the key's offset in url when it is a part of it, else -1.
type serpRow struct {
	rank     int32
	url, key []byte
	keyOff   int
}

// next returns the next row; ok is false after the last.
func (s *serpRows) next() (r serpRow, ok bool, err error) {
	if s.n == 0 {
		if len(s.p) != 0 {
			return r, false, errBadPayload
		}
		return r, false, nil
	}
	s.n--
	rank, k := binary.Varint(s.p)
	if k <= 0 || rank != int64(int32(rank)) {
		return r, false, errBadPayload
	}
	s.p = s.p[k:]
	r.rank = int32(rank)
	if r.url, ok = s.bytes(); !ok {
		return r, false, errBadPayload
	}
	code, k := binary.Uvarint(s.p)
	if k <= 0 {
		return r, false, errBadPayload
	}
	s.p = s.p[k:]
	if code&1 == 1 {
		n, k := binary.Uvarint(s.p)
		off := code >> 1
		if k <= 0 || off > uint64(len(r.url)) || n > uint64(len(r.url))-off {
			return r, false, errBadPayload
		}
		s.p = s.p[k:]
		r.key, r.keyOff = r.url[off:off+n], int(off)
	} else {
		n := code >> 1
		if n > uint64(len(s.p)) {
			return r, false, errBadPayload
		}
		r.key, s.p, r.keyOff = s.p[:n], s.p[n:], -1
	}
	return r, true, nil
}

func (s *serpRows) bytes() ([]byte, bool) {
	n, k := binary.Uvarint(s.p)
	if k <= 0 || n > uint64(len(s.p)-k) {
		return nil, false
	}
	b := s.p[k : k+int(n)]
	s.p = s.p[k+int(n):]
	return b, true
}

// serpRowCount is the number of rows of an encoded SERP (0 if damaged;
// the merge finds the damage when it decodes the winner).
func serpRowCount(p []byte) uint64 {
	n, _ := binary.Uvarint(p)
	return n
}

// decodeSERP turns an encoded SERP back into rows.
func decodeSERP(keyword string, p []byte) ([]kw.SERPRow, error) {
	rs, err := newSERPRows(p)
	if err != nil {
		return nil, err
	}
	rows := make([]kw.SERPRow, 0, rs.n)
	for {
		r, ok, err := rs.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return rows, nil
		}
		rows = append(rows, kw.SERPRow{Keyword: keyword, Rank: r.rank, URL: string(r.url), URLKey: string(r.key)})
	}
}

// Commit writes the partition, atomically, replacing one of the same date,
// and removes the run files.
func (w *SERPWriter) Commit(ctx context.Context) (WriteResult, error) {
	res, lw, err := w.write(ctx)
	if err != nil {
		return res, err
	}
	if err := lw.Commit(); err != nil {
		return res, fmt.Errorf("cannot write SERPs of %s: %w", w.country, err)
	}
	return res, nil
}

// write writes the partition into the staging folder and removes the run
// files; the caller publishes the partition (Commit) or drops it (Abort).
func (w *SERPWriter) write(ctx context.Context) (WriteResult, *lake.SERPWriter, error) {
	defer w.Abort()
	var res WriteResult
	if w.err != nil {
		return res, nil, w.err
	}
	lw, err := lake.CreateSERPs(w.data, w.country, w.date)
	if err != nil {
		return res, nil, fmt.Errorf("cannot write SERPs of %s: %w", w.country, err)
	}
	err = w.sorter.merge(func(key []byte, payloads [][]byte) error {
		if res.Keywords%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		res.Keywords++
		res.Duplicates += len(payloads) - 1
		w.rows.add(len(payloads))
		win := payloads[0]
		for _, p := range payloads[1:] {
			if serpRowCount(p) > 0 || serpRowCount(win) == 0 {
				win = p
			}
		}
		if w.keys != nil && serpRowCount(win) > 0 {
			w.keys.add(key)
		}
		rs, err := newSERPRows(win)
		for err == nil {
			var r serpRow
			var ok bool
			if r, ok, err = rs.next(); !ok || err != nil {
				break
			}
			res.Rows++
			if err := lw.Add(key, r.rank, r.url, r.key); err != nil {
				return fmt.Errorf("cannot write SERPs of %s: %w", w.country, err)
			}
		}
		if err != nil {
			return fmt.Errorf("cannot write SERPs of %s: %s %q: %w", w.country, w.sorter.what, key, err)
		}
		return nil
	})
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		lw.Abort()
		return res, nil, err
	}
	if err := lw.Finish(); err != nil {
		return res, nil, fmt.Errorf("cannot write SERPs of %s: %w", w.country, err)
	}
	w.rows.flush()
	return res, lw, nil
}

// Abort drops what was added and removes the run files. It is safe to call
// more than once, and after Commit.
func (w *SERPWriter) Abort() { w.sorter.remove() }
