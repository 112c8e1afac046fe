package index

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSetCurrent: a build that arrived from elsewhere is published only
// when it is complete, and the pointer then names it.
func TestSetCurrent(t *testing.T) {
	data := t.TempDir()
	simpleLake(t, data, "2026-11-21", "us", 10, 100)
	m := buildIndex(t, data, "2026-11-21")
	for _, tc := range []struct {
		name, id string
	}{
		{"not an id", "../x"},
		{"hidden", ".incoming-x"},
		{"missing", "20261101T000000Z-000000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := SetCurrent(data, tc.id); err == nil {
				t.Fatalf("SetCurrent(%q) = nil, want an error", tc.id)
			}
			if got := readCurrent(t, data); got != m.BuildID {
				t.Fatalf("CURRENT = %q after a refused SetCurrent, want %s", got, m.BuildID)
			}
		})
	}
	// A copy of the build under another id, as a download would rename it.
	other := "20261201T000000Z-abcdef"
	copyDir(t, filepath.Join(data, "index", m.BuildID), filepath.Join(data, "index", other))
	if err := SetCurrent(data, other); err == nil {
		t.Fatal("SetCurrent of a build whose manifest names another id = nil, want an error")
	}
	if err := SetCurrent(data, m.BuildID); err != nil {
		t.Fatal(err)
	}
	if got := readCurrent(t, data); got != m.BuildID {
		t.Fatalf("CURRENT = %q, want %s", got, m.BuildID)
	}
	if _, err := os.Stat(filepath.Join(data, "index", pointerTmpName)); !os.IsNotExist(err) {
		t.Errorf("%s left behind: %v", pointerTmpName, err)
	}
}
