// Package lake reads and writes kwdata's Parquet lake: compressed Parquet
// files (codecFor) in Hive partitions (<data>/lake/<dataset>/country=<cc>/date=<d>/),
// each partition written to a staging folder and renamed into place, so a
// reader never sees half of one and a re-run replaces it whole.
//
// It is the only package that touches Parquet files; the record types and
// the layout themselves are vocabulary and live in package kw.
package lake

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/klauspost/compress/s2"
	"github.com/kwdata/kwdata/kw"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/compress/snappy"
	"github.com/parquet-go/parquet-go/compress/zstd"
)

// ErrNoPartition is wrapped by readers when a partition does not exist.
var ErrNoPartition = errors.New("no such partition")

// rowsPerGroup bounds the rows a writer buffers before it flushes a row
// group: small enough to keep memory flat, large enough for DuckDB to read
// in parallel without per-group overhead dominating.
const rowsPerGroup = 128 * 1024

// rowsPerFile rolls a partition over to a new file, so that no single file
// grows past what one reader thread should handle.
const rowsPerFile = 8 * 1024 * 1024

// lakeZstd compresses the lake's pages at zstd's fastest level: most of
// an ingest's CPU went to zstd at parquet-go's default level, and the
// fastest level costs a fraction of it for files a little larger. Every
// Parquet reader decodes any level.
var lakeZstd = &zstd.Codec{Level: zstd.SpeedFastest}

// lakeSnappy compresses the pages of the datasets codecFor names.
var lakeSnappy = &fastSnappy{}

// fastSnappy is parquet-go's Snappy codec with the fast Snappy encoder of
// klauspost/compress's s2 in place of its "better" one, in which the
// similarity stage spent 9% of its CPU at 1M web keywords: the stage took
// 0.93 of its CPU there, for related 7.5% larger. Both write plain Snappy
// blocks, which every Parquet reader decodes.
type fastSnappy struct{ snappy.Codec }

// Encode compresses src into dst, reused when it is large enough.
func (*fastSnappy) Encode(dst, src []byte) ([]byte, error) {
	return s2.EncodeSnappy(dst, src), nil
}

// codecFor is the codec of a dataset's pages. The similarity stage's
// outputs, related and intents, are Snappy: they are written once and read
// whole by every build of the index, where zstd's decoding was the
// largest part of reading the lake (7.5 s of CPU of a 10M-keyword build,
// for related); Snappy decodes at a fraction of that and encodes faster,
// for files about half as large again (886 MB against 1.3 GB of related
// at 10M keywords, and 7.5% more with fastSnappy). The planner's and the
// SERPs' data, read by analysts and by similarity, stay zstd. Every
// Parquet reader decodes both.
func codecFor(dataset string) compress.Codec {
	switch dataset {
	case kw.DatasetRelated, kw.DatasetIntents:
		return lakeSnappy
	}
	return lakeZstd
}

// scanBatch is the number of rows Read decodes at a time.
const scanBatch = 64 * 1024

// Writer writes one partition. Nothing is visible in the lake until Commit.
type Writer[T any] struct {
	final, stage string
	codec        compress.Codec
	file         *os.File
	pw           *parquet.GenericWriter[T]
	files, rows  int

	// Each full file is synced and closed on a goroutine of its own
	// (syncs), which Commit and Abort wait for; syncErr is the first
	// error of one.
	syncs   sync.WaitGroup
	syncMu  sync.Mutex
	syncErr error
}

// StagingDir is the lake's staging folder, <data>/.staging: partitions
// are written there before they are renamed into the lake, and stages keep
// scratch files there. It sits outside <data>/lake, so no reader's glob
// sees it; whatever is left in it belongs to a write that crashed (or is
// still running).
func StagingDir(data string) string { return filepath.Join(data, ".staging") }

// TempDir creates a new folder in the lake's staging folder (StagingDir)
// whose name starts with prefix: the place for a stage's scratch files,
// on the lake's file system and never read as part of it. The caller
// removes it.
func TempDir(data, prefix string) (string, error) {
	staging := StagingDir(data)
	if err := os.MkdirAll(staging, 0o755); err != nil {
		return "", fmt.Errorf("cannot create staging folder: %w", err)
	}
	dir, err := os.MkdirTemp(staging, prefix)
	if err != nil {
		return "", fmt.Errorf("cannot create staging folder: %w", err)
	}
	return dir, nil
}

// Create starts writing the partition of dataset for country and date.
func Create[T any](data, dataset, country, date string) (*Writer[T], error) {
	stage, err := TempDir(data, dataset+"-"+strings.ToLower(country)+"-"+date+"-")
	if err != nil {
		return nil, err
	}
	return &Writer[T]{final: kw.PartitionDir(data, dataset, country, date), stage: stage, codec: codecFor(dataset)}, nil
}

// Write appends rows to the partition.
func (w *Writer[T]) Write(rows ...T) error {
	for len(rows) > 0 {
		if w.pw == nil || w.rows == rowsPerFile {
			if err := w.roll(); err != nil {
				return err
			}
		}
		n := min(len(rows), rowsPerFile-w.rows)
		if _, err := w.pw.Write(rows[:n]); err != nil {
			return fmt.Errorf("cannot write %s: %w", w.file.Name(), err)
		}
		w.rows += n
		rows = rows[n:]
	}
	return nil
}

// roll closes the current file, if any, and opens the next.
func (w *Writer[T]) roll() error {
	if err := w.closeFile(); err != nil {
		return err
	}
	f, pw, err := w.nextFile()
	if err != nil {
		return err
	}
	w.file, w.pw, w.rows = f, pw, 0
	return nil
}

// nextFile creates the partition's next file in the staging folder.
func (w *Writer[T]) nextFile() (*os.File, *parquet.GenericWriter[T], error) {
	f, err := os.Create(filepath.Join(w.stage, fmt.Sprintf("part-%05d.parquet", w.files)))
	if err != nil {
		return nil, nil, fmt.Errorf("cannot create partition file: %w", err)
	}
	w.files++
	return f, parquet.NewGenericWriter[T](f,
		// Each page's min and max go to the column index (and make the
		// chunk's statistics, which readers such as DuckDB prune row
		// groups by), not to the page headers as well, which no reader
		// of the lake uses: parquet-go works out the bounds once for
		// each, and writing 10M related rows took 0.94 times as long
		// with them out of the headers (the median of five rounds).
		parquet.DataPageStatistics(false),
		parquet.Compression(w.codec),
		parquet.MaxRowsPerRowGroup(rowsPerGroup),
		parquet.CreatedBy("kwdata", "1", ""),
	), nil
}

// WriteSections appends the rows of len(rows) sections, each made and
// written on a goroutine of its own into files of its own: section i has
// rows[i] rows, which fill(i, emit) hands to emit in order, and the
// partition holds section 0's rows, then section 1's, and so on, as if
// written in turn. It lets a caller whose rows take as long to encode as
// to make use every core. After an error the caller aborts.
func (w *Writer[T]) WriteSections(rows []int, fill func(i int, emit func([]T) error) error) error {
	if err := w.closeFile(); err != nil {
		return err
	}
	sections := make([]*Writer[T], len(rows))
	for i, n := range rows {
		sections[i] = &Writer[T]{stage: w.stage, codec: w.codec, files: w.files}
		w.files += (n + rowsPerFile - 1) / rowsPerFile
	}
	errs := make([]error, len(rows))
	var wg sync.WaitGroup
	for i, sw := range sections {
		wg.Go(func() {
			written := 0
			err := fill(i, func(batch []T) error {
				written += len(batch)
				if written > rows[i] {
					return fmt.Errorf("section %d has more than its %d rows", i, rows[i])
				}
				return sw.Write(batch...)
			})
			if err == nil && written != rows[i] {
				err = fmt.Errorf("section %d has %d rows, not %d", i, written, rows[i])
			}
			errs[i] = errors.Join(err, sw.closeFile(), sw.synced())
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// finishFile writes the footer of a file and syncs and closes it.
func finishFile[T any](f *os.File, pw *parquet.GenericWriter[T]) error {
	if err := writeFooter(f, pw); err != nil {
		return err
	}
	return syncClose(f)
}

// writeFooter writes the footer of a file; after an error the file is
// closed.
func writeFooter[T any](f *os.File, pw *parquet.GenericWriter[T]) error {
	if err := pw.Close(); err != nil {
		f.Close()
		return fmt.Errorf("cannot finish %s: %w", f.Name(), err)
	}
	return nil
}

// syncClose syncs and closes a file.
func syncClose(f *os.File) error {
	if err := syncFile(f); err != nil {
		f.Close()
		return fmt.Errorf("cannot sync %s: %w", f.Name(), err)
	}
	return f.Close()
}

// syncFile syncs a file; tests replace it.
var syncFile = (*os.File).Sync

// closeFile writes the current file's footer and hands the file to a
// goroutine that syncs and closes it: the writer goes on with the next
// file meanwhile. The similarity stage writes related rows while its
// search runs, and waiting for each file of 8M rows to reach the disk
// (0.14 s at 1M web keywords) had stopped the search behind the writer.
func (w *Writer[T]) closeFile() error {
	if w.pw == nil {
		return nil
	}
	pw, f := w.pw, w.file
	w.pw, w.file = nil, nil
	if err := writeFooter(f, pw); err != nil {
		return err
	}
	w.syncs.Go(func() {
		if err := syncClose(f); err != nil {
			w.syncMu.Lock()
			w.syncErr = cmp.Or(w.syncErr, err)
			w.syncMu.Unlock()
		}
	})
	return nil
}

// synced waits for the files' syncs and returns the first error of one.
func (w *Writer[T]) synced() error {
	w.syncs.Wait()
	w.syncMu.Lock()
	defer w.syncMu.Unlock()
	return w.syncErr
}

// Commit finishes the partition and renames it into place, replacing the
// partition of the same dataset, country and date if one exists. A partition
// with no rows still gets one (empty) file, so readers can tell "ran and
// found nothing" from "never ran".
func (w *Writer[T]) Commit() error {
	if w.pw == nil && w.files == 0 {
		if err := w.roll(); err != nil {
			w.Abort()
			return err
		}
	}
	if err := w.closeFile(); err != nil {
		w.Abort()
		return err
	}
	if err := w.synced(); err != nil {
		w.Abort()
		return err
	}
	if err := kw.SyncDir(w.stage); err != nil {
		w.Abort()
		return err
	}
	if err := os.MkdirAll(filepath.Dir(w.final), 0o755); err != nil {
		w.Abort()
		return fmt.Errorf("cannot create partition folder: %w", err)
	}
	// Move an old partition aside first: rename cannot replace a non-empty
	// directory. Readers may briefly find the partition missing, never half.
	var old string
	if _, err := os.Stat(w.final); err == nil {
		old = w.stage + ".old"
		if err := os.Rename(w.final, old); err != nil {
			w.Abort()
			return fmt.Errorf("cannot move old partition %s aside: %w", w.final, err)
		}
	}
	if err := os.Rename(w.stage, w.final); err != nil {
		if old != "" {
			_ = os.Rename(old, w.final)
		}
		w.Abort()
		return fmt.Errorf("cannot publish partition %s: %w", w.final, err)
	}
	if err := kw.SyncDir(filepath.Dir(w.final)); err != nil {
		return err
	}
	if old != "" {
		_ = os.RemoveAll(old)
	}
	return nil
}

// Abort discards everything written; the lake is left as it was.
func (w *Writer[T]) Abort() {
	if w.pw != nil {
		_ = w.pw.Close()
		_ = w.file.Close()
		w.pw, w.file = nil, nil
	}
	_ = w.synced()
	_ = os.RemoveAll(w.stage)
}

// WritePartition writes rows as the whole partition, atomically.
func WritePartition[T any](data, dataset, country, date string, rows []T) error {
	w, err := Create[T](data, dataset, country, date)
	if err != nil {
		return err
	}
	if err := w.Write(rows...); err != nil {
		w.Abort()
		return err
	}
	return w.Commit()
}

// Read returns every row of a partition, in file order, as Go values:
// the reflective reading that tests and small partitions want. Stages read
// columns through Scan, which costs a fraction of it.
func Read[T any](data, dataset, country, date string) ([]T, error) {
	var out []T
	err := scanRows(context.Background(), data, dataset, country, date, func(batch []T) error {
		out = append(out, batch...)
		return nil
	})
	return out, err
}

// partitionFiles lists the Parquet files of a partition in name order
// (the order of its rows): none for an empty partition, ErrNoPartition
// when the partition does not exist.
func partitionFiles(data, dataset, country, date string) ([]string, error) {
	dir := kw.PartitionDir(data, dataset, country, date)
	files, err := filepath.Glob(filepath.Join(dir, "*.parquet"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		if _, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("cannot read %s: %w", dir, ErrNoPartition)
		}
	}
	sort.Strings(files)
	return files, nil
}

// Rows counts the rows of a partition from its files' footers, without
// reading any data: what a stage needs to show progress against a total.
func Rows(data, dataset, country, date string) (int64, error) {
	files, err := partitionFiles(data, dataset, country, date)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return 0, fmt.Errorf("cannot open %s: %w", name, err)
		}
		st, err := f.Stat()
		if err == nil {
			var pf *parquet.File
			if pf, err = parquet.OpenFile(f, st.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true)); err == nil {
				n += pf.NumRows()
			}
		}
		f.Close()
		if err != nil {
			return 0, fmt.Errorf("cannot read %s as Parquet: %w", name, err)
		}
	}
	return n, nil
}

// scanRows streams the rows of a partition in file order to fn, in
// batches. The batch slice is reused between calls; fn must copy what it
// keeps of it.
func scanRows[T any](ctx context.Context, data, dataset, country, date string, fn func(batch []T) error) error {
	files, err := partitionFiles(data, dataset, country, date)
	if err != nil {
		return err
	}
	buf := make([]T, scanBatch)
	for _, name := range files {
		if err := scanFile(ctx, name, buf, fn); err != nil {
			return err
		}
	}
	return nil
}

// readBufferBytes is the size of the reads a column's pages are read
// with: parquet-go's default, 4 KiB, made a system call for every page or
// two, fourteen thousand of them for a 1M-keyword build, each costly on a
// virtual machine.
const readBufferBytes = 1 << 20

// openFile opens a partition file as Parquet. The caller closes f.
func openFile(name string) (f *os.File, pf *parquet.File, err error) {
	f, err = os.Open(name)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot open %s: %w", name, err)
	}
	st, err := f.Stat()
	if err == nil {
		pf, err = parquet.OpenFile(f, st.Size(), parquet.ReadBufferSize(readBufferBytes))
	}
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("cannot read %s as Parquet: %w", name, err)
	}
	return f, pf, nil
}

func scanFile[T any](ctx context.Context, name string, buf []T, fn func([]T) error) (err error) {
	f, pf, err := openFile(name)
	if err != nil {
		return err
	}
	defer f.Close()
	// parquet-go panics on a schema it cannot convert; a damaged or foreign
	// file must be an error, not a crash.
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("cannot read %s: %v", name, p)
		}
	}()
	r := parquet.NewGenericReader[T](pf)
	defer r.Close()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, rerr := r.Read(buf)
		if n > 0 {
			if err := fn(buf[:n]); err != nil {
				return err
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return fmt.Errorf("cannot read %s: %w", name, rerr)
		}
	}
}

// Countries returns the lower-case codes of the countries that have a
// partition of dataset on date, sorted.
func Countries(data, dataset, date string) ([]string, error) {
	dirs, err := filepath.Glob(filepath.Join(kw.LakeDir(data), dataset, "country=*", "date="+date))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range dirs {
		out = append(out, strings.TrimPrefix(filepath.Base(filepath.Dir(d)), "country="))
	}
	sort.Strings(out)
	return out, nil
}

// Dates returns the dates that have a partition of dataset for country,
// sorted ascending.
func Dates(data, dataset, country string) ([]string, error) {
	dirs, err := filepath.Glob(filepath.Join(kw.LakeDir(data), dataset, "country="+strings.ToLower(country), "date=*"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range dirs {
		out = append(out, strings.TrimPrefix(filepath.Base(d), "date="))
	}
	sort.Strings(out)
	return out, nil
}
