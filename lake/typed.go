package lake

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding"
)

// TypedBatch is one row group's values of the columns ScanTyped was asked
// for: strings (byte arrays), INT32, INT64, DOUBLE and BOOLEAN, required
// or optional, each column stored flat with a null mark per row where it
// has nulls. Like ColumnBatch it skips row reconstruction and the
// allocation of every string and every optional number that Scan pays,
// which is most of the cost of reading a partition of tens of millions of
// rows into Go values.
//
// A leaf of a list (a column repeated once, such as
// "monthly.list.element.month") holds a run of values per row: Span gives
// the run of a row, and the value accessors then take a value index of
// that run in place of a row.
type TypedBatch struct {
	// Rows is the number of rows in the batch.
	Rows int
	cols []typedColumn
}

type typedColumn struct {
	kind  parquet.Kind
	data  []byte   // byte arrays, back to back
	offs  []uint32 // byte arrays: one offset into data per value, and one past the end
	i32   []int32
	i64   []int64
	f64   []float64
	bools []bool
	null  []bool // per value; empty when the row group has no null in the column

	// A list leaf: spans holds, per row, the index of its first value,
	// and one more entry, the number of values; elemDef is the definition
	// level from which a level stands for a list element (below it, the
	// row's list is empty or null) and maxDef the one of a present value.
	repeated        bool
	spans           []uint32
	elemDef, maxDef int

	// missing: the file has no such column; every row is null.
	missing bool
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

// Float64 returns DOUBLE column col of row row, and false when it is null.
func (b *TypedBatch) Float64(col, row int) (float64, bool) {
	c := &b.cols[col]
	return c.f64[row], len(c.null) == 0 || !c.null[row]
}

// Bool returns BOOLEAN column col of row row; a null reads as false.
func (b *TypedBatch) Bool(col, row int) bool { return b.cols[col].bools[row] }

// Span returns the value indexes [lo, hi) of row row of list leaf col: an
// empty or null list has none.
func (b *TypedBatch) Span(col, row int) (lo, hi int) {
	c := &b.cols[col]
	return int(c.spans[row]), int(c.spans[row+1])
}

// Null reports whether column col of row row is null.
func (b *TypedBatch) Null(col, row int) bool {
	c := &b.cols[col]
	return len(c.null) > 0 && c.null[row]
}

// ScanTyped reads the named columns of a partition one row group at a
// time, in file order, and hands each to fn in one reused TypedBatch: fn
// must copy what it keeps. A column is named by its path, dotted: a
// top-level column ("volume") or the leaf of a list of a top-level field
// ("monthly.list.element.searches"). A name ending in "?" is optional: a
// file written before that column existed reads it as null (zero) in
// every row, and a list leaf as an empty list, as Read does. Any other
// column that is missing, nested otherwise or of another physical type
// than BYTE_ARRAY, INT32, INT64, DOUBLE or BOOLEAN is an error naming the
// file.
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
		c, optional := strings.CutSuffix(c, "?")
		path := strings.Split(c, ".")
		lc, ok := pf.Schema().Lookup(path...)
		col := &b.cols[j]
		if !ok && optional {
			col.missing, leaf[j] = true, -1
			continue
		}
		if !ok {
			return fmt.Errorf("cannot read column %q of %s: no such column", c, name)
		}
		col.missing = false
		col.repeated, col.elemDef, col.maxDef = false, 0, lc.MaxDefinitionLevel
		switch {
		case lc.MaxRepetitionLevel == 0 && lc.MaxDefinitionLevel <= 1:
		case lc.MaxRepetitionLevel == 1 && len(path) > 1:
			col.repeated = true
			// The definition level of the repeated node: levels below it
			// are an empty or null list, not an element.
			var node parquet.Node = pf.Schema()
			for _, p := range path {
				node = fieldOf(node, p)
				if node.Optional() || node.Repeated() {
					col.elemDef++
				}
				if node.Repeated() {
					break
				}
			}
		default:
			return fmt.Errorf("cannot read column %q of %s: neither a top-level column nor the leaf of a list", c, name)
		}
		switch k := lc.Node.Type().Kind(); k {
		case parquet.ByteArray, parquet.Int32, parquet.Int64, parquet.Double, parquet.Boolean:
			col.kind = k
		default:
			return fmt.Errorf("cannot read column %q of %s: of type %s, not a string, INT32, INT64, DOUBLE or BOOLEAN", c, name, k)
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
		if c.missing {
			c.fillNull(b.Rows)
			continue
		}
		if err := c.read(chunks[l]); err != nil {
			return fmt.Errorf("cannot read %s: %w", name, err)
		}
		if n := c.rows(); n != b.Rows {
			return fmt.Errorf("cannot read %s: a column has %d values in a row group of %d rows", name, n, b.Rows)
		}
	}
	return nil
}

// fieldOf returns the field of group node named name; Lookup found the
// whole path, so it is there.
func fieldOf(node parquet.Node, name string) parquet.Node {
	for _, f := range node.Fields() {
		if f.Name() == name {
			return f
		}
	}
	panic("lake: no field " + name)
}

// fillNull makes the column n rows of null values, readable through every
// accessor: a column the file does not have.
func (c *typedColumn) fillNull(n int) {
	c.data = c.data[:0]
	c.offs = append(c.offs[:0], make([]uint32, n+1)...)
	c.spans = append(c.spans[:0], make([]uint32, n+1)...)
	c.i32 = append(c.i32[:0], make([]int32, n)...)
	c.i64 = append(c.i64[:0], make([]int64, n)...)
	c.f64 = append(c.f64[:0], make([]float64, n)...)
	c.bools = append(c.bools[:0], make([]bool, n)...)
	c.null = c.null[:0]
	for range n {
		c.null = append(c.null, true)
	}
}

// rows is the number of rows read so far.
func (c *typedColumn) rows() int {
	if c.repeated {
		return len(c.spans) - 1 // read ends spans with the number of values
	}
	return c.values()
}

// values is the number of values read so far.
func (c *typedColumn) values() int {
	switch c.kind {
	case parquet.ByteArray:
		return len(c.offs) - 1
	case parquet.Int32:
		return len(c.i32)
	case parquet.Int64:
		return len(c.i64)
	case parquet.Double:
		return len(c.f64)
	}
	return len(c.bools)
}

// read replaces the column's values with those of one column chunk.
func (c *typedColumn) read(cc parquet.ColumnChunk) error {
	c.data, c.offs, c.i32, c.i64, c.f64, c.bools, c.null = c.data[:0], append(c.offs[:0], 0), c.i32[:0], c.i64[:0], c.f64[:0], c.bools[:0], c.null[:0]
	if c.repeated {
		return c.readList(cc)
	}
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
	case c.kind == parquet.Double && v.Kind() == encoding.Double:
		c.f64 = expand(c.f64, v.Double(), defs, page.NumNulls())
		return true
	}
	return false
}

// readList replaces the values of a list leaf with those of one column
// chunk: a row starts at each repetition level 0, and each level at or
// above elemDef is a value, null below maxDef. It always keeps the null
// marks, since a list leaf's chunk is small next to its rows.
func (c *typedColumn) readList(cc parquet.ColumnChunk) error {
	c.spans = c.spans[:0]
	pages := cc.Pages()
	defer pages.Close()
	vals := make([]parquet.Value, 1024)
	for {
		page, err := pages.ReadPage()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if ok, ferr := c.listFast(page); ferr != nil {
			err = ferr
		} else if !ok {
			err = c.listPage(page, vals)
		}
		parquet.Release(page)
		if err != nil {
			return err
		}
	}
	c.spans = append(c.spans, uint32(c.values()))
	return nil
}

// plainListPages turns listFast on; tests turn it off to hold listPage
// to the same answers.
var plainListPages = true

// listFast reads a plain page of a list leaf from its levels and its
// values as they are, as fast does for a flat column, and reports false,
// having read nothing, for a page it does not handle (dictionary-encoded,
// booleans, or levels and values that do not agree). Reading a list's
// values one parquet.Value at a time was most of the cost of the keywords
// partition's monthly list.
func (c *typedColumn) listFast(page parquet.Page) (bool, error) {
	if !plainListPages || page.Dictionary() != nil || c.kind == parquet.Boolean {
		return false, nil
	}
	reps, defs := page.RepetitionLevels(), page.DefinitionLevels()
	if len(reps) != len(defs) || int64(len(defs)) != page.NumValues() {
		return false, nil
	}
	present := 0
	for _, d := range defs {
		if int(d) >= c.maxDef {
			present++
		}
	}
	var (
		pd  []byte
		po  []uint32
		i32 []int32
		i64 []int64
		f64 []float64
		n   int
	)
	v := page.Data()
	switch {
	case c.kind == parquet.ByteArray && v.Kind() == encoding.ByteArray:
		pd, po = v.ByteArray()
		n = max(len(po)-1, 0)
	case c.kind == parquet.Int32 && v.Kind() == encoding.Int32:
		i32 = v.Int32()
		n = len(i32)
	case c.kind == parquet.Int64 && v.Kind() == encoding.Int64:
		i64 = v.Int64()
		n = len(i64)
	case c.kind == parquet.Double && v.Kind() == encoding.Double:
		f64 = v.Double()
		n = len(f64)
	default:
		return false, nil
	}
	if n != present {
		return false, nil
	}
	k := 0 // the next present value
	for i, rep := range reps {
		if rep == 0 {
			c.spans = append(c.spans, uint32(c.values()))
		} else if len(c.spans) == 0 {
			return true, fmt.Errorf("a list continues a row that never began")
		}
		def := int(defs[i])
		if def < c.elemDef {
			continue
		}
		null := def < c.maxDef
		c.null = append(c.null, null)
		switch c.kind {
		case parquet.ByteArray:
			if !null {
				c.data = append(c.data, pd[po[k]:po[k+1]]...)
			}
			c.offs = append(c.offs, uint32(len(c.data)))
		case parquet.Int32:
			var x int32
			if !null {
				x = i32[k]
			}
			c.i32 = append(c.i32, x)
		case parquet.Int64:
			var x int64
			if !null {
				x = i64[k]
			}
			c.i64 = append(c.i64, x)
		case parquet.Double:
			var x float64
			if !null {
				x = f64[k]
			}
			c.f64 = append(c.f64, x)
		}
		if !null {
			k++
		}
	}
	return true, nil
}

func (c *typedColumn) listPage(page parquet.Page, vals []parquet.Value) error {
	r := page.Values()
	for {
		n, err := r.ReadValues(vals)
		for _, x := range vals[:n] {
			if x.RepetitionLevel() == 0 {
				c.spans = append(c.spans, uint32(c.values()))
			} else if len(c.spans) == 0 {
				return fmt.Errorf("a list continues a row that never began")
			}
			def := x.DefinitionLevel()
			if def < c.elemDef {
				continue
			}
			null := def < c.maxDef
			c.null = append(c.null, null)
			c.appendValue(x, null)
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// expand appends the non-null values vals to dst, with a zero value for
// every null the definition levels mark.
func expand[T int32 | int64 | float64](dst, vals []T, defs []byte, nulls int64) []T {
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

// appendValue appends x, or the zero value when null.
func (c *typedColumn) appendValue(x parquet.Value, null bool) {
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
	case parquet.Double:
		var v float64
		if !null {
			v = x.Double()
		}
		c.f64 = append(c.f64, v)
	case parquet.Boolean:
		c.bools = append(c.bools, !null && x.Boolean())
	}
}

// slow reads any page value by value.
func (c *typedColumn) slow(page parquet.Page, vals []parquet.Value) error {
	r := page.Values()
	for {
		n, err := r.ReadValues(vals)
		for _, x := range vals[:n] {
			c.appendValue(x, x.IsNull())
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
