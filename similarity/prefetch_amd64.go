package similarity

import "unsafe"

// prefetch asks the processor to bring p's cache line in, without waiting
// for it: the engine's reads are random over gigabytes, and one it knows
// a little in advance need not stall the work in between. It is a hint:
// it never faults, whatever p is.
//
//go:noescape
func prefetch(p unsafe.Pointer)
