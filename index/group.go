package index

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"

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
	dst = append(dst, groupVersion)
	dst = binary.AppendUvarint(dst, uint64(max(g.Size, 0)))
	dst = binary.AppendUvarint(dst, uint64(max(g.TotalVolume, 0)))
	m := g.Members
	if len(m) > kw.MaxGroupMembers {
		m = m[:kw.MaxGroupMembers]
	}
	dst = binary.AppendUvarint(dst, uint64(len(m)))
	for i := range m {
		dst = appendString(dst, m[i].Keyword)
		dst = appendOpt(dst, m[i].Volume)
		dst = appendOpt(dst, m[i].CPCMicros)
		dst = binary.AppendUvarint(dst, uint64(uint32(max(m[i].Overlap, 0))))
	}
	return dst
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

// groupBuilder collects the intent groups of one country while its
// keywords stream by in text order. A group keeps at most
// 2*kw.MaxGroupMembers members between trims, so memory is bounded by the
// number of groups, not by the size of the largest.
type groupBuilder struct {
	groups map[string]*kw.IntentGroup
}

func (gb *groupBuilder) add(leader, keyword string, volume, cpc *int64, overlap int32) {
	if gb.groups == nil {
		gb.groups = map[string]*kw.IntentGroup{}
	}
	g := gb.groups[leader]
	if g == nil {
		leader = strings.Clone(leader)
		g = &kw.IntentGroup{Leader: leader}
		gb.groups[leader] = g
	}
	g.Size++
	if volume != nil && *volume > 0 {
		g.TotalVolume += *volume
	}
	if keyword == leader {
		keyword = g.Leader
	} else {
		keyword = strings.Clone(keyword)
	}
	g.Members = append(g.Members, kw.GroupMember{Keyword: keyword, Volume: clonePtr(volume), CPCMicros: clonePtr(cpc), Overlap: overlap})
	if len(g.Members) >= 2*kw.MaxGroupMembers {
		trimGroup(g)
	}
}

func clonePtr(p *int64) *int64 {
	if p == nil {
		return nil
	}
	return kw.Ptr(*p)
}

func trimGroup(g *kw.IntentGroup) {
	slices.SortFunc(g.Members, func(a, b kw.GroupMember) int { return groupMemberCmp(&a, &b) })
	if len(g.Members) > kw.MaxGroupMembers {
		clear(g.Members[kw.MaxGroupMembers:])
		g.Members = g.Members[:kw.MaxGroupMembers]
	}
}

// sorted returns the groups by leader, each with its members ranked and
// trimmed, and forgets them.
func (gb *groupBuilder) sorted() []*kw.IntentGroup {
	out := make([]*kw.IntentGroup, 0, len(gb.groups))
	for _, g := range gb.groups {
		trimGroup(g)
		out = append(out, g)
	}
	gb.groups = nil
	slices.SortFunc(out, func(a, b *kw.IntentGroup) int { return strings.Compare(a.Leader, b.Leader) })
	return out
}
