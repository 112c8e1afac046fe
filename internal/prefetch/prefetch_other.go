//go:build !amd64

package prefetch

import "unsafe"

// line does nothing where there is no instruction for it here.
func line(p unsafe.Pointer) {}
