package lake

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/parquet-go/parquet-go"
)

// Batch is one row group's values of the columns Scan was asked for:
// strings (byte arrays), INT32, INT64, DOUBLE and BOOLEAN, required or
// optional, each column stored flat with a null mark per row where it has
// nulls. No value is an allocation of its own and no row is rebuilt,
// which is what makes reading tens of millions of rows cheap.
//
// A leaf of a list (a column repeated once, such as
// "monthly.list.element.month") holds a run of values per row: Span gives
// the run of a row, and the value accessors then take a value index of
// that run in place of a row.
type Batch struct {
	// Seq is the row group's position in the partition (files in name
	// order, row groups in file order), from 0.
	Seq int
	// Rows is the number of rows in the batch.
	Rows int
	// Aux belongs to the caller: Scan never reads it, and keeps it when it
	// recycles the batch, so ScanOptions.Decode can reuse what it put there.
	Aux  any
	cols []column
}

// Bytes returns string column col (an index into Scan's columns) of row
// row, empty when null. The bytes belong to the batch and are overwritten
// once it is recycled.
func (b *Batch) Bytes(col, row int) []byte {
	c := &b.cols[col]
	if c.refs {
		row = int(c.ref[row])
	}
	return c.data[c.offs[row]:c.offs[row+1]:c.offs[row+1]]
}

// Int32 returns INT32 column col of row row; a null reads as 0.
func (b *Batch) Int32(col, row int) int32 { return b.cols[col].i32[row] }

// Int64 returns INT64 column col of row row, and false when it is null.
func (b *Batch) Int64(col, row int) (int64, bool) {
	c := &b.cols[col]
	return c.i64[row], len(c.null) == 0 || !c.null[row]
}

// Float64 returns DOUBLE column col of row row, and false when it is null.
func (b *Batch) Float64(col, row int) (float64, bool) {
	c := &b.cols[col]
	return c.f64[row], len(c.null) == 0 || !c.null[row]
}

// Bool returns BOOLEAN column col of row row; a null reads as false.
func (b *Batch) Bool(col, row int) bool { return b.cols[col].bools[row] }

// Span returns the value indexes [lo, hi) of row row of list leaf col: an
// empty or null list has none.
func (b *Batch) Span(col, row int) (lo, hi int) {
	c := &b.cols[col]
	return int(c.spans[row]), int(c.spans[row+1])
}

// Null reports whether column col of row row is null.
func (b *Batch) Null(col, row int) bool {
	c := &b.cols[col]
	return len(c.null) > 0 && c.null[row]
}

// ScanOptions tunes Scan; the zero value reads one row group at a time on
// the caller's goroutine.
type ScanOptions struct {
	// Workers is the number of goroutines that read row groups at once
	// (default 1: the caller's own goroutine). With more, batches are read
	// ahead, at most Workers+1 of them beyond the one fn holds.
	Workers int
	// Decode, if not nil, runs on the reading goroutine right after a
	// batch is read, concurrently for different batches when Workers > 1:
	// the place for per-batch work that need not happen in order.
	Decode func(*Batch) error
}

// rowGroupRef names one row group of one file.
type rowGroupRef struct {
	file  string
	rg    parquet.RowGroup
	specs []colSpec // how the file stores each requested column
	// sizes, per requested column, is what the file's footer says of its
	// chunk in this row group, so that a column is sized once.
	sizes []chunkSize
	seq   int
	rows  int
}

// chunkSize is a column chunk's number of values (list elements, for a
// list leaf) and its uncompressed bytes, pages' headers and levels
// included: a bound on its plain values' bytes.
type chunkSize struct {
	values, bytes int64
}

// Scan reads the named columns of a partition one row group at a time and
// hands each to fn as a Batch, from one goroutine, in file order. A column
// is named by its path, dotted: a top-level column ("volume") or the leaf
// of a list of a top-level field ("monthly.list.element.searches"). A
// name ending in "?" is optional: a file written before that column
// existed reads it as null (zero) in every row, and a list leaf as an
// empty list, as Read does. Any other column that is missing, nested
// otherwise or of another physical type than BYTE_ARRAY, INT32, INT64,
// DOUBLE or BOOLEAN is an error naming the file. A batch must not be kept
// after fn returns: it is recycled.
func Scan(ctx context.Context, data, dataset, country, date string, columns []string, opt ScanOptions, fn func(*Batch) error) error {
	names, err := partitionFiles(data, dataset, country, date)
	if err != nil {
		return err
	}
	var refs []rowGroupRef
	for _, name := range names {
		f, pf, err := openFile(name)
		if err != nil {
			return err
		}
		defer f.Close()
		specs, err := resolve(pf, name, columns)
		if err != nil {
			return err
		}
		meta := pf.Metadata()
		for k, rg := range pf.RowGroups() {
			sizes := make([]chunkSize, len(specs))
			if k < len(meta.RowGroups) {
				for j, s := range specs {
					if cols := meta.RowGroups[k].Columns; s.leaf >= 0 && s.leaf < len(cols) {
						md := &cols[s.leaf].MetaData
						sizes[j] = chunkSize{values: md.NumValues, bytes: md.TotalUncompressedSize}
					}
				}
			}
			refs = append(refs, rowGroupRef{file: name, rg: rg, specs: specs, sizes: sizes, seq: len(refs), rows: int(rg.NumRows())})
		}
	}
	if opt.Workers <= 1 {
		b := &Batch{}
		for i := range refs {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := readRowGroup(&refs[i], b); err != nil {
				return err
			}
			if opt.Decode != nil {
				if err := opt.Decode(b); err != nil {
					return err
				}
			}
			if err := fn(b); err != nil {
				return err
			}
		}
		return nil
	}
	return scanParallel(ctx, refs, opt, fn)
}

// resolve works out how file name (opened as pf) stores each of columns.
func resolve(pf *parquet.File, name string, columns []string) ([]colSpec, error) {
	specs := make([]colSpec, len(columns))
	for j, c := range columns {
		c, optional := strings.CutSuffix(c, "?")
		path := strings.Split(c, ".")
		lc, ok := pf.Schema().Lookup(path...)
		s := &specs[j]
		if !ok && optional {
			s.missing, s.leaf = true, -1
			continue
		}
		if !ok {
			return nil, fmt.Errorf("cannot read column %q of %s: no such column", c, name)
		}
		s.maxDef = lc.MaxDefinitionLevel
		switch {
		case lc.MaxRepetitionLevel == 0 && lc.MaxDefinitionLevel <= 1:
		case lc.MaxRepetitionLevel == 1 && len(path) > 1:
			s.repeated = true
			// The definition level of the repeated node: levels below it
			// are an empty or null list, not an element.
			var node parquet.Node = pf.Schema()
			for _, p := range path {
				node = fieldOf(node, p)
				if node.Optional() || node.Repeated() {
					s.elemDef++
				}
				if node.Repeated() {
					break
				}
			}
		default:
			return nil, fmt.Errorf("cannot read column %q of %s: neither a top-level column nor the leaf of a list", c, name)
		}
		switch k := lc.Node.Type().Kind(); k {
		case parquet.ByteArray, parquet.Int32, parquet.Int64, parquet.Double, parquet.Boolean:
			s.kind = k
		default:
			return nil, fmt.Errorf("cannot read column %q of %s: of type %s, not a string, INT32, INT64, DOUBLE or BOOLEAN", c, name, k)
		}
		s.leaf = lc.ColumnIndex
	}
	return specs, nil
}

// readRowGroup fills b with ref's columns.
func readRowGroup(ref *rowGroupRef, b *Batch) (err error) {
	// parquet-go panics on some damaged files; that must be an error.
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("cannot read %s: %v", ref.file, p)
		}
	}()
	b.Seq, b.Rows = ref.seq, ref.rows
	if len(b.cols) != len(ref.specs) {
		b.cols = make([]column, len(ref.specs))
	}
	chunks := ref.rg.ColumnChunks()
	for j, s := range ref.specs {
		c := &b.cols[j]
		c.colSpec = s
		if s.missing {
			c.fillNull(b.Rows)
			continue
		}
		c.reserve(ref.rows, ref.sizes[j])
		if err := c.read(chunks[s.leaf]); err != nil {
			return fmt.Errorf("cannot read %s: %w", ref.file, err)
		}
		if n := c.rows(); n != b.Rows {
			return fmt.Errorf("cannot read %s: a column has %d values in a row group of %d rows", ref.file, n, b.Rows)
		}
	}
	return nil
}

// scanParallel reads refs on opt.Workers goroutines and hands the batches
// to fn in order.
func scanParallel(ctx context.Context, refs []rowGroupRef, opt ScanOptions, fn func(*Batch) error) (err error) {
	workers := opt.Workers
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	type result struct {
		b   *Batch
		err error
	}
	// slots bounds the batches read but not yet handed to fn; a batch is
	// taken in order after its slot, so the next one fn needs always has one.
	slots := make(chan struct{}, workers+1)
	done := make(chan result, workers+1)
	free := make(chan *Batch, workers+2)
	var next int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case slots <- struct{}{}:
				case <-ctx.Done():
					return
				}
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= len(refs) {
					<-slots
					return
				}
				var b *Batch
				select {
				case b = <-free:
				default:
					b = &Batch{}
				}
				err := readRowGroup(&refs[i], b)
				if err == nil && opt.Decode != nil {
					err = opt.Decode(b)
				}
				select {
				case done <- result{b, err}:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	go func() {
		wg.Wait()
		close(done)
	}()
	pending := map[int]*Batch{}
	want := 0
	for r := range done {
		if err != nil {
			continue // drain until the workers stop
		}
		if r.err != nil {
			err = r.err
			cancel()
			continue
		}
		pending[r.b.Seq] = r.b
		for {
			b, ok := pending[want]
			if !ok {
				break
			}
			delete(pending, want)
			if err = parent.Err(); err != nil {
				cancel()
				break
			}
			if err = fn(b); err != nil {
				cancel()
				break
			}
			want++
			<-slots
			select {
			case free <- b:
			default:
			}
		}
	}
	if err == nil && want < len(refs) {
		err = ctx.Err()
	}
	return err
}
