//go:build !linux

package similarity

// bigSlice is make([]T, n); on Linux it also asks for huge pages.
func bigSlice[T any](n int) []T { return make([]T, n) }
