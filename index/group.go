package index

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/kwdata/kwdata/kw"
)

// Intent groups live beside the keywords of their country, under
// country, groupSep, leader: 0x01 sorts after every keyword key of the
// country (0x00) and before the next country, so the build writes a
// country's groups right after its keywords and keys stay in order.
const groupSep = 0x01

// groupVersion is the first byte of a group value.
const groupVersion = 1

// appendGroupKey appends the key of the group a leader leads in a country.
func appendGroupKey(dst []byte, country, leader string) ([]byte, bool) {
	dst, ok := appendKey(dst, country, leader)
	if ok {
		dst[len(dst)-len(leader)-1] = groupSep
	}
	return dst, ok
}

// EncodeGroup appends the value of an intent group (its leader and
// country are the key):
//
//	version   byte 1
//	size      uvarint
//	total     uvarint (summed volume)
//	members   uvarint n (≤ kw.MaxGroupMembers); n times: keyword string,
//	          volume opt, cpc opt, uvarint overlap
//
// with opt as in EncodeEntry. Members beyond kw.MaxGroupMembers are
// dropped.
func EncodeGroup(dst []byte, g *kw.IntentGroup) []byte {
	m := g.Members[:min(len(g.Members), kw.MaxGroupMembers)]
	dst = appendGroupHead(dst, g.Size, g.TotalVolume, len(m))
	for i := range m {
		dst = appendGroupMember(dst, m[i].Keyword, m[i].Volume, m[i].CPCMicros, m[i].Overlap)
	}
	return dst
}

// appendGroupHead appends what a group value starts with: the version,
// the group's size and total volume, and the number of members that
// follow, each written by appendGroupMember.
func appendGroupHead(dst []byte, size, total int64, members int) []byte {
	dst = append(dst, groupVersion)
	dst = binary.AppendUvarint(dst, uint64(max(size, 0)))
	dst = binary.AppendUvarint(dst, uint64(max(total, 0)))
	return binary.AppendUvarint(dst, uint64(members))
}

func appendGroupMember(dst []byte, keyword string, volume, cpc *int64, overlap int32) []byte {
	dst = appendString(dst, keyword)
	dst = appendOpt(dst, volume)
	dst = appendOpt(dst, cpc)
	return binary.AppendUvarint(dst, uint64(uint32(max(overlap, 0))))
}

// DecodeGroup decodes a value EncodeGroup wrote; Leader, Country and
// DataDate are left empty.
func DecodeGroup(b []byte) (kw.IntentGroup, error) {
	var g kw.IntentGroup
	if len(b) == 0 {
		return g, fmt.Errorf("%w: empty group", errCorrupt)
	}
	if b[0] != groupVersion {
		return g, fmt.Errorf("%w: unknown group version %d (this build reads %d)", errCorrupt, b[0], groupVersion)
	}
	d := decoder{s: string(b), off: 1}
	size, total := d.uvarint(), d.uvarint()
	if size > math.MaxInt64 || total > math.MaxInt64 {
		d.fail("group total out of range")
	}
	g.Size, g.TotalVolume = int64(size), int64(total)
	if n := d.count(kw.MaxGroupMembers, 4); n > 0 {
		g.Members = make([]kw.GroupMember, n)
		nums := make([]int64, 0, 2*n)
		d.nums = nums
		for i := range g.Members {
			m := &g.Members[i]
			m.Keyword = d.str()
			m.Volume = d.opt()
			m.CPCMicros = d.opt()
			o := d.uvarint()
			if o > math.MaxInt32 {
				d.fail("overlap out of range")
			}
			m.Overlap = int32(o)
		}
	}
	if d.err == nil && d.off != len(d.s) {
		d.fail("trailing bytes")
	}
	if d.err != nil {
		return kw.IntentGroup{}, d.err
	}
	return g, nil
}

// groupMemberLess orders the members of a group: volume descending (none
// ranks as 0), then text ascending.
func groupMemberCmp(a, b *kw.GroupMember) int {
	if va, vb := kw.Deref(a.Volume), kw.Deref(b.Volume); va != vb {
		if va > vb {
			return -1
		}
		return 1
	}
	return strings.Compare(a.Keyword, b.Keyword)
}

// member is a kw.GroupMember without pointers: has says which of volume
// and cpc are given (bit 0 volume, bit 1 cpc).
type member struct {
	keyword     string
	volume, cpc int64
	overlap     int32
	has         uint8
}

// newMember is the member of a keyword with its numbers, which it copies.
func newMember(keyword string, volume, cpc *int64, overlap int32) member {
	m := member{keyword: keyword, overlap: overlap}
	if volume != nil {
		m.volume, m.has = *volume, m.has|1
	}
	if cpc != nil {
		m.cpc, m.has = *cpc, m.has|2
	}
	return m
}

// The intent groups of a country are made from what the explorer's
// builder collects of every keyword anyway (its text, its leader, its
// numbers, by id in text order), once the country's keywords end: a group
// is named by its leader's text, its members are the keywords that name
// it, and it is written in key order. Collecting the groups apart, in a
// map of growing member lists beside the explorer's own copy of the same
// keywords, had cost a tenth of a build's CPU and, at ten million
// keywords, the bulk of its heap.

// intentGroup is a group of a country: its leader's text and its
// members, ids in the builder's members list [first, end).
type intentGroup struct {
	leader     string
	first, end uint32
}

// intentGroups returns the country's groups in key order (by leader) and
// their members, each group's in id order: a keyword that leads its own
// group names it by its text, any other by its leader's, whether or not
// that leader is a keyword of the country.
func (eb *exploreBuilder) intentGroups() ([]intentGroup, []uint32) {
	n, nl := len(eb.refs), eb.leaders.len()
	found := eb.leaderIDs()
	// A group's number: a keyword's id for the group its text names, n
	// plus the place in leaders of a leader that is no keyword.
	gid := func(id int) int {
		l := eb.leader[id]
		if l == 0 {
			return id
		}
		if f := found[l-1]; f != math.MaxUint32 {
			return int(f)
		}
		return n + int(l) - 1
	}
	start := make([]uint32, n+nl+1)
	for id := range n {
		start[gid(id)+1]++
	}
	for g := range n + nl {
		start[g+1] += start[g]
	}
	members := make([]uint32, n)
	next := slices.Clone(start[:n+nl])
	for id := range n {
		g := gid(id)
		members[next[g]] = uint32(id)
		next[g]++
	}
	var outside []int // leaders that are no keyword, by text
	for l := range nl {
		if start[n+l+1] > start[n+l] {
			outside = append(outside, l)
		}
	}
	slices.SortFunc(outside, func(a, b int) int { return strings.Compare(eb.leaders.name(a), eb.leaders.name(b)) })
	groups := make([]intentGroup, 0, n/2+len(outside))
	o := 0
	for id := range n {
		if start[id+1] == start[id] {
			continue
		}
		for ; o < len(outside) && eb.leaders.name(outside[o]) < eb.text(uint32(id)); o++ {
			g := n + outside[o]
			groups = append(groups, intentGroup{eb.leaders.name(outside[o]), start[g], start[g+1]})
		}
		groups = append(groups, intentGroup{eb.text(uint32(id)), start[id], start[id+1]})
	}
	for ; o < len(outside); o++ {
		g := n + outside[o]
		groups = append(groups, intentGroup{eb.leaders.name(outside[o]), start[g], start[g+1]})
	}
	return groups, members
}

// appendGroupValue appends group g's value as EncodeGroup encodes it, its
// members ranked (volume descending, a missing one as 0, then text: ids
// are in text order) and trimmed; ids is scratch that g's members are
// ranked in, and is returned for reuse.
func (eb *exploreBuilder) appendGroupValue(dst []byte, g intentGroup, members, ids []uint32) ([]byte, []uint32) {
	ids = append(ids[:0], members[g.first:g.end]...)
	var total int64
	for _, id := range ids {
		if eb.has[id]&hasVolume != 0 && eb.vol[id] > 0 {
			total += eb.vol[id]
		}
	}
	if len(ids) > 1 {
		slices.SortFunc(ids, func(a, b uint32) int {
			if va, vb := eb.vol[a], eb.vol[b]; va != vb {
				if va > vb {
					return -1
				}
				return 1
			}
			return int(a) - int(b)
		})
	}
	m := ids[:min(len(ids), kw.MaxGroupMembers)]
	dst = appendGroupHead(dst, int64(len(ids)), total, len(m))
	for _, id := range m {
		var volume, cpc *int64
		if eb.has[id]&hasVolume != 0 {
			volume = &eb.vol[id]
		}
		if eb.has[id]&hasCPC != 0 {
			cpc = &eb.cpc[id]
		}
		dst = appendGroupMember(dst, eb.text(id), volume, cpc, eb.overlap[id])
	}
	return dst, ids
}

// groupWriters is the number of goroutines that encode and write the
// groups of a country with at least minGroupsSplit of them, each a run
// of leaders into tables of its own: the groups are written after the
// country's last keyword, when the merge and its readers are done
// (minGroupsSplit is a variable, for tests).
const groupWriters = 2

var minGroupsSplit = 64 << 10

// writeGroups writes the country's intent groups into tables of set, in
// key order (by leader), and returns their number. It only reads the
// builder, so it may run beside write.
func (eb *exploreBuilder) writeGroups(ctx context.Context, set *tableSet, cc string) (int, error) {
	groups, members := eb.intentGroups()
	parts := 1
	if len(groups) >= minGroupsSplit {
		parts = groupWriters
	}
	errs := make([]error, parts)
	var wg sync.WaitGroup
	for p := range parts {
		part := groups[p*len(groups)/parts : (p+1)*len(groups)/parts]
		wg.Go(func() {
			_, errs[p] = writeTables(ctx, set, func(tw *tableWriter) (int, error) {
				var key, val []byte
				var ids []uint32
				for i, g := range part {
					if i%4096 == 0 {
						if err := ctx.Err(); err != nil {
							return 0, err
						}
					}
					var ok bool
					if key, ok = appendGroupKey(key[:0], cc, g.leader); !ok {
						return 0, fmt.Errorf("country code %q is not two letters", cc)
					}
					val, ids = eb.appendGroupValue(val[:0], g, members, ids)
					if err := tw.add(key, val); err != nil {
						return 0, err
					}
				}
				return len(part), nil
			})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	return len(groups), nil
}
