package similarity

import (
	"syscall"
	"unsafe"
)

// hugePage is the size of a transparent huge page on the platforms kwdata
// runs on.
const hugePage = 2 << 20

// bigSlice is make([]T, n), asking the kernel to back the slice with
// transparent huge pages where they are enabled on request
// (/sys/kernel/mm/transparent_hugepage/enabled set to madvise). The
// engine's arrays are read at random over gigabytes: with 4 KiB pages
// nearly every such read also misses the TLB, and filling them costs a
// page fault every 4 KiB. The advice only applies to whole huge pages
// inside the slice, so a small slice is left alone, and a failure is
// ignored: the memory is the same either way.
func bigSlice[T any](n int) []T {
	s := make([]T, n)
	var zero T
	size := uintptr(n) * unsafe.Sizeof(zero)
	if size < 2*hugePage {
		return s
	}
	p := unsafe.Pointer(unsafe.SliceData(s))
	start := uintptr(p)
	lo := (start + hugePage - 1) &^ (hugePage - 1)
	hi := (start + size) &^ (hugePage - 1)
	if hi > lo {
		_ = syscall.Madvise(unsafe.Slice((*byte)(unsafe.Add(p, lo-start)), hi-lo), syscall.MADV_HUGEPAGE)
	}
	return s
}
