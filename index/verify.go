package index

import (
	"context"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
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

// checkTables reads every block of every table and verifies its checksum
// (Pebble's sstable.Reader.ValidateBlockChecksums), and returns the bytes
// it checked. Opening a database checks only each table's size, and a
// block's checksum is checked when a lookup first reads it; without this a
// build with one flipped block is served and the lookups that land in the
// block fail.
//
// Each table is read through a reader of its own, outside the block
// cache and the database: the check neither evicts the served build's
// blocks nor needs the database's lock, so a served build that met damage
// can be checked again while it stays open.
func checkTables(ctx context.Context, fs vfs.FS, tables []tableFile, ro sstable.ReaderOptions) (int64, error) {
	var checked int64
	for _, t := range tables {
		if err := ctx.Err(); err != nil {
			return checked, err
		}
		if err := checkTable(ctx, fs, t, ro); err != nil {
			return checked, fmt.Errorf("table %s is damaged: %w", t.path, err)
		}
		checked += int64(t.size)
	}
	return checked, nil
}

func checkTable(ctx context.Context, fs vfs.FS, t tableFile, ro sstable.ReaderOptions) error {
	st, err := fs.Stat(t.path)
	if err != nil {
		return err
	}
	if uint64(st.Size()) != t.size {
		return fmt.Errorf("size mismatch: %d bytes, the database lists %d", st.Size(), t.size)
	}
	f, err := fs.Open(t.path)
	if err != nil {
		return err
	}
	readable, err := objstorageprovider.NewFileReadable(f, fs, objstorageprovider.NewReadaheadConfig(), t.path)
	if err != nil {
		return errors.Join(err, f.Close())
	}
	r, err := sstable.NewReader(ctx, readable, ro)
	if err != nil {
		return errors.Join(err, readable.Close())
	}
	return errors.Join(r.ValidateBlockChecksums(), r.Close())
}
