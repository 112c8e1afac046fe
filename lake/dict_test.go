package lake

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding"
)

// dictRow has string columns in each encoding Scan must read as entries:
// dictionary-encoded required (keyword) and optional with nulls (opt),
// and plain (plain).
type dictRow struct {
	Keyword string  `parquet:"keyword,dict"`
	Opt     *string `parquet:"opt,optional,dict"`
	Plain   string  `parquet:"plain"`
}

// TestScanDictStrings checks dictionary-encoded string columns, with and
// without nulls, over several row groups and files, with any number of
// workers: each row reads its own value, and a null reads empty.
func TestScanDictStrings(t *testing.T) {
	data := t.TempDir()
	const n = 2*rowsPerGroup + 999
	rows := make([]dictRow, n)
	for i := range rows {
		rows[i] = dictRow{Keyword: fmt.Sprintf("kw %07d", i/20), Plain: strings.Repeat("p", i%7)}
		if i%3 != 0 {
			v := fmt.Sprintf("o%d", i%11)
			rows[i].Opt = &v
		}
	}
	const dataset, date = "dicts", "2026-11-21"
	writeTwoFiles(t, data, dataset, date, rows)
	for _, workers := range []int{1, 3} {
		t.Run(fmt.Sprintf("w%d", workers), func(t *testing.T) {
			i, seq, refs := 0, 0, 0
			err := Scan(context.Background(), data, dataset, "us", date, []string{"plain", "keyword", "opt"}, ScanOptions{Workers: workers},
				func(b *Batch) error {
					seq++
					if b.cols[1].refs && b.cols[2].refs && !b.cols[0].refs {
						refs++
					}
					for r := range b.Rows {
						want := rows[i]
						opt := ""
						if want.Opt != nil {
							opt = *want.Opt
						}
						if got := string(b.Bytes(1, r)); got != want.Keyword {
							t.Fatalf("row %d: keyword %q, want %q", i, got, want.Keyword)
						}
						if got := string(b.Bytes(0, r)); got != want.Plain {
							t.Fatalf("row %d: plain %q, want %q", i, got, want.Plain)
						}
						if got := b.Bytes(2, r); string(got) != opt || b.Null(2, r) != (want.Opt == nil) || cap(got) != len(got) {
							t.Fatalf("row %d: opt %q (null %v, room %d), want %q (null %v)", i, got, b.Null(2, r), cap(got), opt, want.Opt == nil)
						}
						i++
					}
					return nil
				})
			if err != nil {
				t.Fatal(err)
			}
			if i != n || seq < 3 || refs != seq {
				t.Fatalf("read %d rows in %d batches (%d read as entries), want %d rows in several row groups and files, all as entries", i, seq, refs, n)
			}
		})
	}
}

// pagesChunk is a column chunk of the given pages.
type pagesChunk struct {
	parquet.ColumnChunk
	pages []parquet.Page
}

func (c pagesChunk) Pages() parquet.Pages { return &pageList{pages: c.pages} }

type pageList struct{ pages []parquet.Page }

func (p *pageList) ReadPage() (parquet.Page, error) {
	if len(p.pages) == 0 {
		return nil, io.EOF
	}
	pg := p.pages[0]
	p.pages = p.pages[1:]
	return pg, nil
}
func (p *pageList) SeekToRow(int64) error { return nil }
func (p *pageList) Close() error          { return nil }

// dictPage returns a page of a dictionary of values, with the rows idx.
func dictPage(d parquet.Dictionary, idx []int32) parquet.Page {
	return d.Type().NewPage(0, len(idx), encoding.Int32Values(idx))
}

func plainPage(vals ...string) parquet.Page {
	return parquet.ByteArrayType.NewPage(0, len(vals), byteArrays(vals))
}

func newDict(vals ...string) parquet.Dictionary {
	return parquet.ByteArrayType.NewDictionary(0, len(vals), byteArrays(vals))
}

// byteArrays is vals as parquet-go's byte array values.
func byteArrays(vals []string) encoding.Values {
	var data []byte
	offs := []uint32{0}
	for _, v := range vals {
		data = append(data, v...)
		offs = append(offs, uint32(len(data)))
	}
	return encoding.ByteArrayValues(data, offs)
}

// writeTwoFiles writes rows as a partition of two files: the first third
// of them, then the rest.
func writeTwoFiles[T any](t *testing.T, data, dataset, date string, rows []T) {
	t.Helper()
	w, err := Create[T](data, dataset, "us", date)
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []func() error{
		func() error { return w.Write(rows[:len(rows)/3]...) },
		w.roll,
		func() error { return w.Write(rows[len(rows)/3:]...) },
		w.Commit,
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestColumnDictPagesMixed reads chunks whose pages mix the encodings, as
// a writer whose dictionary outgrew its limit leaves them: plain pages
// before and after dictionary-encoded ones, in one chunk, then a chunk
// of plain pages only into the same column. Each row reads its value.
func TestColumnDictPagesMixed(t *testing.T) {
	d := newDict("alpha", "", "gamma")
	c := column{colSpec: colSpec{kind: parquet.ByteArray}}
	read := func(want []string, pages ...parquet.Page) {
		t.Helper()
		c.reserve(len(want), chunkSize{values: int64(len(want))})
		if err := c.read(pagesChunk{pages: pages}); err != nil {
			t.Fatal(err)
		}
		b := Batch{Rows: len(want), cols: []column{c}}
		if c.rows() != len(want) {
			t.Fatalf("read %d rows, want %d", c.rows(), len(want))
		}
		for r, w := range want {
			if got := string(b.Bytes(0, r)); got != w {
				t.Fatalf("row %d: %q, want %q", r, got, w)
			}
		}
	}
	read([]string{"p0", "p1", "gamma", "alpha", "gamma", "", "p2", "alpha", "p3"},
		plainPage("p0", "p1"), dictPage(d, []int32{2, 0, 2, 1}), plainPage("p2"), dictPage(d, []int32{0}), plainPage("p3"))
	if !c.refs || c.values() != 2+3+1+1 {
		t.Fatalf("refs %v with %d entries; want the dictionary's three values once beside four plain ones", c.refs, c.values())
	}
	read([]string{"x", "yy"}, plainPage("x", "yy"))
	if c.refs {
		t.Fatal("a plain chunk read after a dictionary-encoded one is still read as entries")
	}
	read([]string{"", "alpha"}, dictPage(d, []int32{1, 0}))

	c.reserve(1, chunkSize{values: 1})
	err := c.read(pagesChunk{pages: []parquet.Page{dictPage(d, []int32{3})}})
	if err == nil || !strings.Contains(err.Error(), "dictionary index 3") {
		t.Fatalf("an index past the dictionary read with error %v", err)
	}
}
