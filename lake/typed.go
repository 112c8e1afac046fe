package lake

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding"
)

// TypedBatch is one row group's values of the top-level columns ScanTyped
// was asked for: strings (byte arrays), INT32, INT64 and BOOLEAN, required
// or optional, each column stored flat with a null mark per row where it
// has nulls. Like ColumnBatch it skips row reconstruction and the
// allocation of every string and every optional number that Scan pays,
// which is most of the cost of reading a partition of tens of millions of
// rows into Go values.
type TypedBatch struct {
	// Rows is the number of rows in the batch.
	Rows int
	cols []typedColumn
}

type typedColumn struct {
	kind  parquet.Kind
	data  []byte   // byte arrays, back to back
	offs  []uint32 // byte arrays: Rows+1 offsets into data
	i32   []int32
	i64   []int64
	bools []bool
	null  []bool // per row; empty when the row group has no null in the column
}

// Bytes returns string column col (an index into ScanTyped's columns) of
// row row, empty when null. The bytes belong to the batch and are
// overwritten by the next one.
func (b *TypedBatch) Bytes(col, row int) []byte {
	c := &b.cols[col]
	return c.data[c.offs[row]:c.offs[row+1]:c.offs[row+1]]
}

// Int32 returns INT32 column col of row row; a null reads as 0.
func (b *TypedBatch) Int32(col, row int) int32 { return b.cols[col].i32[row] }

// Int64 returns INT64 column col of row row, and false when it is null.
func (b *TypedBatch) Int64(col, row int) (int64, bool) {
	c := &b.cols[col]
	return c.i64[row], len(c.null) == 0 || !c.null[row]
}

// Bool returns BOOLEAN column col of row row; a null reads as false.
func (b *TypedBatch) Bool(col, row int) bool { return b.cols[col].bools[row] }

// Null reports whether column col of row row is null.
func (b *TypedBatch) Null(col, row int) bool {
	c := &b.cols[col]
	return len(c.null) > 0 && c.null[row]
}

// ScanTyped reads the named top-level columns of a partition one row
// group at a time, in file order, and hands each to fn in one reused
// TypedBatch: fn must copy what it keeps. A column that is missing,
// repeated or of another physical type than BYTE_ARRAY, INT32, INT64 or
// BOOLEAN is an error naming the file.
func ScanTyped(ctx context.Context, data, dataset, country, date string, columns []string, fn func(*TypedBatch) error) error {
	names, err := partitionFiles(data, dataset, country, date)
	if err != nil {
		return err
	}
	b := &TypedBatch{cols: make([]typedColumn, len(columns))}
	for _, name := range names {
		if err := scanTypedFile(ctx, name, columns, b, fn); err != nil {
			return err
		}
	}
	return nil
}

func scanTypedFile(ctx context.Context, name string, columns []string, b *TypedBatch, fn func(*TypedBatch) error) (err error) {
	f, pf, err := openFile(name)
	if err != nil {
		return err
	}
	defer f.Close()
	leaf := make([]int, len(columns))
	for j, c := range columns {
		lc, ok := pf.Schema().Lookup(c)
		if !ok || lc.MaxRepetitionLevel > 0 || lc.MaxDefinitionLevel > 1 {
			return fmt.Errorf("cannot read column %q of %s: not a top-level column", c, name)
		}
		switch k := lc.Node.Type().Kind(); k {
		case parquet.ByteArray, parquet.Int32, parquet.Int64, parquet.Boolean:
			b.cols[j].kind = k
		default:
			return fmt.Errorf("cannot read column %q of %s: of type %s, not a string, INT32, INT64 or BOOLEAN", c, name, k)
		}
		leaf[j] = lc.ColumnIndex
	}
	for _, rg := range pf.RowGroups() {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := readTypedRowGroup(name, rg, leaf, b); err != nil {
			return err
		}
		if err := fn(b); err != nil {
			return err
		}
	}
	return nil
}

// readTypedRowGroup fills b with the columns leaf of rg.
func readTypedRowGroup(name string, rg parquet.RowGroup, leaf []int, b *TypedBatch) (err error) {
	// parquet-go panics on some damaged files; that must be an error.
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("cannot read %s: %v", name, p)
		}
	}()
	b.Rows = int(rg.NumRows())
	chunks := rg.ColumnChunks()
	for j, l := range leaf {
		c := &b.cols[j]
		if err := c.read(chunks[l]); err != nil {
			return fmt.Errorf("cannot read %s: %w", name, err)
		}
		if n := c.rows(); n != b.Rows {
			return fmt.Errorf("cannot read %s: a column has %d values in a row group of %d rows", name, n, b.Rows)
		}
	}
	return nil
}

func (c *typedColumn) rows() int {
	switch c.kind {
	case parquet.ByteArray:
		return len(c.offs) - 1
	case parquet.Int32:
		return len(c.i32)
	case parquet.Int64:
		return len(c.i64)
	}
	return len(c.bools)
}

// read replaces the column's values with those of one column chunk.
func (c *typedColumn) read(cc parquet.ColumnChunk) error {
	c.data, c.offs, c.i32, c.i64, c.bools, c.null = c.data[:0], append(c.offs[:0], 0), c.i32[:0], c.i64[:0], c.bools[:0], c.null[:0]
	hasNull := false
	pages := cc.Pages()
	defer pages.Close()
	var vals []parquet.Value
	for {
		page, err := pages.ReadPage()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		start := c.rows()
		if !c.fast(page) {
			if vals == nil {
				vals = make([]parquet.Value, 1024)
			}
			if err := c.slow(page, vals); err != nil {
				parquet.Release(page)
				return err
			}
		}
		if page.NumNulls() > 0 {
			if !hasNull {
				c.null = append(c.null[:0], make([]bool, start)...)
				hasNull = true
			}
		}
		if hasNull {
			defs := page.DefinitionLevels()
			for i := start; i < c.rows(); i++ {
				c.null = append(c.null, defs != nil && defs[i-start] == 0)
			}
		}
		parquet.Release(page)
	}
	if !hasNull {
		c.null = c.null[:0]
	}
	return nil
}

// fast copies a plain page's values as they are (nulls as zero values,
// where the definition levels say), and reports false for a page it does
// not handle: dictionary-encoded, repeated, or of booleans, which are
// stored as bits.
func (c *typedColumn) fast(page parquet.Page) bool {
	if page.Dictionary() != nil || page.RepetitionLevels() != nil || c.kind == parquet.Boolean {
		return false
	}
	v := page.Data()
	defs := page.DefinitionLevels()
	if defs == nil && page.NumNulls() > 0 {
		return false
	}
	switch {
	case c.kind == parquet.ByteArray && v.Kind() == encoding.ByteArray:
		pd, po := v.ByteArray()
		if defs == nil || page.NumNulls() == 0 {
			base := uint32(len(c.data)) - po[0]
			c.data = append(c.data, pd[po[0]:po[len(po)-1]]...)
			for _, x := range po[1:] {
				c.offs = append(c.offs, base+x)
			}
			return true
		}
		k := 0
		for _, d := range defs {
			if d != 0 {
				c.data = append(c.data, pd[po[k]:po[k+1]]...)
				k++
			}
			c.offs = append(c.offs, uint32(len(c.data)))
		}
		return true
	case c.kind == parquet.Int32 && v.Kind() == encoding.Int32:
		c.i32 = expand(c.i32, v.Int32(), defs, page.NumNulls())
		return true
	case c.kind == parquet.Int64 && v.Kind() == encoding.Int64:
		c.i64 = expand(c.i64, v.Int64(), defs, page.NumNulls())
		return true
	}
	return false
}

// expand appends the non-null values vals to dst, with a zero value for
// every null the definition levels mark.
func expand[T int32 | int64](dst, vals []T, defs []byte, nulls int64) []T {
	if nulls == 0 {
		return append(dst, vals...)
	}
	k := 0
	for _, d := range defs {
		if d != 0 {
			dst = append(dst, vals[k])
			k++
		} else {
			dst = append(dst, 0)
		}
	}
	return dst
}

// slow reads any page value by value.
func (c *typedColumn) slow(page parquet.Page, vals []parquet.Value) error {
	r := page.Values()
	for {
		n, err := r.ReadValues(vals)
		for _, x := range vals[:n] {
			null := x.IsNull()
			switch c.kind {
			case parquet.ByteArray:
				if !null {
					c.data = append(c.data, x.ByteArray()...)
				}
				c.offs = append(c.offs, uint32(len(c.data)))
			case parquet.Int32:
				var v int32
				if !null {
					v = x.Int32()
				}
				c.i32 = append(c.i32, v)
			case parquet.Int64:
				var v int64
				if !null {
					v = x.Int64()
				}
				c.i64 = append(c.i64, v)
			case parquet.Boolean:
				c.bools = append(c.bools, !null && x.Boolean())
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
