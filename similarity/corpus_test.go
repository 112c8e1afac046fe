package similarity

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/lake"
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

// An interner sized for n keys takes them without growing, and gives the
// ids one that grew gives: the ids depend on the keys' order only.
func TestURLInternerSized(t *testing.T) {
	const n = 300_000
	sized, grown := newURLInternerFor(n), newURLInterner()
	slots := len(sized.slots)
	for i := range n {
		key := fmt.Appendf(nil, "site%d.example/", i*7919%n)
		a, b := sized.id(sized.hash(key)), grown.id(grown.hash(key))
		if a != b || a != uint32(i) {
			t.Fatalf("key %d: id %d sized, %d grown, want %d", i, a, b, i)
		}
	}
	if len(sized.slots) != slots {
		t.Errorf("the table sized for %d keys grew from %d to %d slots", n, slots, len(sized.slots))
	}
	if len(grown.slots) != slots {
		t.Errorf("the grown table has %d slots, the sized one %d: sized larger than needed", len(grown.slots), slots)
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

// TestReadSERPsShards checks the corpus read from a lake of several row
// groups: the same sets as newCorpus builds from the same SERPs, with the
// same URL ids (numbered by first appearance), whatever the number of
// interning shards and their hash seeds, which change with every run: the
// ids order the hubs and light URLs of equal df, so the logged counters
// depend on them.
func TestReadSERPsShards(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	kws, serps := randomCorpus(rng, 40_000, 60_000)
	idx := make([]int, len(kws))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return strings.Compare(kws[a].Text, kws[b].Text) })
	sk, ss := make([]Keyword, len(kws)), make([][]string, len(kws))
	texts := make([]string, len(kws))
	for i, j := range idx {
		sk[i], ss[i], texts[i] = kws[j], serps[j], kws[j].Text
	}
	const date = "2026-11-21"
	data := t.TempDir()
	writeLake(t, data, "us", date, sk, map[string][][]string{date: ss}, map[string][]string{date: texts})
	if n, err := lake.Rows(data, kw.DatasetSERPs, "us", date); err != nil || n < 2*128*1024 {
		t.Fatalf("%d SERP rows (%v); the test needs several row groups", n, err)
	}
	want, err := newCorpus(sk, topSERPs(ss))
	if err != nil {
		t.Fatal(err)
	}
	day, _ := time.Parse(kw.DateLayout, date)
	for _, workers := range []int{1, 2, 3, 8, 8} {
		got, withSERP, err := readSERPs(context.Background(), RunOptions{Data: data, MaxAgeDays: 30, Options: Options{Workers: workers}}, "us", day, sk, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		if got.nURL != want.nURL || !slices.Equal(got.off, want.off) || !slices.Equal(got.urls, want.urls) || withSERP == 0 {
			t.Fatalf("%d workers: %d URLs, %d rows, %d with a SERP; want %d URLs, %d rows and the same sets and ids", workers, got.nURL, len(got.urls), withSERP, want.nURL, len(want.urls))
		}
	}
}
