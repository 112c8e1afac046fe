package index

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/kwdata/kwdata/kw"
)

func TestEncodeDecodeGroup(t *testing.T) {
	tests := []struct {
		name    string
		in, out kw.IntentGroup
	}{
		{"empty", kw.IntentGroup{}, kw.IntentGroup{}},
		{"members", kw.IntentGroup{Size: 3, TotalVolume: 1300, Members: []kw.GroupMember{
			{Keyword: "a", Volume: i64(1000), CPCMicros: i64(1_230_000), Overlap: 20},
			{Keyword: "b", Volume: i64(300), Overlap: 9},
			{Keyword: "c", Overlap: 8},
		}}, kw.IntentGroup{Size: 3, TotalVolume: 1300, Members: []kw.GroupMember{
			{Keyword: "a", Volume: i64(1000), CPCMicros: i64(1_230_000), Overlap: 20},
			{Keyword: "b", Volume: i64(300), Overlap: 9},
			{Keyword: "c", Overlap: 8},
		}}},
		{"key fields are not stored", kw.IntentGroup{Leader: "x", Country: "US", DataDate: "2026-11-21", Size: 1}, kw.IntentGroup{Size: 1}},
		{"members beyond 100 dropped", kw.IntentGroup{Size: 150, Members: make([]kw.GroupMember, 150)}, kw.IntentGroup{Size: 150, Members: make([]kw.GroupMember, 100)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeGroup(EncodeGroup(nil, &tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.out) {
				t.Errorf("round trip\n got %+v\nwant %+v", got, tt.out)
			}
		})
	}
}

func TestDecodeGroupRefuses(t *testing.T) {
	valid := EncodeGroup(nil, &kw.IntentGroup{Size: 2, TotalVolume: 5, Members: []kw.GroupMember{{Keyword: "a", Volume: i64(5), Overlap: 3}}})
	for _, tt := range []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "empty"},
		{"version", append([]byte{9}, valid[1:]...), "unknown group version 9"},
		{"truncated", valid[:len(valid)-1], "truncated"},
		{"trailing", append(append([]byte{}, valid...), 0), "trailing"},
		{"101 members", append([]byte{1, 0, 0, 101}, make([]byte, 500)...), "count out of range"},
		{"members beyond the bytes", []byte{1, 0, 0, 5, 0}, "count out of range"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := DecodeGroup(tt.b); err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, errCorrupt) {
				t.Fatalf("DecodeGroup error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func FuzzDecodeGroup(f *testing.F) {
	f.Add(EncodeGroup(nil, &kw.IntentGroup{Size: 2, TotalVolume: 5, Members: []kw.GroupMember{{Keyword: "a", Volume: i64(5), Overlap: 3}, {Keyword: "b"}}}))
	f.Add([]byte{1, 0, 0, 0})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		g, err := DecodeGroup(b)
		if err != nil {
			return
		}
		if len(g.Members) > kw.MaxGroupMembers {
			t.Fatalf("decoded %d members", len(g.Members))
		}
		enc := EncodeGroup(nil, &g)
		g2, err := DecodeGroup(enc)
		if err != nil || !reflect.DeepEqual(g, g2) {
			t.Fatalf("round trip changed the group (%v)\n%+v\n%+v", err, g, g2)
		}
	})
}

// TestBuildIntentGroups builds a lake whose intents make one big group, a
// small one and a keyword without an intent row, and reads the groups back:
// sizes and totals over every member, the first 100 members by volume then
// text, each with its overlap with the leader.
func TestBuildIntentGroups(t *testing.T) {
	data := t.TempDir()
	var recs []kw.KeywordRecord
	var intents []kw.IntentRow
	var total int64
	for i := range 250 {
		k := fmt.Sprintf("big %03d", i)
		rec := kw.KeywordRecord{Keyword: k, CPCMicros: i64(int64(i) * 10_000)}
		if i%50 != 7 { // a few without a volume: they add nothing and rank as 0
			rec.Volume = i64(int64(1000 - i%120))
			total += *rec.Volume
		}
		recs = append(recs, rec)
		intents = append(intents, kw.IntentRow{Keyword: k, Intent: "big 000", Overlap: int32(8 + i%13)})
	}
	recs = append(recs,
		kw.KeywordRecord{Keyword: "small a", Volume: i64(10)},
		kw.KeywordRecord{Keyword: "small b", Volume: i64(10)},
		kw.KeywordRecord{Keyword: "stray", Volume: i64(3)})
	intents = append(intents,
		kw.IntentRow{Keyword: "small a", Intent: "small b", Overlap: 9},
		kw.IntentRow{Keyword: "small b", Intent: "small b", Overlap: 17})
	writeLake(t, data, "2026-11-21", map[string]lakeCountry{"us": {keywords: recs, intents: intents, related: []kw.RelatedRow{}}})
	buildIndex(t, data, "2026-11-21")
	s := openStore(t, data)
	ctx := context.Background()

	g, err := s.IntentGroup(ctx, "us", "big 000")
	if err != nil {
		t.Fatal(err)
	}
	if g.Leader != "big 000" || g.Country != "US" || g.DataDate != "2026-11-21" || g.Size != 250 || g.TotalVolume != total {
		t.Errorf("group = %s %s %s size %d total %d, want size 250 total %d", g.Leader, g.Country, g.DataDate, g.Size, g.TotalVolume, total)
	}
	if len(g.Members) != kw.MaxGroupMembers {
		t.Fatalf("%d members, want %d", len(g.Members), kw.MaxGroupMembers)
	}
	// The brute-force order: every member sorted, first 100.
	var all []kw.GroupMember
	for i, r := range recs[:250] {
		all = append(all, kw.GroupMember{Keyword: r.Keyword, Volume: r.Volume, CPCMicros: r.CPCMicros, Overlap: intents[i].Overlap})
	}
	for i := 1; i < len(all); i++ {
		for j := i; j > 0 && groupMemberCmp(&all[j], &all[j-1]) < 0; j-- {
			all[j], all[j-1] = all[j-1], all[j]
		}
	}
	if !reflect.DeepEqual(g.Members, all[:kw.MaxGroupMembers]) {
		t.Errorf("members differ from the brute-force ranking:\n got %+v\nwant %+v", g.Members[:5], all[:5])
	}

	g, err = s.IntentGroup(ctx, "US", "small b")
	if err != nil {
		t.Fatal(err)
	}
	want := []kw.GroupMember{{Keyword: "small a", Volume: i64(10), Overlap: 9}, {Keyword: "small b", Volume: i64(10), Overlap: 17}}
	if g.Size != 2 || g.TotalVolume != 20 || !reflect.DeepEqual(g.Members, want) {
		t.Errorf("small group = %+v", g)
	}
	// A keyword without an intent row leads its own group of one.
	if g, err = s.IntentGroup(ctx, "us", "stray"); err != nil || g.Size != 1 || len(g.Members) != 1 || g.Members[0].Keyword != "stray" {
		t.Errorf("stray group = %+v, %v", g, err)
	}
	for _, q := range [][2]string{{"us", "small a"}, {"us", "nothing"}, {"gb", "big 000"}, {"u1", "big 000"}} {
		if _, err := s.IntentGroup(ctx, q[0], q[1]); !errors.Is(err, kw.ErrNotFound) {
			t.Errorf("IntentGroup(%s, %q) error %v, want not found", q[0], q[1], err)
		}
	}
	// Group keys never answer a keyword lookup, and keywords still do.
	if e, err := s.Lookup(ctx, "us", "small a"); err != nil || e.Intent != "small b" {
		t.Errorf("Lookup(small a) = %+v, %v", e, err)
	}
	if info, _ := s.Info(); info.Countries["US"] != 253 {
		t.Errorf("index counts %d keywords, want 253", info.Countries["US"])
	}
}

func TestIntentGroupsSorted(t *testing.T) {
	tests := []struct {
		name string
		adds [][2]string // keyword, leader, in key order
		want []string    // leaders, with the size of each group after a colon
	}{
		{"none", nil, nil},
		{"own groups", [][2]string{{"a", "a"}, {"b", "b"}}, []string{"a:1", "b:1"}},
		{"member before its leader", [][2]string{{"a", "c"}, {"b", "b"}, {"c", "c"}}, []string{"b:1", "c:2"}},
		{"leaders that are not keywords", [][2]string{{"b", "a"}, {"c", "c"}, {"d", "zz"}, {"e", "c"}, {"f", "d0"}},
			[]string{"a:1", "c:2", "d0:1", "zz:1"}},
		{"only leaders that are not keywords", [][2]string{{"b", "y"}, {"c", "x"}}, []string{"x:1", "y:1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eb := newExploreBuilder("us", 0)
			for _, a := range tt.adds {
				eb.add(eb.leaders.of(a[1], a[0]), member{keyword: a[0]}, alone(a[0]), 0, false)
			}
			var got []string
			groups, members := eb.intentGroups()
			for _, g := range groups {
				var names []string
				for _, id := range members[g.first:g.end] {
					names = append(names, eb.text(id))
				}
				got = append(got, fmt.Sprintf("%s:%d", g.leader, g.end-g.first))
				// Every member names the group.
				for _, name := range names {
					for _, a := range tt.adds {
						if a[0] == name && a[1] != g.leader {
							t.Errorf("group %s holds %s, of group %s", g.leader, name, a[1])
						}
					}
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("intentGroups() = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestIntentLeaders names the leaders of keywords, through several
// growths of the table, against a map: one number a text, in order of
// first appearance, 0 for a keyword that leads itself, and each number's
// text given back whole.
func TestIntentLeaders(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	ls := newIntentLeaders(0)
	want := map[string]uint32{}
	var order []string
	for i := range 50000 {
		keyword := fmt.Sprintf("k%d", i)
		var intent string
		switch rng.IntN(4) {
		case 0:
			intent = keyword
		case 1:
			intent = ""
		default:
			// Texts of every length up to 300 bytes, shared prefixes and
			// all, so that records and lengths of several bytes meet.
			intent = strings.Repeat("ab", rng.IntN(150)) + fmt.Sprint(rng.IntN(20000))
		}
		if i%10000 == 5000 {
			// Longer than a block of records.
			intent = strings.Repeat("long", leaderBlock/3) + fmt.Sprint(i)
		}
		got := ls.of(intent, keyword)
		if intent == keyword || intent == "" {
			if got != 0 {
				t.Fatalf("of(%q, %q) = %d, want 0", intent, keyword, got)
			}
			continue
		}
		w, ok := want[intent]
		if !ok {
			order = append(order, intent)
			w = uint32(len(order))
			want[intent] = w
		}
		if got != w {
			t.Fatalf("of(%q) = %d, want %d", intent, got, w)
		}
	}
	if ls.len() != len(order) || len(order) < 5000 {
		t.Fatalf("%d leaders, want %d (at least 5000)", ls.len(), len(order))
	}
	for l, name := range order {
		if got := ls.name(l); got != name {
			t.Fatalf("name(%d) = %q, want %q", l, got, name)
		}
	}
	if len(ls.blocks) < 8 {
		t.Errorf("the records filled %d blocks; the test wants more", len(ls.blocks))
	}
	if 3*len(ls.slots) < 4*ls.len() {
		t.Errorf("%d slots for %d leaders: the table is more than three quarters full", len(ls.slots), ls.len())
	}
}

// TestFindLeaders holds each leader's id to a search of the keywords, for
// leaders that share their first 16 bytes or more, differ past them, hold
// NUL bytes or are a prefix of another, keywords or not.
func TestFindLeaders(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	stems := []string{"", "a", "best running sh", "best running shoes", "best running shoes for", "x\x00", "x\x00\x00y"}
	seen := map[string]bool{}
	var keys, names []string
	for range 2000 {
		k := stems[rng.IntN(len(stems))] + strings.Repeat("\x00", rng.IntN(2)) + string(rune('a'+rng.IntN(10)))
		if rng.IntN(3) == 0 {
			k += " " + stems[rng.IntN(len(stems))]
		}
		if seen[k] {
			continue
		}
		seen[k] = true
		if rng.IntN(2) == 0 {
			keys = append(keys, k)
		} else {
			names = append(names, k)
		}
	}
	slices.Sort(keys)
	eb := newExploreBuilder("us", 0)
	// Each keyword names a leader at random, a keyword or not.
	for _, k := range keys {
		all := len(keys) + len(names)
		leader := k // some lead their own group
		if l := rng.IntN(all + all/4); l < len(keys) {
			leader = keys[l]
		} else if l < all {
			leader = names[l-len(keys)]
		}
		eb.add(eb.leaders.of(leader, k), member{keyword: k}, alone(k), 0, false)
	}
	found := eb.findLeaders()
	if len(found) != eb.leaders.len() || len(found) < 100 {
		t.Fatalf("found %d of %d leaders; the test wants at least 100", len(found), eb.leaders.len())
	}
	for i := range eb.leaders.len() {
		name := eb.leaders.name(i)
		want := uint32(math.MaxUint32)
		if j, ok := slices.BinarySearch(keys, name); ok {
			want = uint32(j)
		}
		if found[i] != want {
			t.Errorf("leader %q: found %d, want %d", name, found[i], want)
		}
	}
}

// TestBuildSplitsGroupWriters builds one lake with its groups written by
// one goroutine and by several: the same keys and values either way.
func TestBuildSplitsGroupWriters(t *testing.T) {
	defer func(was int) { minGroupsSplit = was }(minGroupsSplit)
	var digests [2][]string
	for i, split := range []int{1 << 30, 1} {
		minGroupsSplit = split
		data := t.TempDir()
		genLake(t, data, "2026-11-21", "us", 3000)
		if _, err := Build(context.Background(), BuildOptions{Data: data, Date: "2026-11-21", Logger: testLogger(t), TableBytes: 16 << 10}); err != nil {
			t.Fatal(err)
		}
		digests[i] = buildDigests(t, data)
	}
	if !reflect.DeepEqual(digests[0], digests[1]) {
		t.Errorf("groups written by one goroutine:\n%v\nby %d:\n%v", digests[0], groupWriters, digests[1])
	}
	if len(digests[0]) != 5 {
		t.Errorf("digests of %d tables, want keywords, groups, prefixes, words and explore: %v", len(digests[0]), digests[0])
	}
}

// TestGroupAppendValueMatchesEncodeGroup holds the build's encoding of a
// group from its flat members to EncodeGroup of the same group.
func TestGroupAppendValueMatchesEncodeGroup(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{0, 1, 7, kw.MaxGroupMembers, 2*kw.MaxGroupMembers - 1, 3 * kw.MaxGroupMembers} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			// Keywords are unique in a country and arrive in text order;
			// volumes repeat.
			texts := map[string]bool{"leader": true}
			for len(texts) < n {
				texts[fmt.Sprintf("k%04d", r.IntN(10*n+1))] = true
			}
			eb := newExploreBuilder("us", 0)
			var all []kw.GroupMember // the reference
			for _, text := range slices.Sorted(maps.Keys(texts))[:n] {
				m := member{keyword: text, overlap: int32(r.IntN(30) - 5)}
				gm := kw.GroupMember{Keyword: m.keyword, Overlap: m.overlap}
				if r.IntN(4) > 0 {
					m.volume, m.has = int64(r.IntN(2000)-100), m.has|1
					gm.Volume = i64(m.volume)
				}
				if r.IntN(4) > 0 {
					m.cpc, m.has = int64(r.IntN(5_000_000)), m.has|2
					gm.CPCMicros = i64(m.cpc)
				}
				eb.add(eb.leaders.of("leader", m.keyword), m, alone(m.keyword), 0, false)
				all = append(all, gm)
			}
			groups, members := eb.intentGroups()
			if n > 0 && len(groups) != 1 {
				t.Fatalf("%d groups, want 1", len(groups))
			}
			var total int64
			for _, m := range all {
				if v := kw.Deref(m.Volume); v > 0 {
					total += v
				}
			}
			// The members ranked by groupMemberCmp and trimmed, as
			// kw.GroupMembers with pointers.
			slices.SortStableFunc(all, func(a, b kw.GroupMember) int { return groupMemberCmp(&a, &b) })
			for _, g := range groups {
				want := EncodeGroup(nil, &kw.IntentGroup{Size: int64(n), TotalVolume: total, Members: all})
				if got, _ := eb.appendGroupValue(nil, g, members, nil); !bytes.Equal(got, want) {
					t.Fatalf("appendGroupValue = %x\nEncodeGroup = %x", got, want)
				}
			}
		})
	}
}
