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

// groupBuilder collects the intent groups of one country while its
// keywords stream by in text order. A group keeps at most
// 2*kw.MaxGroupMembers members between trims, so memory is bounded by the
// number of groups, not by the size of the largest. It holds every
// keyword of the country until the country ends (at 10M keywords, the
// bulk of a build's heap), so a member is one flat value with no pointer
// but its keyword's text: kw.GroupMember's two number pointers cost two
// allocations a keyword and gave the collector three pointers to follow
// for each, on every cycle.
type groupBuilder struct {
	groups map[string]*groupAcc
	// led holds the groups whose leader has come by as a keyword of its
	// own, in that order: key order, since a leader leads its own group
	// and the keywords arrive sorted. So the groups need no sort at the
	// end, which at ten million keywords held up the country's last
	// tables for seconds.
	led []*groupAcc
}

// groupAcc is a group being collected.
type groupAcc struct {
	leader      string
	size, total int64
	members     []member
	led         bool // in groupBuilder.led
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

func (gb *groupBuilder) add(leader string, m member) {
	if gb.groups == nil {
		gb.groups = map[string]*groupAcc{}
	}
	g := gb.groups[leader]
	if g == nil {
		leader = strings.Clone(leader)
		g = &groupAcc{leader: leader}
		gb.groups[leader] = g
	}
	g.size++
	if m.has&1 != 0 && m.volume > 0 {
		g.total += m.volume
	}
	if m.keyword == leader {
		m.keyword = g.leader
		if !g.led {
			g.led = true
			gb.led = append(gb.led, g)
		}
	}
	// The keyword is kept as it is: the keywords stream's texts are
	// slices of one string per row group, never changed, so a copy would
	// only cost an allocation a keyword.
	g.members = append(g.members, m)
	if len(g.members) >= 2*kw.MaxGroupMembers {
		g.trim()
	}
}

// memberCmp is groupMemberCmp of two members.
func memberCmp(a, b *member) int {
	if a.volume != b.volume { // a missing volume is 0, and ranks as 0
		if a.volume > b.volume {
			return -1
		}
		return 1
	}
	return strings.Compare(a.keyword, b.keyword)
}

func (g *groupAcc) trim() {
	slices.SortFunc(g.members, func(a, b member) int { return memberCmp(&a, &b) })
	if len(g.members) > kw.MaxGroupMembers {
		clear(g.members[kw.MaxGroupMembers:])
		g.members = g.members[:kw.MaxGroupMembers]
	}
}

// appendValue appends the group's value as EncodeGroup encodes it, its
// members ranked and trimmed, straight from the flat members: filling a
// kw.IntentGroup first, with a number pointer a member, was a third of
// the cost of writing the groups.
func (g *groupAcc) appendValue(dst []byte) []byte {
	g.trim()
	m := g.members[:min(len(g.members), kw.MaxGroupMembers)]
	dst = appendGroupHead(dst, g.size, g.total, len(m))
	for i := range m {
		var volume, cpc *int64
		if m[i].has&1 != 0 {
			volume = &m[i].volume
		}
		if m[i].has&2 != 0 {
			cpc = &m[i].cpc
		}
		dst = appendGroupMember(dst, m[i].keyword, volume, cpc, m[i].overlap)
	}
	return dst
}

// sorted returns the groups by leader and forgets them. The keywords
// must have been added in key order.
func (gb *groupBuilder) sorted() []*groupAcc {
	// Groups whose leader is not a keyword of the country (an intents
	// partition that names one) are few; they are sorted and merged in.
	var rest []*groupAcc
	if len(gb.led) < len(gb.groups) {
		for _, g := range gb.groups {
			if !g.led {
				rest = append(rest, g)
			}
		}
		slices.SortFunc(rest, func(a, b *groupAcc) int { return strings.Compare(a.leader, b.leader) })
	}
	led := gb.led
	*gb = groupBuilder{}
	if len(rest) == 0 {
		return led
	}
	out := make([]*groupAcc, 0, len(led)+len(rest))
	for len(led) > 0 && len(rest) > 0 {
		if led[0].leader < rest[0].leader {
			out, led = append(out, led[0]), led[1:]
		} else {
			out, rest = append(out, rest[0]), rest[1:]
		}
	}
	return append(append(out, led...), rest...)
}

// groupWriters is the number of goroutines that encode and write the
// groups of a country with at least minGroupsSplit of them, each a run
// of leaders into tables of its own: the groups are written after the
// country's last keyword, when the merge and its readers are done
// (minGroupsSplit is a variable, for tests).
const groupWriters = 2

var minGroupsSplit = 64 << 10

// write writes the country's groups into tables of set, in key order (by
// leader), and returns their number; the builder is empty after it.
func (gb *groupBuilder) write(ctx context.Context, set *tableSet, cc string) (int, error) {
	groups := gb.sorted()
	parts := 1
	if len(groups) >= minGroupsSplit {
		parts = groupWriters
	}
	errs := make([]error, parts)
	var wg sync.WaitGroup
	for p := range parts {
		part := groups[p*len(groups)/parts : (p+1)*len(groups)/parts]
		wg.Go(func() {
			_, errs[p] = writeTables(ctx, set, func(tw *tableWriter) (int, error) { return writeGroups(ctx, tw, cc, part) })
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	return len(groups), nil
}

// writeGroups appends groups, sorted by leader, to tw.
func writeGroups(ctx context.Context, tw *tableWriter, cc string, groups []*groupAcc) (int, error) {
	var key, val []byte
	for i, g := range groups {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
		}
		var ok bool
		if key, ok = appendGroupKey(key[:0], cc, g.leader); !ok {
			return 0, fmt.Errorf("country code %q is not two letters", cc)
		}
		val = g.appendValue(val[:0])
		if err := tw.add(key, val); err != nil {
			return 0, err
		}
	}
	return len(groups), nil
}
