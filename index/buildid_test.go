package index

import (
	"testing"
	"time"
)

// TestValidBuildID: only the names Build gives its builds pass, so an id
// that arrives from an object store can never name the pointer files or
// a staging folder.
func TestValidBuildID(t *testing.T) {
	made, err := newBuildID(time.Date(2026, 11, 26, 21, 35, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		id   string
		want bool
	}{
		{made, true},
		{"20261126T213500Z-0a1b2c", true},
		{"CURRENT", false},
		{"CURRENT.tmp", false},
		{"", false},
		{".building-20261126T213500Z-0a1b2c", false},
		{".incoming-20261126T213500Z-0a1b2c", false},
		{"../20261126T213500Z-0a1b2c", false},
		{"20261126T213500Z-0a1b2c/db", false},
		{"20261126T213500Z-0A1B2C", false},
		{"20261126T213500Z-0a1b2", false},
		{"20261126T213500Z-0a1b2c3", false},
		{"20261126T213500-0a1b2c", false},
		{"2026112xT213500Z-0a1b2c", false},
		{"b1", false},
	} {
		if got := ValidBuildID(tc.id); got != tc.want {
			t.Errorf("ValidBuildID(%q) = %v, want %v", tc.id, got, tc.want)
		}
	}
}
