package lake

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"

	"github.com/kwdata/kwdata/kw"
	"github.com/parquet-go/parquet-go"
)

// SERPWriter writes the serps partition, the lake's largest, from rows
// given as bytes, and encodes and compresses its row groups on several
// goroutines: Writer[kw.SERPRow] does that work on the calling goroutine,
// one row group after another, and it was most of the time of an ingest.
// The files are the same as Writer[kw.SERPRow] writes from the same rows,
// byte for byte (TestSERPWriterMatchesWriter): the same row groups of
// rowsPerGroup rows, files of rowsPerFile rows, pages and compression.
//
// A SERPWriter is not safe for concurrent use. Nothing is visible in the
// lake until Commit; Abort discards everything.
type SERPWriter struct {
	w       *Writer[kw.SERPRow]
	cols    [4]int // column index of keyword, rank, url and url_key
	cur     *serpGroup
	file    *serpFile // the file new row groups go to
	files   []*serpFile
	groups  int    // row groups handed out
	keyword []byte // the last row's keyword, stored once for its rows
	free    chan *serpGroup

	jobs    chan *serpGroup // to the encoders
	order   chan *serpGroup // to the committer, in row group order
	workers sync.WaitGroup
	done    chan struct{}
	failed  chan struct{} // closed when the committer failed; cerr says why
	cerr    error
	closed  bool
	err     error

	finished bool // Finish succeeded; only Commit or Abort is left
}

// serpGroup is one row group on its way through the writer.
type serpGroup struct {
	buf  []byte
	rows []serpSpan
	rg   *parquet.ConcurrentRowGroupWriter
	file *serpFile
	last bool // the file's last row group
	cols *[4]int
	err  chan error
}

// serpSpan is one row: its strings as [start, end) offsets into buf.
type serpSpan struct {
	keyword, url, key [2]int
	rank              int32
}

type serpFile struct {
	f  *os.File
	pw *parquet.GenericWriter[kw.SERPRow]
}

// CreateSERPs starts writing the serps partition of country and date.
func CreateSERPs(data, country, date string) (*SERPWriter, error) {
	w, err := Create[kw.SERPRow](data, kw.DatasetSERPs, country, date)
	if err != nil {
		return nil, err
	}
	schema := parquet.SchemaOf(kw.SERPRow{})
	sw := &SERPWriter{w: w}
	for i, name := range []string{"keyword", "rank", "url", "url_key"} {
		leaf, ok := schema.Lookup(name)
		if !ok {
			w.Abort()
			return nil, fmt.Errorf("the serps schema has no column %s", name)
		}
		sw.cols[i] = leaf.ColumnIndex
	}
	workers := runtime.GOMAXPROCS(0)
	sw.jobs = make(chan *serpGroup)
	sw.order = make(chan *serpGroup, 2*workers)
	sw.free = make(chan *serpGroup, 2*workers+2)
	sw.done, sw.failed = make(chan struct{}), make(chan struct{})
	for range workers {
		sw.workers.Go(func() {
			for g := range sw.jobs {
				g.err <- g.encode()
			}
		})
	}
	go sw.commitLoop()
	return sw, nil
}

// Add appends one row; the bytes are copied.
func (sw *SERPWriter) Add(keyword []byte, rank int32, url, urlKey []byte) error {
	if sw.err != nil {
		return sw.err
	}
	g := sw.cur
	if g == nil {
		select {
		case g = <-sw.free:
			g.buf, g.rows = g.buf[:0], g.rows[:0]
		default:
			g = &serpGroup{buf: make([]byte, 0, 16<<20), rows: make([]serpSpan, 0, rowsPerGroup), cols: &sw.cols}
		}
		sw.cur, sw.keyword = g, nil
	}
	var r serpSpan
	if n := len(g.rows); n > 0 && string(keyword) == string(sw.keyword) {
		r.keyword = g.rows[n-1].keyword
	} else {
		r.keyword = g.span(keyword)
		sw.keyword = g.buf[r.keyword[0]:r.keyword[1]]
	}
	r.rank, r.url, r.key = rank, g.span(url), g.span(urlKey)
	g.rows = append(g.rows, r)
	if len(g.rows) == rowsPerGroup {
		sw.err = sw.flush()
	}
	return sw.err
}

func (g *serpGroup) span(b []byte) [2]int {
	start := len(g.buf)
	g.buf = append(g.buf, b...)
	return [2]int{start, len(g.buf)}
}

// flush hands the current row group to the encoders and the committer.
func (sw *SERPWriter) flush() error {
	g := sw.cur
	sw.cur = nil
	if g == nil || len(g.rows) == 0 {
		return nil
	}
	const groupsPerFile = rowsPerFile / rowsPerGroup
	if sw.groups%groupsPerFile == 0 {
		f, pw, err := sw.w.nextFile()
		if err != nil {
			return err
		}
		sw.file = &serpFile{f: f, pw: pw}
		sw.files = append(sw.files, sw.file)
	}
	sw.groups++
	g.file, g.last = sw.file, sw.groups%groupsPerFile == 0
	g.rg = sw.file.pw.BeginRowGroup()
	g.err = make(chan error, 1)
	select {
	case sw.order <- g:
	case <-sw.failed:
		return sw.cerr
	}
	sw.jobs <- g // the encoders take every group the committer waits for
	return nil
}

// encode writes the group's values column by column, 64 rows at a time
// as GenericWriter does (a page ends only after such a step), and
// compresses its pages.
func (g *serpGroup) encode() error {
	cws := g.rg.ColumnWriters()
	vals := make([]parquet.Value, 0, 64)
	for c, col := range g.cols {
		cw := cws[col]
		for i := 0; i < len(g.rows); i += 64 {
			vals = vals[:0]
			for _, r := range g.rows[i:min(i+64, len(g.rows))] {
				switch c {
				case 0:
					vals = append(vals, parquet.ByteArrayValue(g.buf[r.keyword[0]:r.keyword[1]]))
				case 1:
					vals = append(vals, parquet.Int32Value(r.rank))
				case 2:
					vals = append(vals, parquet.ByteArrayValue(g.buf[r.url[0]:r.url[1]]))
				case 3:
					vals = append(vals, parquet.ByteArrayValue(g.buf[r.key[0]:r.key[1]]))
				}
			}
			if _, err := cw.WriteRowValues(vals); err != nil {
				return err
			}
		}
	}
	return g.rg.Flush()
}

// commitLoop commits the encoded row groups in order and finishes each
// file after its last; after a failure it only waits for the rest.
func (sw *SERPWriter) commitLoop() {
	defer close(sw.done)
	for g := range sw.order {
		err := <-g.err
		if sw.cerr != nil {
			continue
		}
		if err == nil {
			_, err = g.rg.Commit()
		}
		if err == nil && g.last {
			err = finishFile(g.file.f, g.file.pw)
			g.file.f = nil
		}
		if err != nil {
			sw.cerr = fmt.Errorf("cannot write %s: %w", g.file.f.Name(), err)
			close(sw.failed)
			continue
		}
		g.rg = nil
		select {
		case sw.free <- g:
		default:
		}
	}
}

// stop ends the goroutines and returns the committer's error.
func (sw *SERPWriter) stop() error {
	if !sw.closed {
		sw.closed = true
		close(sw.order)
		close(sw.jobs)
		sw.workers.Wait()
		<-sw.done
	}
	return sw.cerr
}

// Finish writes the last row group and closes the files without
// publishing the partition: Commit publishes it, Abort drops it. It
// lets a caller write a partition while the input of another is still
// being checked. After an error the writer is aborted.
func (sw *SERPWriter) Finish() error {
	if sw.finished {
		return nil
	}
	err := sw.err
	if err == nil {
		err = sw.flush()
	}
	err = errors.Join(err, sw.stop())
	if f := sw.file; err == nil && f != nil && f.f != nil {
		// The last file ended before rowsPerFile rows.
		err = finishFile(f.f, f.pw)
		f.f = nil
	}
	if err != nil {
		sw.Abort()
		return err
	}
	sw.finished = true
	return nil
}

// Commit finishes the partition (Finish) and renames it into place, as
// Writer.Commit does.
func (sw *SERPWriter) Commit() error {
	if err := sw.Finish(); err != nil {
		return err
	}
	return sw.w.Commit()
}

// Abort discards everything written; the lake is left as it was.
func (sw *SERPWriter) Abort() {
	sw.stop()
	for _, f := range sw.files {
		if f.f != nil {
			f.f.Close()
		}
	}
	sw.w.Abort()
}
