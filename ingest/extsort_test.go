package ingest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kwdata/kwdata/lake"
)

// TestRecordSorterOrder checks the sorter against a stable sort: keys in
// byte order, records of one key in the order added, in memory (one
// goroutine and two) and across spilled runs.
func TestRecordSorterOrder(t *testing.T) {
	for _, tc := range []struct{ n, budget int }{{10, 1 << 30}, {3 * parallelSort, 1 << 30}, {3 * parallelSort, 1 << 20}} {
		t.Run(fmt.Sprintf("n%d/budget%d", tc.n, tc.budget), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(tc.n), uint64(tc.budget)))
			type rec struct{ key, payload string }
			recs := make([]rec, tc.n)
			for i := range recs {
				// Shared 8-byte beginnings, so that the prefix ties.
				recs[i] = rec{fmt.Sprintf("keyword %d", rng.IntN(tc.n/3+1)), fmt.Sprint(i)}
			}
			s := newRecordSorter(t.TempDir(), "t-", "test", tc.budget)
			defer s.remove()
			for _, r := range recs {
				if err := s.add([]byte(r.key), []byte(r.payload)); err != nil {
					t.Fatal(err)
				}
			}
			// Past the first spill, the runs are written in the background.
			if tc.budget < 1<<30 && len(s.runs) < 3 {
				t.Fatalf("spilled %d runs; want several", len(s.runs))
			}
			want := slices.Clone(recs)
			slices.SortStableFunc(want, func(a, b rec) int { return strings.Compare(a.key, b.key) })
			i := 0
			err := s.merge(func(key []byte, payloads [][]byte) error {
				for _, p := range payloads {
					if i >= len(want) || !bytes.Equal(key, []byte(want[i].key)) || string(p) != want[i].payload {
						return fmt.Errorf("record %d is %q %q, want %+v", i, key, p, want[min(i, len(want)-1)])
					}
					i++
				}
				if i < len(want) && want[i].key == string(key) {
					return fmt.Errorf("key %q handed out before all its records", key)
				}
				return nil
			})
			if err != nil || i != len(want) {
				t.Fatalf("merge: %v after %d of %d records", err, i, len(want))
			}
		})
	}
}

// TestRecordSorterBackgroundSpillFails: a run that cannot be written in
// the background fails the next spill or the merge with its name, and
// remove still leaves nothing behind.
func TestRecordSorterBackgroundSpillFails(t *testing.T) {
	data := t.TempDir()
	s := newRecordSorter(data, "t-", "test", 1<<16)
	defer s.remove()
	add := func(n int) error {
		for i := range n {
			if err := s.add(fmt.Appendf(nil, "keyword %d", i%977), []byte("payload")); err != nil {
				return err
			}
		}
		return nil
	}
	// The first spill is written at once, the ones after it in the
	// background.
	for !s.spilled() {
		if err := add(1); err != nil {
			t.Fatal(err)
		}
	}
	// The runs' folder is gone: every background spill from now on fails.
	if err := os.RemoveAll(s.dir); err != nil {
		t.Fatal(err)
	}
	err := add(1 << 14)
	if err == nil {
		err = s.merge(func([]byte, [][]byte) error { return nil })
	}
	if err == nil || !strings.Contains(err.Error(), "cannot spill test records to "+filepath.Join(s.dir, "run-00001")) {
		t.Fatalf("err = %v; want the failed spill of run-00001", err)
	}
	s.remove()
	if left, _ := os.ReadDir(lake.StagingDir(data)); len(left) > 0 {
		t.Errorf("staging folder holds %s after remove", left[0].Name())
	}
}
