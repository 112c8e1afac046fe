// Package prefetch asks the processor for memory a loop will read a few
// steps on: a walk that reads large arrays at random otherwise waits for
// each cache miss in turn, where asked ahead the misses overlap.
package prefetch

import "unsafe"

// At asks for the cache line of s[i], if s has an element i. It is a
// hint: it never faults and changes nothing a program can see.
func At[T any](s []T, i int) {
	if uint(i) < uint(len(s)) {
		line(unsafe.Pointer(&s[i]))
	}
}

// Of asks for the cache line of *p, if p is not nil.
func Of[T any](p *T) {
	if p != nil {
		line(unsafe.Pointer(p))
	}
}

// String asks for the cache line of s's first byte, if s has one.
func String(s string) {
	if len(s) > 0 {
		line(unsafe.Pointer(unsafe.StringData(s)))
	}
}
