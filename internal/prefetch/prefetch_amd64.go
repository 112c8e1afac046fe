package prefetch

import "unsafe"

// line brings p's cache line in without waiting for it. It never faults,
// whatever p is.
//
//go:noescape
func line(p unsafe.Pointer)
