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
