//go:build !unix

package pipelines

import (
	"errors"
	"os"
)

var (
	errWouldBlock = errors.New("lock is held")
	errNoFlock    = errors.New("file locks are not supported here")
)

// flock is not available: lockFile falls back to the holder's pid.
func flock(*os.File) error   { return errNoFlock }
func funlock(*os.File) error { return nil }

// processAlive reports whether a process with pid exists; without a
// portable probe, any pid that can be found counts as alive.
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	_ = p.Release()
	return true
}
