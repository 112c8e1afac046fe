package kw

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// WriteFileAtomic replaces the small file path with b: it writes a
// temporary file beside it, syncs it, renames it into place and syncs the
// folder, creating the folder if need be. A reader sees the old file or the
// new one, and a crash leaves one of them. The stages keep their state under
// the data folder this way (checkpoints, stage marks).
func WriteFileAtomic(path string, b []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cannot create folder %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // fails harmlessly after the rename
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("cannot replace %s: %w", path, err)
	}
	return SyncDir(dir)
}

// SyncDir makes the new names and renames in dir durable. File systems that
// cannot sync a folder are taken at their word.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("cannot open folder %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		return fmt.Errorf("cannot sync folder %s: %w", dir, err)
	}
	return nil
}
