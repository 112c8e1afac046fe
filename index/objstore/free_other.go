//go:build !unix

package objstore

// freeBytes cannot read the free space here; downloads are not checked
// against it.
func freeBytes(string) (uint64, bool) { return 0, false }
