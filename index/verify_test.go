package index

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/sstable/block"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// FuzzCheckTable flips bits of one byte of a real table: checkTable never
// panics, and refuses the table whenever the byte lies in one of its
// blocks (a block's CRC-32C catches every change of up to 32 bits). A
// byte outside every block (the footer) may pass if the table still
// opens.
func FuzzCheckTable(f *testing.F) {
	data := f.TempDir()
	simpleLake(f, data, "2026-11-21", "us", 2000, 1)
	m := buildIndex(f, data, "2026-11-21")
	sst := keywordSST(f, filepath.Join(data, "index", m.BuildID))
	orig, err := os.ReadFile(sst)
	if err != nil {
		f.Fatal(err)
	}
	ro := dbOptions(vfs.Default, pebbleLogger{log: testLogger(f), fatal: panicFatal}).MakeReaderOptions()
	blocks := blockSpans(f, sst, ro)
	for _, pos := range []uint32{0, uint32(len(orig) / 2), uint32(len(orig) - 1), uint32(len(orig) - 60)} {
		f.Add(pos, byte(1))
	}
	f.Fuzz(func(t *testing.T, pos uint32, x byte) {
		if x == 0 {
			return
		}
		p := int(pos) % len(orig)
		b := append([]byte(nil), orig...)
		b[p] ^= x
		name := filepath.Join(t.TempDir(), "000004.sst")
		if err := os.WriteFile(name, b, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := checkTables(context.Background(), vfs.Default, []tableFile{{path: name, size: uint64(len(b))}}, ro)
		for _, s := range blocks {
			if p >= s[0] && p < s[1] && err == nil {
				t.Fatalf("byte %d (in the block at %d..%d) changed, and the table passed", p, s[0], s[1])
			}
		}
	})
}

// blockSpans lists the byte ranges [start, end) of a table's blocks with
// their trailers.
func blockSpans(tb testing.TB, name string, ro sstable.ReaderOptions) [][2]int {
	tb.Helper()
	r := openTable(tb, name, ro)
	defer r.Close()
	l, err := r.Layout()
	if err != nil {
		tb.Fatal(err)
	}
	var spans [][2]int
	add := func(h block.Handle) {
		if h.Length > 0 {
			spans = append(spans, [2]int{int(h.Offset), int(h.Offset + h.Length + block.TrailerLen)})
		}
	}
	for _, h := range l.Data {
		add(h.Handle)
	}
	for _, h := range l.Index {
		add(h)
	}
	for _, h := range l.Filter {
		add(h.Handle)
	}
	add(l.TopIndex)
	add(l.Properties)
	add(l.MetaIndex)
	if len(spans) < 5 {
		tb.Fatalf("table has %d blocks; the fuzz needs several", len(spans))
	}
	return spans
}
