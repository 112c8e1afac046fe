//go:build unix

package access

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive advisory lock on path, waiting for other
// holders, whether in this process or another. flock locks belong to the
// open file, so two opens in one process exclude each other too.
func lockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil // closing releases the lock
}
