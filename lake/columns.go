package lake

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding"
)

// ColumnBatch is one row group's values of the byte-array (string) and
// INT32 columns that ScanColumns was asked for, stored flat: no value is a
// separate allocation, which is what makes scans of tens of millions of rows
// cheap.
type ColumnBatch struct {
	// Seq is the row group's position in the partition (files in name
	// order, row groups in file order), from 0.
	Seq int
	// Rows is the number of rows in the batch.
	Rows int
	// Aux belongs to the caller: ScanColumns never reads it, and keeps it
	// when it recycles the batch, so decode can reuse what it put there.
	Aux  any
	data [][]byte
	offs [][]uint32
	ints [][]int32
}

// Value returns string column col (an index into ScanColumns' columns) of
// row row. The bytes belong to the batch and are overwritten once it is
// recycled. A null value reads as empty.
func (b *ColumnBatch) Value(col, row int) []byte {
	o := b.offs[col]
	return b.data[col][o[row]:o[row+1]:o[row+1]]
}

// Int32 returns INT32 column col (an index into ScanColumns' columns) of
// row row. A null value reads as 0.
func (b *ColumnBatch) Int32(col, row int) int32 {
	return b.ints[col][row]
}

// rowGroupRef names one row group of one file.
type rowGroupRef struct {
	file  string
	rg    parquet.RowGroup
	leaf  []int  // column index of each requested column
	isInt []bool // whether each requested column is INT32, not a string
	seq   int
	rows  int
}

// ScanColumns reads the named top-level string (byte-array) and INT32
// columns of a partition, required or optional, one row group at a time, on workers goroutines (at least 1). decode, if not
// nil, runs on those goroutines, concurrently for different batches, right
// after a batch is read; fn then receives the batches one at a time, from
// one goroutine, in file order, as Scan would. A batch must not be kept
// after fn returns: it is recycled. Reading columns as bytes skips row
// reconstruction and the per-value strings that Scan allocates.
func ScanColumns(ctx context.Context, data, dataset, country, date string, columns []string, workers int,
	decode func(*ColumnBatch) error, fn func(*ColumnBatch) error) error {
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
		leaf := make([]int, len(columns))
		isInt := make([]bool, len(columns))
		for j, c := range columns {
			lc, ok := pf.Schema().Lookup(c)
			if !ok || lc.MaxRepetitionLevel > 0 {
				return fmt.Errorf("cannot read column %q of %s: not a string column", c, name)
			}
			switch lc.Node.Type().Kind() {
			case parquet.ByteArray:
			case parquet.Int32:
				isInt[j] = true
			default:
				return fmt.Errorf("cannot read column %q of %s: not a string or INT32 column", c, name)
			}
			leaf[j] = lc.ColumnIndex
		}
		for _, rg := range pf.RowGroups() {
			refs = append(refs, rowGroupRef{file: name, rg: rg, leaf: leaf, isInt: isInt, seq: len(refs), rows: int(rg.NumRows())})
		}
	}
	workers = max(1, workers)
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	type result struct {
		b   *ColumnBatch
		err error
	}
	// slots bounds the batches read but not yet handed to fn; a batch is
	// taken in order after its slot, so the next one fn needs always has one.
	slots := make(chan struct{}, workers+1)
	done := make(chan result, workers+1)
	free := make(chan *ColumnBatch, workers+2)
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
				var b *ColumnBatch
				select {
				case b = <-free:
				default:
					b = &ColumnBatch{}
				}
				err := readRowGroup(&refs[i], b)
				if err == nil && decode != nil {
					err = decode(b)
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
	pending := map[int]*ColumnBatch{}
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

// readRowGroup fills b with ref's columns.
func readRowGroup(ref *rowGroupRef, b *ColumnBatch) (err error) {
	// parquet-go panics on some damaged files; that must be an error.
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("cannot read %s: %v", ref.file, p)
		}
	}()
	b.Seq, b.Rows = ref.seq, ref.rows
	for len(b.data) < len(ref.leaf) {
		b.data = append(b.data, nil)
		b.offs = append(b.offs, nil)
		b.ints = append(b.ints, nil)
	}
	chunks := ref.rg.ColumnChunks()
	for j, leaf := range ref.leaf {
		if ref.isInt[j] {
			v, err := readInt32Column(chunks[leaf], b.ints[j][:0])
			if err != nil {
				return fmt.Errorf("cannot read %s: %w", ref.file, err)
			}
			if len(v) != ref.rows {
				return fmt.Errorf("cannot read %s: column has %d values in a row group of %d rows", ref.file, len(v), ref.rows)
			}
			b.ints[j] = v
			continue
		}
		d, o, err := readByteColumn(chunks[leaf], b.data[j][:0], b.offs[j][:0])
		if err != nil {
			return fmt.Errorf("cannot read %s: %w", ref.file, err)
		}
		if len(o) != ref.rows+1 {
			return fmt.Errorf("cannot read %s: column has %d values in a row group of %d rows", ref.file, len(o)-1, ref.rows)
		}
		b.data[j], b.offs[j] = d, o
	}
	return nil
}

// readByteColumn appends every value of a byte-array column chunk to data,
// with offsets (len values+1, starting at 0).
func readByteColumn(cc parquet.ColumnChunk, data []byte, offs []uint32) ([]byte, []uint32, error) {
	offs = append(offs, 0)
	pages := cc.Pages()
	defer pages.Close()
	var vals []parquet.Value
	for {
		page, err := pages.ReadPage()
		if errors.Is(err, io.EOF) {
			return data, offs, nil
		}
		if err != nil {
			return nil, nil, err
		}
		if page.Dictionary() == nil && page.NumNulls() == 0 && page.DefinitionLevels() == nil && page.RepetitionLevels() == nil {
			// Plain required values: copy the page's buffers as they are.
			v := page.Data()
			if v.Kind() == encoding.ByteArray {
				pd, po := v.ByteArray()
				base := uint32(len(data)) - po[0]
				data = append(data, pd[po[0]:po[len(po)-1]]...)
				for _, x := range po[1:] {
					offs = append(offs, base+x)
				}
				parquet.Release(page)
				continue
			}
		}
		// Any other page (dictionary-encoded, optional): value by value.
		if vals == nil {
			vals = make([]parquet.Value, 1024)
		}
		r := page.Values()
		for {
			n, err := r.ReadValues(vals)
			for _, x := range vals[:n] {
				if !x.IsNull() {
					data = append(data, x.ByteArray()...)
				}
				offs = append(offs, uint32(len(data)))
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				parquet.Release(page)
				return nil, nil, err
			}
		}
		parquet.Release(page)
	}
}

// readInt32Column appends every value of an INT32 column chunk to vals; a
// null reads as 0.
func readInt32Column(cc parquet.ColumnChunk, vals []int32) ([]int32, error) {
	pages := cc.Pages()
	defer pages.Close()
	var buf []parquet.Value
	for {
		page, err := pages.ReadPage()
		if errors.Is(err, io.EOF) {
			return vals, nil
		}
		if err != nil {
			return nil, err
		}
		if page.Dictionary() == nil && page.NumNulls() == 0 && page.DefinitionLevels() == nil && page.RepetitionLevels() == nil {
			// Plain required values: copy the page's buffer as it is.
			v := page.Data()
			if v.Kind() == encoding.Int32 {
				vals = append(vals, v.Int32()...)
				parquet.Release(page)
				continue
			}
		}
		// Any other page (dictionary-encoded, optional): value by value.
		if buf == nil {
			buf = make([]parquet.Value, 1024)
		}
		r := page.Values()
		for {
			n, err := r.ReadValues(buf)
			for _, x := range buf[:n] {
				if x.IsNull() {
					vals = append(vals, 0)
				} else {
					vals = append(vals, x.Int32())
				}
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				parquet.Release(page)
				return nil, err
			}
		}
		parquet.Release(page)
	}
}
