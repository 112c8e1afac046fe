package index

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/sstable/block"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// tableFile is one table of an opened build: its file and the size the
// database's MANIFEST records for it.
type tableFile struct {
	path string
	size uint64
}

// tablesOf lists the tables of a build's database.
func tablesOf(fs vfs.FS, dbDir string, db *pebble.DB) ([]tableFile, error) {
	levels, err := db.SSTables()
	if err != nil {
		return nil, fmt.Errorf("cannot list the tables of %s: %w", dbDir, err)
	}
	var out []tableFile
	for _, level := range levels {
		for _, t := range level {
			out = append(out, tableFile{path: fs.PathJoin(dbDir, t.BackingSSTNum.String()+".sst"), size: t.Size})
		}
	}
	return out, nil
}

// checkTables reads every block of every table and verifies its checksum,
// and returns the bytes it checked. Opening a database checks only each
// table's size, and a block's checksum is checked when a lookup first
// reads it; without this a build with one flipped block is served and the
// lookups that land in the block fail.
//
// Each table is read through a reader of its own, outside the block
// cache and the database: the check neither evicts the served build's
// blocks nor needs the database's lock, so a served build that met damage
// can be checked again while it stays open.
func checkTables(ctx context.Context, fs vfs.FS, tables []tableFile, ro sstable.ReaderOptions) (int64, error) {
	var checked int64
	buf := make([]byte, 0, 64<<10)
	for _, t := range tables {
		if err := ctx.Err(); err != nil {
			return checked, err
		}
		var err error
		if buf, err = checkTable(ctx, fs, t, ro, buf); err != nil {
			return checked, fmt.Errorf("table %s is damaged: %w", t.path, err)
		}
		checked += int64(t.size)
	}
	return checked, nil
}

// checkTable verifies one table: Pebble reads its footer, metaindex and
// properties and walks its index blocks (sstable.Reader.Layout), then
// every block the layout lists is read in file order and its checksum
// verified (block.ValidateChecksum, Pebble's own check). Unlike
// sstable.Reader.ValidateBlockChecksums, which decompresses every block
// and read three quarters of its time in snappy, the blocks stay
// compressed, and one sequential read replaces a read a block. buf is
// reused across tables.
func checkTable(ctx context.Context, fs vfs.FS, t tableFile, ro sstable.ReaderOptions, buf []byte) (_ []byte, err error) {
	// The table may be anything a damaged disk left; a panic of Pebble's
	// reader on it refuses the table instead of ending the server.
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("cannot read the table: %v", p)
		}
	}()
	st, err := fs.Stat(t.path)
	if err != nil {
		return buf, err
	}
	if uint64(st.Size()) != t.size {
		return buf, fmt.Errorf("size mismatch: %d bytes, the database lists %d", st.Size(), t.size)
	}
	f, err := fs.Open(t.path)
	if err != nil {
		return buf, err
	}
	readable, err := objstorageprovider.NewFileReadable(f, fs, objstorageprovider.NewReadaheadConfig(), t.path)
	if err != nil {
		return buf, errors.Join(err, f.Close())
	}
	r, err := sstable.NewReader(ctx, readable, ro)
	if err != nil {
		return buf, errors.Join(err, readable.Close())
	}
	layout, err := r.Layout()
	checksum := r.BlockReader().ChecksumType()
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return buf, err
	}

	handles := make([]block.Handle, 0, len(layout.Data)+len(layout.Index)+len(layout.Filter)+len(layout.ValueBlock)+8)
	for _, h := range layout.Data {
		handles = append(handles, h.Handle)
	}
	handles = append(handles, layout.Index...)
	for _, h := range layout.Filter {
		handles = append(handles, h.Handle)
	}
	handles = append(handles, layout.ValueBlock...)
	handles = append(handles, layout.TopIndex, layout.RangeDel, layout.RangeKey, layout.ValueIndex,
		layout.Properties, layout.MetaIndex, layout.BlobReferenceIndex)
	slices.SortFunc(handles, func(a, b block.Handle) int { return cmp.Compare(a.Offset, b.Offset) })

	g, err := fs.Open(t.path, vfs.SequentialReadsOption)
	if err != nil {
		return buf, err
	}
	defer g.Close()
	in := bufio.NewReaderSize(io.NewSectionReader(g, 0, int64(t.size)), 1<<20)
	var pos uint64
	for i, h := range handles {
		if h.Length == 0 || (i > 0 && h == handles[i-1]) {
			continue // absent (no range keys, say), or listed twice (a one-level index is also the top)
		}
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return buf, err
			}
		}
		if h.Offset < pos || h.Offset+h.Length+block.TrailerLen > t.size {
			return buf, fmt.Errorf("block at %d of %d bytes lies outside the table or overlaps another", h.Offset, h.Length)
		}
		if _, err := in.Discard(int(h.Offset - pos)); err != nil {
			return buf, fmt.Errorf("cannot read up to the block at %d: %w", h.Offset, err)
		}
		n := int(h.Length + block.TrailerLen)
		buf = slices.Grow(buf[:0], n)[:n]
		if _, err := io.ReadFull(in, buf); err != nil {
			return buf, fmt.Errorf("cannot read the block at %d: %w", h.Offset, err)
		}
		if err := block.ValidateChecksum(checksum, buf, h); err != nil {
			return buf, err
		}
		pos = h.Offset + uint64(n)
	}
	return buf, nil
}
