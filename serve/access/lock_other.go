//go:build !unix

package access

import (
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// lockFile takes an exclusive lock on path, retrying while another holder
// has it (the platform lock Pebble uses does not wait).
func lockFile(path string) (unlock func(), err error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := vfs.Default.Lock(path)
		if err == nil {
			return func() { c.Close() }, nil
		}
		if time.Now().After(deadline) {
			return nil, err
		}
		time.Sleep(10 * time.Millisecond)
	}
}
