package ingest

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/lake"
)

// keySet collects the keys a writer writes, as 64-bit hashes, so that a
// run can count the planner keywords that got a SERP without holding the
// keywords: 8 bytes a keyword, where a collision (about one in 10^8 at
// 10M keywords) would miscount one keyword of a warning.
type keySet struct {
	seed   maphash.Seed
	hashes []uint64
}

func (s *keySet) add(key []byte) { s.hashes = append(s.hashes, maphash.Bytes(s.seed, key)) }

// intersect returns how many hashes of a are in b; it sorts both.
func intersect(a, b []uint64) int {
	slices.Sort(a)
	slices.Sort(b)
	n, j := 0, 0
	for _, h := range a {
		for j < len(b) && b[j] < h {
			j++
		}
		if j < len(b) && b[j] == h {
			n++
		}
	}
	return n
}

// lakeKeywords adds to s the keywords of the keywords partition of cc on
// date; it reports false when there is no such partition.
func lakeKeywords(ctx context.Context, data, cc, date string, s *keySet) (bool, error) {
	err := lake.Scan(ctx, data, kw.DatasetKeywords, cc, date, []string{"keyword"}, lake.ScanOptions{}, func(b *lake.Batch) error {
		for r := range b.Rows {
			s.add(b.Bytes(0, r))
		}
		return nil
	})
	if errors.Is(err, lake.ErrNoPartition) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("cannot read the keywords of %s on %s to count those with a SERP: %w", cc, date, err)
	}
	return true, nil
}
