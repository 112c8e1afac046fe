//go:build !amd64

package similarity

import "unsafe"

// prefetch is a no-op where kwdata has no instruction for it.
func prefetch(p unsafe.Pointer) {}
