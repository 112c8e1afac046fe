package lake

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding"
)

// column is one column of a Batch: strings (byte arrays), INT32, INT64,
// DOUBLE or BOOLEAN values stored flat, with a null mark per value where
// the row group has nulls.
//
// A list leaf holds a run of values per row: spans holds, per row, the
// index of its first value, and one more entry, the number of values.
//
// A chunk of byte arrays with dictionary-encoded pages (refs) keeps each
// dictionary's values once, as entries in data and offs, and each row's
// entry in ref: a column that repeats a value row after row (the SERPs'
// keyword, twenty rows a keyword) is read without rebuilding its bytes
// for every row.
type column struct {
	colSpec
	data  []byte   // byte arrays, back to back
	offs  []uint32 // byte arrays: one offset into data per entry, and one past the end
	refs  bool     // rows are entries through ref, not one entry each
	ref   []int32  // refs: each row's entry
	dict  parquet.Dictionary
	base  int32 // refs: the entry of dict's first value
	empty int32 // refs: an entry that reads empty, for nulls; -1 until one is needed
	hint  int   // the rows of the chunk, as reserve was told
	i32   []int32
	i64   []int64
	f64   []float64
	bools []bool
	null  []bool // per value; empty when the row group has no null in the column
	spans []uint32
}

// colSpec is how one file stores one requested column.
type colSpec struct {
	kind parquet.Kind
	leaf int // the column's index among the file's leaves
	// repeated: a list leaf; elemDef is the definition level from which a
	// level stands for a list element (below it, the row's list is empty
	// or null) and maxDef the one of a present value.
	repeated        bool
	elemDef, maxDef int
	// missing: the file has no such column; every row is null.
	missing bool
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
func (c *column) fillNull(n int) {
	c.refs = false
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

// reserve makes room, at once, for a row group of rows rows whose chunk
// of the column has size: growing by appends, a column of a large row
// group was allocated and copied a dozen times, each time into memory the
// system had to supply. The footer's figures are a hint: a damaged or
// dictionary-encoded chunk may need more, and appends then grow it.
func (c *column) reserve(rows int, size chunkSize) {
	values := rows
	c.hint = rows
	if c.repeated {
		values = int(min(max(size.values, 0), 1<<28))
	}
	switch c.kind {
	case parquet.ByteArray:
		c.offs = reserved(c.offs, values+1)
		c.data = reserved(c.data, int(min(max(size.bytes, 0), 1<<31)))
	case parquet.Int32:
		c.i32 = reserved(c.i32, values)
	case parquet.Int64:
		c.i64 = reserved(c.i64, values)
	case parquet.Double:
		c.f64 = reserved(c.f64, values)
	case parquet.Boolean:
		c.bools = reserved(c.bools, values)
	}
	if c.repeated {
		// A list leaf always keeps its null marks.
		c.null = reserved(c.null, values)
		c.spans = reserved(c.spans, rows+1)
	}
}

// reserved returns s emptied, with room for n elements. A new array has a
// quarter more room than asked: a batch is reused for row group after row
// group, whose chunks differ in size by a few percent, and with room for
// exactly n each chunk larger than the largest so far allocated another
// array, each page of it faulted in fresh. Reading the SERPs of a million
// web keywords (147 row groups) allocated 188 MB of arrays that way, and
// 64 MB with the quarter more; the read's page faults fell from 40k to 18k.
func reserved[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, 0, n+n/4)
	}
	return s[:0]
}

// rows is the number of rows read so far.
func (c *column) rows() int {
	if c.repeated {
		return len(c.spans) - 1 // read ends spans with the number of values
	}
	if c.refs {
		return len(c.ref)
	}
	return c.values()
}

// values is the number of values (for refs, entries) read so far.
func (c *column) values() int {
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
func (c *column) read(cc parquet.ColumnChunk) error {
	c.data, c.offs, c.i32, c.i64, c.f64, c.bools, c.null = c.data[:0], append(c.offs[:0], 0), c.i32[:0], c.i64[:0], c.f64[:0], c.bools[:0], c.null[:0]
	c.refs, c.ref, c.dict, c.empty = false, c.ref[:0], nil, -1
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
		start, entries := c.rows(), c.values()
		dict, err := c.fastDict(page)
		if err != nil {
			parquet.Release(page)
			return err
		}
		if !dict && !c.fast(page) {
			if vals == nil {
				vals = make([]parquet.Value, 1024)
			}
			if err := c.slow(page, vals); err != nil {
				parquet.Release(page)
				return err
			}
		}
		if c.refs && !dict {
			// A plain page after a dictionary-encoded one (a writer
			// whose dictionary grew too large): its values are entries
			// of their own.
			for e := entries; e < c.values(); e++ {
				c.ref = append(c.ref, int32(e))
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

// fastDict reads a dictionary-encoded page of a flat column of byte
// arrays as entries: the dictionary's values once a chunk, and an entry a
// row. It reports false, having read nothing, for any other page, and an
// error for an index outside the dictionary.
func (c *column) fastDict(page parquet.Page) (bool, error) {
	d := page.Dictionary()
	if d == nil || c.kind != parquet.ByteArray || c.repeated || page.RepetitionLevels() != nil {
		return false, nil
	}
	v, dv := page.Data(), d.Page().Data()
	if v.Kind() != encoding.Int32 || dv.Kind() != encoding.ByteArray {
		return false, nil
	}
	idx, defs, nulls := v.Int32(), page.DefinitionLevels(), page.NumNulls()
	if nulls > 0 && (defs == nil || int64(len(defs))-nulls != int64(len(idx))) {
		return false, nil
	}
	for _, i := range idx {
		if uint32(i) >= uint32(d.Len()) {
			return false, fmt.Errorf("a dictionary index %d past the dictionary's %d values", i, d.Len())
		}
	}
	if !c.refs {
		// Rows of plain pages before this one keep their own entries.
		n := c.values()
		c.ref = reserved(c.ref, max(c.hint, n+len(idx)))
		for e := range n {
			c.ref = append(c.ref, int32(e))
		}
		c.refs = true
	}
	if c.dict != d {
		c.base, c.dict = int32(c.values()), d
		c.appendByteArrays(dv.ByteArray())
	}
	if nulls == 0 {
		for _, i := range idx {
			c.ref = append(c.ref, c.base+i)
		}
		return true, nil
	}
	if c.empty < 0 {
		c.empty = int32(c.values())
		c.offs = append(c.offs, uint32(len(c.data)))
	}
	k := 0
	for _, def := range defs {
		if def != 0 {
			c.ref = append(c.ref, c.base+idx[k])
			k++
		} else {
			c.ref = append(c.ref, c.empty)
		}
	}
	return true, nil
}

// fast copies a plain page's values as they are (nulls as zero values,
// where the definition levels say), and reports false for a page it does
// not handle: dictionary-encoded or repeated; booleans, stored as bits,
// go to fastBools.
func (c *column) fast(page parquet.Page) bool {
	if page.Dictionary() != nil || page.RepetitionLevels() != nil {
		return false
	}
	if c.kind == parquet.Boolean {
		return c.fastBools(page)
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
			c.appendByteArrays(pd, po)
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

// fastBools reads a page of booleans without nulls through its own
// reader of bools, not one parquet.Value at a time (a related
// partition's same_intent, ten a keyword, had been a sixth of the cost of
// reading it), and reports false, having read nothing, for a page it
// does not handle.
func (c *column) fastBools(page parquet.Page) bool {
	if page.NumNulls() > 0 {
		return false
	}
	r, ok := page.Values().(parquet.BooleanReader)
	if !ok {
		return false
	}
	start := len(c.bools)
	c.bools = slices.Grow(c.bools, int(page.NumValues()))[:start+int(page.NumValues())]
	got := start
	for got < len(c.bools) {
		n, err := r.ReadBooleans(c.bools[got:])
		got += n
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil || n == 0 {
			// The value-by-value path reads it again, and says what is wrong.
			c.bools = c.bools[:start]
			return false
		}
	}
	c.bools = c.bools[:got]
	return true
}

// appendByteArrays appends a plain page's byte arrays, none null: its
// bytes pd at once, and its offsets po shifted to the column's.
func (c *column) appendByteArrays(pd []byte, po []uint32) {
	if len(po) == 0 {
		return
	}
	base := uint32(len(c.data)) - po[0]
	c.data = append(c.data, pd[po[0]:po[len(po)-1]]...)
	for _, x := range po[1:] {
		c.offs = append(c.offs, base+x)
	}
}

// readList replaces the values of a list leaf with those of one column
// chunk: a row starts at each repetition level 0, and each level at or
// above elemDef is a value, null below maxDef. It always keeps the null
// marks, since a list leaf's chunk is small next to its rows.
func (c *column) readList(cc parquet.ColumnChunk) error {
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
func (c *column) listFast(page parquet.Page) (bool, error) {
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
	if present == len(defs) {
		return true, c.listAllPresent(reps, pd, po, i32, i64, f64)
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

// listAllPresent is listFast for a page whose every level is a value (no
// null and no empty list, a trend's months): the values are copied at
// once, not one level at a time.
func (c *column) listAllPresent(reps []byte, pd []byte, po []uint32, i32 []int32, i64 []int64, f64 []float64) error {
	base := c.values()
	for i, rep := range reps {
		if rep == 0 {
			c.spans = append(c.spans, uint32(base+i))
		} else if len(c.spans) == 0 {
			return fmt.Errorf("a list continues a row that never began")
		}
	}
	c.null = append(c.null, make([]bool, len(reps))...)
	switch c.kind {
	case parquet.ByteArray:
		c.appendByteArrays(pd, po)
	case parquet.Int32:
		c.i32 = append(c.i32, i32...)
	case parquet.Int64:
		c.i64 = append(c.i64, i64...)
	case parquet.Double:
		c.f64 = append(c.f64, f64...)
	}
	return nil
}

func (c *column) listPage(page parquet.Page, vals []parquet.Value) error {
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
func (c *column) appendValue(x parquet.Value, null bool) {
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
func (c *column) slow(page parquet.Page, vals []parquet.Value) error {
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
