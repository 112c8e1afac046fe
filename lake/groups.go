package lake

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"

	"github.com/parquet-go/parquet-go"
)

// groupEncoder is one row group's rows, held by a writer that writes them
// by columns: encode writes every column's values to cws, the column
// writers of a row group of the file's schema, indexed by leaf.
type groupEncoder interface {
	encode(cws []*parquet.ColumnWriter) error
}

// groupWriter writes a partition of T as row groups that its caller fills
// by columns (G), and encodes and compresses them on several goroutines
// while the caller fills the next: the work Writer[T] does on the calling
// goroutine, one row group after another. Every group but the last holds
// rowsPerGroup rows, so the files are those Writer[T] writes from the same
// rows: files of rowsPerFile rows, the row groups in order.
//
// The caller sends groups with send and takes the committed ones back for
// reuse with reuse. A groupWriter is not safe for concurrent use.
type groupWriter[T any, G groupEncoder] struct {
	w      *Writer[T]
	file   *groupFile[T] // the file new row groups go to
	files  []*groupFile[T]
	groups int // row groups handed out

	free    chan G
	jobs    chan *groupJob[T, G] // to the encoders
	order   chan *groupJob[T, G] // to the committer, in row group order
	workers sync.WaitGroup
	done    chan struct{}
	failed  chan struct{} // closed when the committer failed; cerr says why
	cerr    error
	closed  bool
}

// groupJob is one row group on its way through a groupWriter.
type groupJob[T any, G groupEncoder] struct {
	g    G
	rg   *parquet.ConcurrentRowGroupWriter
	file *groupFile[T]
	last bool // the file's last row group
	err  chan error
}

type groupFile[T any] struct {
	f  *os.File
	pw *parquet.GenericWriter[T]
}

// startGroups starts the encoders of a groupWriter that writes through w:
// one a core.
func startGroups[T any, G groupEncoder](w *Writer[T]) *groupWriter[T, G] {
	workers := runtime.GOMAXPROCS(0)
	gw := &groupWriter[T, G]{
		w:      w,
		free:   make(chan G, 2*workers+2),
		jobs:   make(chan *groupJob[T, G]),
		order:  make(chan *groupJob[T, G], 2*workers),
		done:   make(chan struct{}),
		failed: make(chan struct{}),
	}
	for range workers {
		gw.workers.Go(func() {
			for j := range gw.jobs {
				j.err <- j.encode()
			}
		})
	}
	go gw.commitLoop()
	return gw
}

// encode writes the group's columns and compresses their pages.
func (j *groupJob[T, G]) encode() error {
	if err := j.g.encode(j.rg.ColumnWriters()); err != nil {
		return err
	}
	return j.rg.Flush()
}

// reuse returns a group committed earlier, if one is free, for the caller
// to empty and fill again.
func (gw *groupWriter[T, G]) reuse() (G, bool) {
	select {
	case g := <-gw.free:
		return g, true
	default:
		var zero G
		return zero, false
	}
}

// send hands a row group to the encoders and the committer; the caller
// must not touch g until reuse returns it. Every group but the last of
// the partition must hold rowsPerGroup rows.
func (gw *groupWriter[T, G]) send(g G) error {
	const groupsPerFile = rowsPerFile / rowsPerGroup
	if gw.groups%groupsPerFile == 0 {
		f, pw, err := gw.w.nextFile()
		if err != nil {
			return err
		}
		gw.file = &groupFile[T]{f: f, pw: pw}
		gw.files = append(gw.files, gw.file)
	}
	gw.groups++
	j := &groupJob[T, G]{g: g, file: gw.file, last: gw.groups%groupsPerFile == 0, err: make(chan error, 1)}
	j.rg = gw.file.pw.BeginRowGroup()
	select {
	case gw.order <- j:
	case <-gw.failed:
		return gw.cerr
	}
	gw.jobs <- j // the encoders take every group the committer waits for
	return nil
}

// commitLoop commits the encoded row groups in order and finishes each
// file after its last; after a failure it only waits for the rest.
func (gw *groupWriter[T, G]) commitLoop() {
	defer close(gw.done)
	for j := range gw.order {
		err := <-j.err
		if gw.cerr != nil {
			continue
		}
		if err == nil {
			_, err = j.rg.Commit()
		}
		name := j.file.f.Name()
		if err == nil && j.last {
			err = finishFile(j.file.f, j.file.pw)
			j.file.f = nil
		}
		if err != nil {
			gw.cerr = fmt.Errorf("cannot write %s: %w", name, err)
			close(gw.failed)
			continue
		}
		select {
		case gw.free <- j.g:
		default:
		}
	}
}

// stop ends the goroutines and returns the committer's error.
func (gw *groupWriter[T, G]) stop() error {
	if !gw.closed {
		gw.closed = true
		close(gw.order)
		close(gw.jobs)
		gw.workers.Wait()
		<-gw.done
	}
	return gw.cerr
}

// finish waits for every group sent and closes the files, without
// publishing the partition.
func (gw *groupWriter[T, G]) finish() error {
	err := gw.stop()
	if f := gw.file; err == nil && f != nil && f.f != nil {
		// The last file ended before rowsPerFile rows.
		err = finishFile(f.f, f.pw)
		f.f = nil
	}
	return err
}

// abort stops the goroutines and closes the files; the Writer's Abort
// removes them.
func (gw *groupWriter[T, G]) abort() {
	_ = gw.stop()
	for _, f := range gw.files {
		if f.f != nil {
			f.f.Close()
			f.f = nil
		}
	}
}

// columnsOf returns the leaf index, in the schema of T's rows, of each
// named column.
func columnsOf[T any](names ...string) ([]int, error) {
	var zero T
	schema := parquet.SchemaOf(zero)
	cols := make([]int, len(names))
	for i, name := range names {
		leaf, ok := schema.Lookup(name)
		if !ok {
			return nil, errors.New("the schema has no column " + name)
		}
		cols[i] = leaf.ColumnIndex
	}
	return cols, nil
}
