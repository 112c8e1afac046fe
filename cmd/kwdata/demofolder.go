package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/kwdata/kwdata/kw"
)

// demoMarkName is the file that marks a folder kwdata demo made. The demo
// replaces its folder on every run, so it replaces only one it marked (or
// an empty one): a --data naming a real data folder must never cost its
// keys and run history.
const demoMarkName = ".kwdata-demo"

const demoMark = "This folder was made by kwdata demo, which replaces it on each run.\n"

// claimDemoFolder makes data a fresh, empty demo folder and holds the
// server lock of it until release, so that neither another demo nor a
// server uses it meanwhile. It refuses, saying why in one line, a folder
// the demo did not make and one a running server holds, and then changes
// nothing.
func (m *Main) claimDemoFolder(data string) (release func(), err error) {
	if err := checkDemoFolder(data); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(data, 0o755); err != nil {
		return nil, fmt.Errorf("cannot create the demo folder %s: %w", data, err)
	}
	// Taken before anything is removed: a demo serving this folder keeps
	// it, and so does a server started on it by hand.
	release, err = m.lockServer(data)
	if err != nil {
		return nil, fmt.Errorf("cannot replace the demo folder: %w", err)
	}
	if err := os.WriteFile(filepath.Join(data, demoMarkName), []byte(demoMark), 0o644); err != nil {
		release()
		return nil, fmt.Errorf("cannot mark %s as the demo's folder: %w", data, err)
	}
	if err := clearDemoFolder(data); err != nil {
		release()
		return nil, err
	}
	return release, nil
}

// checkDemoFolder refuses a data folder the demo may not replace.
func checkDemoFolder(data string) error {
	info, err := os.Stat(data)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("cannot use %s for the demo: %w", data, err)
	case !info.IsDir():
		return fmt.Errorf("cannot use %s for the demo: it is a file, not a folder; pass --data with a new folder name", data)
	}
	if _, err := os.Stat(filepath.Join(data, demoMarkName)); err == nil {
		return nil
	}
	entries, err := os.ReadDir(data)
	if err != nil {
		return fmt.Errorf("cannot use %s for the demo: %w", data, err)
	}
	if len(entries) > 0 {
		return fmt.Errorf("cannot use %s for the demo: the demo replaces its folder, and this one was not made by it (it has no %s file); pass --data with a new or empty folder, or delete this one yourself", data, demoMarkName)
	}
	return nil
}

// clearDemoFolder removes what an earlier demo left in data, but the mark
// and the server lock the caller holds: removing the lock file would let
// another process lock a new one beside it.
func clearDemoFolder(data string) error {
	keep := map[string]bool{
		filepath.Join(data, demoMarkName):               true,
		filepath.Join(kw.IndexDir(data), serveLockName): true,
		kw.IndexDir(data):                               true, // its entries are judged one by one
	}
	for _, dir := range []string{data, kw.IndexDir(data)} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return fmt.Errorf("cannot clear the demo folder %s: %w", data, err)
		}
		for _, e := range entries {
			p := filepath.Join(dir, e.Name())
			if keep[p] {
				continue
			}
			if err := os.RemoveAll(p); err != nil {
				return fmt.Errorf("cannot clear the demo folder %s: %w", data, err)
			}
		}
	}
	return nil
}
