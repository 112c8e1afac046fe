package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/pipelines"
)

// serveLockName is the server's lock in the index folder,
// <data>/index/serve.lock: the one folder every server writes, whatever
// its access store (Pebble writes a LOCK file into each build it opens,
// even read-only), so a hardened unit that may write only there can take
// it. The index lists only folders with a manifest as builds, so the file
// is never taken for one.
const serveLockName = "serve.lock"

// errFolderServed is matched (errors.Is) by the refusal of lockServer.
var errFolderServed = errors.New("the data folder is in use by another kwdata server")

// folderServedError says which process serves a data folder.
type folderServedError struct {
	data   string
	holder pipelines.LockHolder // zero when the lock file names no one
}

func (e *folderServedError) Error() string {
	who := "another kwdata server"
	if e.holder.PID > 0 {
		who = fmt.Sprintf("another kwdata server (pid %d on %s, since %s)", e.holder.PID, e.holder.Host,
			e.holder.Started.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("%s is in use: %s is already running on this folder; stop it first, or pass another --data", e.data, who)
}

func (e *folderServedError) Is(target error) bool { return target == errFolderServed }

// lockServer takes the server lock of data for as long as a server (or a
// demo building what it will serve) uses the folder. Two servers on one
// folder cannot both open its index builds, and with the embedded access
// store they would count lookups apart; without the lock the second one
// started and answered 503 for ever when the access store was shared.
// A *folderServedError names the holder; release gives the lock up.
func (m *Main) lockServer(data string) (release func(), err error) {
	dir := kw.IndexDir(data)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cannot create the index folder %s for the server's lock: %w", dir, err)
	}
	unlock, err := pipelines.LockFile(filepath.Join(dir, serveLockName), m.Logger)
	var held *pipelines.LockedError
	if errors.As(err, &held) {
		return nil, &folderServedError{data: data, holder: held.Holder}
	}
	if err != nil {
		return nil, fmt.Errorf("cannot take the server's lock of %s: %w", data, err)
	}
	return func() {
		if err := unlock(); err != nil {
			m.Logger.Error("cannot release the server's lock", "err", err)
		}
	}, nil
}
