package ingest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
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
			if tc.budget < 1<<30 && len(s.runs) < 2 {
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
