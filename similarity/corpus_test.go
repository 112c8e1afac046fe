package similarity

import (
	"fmt"
	"testing"
)

// TestURLInterner checks that ids are dense, in first-seen order, and
// stable across the table's growth.
func TestURLInterner(t *testing.T) {
	u := newURLInterner()
	const n = 200_000 // several doublings past the initial table
	for i := range n {
		if id := u.id(u.hash(fmt.Appendf(nil, "site%d.example/", i))); id != uint32(i) {
			t.Fatalf("new key %d got id %d", i, id)
		}
	}
	for i := n - 1; i >= 0; i -= 7 {
		if id := u.id(u.hash(fmt.Appendf(nil, "site%d.example/", i))); id != uint32(i) {
			t.Fatalf("known key %d got id %d", i, id)
		}
	}
	if u.len() != n {
		t.Fatalf("len = %d, want %d", u.len(), n)
	}
	if h := u.hash(nil); h == emptyURL {
		t.Fatal("hash of an empty key is the empty marker")
	}
}

// TestURLInternerKeepsHashBits checks that hashes that differ only in the
// bits a slot keeps (the second word, the top half of the first) get
// different ids, even when they probe the same slots.
func TestURLInternerKeepsHashBits(t *testing.T) {
	u := newURLInterner()
	hs := [][2]uint64{
		{1 << 40, 1},
		{1 << 40, 2},       // second word differs
		{1<<40 | 1<<63, 1}, // top half of the first word differs
		{1<<40 | 1<<32, 1},
	}
	for i, h := range hs {
		if id := u.id(h); id != uint32(i) {
			t.Fatalf("hash %d got id %d, want a new id %d", i, id, i)
		}
	}
	for i, h := range hs {
		if id := u.id(h); id != uint32(i) {
			t.Fatalf("hash %d again got id %d, want %d", i, id, i)
		}
	}
}
