package prefetch

import "testing"

// TestAtOutOfRange asks for elements a slice does not have: At must
// neither panic nor read them.
func TestAtOutOfRange(t *testing.T) {
	s := make([]uint32, 4)
	for _, i := range []int{-1, 4, 1 << 40} {
		At(s, i)
	}
	At([]byte(nil), 0)
	At(s, 3)
	if s[3] != 0 {
		t.Fatal("At changed the slice")
	}
}

// TestOfAndStringWithNothing asks for a nil pointer and an empty string,
// which have no memory: neither call may panic.
func TestOfAndStringWithNothing(t *testing.T) {
	Of[int64](nil)
	String("")
	v := int64(7)
	Of(&v)
	String("kwdata")
	if v != 7 {
		t.Fatal("Of changed the value")
	}
}
