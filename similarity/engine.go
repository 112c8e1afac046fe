package similarity

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kwdata/kwdata/internal/prefetch"
)

// The exact fast path of the package doc's rules, in short.
//
// Keywords are renumbered by rank r: volume descending, then text ascending.
// The last two keys of the related ranking (volume desc, text asc) are then
// simply "r ascending", and a keyword's intent followers all have larger r.
//
// URLs are split by document frequency df (how many keywords' SERPs hold
// them). The at most maxHubs most frequent URLs with df ≥ hubMinDF are hubs:
// each keyword carries a bit mask of its hubs. Every other URL is light and
// has a posting list of the keywords holding it, sorted by r.
//
// For keyword k, every candidate c (overlap ≥ 1) falls in exactly one class:
//
//   - L: c shares at least one light URL with k. Scanning k's light posting
//     lists counts light(k,c) exactly in a per-keyword hash table, and
//     overlap(k,c) = light(k,c) + popcount(mask(k) & mask(c)), exactly,
//     because S(k)∩S(c) splits into its light and its hub part. Every L
//     candidate is seen, so its ranking key and same_intent are exact.
//   - H: c shares only hubs. Then overlap(k,c) = popcount(mask(k) & mask(c)).
//     Keywords with a non-empty mask are grouped by identical mask; each
//     group's members are sorted by r (so by volume descending). Every H
//     candidate lies in a group whose mask meets mask(k), found through the
//     per-hub group lists, and all members of a group share one overlap o
//     with k ("level" o). L candidates met in groups are skipped (count
//     > 0): they were already ranked with their full overlap.
//
// Top K: after the L pass the running top-K has a worst entry w (if full).
// H levels are visited from o = popcount(mask(k)) down; a level with
// o < w.overlap cannot contribute, nor can any lower one, so the search ends.
// Within a level every candidate has the same overlap, so the ranking there
// is closeness, then r. Each group is walked outward from k's volume: upward
// (higher volumes, closeness non-decreasing) and downward (lower or equal
// volumes, closeness non-decreasing); a heap merges all walk fronts by
// closeness, so candidates leave the heap in non-decreasing closeness. When
// the top-K is full with w.overlap == o and the heap's minimum closeness is
// strictly greater than w's, every candidate left on the level has
// closeness > w's and ranks below w: the level is done. Both fronts meet
// each run of equal volume in r order (the upward one walks a run forward,
// then jumps to the start of the run above), so along a front every member
// ranks below the one before it, and a front ends at its first member
// ranked below w, equal closeness included. Candidates are only ever
// inserted with the exact ranking comparison, so the kept K are exactly the
// first K of the full ranking: no candidate outside the top-K was skipped
// unless a proof above shows it ranks below the K-th.
//
// Intent: clustering needs, for each leader, every same-intent follower,
// which has larger r. L candidates are all checked. An H candidate is
// same-intent only if o ≥ MinOverlap, so levels o ≥ MinOverlap are scanned
// in full over the volume window v_c+1 ≥ (v_k+1)/MaxRatio, starting after k
// in each group (followers have larger r, so smaller or equal volume). Pairs
// (k, c) with c > k are collected and the leader pass then runs in r order:
// a keyword still unassigned at its turn leads, and assigns its unassigned
// followers, exactly as the definition reads.
//
// Cost: the L pass costs Σ over light URLs of df², which the hub cut keeps
// near-linear (the heaviest light URL has df < hubMinDF, hubMinDF ≈ √N/2),
// plus one read of a four-byte kmeta per distinct L candidate; its mask and
// volume are read only when bounds say it might rank or be same-intent. The H search runs only for
// keywords whose top-K is short of overlap above their hub count, and visits
// the groups meeting its mask plus the few members walked near its volume.

// engine holds the corpus in rank space and everything shared by workers.
type engine struct {
	opt  Options
	n    int
	kws  []Keyword // by input index
	rank []uint32  // input index -> rank
	idx  []uint32  // rank -> input index
	vol  []uint64  // by rank: smoothed volume
	// runs finds volumes by rank in cache where they take few values
	// (volOf); options noVolRuns leaves it empty.
	runs volRuns
	// Light URLs per keyword (rank space) and their posting lists.
	lOff, lURL []uint32
	pOff, pKw  []uint32
	// Hub masks: w words per keyword, and each keyword's number of hubs
	// (capped at 255), a compact array that spares most mask reads.
	w    int
	mask []uint64
	meta []kmeta
	// Groups of keywords with identical non-empty masks.
	gMask     []uint64 // w words per group
	gOff, gKw []uint32 // members by rank
	// gVol[j] is the smoothed volume of member gKw[j]: the walk of a
	// level searches and steps through a group's volumes, and reading
	// them through e.vol was a random read a member.
	gVol       []uint64
	hOff, hGrp []uint32 // groups holding each hub
	// hGMask holds the mask of each group of hGrp (w words an entry), so
	// that the scan of a hub's groups for levels 2 and up reads them in
	// sequence: read through gMask, each was a cache miss.
	hGMask []uint64
	// hGFold holds the folded mask (kmeta.fold) of each group of hGrp:
	// the scan skips, on two bytes, a group whose fold does not meet the
	// fold of k's other hubs.
	hGFold []uint16
	// The keywords holding each hub, by rank, with their volumes and
	// other hubs beside them: the hub-only search walks them for
	// candidates that share one hub with k (hubLists). Reading each one's
	// volume from e.vol was three quarters of that walk, and an entry
	// holds all the walk reads of a member, so a front's start is one
	// cache miss instead of one an array.
	hkOff []uint32
	hk    []hubEntry
	// hkKey[b*(volKeys+1)+x]: how many of hub b's list have a volume key
	// (volKey) of x or more, so the members of key x, the only ones that
	// need comparing with k's volume, are a short stretch of the list.
	hkKey []uint32
	// byText lists ranks in text order: the output order.
	byText []uint32

	hubs, hubMinDF int
	hubList        []uint32 // the hubs' URL ids (corpus ids), by bit
	lightWork      uint64   // Σ df² over light URLs
	phases         []enginePhase
	// What the cut of the light pass saved, summed over the workers: the
	// keywords whose walk stopped early and the postings left unwalked.
	cutKeywords, cutPostings atomic.Uint64
}

// newEngine renumbers the corpus by rank and builds postings, masks and
// groups, in the named phases below (Options.Logger gets the time of each
// at debug level). It rejects duplicate keyword texts.
func newEngine(c *corpus, opt Options) (*engine, error) {
	n := len(c.kws)
	if uint64(n) >= math.MaxUint32 {
		return nil, fmt.Errorf("cannot compare %d keywords; at most 2³²-2", n)
	}
	e := &engine{opt: opt, n: n, kws: c.kws}
	t := time.Now()
	phase := func(name string) {
		now := time.Now()
		e.phases = append(e.phases, enginePhase{name, now.Sub(t)})
		t = now
	}
	tpos, err := e.textOrder(c)
	if err != nil {
		return nil, err
	}
	phase("text order")
	// The rank sort runs beside the URL statistics, which do not need it.
	var ranked sync.WaitGroup
	ranked.Go(func() { e.rankOrder(c, tpos) })
	df := e.cutHubs(c)
	phase("hub cut")
	light := e.codeURLs(c, df)
	phase("light codes")
	ranked.Wait()
	phase("rank order")
	e.rankSpace(c)
	e.lightSets(c, light)
	phase("light sets")
	e.postings()
	phase("postings")
	e.metas()
	e.buildGroups()
	e.hubLists()
	phase("hub groups")
	return e, nil
}

// enginePhase is the time one phase of newEngine took.
type enginePhase struct {
	name    string
	elapsed time.Duration
}

// textOrder fills e.byText with the input indexes in text order (usually
// the input order already: the lake is sorted) and returns each input
// index's position in it.
func (e *engine) textOrder(c *corpus) ([]uint32, error) {
	n := e.n
	tpos := bigSlice[uint32](n) // input index -> position in text order
	sorted := true
	for i := 1; i < n; i++ {
		if c.kws[i-1].Text >= c.kws[i].Text {
			sorted = false
			break
		}
	}
	byTextIdx := bigSlice[uint32](n)
	for i := range byTextIdx {
		byTextIdx[i] = uint32(i)
	}
	if !sorted {
		slices.SortFunc(byTextIdx, func(a, b uint32) int { return strings.Compare(c.kws[a].Text, c.kws[b].Text) })
		for i := 1; i < n; i++ {
			if c.kws[byTextIdx[i-1]].Text == c.kws[byTextIdx[i]].Text {
				return nil, fmt.Errorf("cannot compare keywords: %q appears twice", c.kws[byTextIdx[i]].Text)
			}
		}
	}
	for p, i := range byTextIdx {
		tpos[i] = uint32(p)
	}
	e.byText = byTextIdx // input indexes until rankSpace makes them ranks
	return tpos, nil
}

// rankOrder fills e.idx with the input indexes in rank order: volume
// descending, then text ascending (tpos).
func (e *engine) rankOrder(c *corpus, tpos []uint32) {
	e.idx = bigSlice[uint32](e.n)
	for i := range e.idx {
		e.idx[i] = uint32(i)
	}
	slices.SortFunc(e.idx, func(a, b uint32) int {
		if va, vb := rankVolume(c.kws[a].Volume), rankVolume(c.kws[b].Volume); va != vb {
			return cmp.Compare(vb, va)
		}
		return cmp.Compare(tpos[a], tpos[b])
	})
}

// hubCands returns the hub URLs: the at most maxHubs most frequent with
// df at least e.hubMinDF.
func (e *engine) hubCands(df []uint32) []uint32 {
	if e.opt.maxHubs <= 0 {
		return nil
	}
	var hubCands []uint32
	for u, d := range df {
		if int(d) >= e.hubMinDF {
			hubCands = append(hubCands, uint32(u))
		}
	}
	slices.SortFunc(hubCands, func(a, b uint32) int {
		if df[a] != df[b] {
			return cmp.Compare(df[b], df[a])
		}
		return cmp.Compare(a, b)
	})
	return hubCands[:min(len(hubCands), e.opt.maxHubs)]
}

// cutHubs counts the document frequencies and picks the hubs: e.hubs,
// e.w, e.hubMinDF. It returns the df of every URL.
func (e *engine) cutHubs(c *corpus) []uint32 {
	df := bigSlice[uint32](c.nURL)
	for _, u := range c.urls {
		df[u]++
	}
	e.hubMinDF = e.opt.hubMinDF
	if e.hubMinDF <= 0 {
		e.hubMinDF = max(32, int(math.Sqrt(float64(e.n))/2))
	}
	e.hubList = e.hubCands(df)
	e.hubs = len(e.hubList)
	e.w = (e.hubs + 63) / 64
	return df
}

// codeURLs turns the corpus's URL ids into codes in place: a hub's bit,
// or e.hubs + its light id. Light ids are dense over non-hub URLs and
// numbered by df ascending (a counting sort, ties by URL id), so that a
// keyword's light URLs sorted by id are sorted rarest first, the order
// the light pass walks them. It fills e.pOff and e.lightWork, and returns
// each keyword's number of light URLs, by input index.
func (e *engine) codeURLs(c *corpus, df []uint32) []uint32 {
	hubs := uint32(e.hubs)
	// While numbering, code holds 1 + a hub's bit and 0 for a light URL.
	code := bigSlice[uint32](c.nURL)
	for b, u := range e.hubList {
		code[u] = uint32(b) + 1
	}
	var dfCount []uint32
	for u, d := range df {
		if code[u] == 0 {
			for int(d) >= len(dfCount) {
				dfCount = append(dfCount, 0)
			}
			dfCount[d]++
			e.lightWork += uint64(d) * uint64(d)
		}
	}
	// Postings of equal df are adjacent, so their offsets follow from the
	// counts alone.
	nLight := uint32(c.nURL) - hubs
	e.pOff = bigSlice[uint32](int(nLight + 1))
	next := hubs
	for d, x := range dfCount {
		l := next - hubs
		for j := l; j < l+x; j++ {
			e.pOff[j+1] = e.pOff[j] + uint32(d)
		}
		dfCount[d] = next
		next += x
	}
	for u, d := range df {
		if code[u] == 0 {
			code[u] = dfCount[d]
			dfCount[d]++
		} else {
			code[u]--
		}
	}
	// Each keyword's light URLs are counted on the way, in corpus order
	// (sequential reads, beside the rank sort): the passes below then read
	// each keyword's URLs and nothing else.
	light := bigSlice[uint32](e.n) // by input index
	split(e.opt.Workers, e.n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			us := c.urls[c.off[i]:c.off[i+1]]
			nl := uint32(0)
			for j, u := range us {
				v := code[u]
				us[j] = v
				if v >= hubs {
					nl++
				}
			}
			light[i] = nl
		}
	})
	return light
}

// rankSpace fills e.rank and e.vol from e.idx, and turns e.byText into
// ranks.
func (e *engine) rankSpace(c *corpus) {
	e.rank = bigSlice[uint32](e.n)
	e.vol = bigSlice[uint64](e.n)
	for r, i := range e.idx {
		e.rank[i] = uint32(r)
		e.vol[r] = smooth(c.kws[i].Volume)
	}
	for p, i := range e.byText {
		e.byText[p] = e.rank[i]
	}
	if !e.opt.noVolRuns {
		e.runs = newVolRuns(e.vol)
	}
}

// volOf is the smoothed volume of rank c: from the runs where they are
// held, else a read of e.vol.
func (e *engine) volOf(c uint32) uint64 {
	if e.runs.ok() {
		return e.runs.of(c)
	}
	return e.vol[c]
}

// lightSets fills the light sets and masks in rank space: the offsets
// from the light counts, then each keyword's light ids sorted and its hub
// bits.
func (e *engine) lightSets(c *corpus, light []uint32) {
	n, hubs := e.n, uint32(e.hubs)
	e.mask = bigSlice[uint64](n * e.w)
	e.lOff = bigSlice[uint32](n + 1)
	for r, i := range e.idx {
		e.lOff[r+1] = e.lOff[r] + light[i]
	}
	e.lURL = bigSlice[uint32](int(e.lOff[n]))
	split(e.opt.Workers, n, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			// A keyword's URLs, in corpus order, are a random read here.
			if r+2*fillAhead < hi {
				prefetch.At(c.off, int(e.idx[r+2*fillAhead]))
			}
			if r+fillAhead < hi {
				prefetch.At(c.urls, int(c.off[e.idx[r+fillAhead]]))
			}
			i := e.idx[r]
			p := e.lOff[r]
			m := e.mask[r*e.w : r*e.w+e.w]
			for _, v := range c.urls[c.off[i]:c.off[i+1]] {
				if v >= hubs {
					e.lURL[p] = v - hubs
					p++
				} else {
					m[v/64] |= 1 << (v % 64)
				}
			}
			slices.Sort(e.lURL[e.lOff[r]:p])
		}
	})
}

// postings fills the posting lists in rank order, so each list is sorted
// by rank. Each goroutine fills the lists of one range of light ids,
// about an equal share of the postings, and reads every keyword's list
// for them.
func (e *engine) postings() {
	parts := postingParts(e.pOff, e.opt.Workers)
	e.pKw = bigSlice[uint32](len(e.lURL))
	parallel(len(parts)-1, func(p int) {
		from, to := parts[p], parts[p+1]
		fill := slices.Clone(e.pOff[from:to])
		for r := range e.n {
			for _, l := range e.lURL[e.lOff[r]:e.lOff[r+1]] {
				if l >= from && l < to {
					e.pKw[fill[l-from]] = uint32(r)
					fill[l-from]++
				}
			}
		}
	})
}

// metas fills each keyword's kmeta: its log volume step, hub count and
// folded mask.
func (e *engine) metas() {
	e.meta = bigSlice[kmeta](e.n)
	for r := range e.n {
		m := &e.meta[r]
		m.lv = uint8(logVolSteps * math.Log2(float64(e.vol[r])))
		if e.w > 0 {
			mask := e.mask[r*e.w : r*e.w+e.w]
			m.hc = uint8(min(255, shared(mask, mask)))
			m.fold = foldMask(mask)
		}
	}
}

// fillAhead is how many keywords ahead the rank-order pass over the
// corpus asks for a keyword's URLs: with 8, and the light URLs counted in
// corpus order, preparing the 10M long tail took a median of 8.7 s
// against 10.0 s (three alternated rounds); with 16, 9.1 s.
const fillAhead = 8

// parallel runs fn(p) for every p in [0, parts), each on its own
// goroutine, and waits for them.
func parallel(parts int, fn func(p int)) {
	if parts <= 1 {
		fn(0)
		return
	}
	var wg sync.WaitGroup
	for p := range parts {
		wg.Go(func() { fn(p) })
	}
	wg.Wait()
}

// split runs fn over [0, n) in up to workers contiguous ranges at once;
// a small n runs on the caller's goroutine.
func split(workers, n int, fn func(lo, hi int)) {
	if workers < 1 || n < 1<<12 {
		workers = 1
	}
	parallel(workers, func(p int) { fn(section(n, workers, p), section(n, workers, p+1)) })
}

// section is where the i-th of parts equal sections of n items starts.
func section(n, parts, i int) int { return n * i / parts }

// postingParts splits the light ids into up to workers ranges with about
// an equal share of the postings each: parts[p] to parts[p+1].
func postingParts(pOff []uint32, workers int) []uint32 {
	nLight := uint32(len(pOff) - 1)
	parts := []uint32{0}
	for p := 1; p < workers; p++ {
		goal := uint32(uint64(pOff[nLight]) * uint64(p) / uint64(workers))
		l, _ := slices.BinarySearch(pOff, goal)
		parts = append(parts, max(parts[len(parts)-1], min(uint32(l), nLight)))
	}
	return append(parts, nLight)
}

// kmeta is what the light pass reads of every candidate before deciding
// whether it needs the candidate's mask and volume: four bytes, a
// sixteenth of a cache line, where a mask takes half of one.
type kmeta struct {
	hc uint8 // number of hubs, capped at 255 ("255 or more")
	lv uint8 // floor(logVolSteps·log₂(smoothed volume))
	// fold has bit b%16 set for each hub b: two keywords whose folds do
	// not meet share no hub, and the light pass need not read their
	// masks. On the 10M web lake, nine in ten of the masks it read shared
	// no hub with k's, and the folds told eight of those nine apart.
	fold uint16
}

// foldMask folds a hub mask to kmeta.fold.
func foldMask(m []uint64) uint16 {
	f := uint64(0)
	for _, x := range m {
		f |= x
	}
	f |= f >> 32
	f |= f >> 16
	return uint16(f)
}

func absDiff(a, b int32) int32 {
	if a > b {
		return a - b
	}
	return b - a
}

// logVolSteps is lv's resolution: 4 steps per doubling keeps every int64
// volume (log₂ < 64) within a byte.
const logVolSteps = 4

// buildGroups groups the keywords that have hubs by identical mask: the
// groups in mask order, each one's members by rank.
func (e *engine) buildGroups() {
	w := e.w
	e.gOff = []uint32{0}
	if w == 0 {
		return
	}
	// Each keyword's group, numbered by first appearance through a map of
	// the distinct masks (a sort of the keywords by mask took seconds at
	// 10M keywords); 0: no hubs.
	of := bigSlice[uint32](e.n)
	ids := map[string]uint32{} // a mask's bytes -> 1 + its number
	var masks []uint64         // the distinct masks, by first appearance
	var size []uint32          // each one's number of keywords
	key := make([]byte, 8*w)
	for r := 0; r < e.n; r++ {
		m := e.mask[r*w : r*w+w]
		if zero(m) {
			continue
		}
		for j, x := range m {
			binary.LittleEndian.PutUint64(key[8*j:], x)
		}
		g, ok := ids[string(key)]
		if !ok {
			masks = append(masks, m...)
			size = append(size, 0)
			g = uint32(len(size))
			ids[string(key)] = g
		}
		of[r] = g
		size[g-1]++
	}
	groups := len(size)
	byMask := make([]uint32, groups)
	for g := range byMask {
		byMask[g] = uint32(g)
	}
	slices.SortFunc(byMask, func(a, b uint32) int {
		return slices.Compare(masks[int(a)*w:int(a)*w+w], masks[int(b)*w:int(b)*w+w])
	})
	// fill[g]: where group g's next member goes, as it is ordered by mask.
	fill := make([]uint32, groups)
	e.gOff = make([]uint32, groups+1)
	e.gMask = make([]uint64, 0, groups*w)
	for j, g := range byMask {
		fill[g] = e.gOff[j]
		e.gOff[j+1] = e.gOff[j] + size[g]
		e.gMask = append(e.gMask, masks[int(g)*w:int(g)*w+w]...)
	}
	e.gKw = bigSlice[uint32](int(e.gOff[groups]))
	e.gVol = bigSlice[uint64](int(e.gOff[groups]))
	for r, g := range of {
		if g != 0 {
			e.gKw[fill[g-1]] = uint32(r)
			e.gVol[fill[g-1]] = e.vol[r]
			fill[g-1]++
		}
	}
	e.hOff = make([]uint32, e.hubs+1)
	for g := 0; g < groups; g++ {
		forBits(e.gMask[g*w:g*w+w], func(b int) { e.hOff[b+1]++ })
	}
	for b := 0; b < e.hubs; b++ {
		e.hOff[b+1] += e.hOff[b]
	}
	e.hGrp = make([]uint32, e.hOff[e.hubs])
	e.hGMask = make([]uint64, int(e.hOff[e.hubs])*w)
	e.hGFold = make([]uint16, e.hOff[e.hubs])
	fill = slices.Clone(e.hOff[:e.hubs])
	for g := 0; g < groups; g++ {
		gm := e.gMask[g*w : g*w+w]
		fold := foldMask(gm)
		forBits(gm, func(b int) {
			e.hGrp[fill[b]] = uint32(g)
			copy(e.hGMask[int(fill[b])*w:], gm)
			e.hGFold[fill[b]] = fold
			fill[b]++
		})
	}
}

// hubEntry is one keyword of a hub's list (engine.hk).
type hubEntry struct {
	vol uint64 // its smoothed volume
	kw  uint32 // its rank
	// other says which other hubs it holds: none (onlyHub), exactly one
	// (that hub's bit), or two or more (manyHubs), so that the walk of
	// level 1 reads a member's mask only in the last case.
	other uint16
}

const (
	onlyHub  = math.MaxUint16     // the member holds this hub only
	manyHubs = math.MaxUint16 - 1 // the member holds two hubs or more besides
)

// hubLists fills e.hkOff and e.hk: for each hub, the keywords holding it
// in rank order (so by volume descending), a counting sort of the masks.
func (e *engine) hubLists() {
	w := e.w
	e.hkOff = make([]uint32, e.hubs+1)
	if w == 0 {
		return
	}
	for r := range e.n {
		forBits(e.mask[r*w:r*w+w], func(b int) { e.hkOff[b+1]++ })
	}
	for b := 0; b < e.hubs; b++ {
		e.hkOff[b+1] += e.hkOff[b]
	}
	e.hk = bigSlice[hubEntry](int(e.hkOff[e.hubs]))
	fill := slices.Clone(e.hkOff[:e.hubs])
	var held []int
	for r := range e.n {
		m := e.mask[r*w : r*w+w]
		held = held[:0]
		forBits(m, func(b int) { held = append(held, b) })
		for j, b := range held {
			other := uint16(manyHubs)
			switch len(held) {
			case 1:
				other = onlyHub
			case 2:
				if e.hubs < manyHubs {
					other = uint16(held[1-j])
				}
			}
			e.hk[fill[b]] = hubEntry{vol: e.vol[r], kw: uint32(r), other: other}
			fill[b]++
		}
	}
	e.hkKey = make([]uint32, e.hubs*(volKeys+1))
	for b := range e.hubs {
		es := e.hk[e.hkOff[b]:e.hkOff[b+1]]
		at := e.hkKey[b*(volKeys+1) : (b+1)*(volKeys+1)]
		// at[x] = the first position whose key is below x (keys descend).
		p := len(es)
		for x := 0; x <= volKeys; x++ {
			for p > 0 && volKey(es[p-1].vol) < x {
				p--
			}
			at[x] = uint32(p)
		}
	}
}

// volKeys is the number of values of volKey.
const volKeys = 4 * 65

// volKey is a coarse key of a volume that never decreases as the volume
// grows: its bit length and the two bits after the leading one, so four
// keys a doubling, about one a Keyword Planner bucket.
func volKey(v uint64) int {
	n := bits.Len64(v)
	if n < 3 {
		return 4 * n
	}
	return 4*n + int(v>>(n-3)&3)
}

// hubFirst is the first position in hub b's list (es) whose volume is at
// most vk.
func (e *engine) hubFirst(b int, es []hubEntry, vk uint64) int {
	// Keys above vk's hold larger volumes and keys below it smaller ones:
	// only the members of vk's own key are compared.
	x := volKey(vk)
	at := e.hkKey[b*(volKeys+1) : (b+1)*(volKeys+1)]
	p, q := int(at[x+1]), int(at[x])
	if p < q && es[p].vol <= vk {
		return p
	}
	for p < q {
		h := int(uint(p+q) >> 1)
		if es[h].vol > vk {
			p = h + 1
		} else {
			q = h
		}
	}
	return p
}

func zero(m []uint64) bool {
	for _, x := range m {
		if x != 0 {
			return false
		}
	}
	return true
}

func forBits(m []uint64, fn func(b int)) {
	for j, x := range m {
		for x != 0 {
			fn(j*64 + bits.TrailingZeros64(x))
			x &= x - 1
		}
	}
}

func shared(a, b []uint64) int32 {
	s := 0
	for j := range a {
		s += bits.OnesCount64(a[j] & b[j])
	}
	return int32(s)
}

// cand is one ranked candidate: its rank, overlap and closeness hi/lo.
type cand struct {
	c      uint32
	o      int32
	hi, lo uint64
}

// better reports whether a ranks before b (the package doc's ranking; r
// stands for volume
// desc then text asc).
func better(a, b *cand) bool {
	if a.o != b.o {
		return a.o > b.o
	}
	if x := cmpRatio(a.hi, a.lo, b.hi, b.lo); x != 0 {
		return x < 0
	}
	return a.c < b.c
}

// front is one walk front of a group at one H level.
type front struct {
	hi, lo uint64 // closeness of the member at pos
	g      uint32
	pos    int32
	step   int32 // -1 upward (higher volumes), +1 downward
	// An upward front (of a hub's list or a group) walks each run of
	// equal volume in rank order, from start to end (exclusive), then the
	// run above it.
	start, end int32
}

// worker holds one goroutine's scratch space.
type worker struct {
	e *engine
	// counts holds the current keyword's candidates and their light counts.
	counts  countTable
	touched []uint32 // the slots of counts in use
	order   []uint64 // their entries by count, highest first
	reach   []int32
	left    []uint64
	top     []cand
	tops    []cand // batch's top-Ks, one after another
	ends    []int  // where each keyword's top-K ends in tops
	levels  [][]uint32
	hubs    []uint32 // hubOnly's hubs of k
	scanned []uint64 // hubOnly's hubs whose groups are scanned, as a mask
	other   []uint64 // hubOnly's hubs of k but the one scanned, as a mask
	fronts  []front
	fwd     []uint32 // same-intent pairs (k, c, overlap), c > k, flattened
	// cutKeywords and cutPostings count the cuts until the batch ends.
	cutKeywords, cutPostings uint64
}

func (e *engine) newWorker() *worker {
	return &worker{
		e:       e,
		top:     make([]cand, 0, e.opt.TopK+1),
		scanned: make([]uint64, e.w),
		other:   make([]uint64, e.w),
	}
}

// countTable counts the candidates of one keyword: an open-addressing hash
// table (linear probing) of entries c+1 << 32 | count, 0 for an empty slot.
// It has at least twice as many slots as the postings the keyword can
// walk, so it is at most half full (a twentieth on average at 10M
// keywords, where a keyword meets about 650 candidates in 4,200 postings)
// and stays in the core's own cache: a counter array of every keyword
// (10 MB at 10M keywords) made each posting a read from far memory.
// Starting smaller and growing was slower: the moves cost more than the
// smaller table saved.
type countTable struct {
	slot  []uint64
	shift uint8 // 32 - log₂ len(slot)
}

// reset makes room for n keys, at most half the slots; the table must be
// empty.
func (t *countTable) reset(n uint64) {
	b := max(6, bits.Len64(2*n))
	if cap(t.slot) < 1<<b {
		t.slot = make([]uint64, 1<<b)
	}
	t.slot = t.slot[:1<<b]
	t.shift = uint8(32 - b)
}

// home is the first slot key c probes (Fibonacci hashing), before the
// mask of the slot indices.
func home(c uint32, shift uint8) uint32 {
	return (c * 0x9e3779b1) >> (shift & 31)
}

// count is c's count.
func (t *countTable) count(c uint32) int32 {
	key := uint64(c+1) << 32
	mask := uint32(len(t.slot) - 1)
	for h := home(c, t.shift); ; h++ {
		s := t.slot[h&mask]
		if s == 0 || s&^math.MaxUint32 == key {
			return int32(uint32(s))
		}
	}
}

// add counts the keywords of postings ps, appends the slots of the new
// ones to touched and returns it; with seenOnly a keyword not in the
// table is passed over instead. reach[x+1] counts each count that goes
// from x to x+1.
func (t *countTable) add(ps []uint32, reach []int32, touched []uint32, seenOnly bool) []uint32 {
	tab, shift := t.slot, t.shift
	mask := uint32(len(tab) - 1)
	for _, c := range ps {
		key := uint64(c+1) << 32
		for h := home(c, shift); ; h++ {
			h &= mask
			s := tab[h]
			if s&^math.MaxUint32 == key {
				reach[uint32(s)+1]++
				tab[h] = s + 1
				break
			}
			if s == 0 {
				if !seenOnly {
					touched = append(touched, h)
					tab[h] = key | 1
				}
				break
			}
		}
	}
	return touched
}

// entryKeyword and entryCount take an entry of the table apart.
func entryKeyword(s uint64) uint32 { return uint32(s>>32) - 1 }
func entryCount(s uint64) int32    { return int32(uint32(s)) }

// isLight reports whether c shares a light URL with the current keyword.
func (w *worker) isLight(c uint32) bool {
	return w.counts.count(c) != 0
}

// one computes keyword k's top-K (left in w.top, best first) and appends its
// same-intent followers to w.fwd.
//
// It walks k's light URLs rarest first and counts every candidate they
// reach, keeping how many have reached each count. An unseen candidate, one that
// shares none of the URLs walked so far, has overlap at most B = (light
// URLs left) + hk. Once K seen candidates have counted more than B (strictly:
// an unseen keyword tied at B could still win on closeness) and B is below
// the same-intent overlap, no unseen keyword can rank or be a follower, so
// the rest of the URLs (the frequent ones, where almost all the postings
// are) create no candidates: the seen candidates' counts are finished,
// by walking those postings for them only or by intersecting their own
// light URLs with the URLs left, and the hub-only search has nothing left
// to find.
func (w *worker) one(k uint32) {
	e := w.e
	W := e.w
	K := e.opt.TopK
	minO := int32(e.opt.MinOverlap)
	mk := e.mask[int(k)*W : int(k)*W+W]
	mk0 := e.meta[k]
	hk, lvk := int32(mk0.hc), int32(mk0.lv)
	hasHubs := hk > 0
	lk := e.lURL[e.lOff[k]:e.lOff[k+1]]
	m := len(lk)
	// reach[x], x ≥ 2, counts the seen candidates (k included) that
	// shared at least x URLs so far; every seen one shared 1. A count
	// going up is one increment, and a new candidate none (a histogram
	// of exact counts took two, the one of count 1 on almost every
	// posting).
	if cap(w.reach) < m+2 {
		w.reach = make([]int32, m+2)
	}
	reach := w.reach[:m+2]
	clear(reach)
	// left[i]: the postings of lk[i:], the work that pruning at i saves.
	if cap(w.left) < m+1 {
		w.left = make([]uint64, m+1)
	}
	left := w.left[:m+1]
	left[m] = 0
	for i := m - 1; i >= 0; i-- {
		l := lk[i]
		left[i] = left[i+1] + uint64(e.pOff[l+1]-e.pOff[l])
	}
	// Every candidate met is in at least one of the postings.
	t := &w.counts
	t.reset(min(left[0], uint64(e.n)))
	touched := w.touched[:0]
	cut := m
	for i, l := range lk {
		// hk = 255 means "255 or more" and bounds nothing.
		if i > 0 && hk < 255 && left[i] > uint64(len(touched)) && !e.opt.noCut {
			if b := int32(m-i) + hk; b < minO && seenAbove(reach, b, t.count(k)) >= K {
				cut = i
				w.cutKeywords++
				w.cutPostings += left[i]
				break
			}
		}
		w.fetchPostings(lk, i+1)
		touched = t.add(e.pKw[e.pOff[l]:e.pOff[l+1]], reach, touched, false)
	}
	w.touched = touched
	rest := lk[cut:]
	if cut < m && (e.opt.finish == finishWalk || e.opt.finish == 0 && left[cut] <= walkFinish*uint64(len(touched))) {
		// Finishing the counts by walking the postings left, without
		// taking new candidates, is cheaper than a random read of each
		// seen candidate's URLs.
		for i, l := range rest {
			w.fetchPostings(rest, i+1)
			t.add(e.pKw[e.pOff[l]:e.pOff[l+1]], reach, nil, true)
		}
		rest = nil
	}
	// The candidates are taken by count, highest first (a counting sort of
	// touched), so the top-K fills with its likely members first and its
	// K-th entry bounds the rest early: once a count plus the URLs left
	// plus k's hubs is below both that entry and the same-intent overlap,
	// no later candidate can rank or follow and none of their data is read.
	// A candidate is ranked with its exact overlap; counts only order and
	// bound.
	// bk[x] becomes where the first candidate of count x goes: the number
	// of candidates of higher counts.
	bk := reach
	reach[1] = int32(len(touched))
	pos, above := int32(0), int32(0) // above: reach[x+1] before bk took its place
	for x := len(bk) - 1; x >= 1; x-- {
		r := reach[x]
		bk[x] = pos
		pos += r - above
		above = r
	}
	if cap(w.order) < len(touched) {
		w.order = make([]uint64, len(touched), 2*len(touched))
	}
	order := w.order[:len(touched)]
	for _, h := range touched {
		s := t.slot[h]
		order[bk[uint32(s)]] = s
		bk[uint32(s)]++
	}
	slack := int32(len(rest)) + hk
	if hk >= 255 {
		slack = math.MaxInt16 // "255 or more" bounds nothing
	}
	w.top = w.top[:0]
	vk := e.vol[k]
	// A candidate tied in overlap with the K-th entry w is strictly farther
	// in volume, so ranks below w, when its log-volume step is more than
	// tieSteps = |lv(w)-lv(k)|+6 away from k's. With ℓ(v) = 4·log₂ v, lv
	// is ⌊ℓ⌋ give or take one for floating-point rounding, so ℓ lies in
	// (lv-1, lv+2) and a distance |Δℓ| in (|Δlv|-3, |Δlv|+3); hence
	// |Δℓ(c)| > |Δlv(c)|-3 ≥ |Δlv(w)|+4 > |Δℓ(w)|. tieSteps is cached for
	// the current w (worstC).
	worstC, tieSteps := ^uint32(0), int32(0)
	for j, s := range order {
		// The data of the candidates a few places on is fetched while
		// this one is decided: these reads miss the cache, and each one
		// otherwise waits for the last one's branches.
		w.fetchCandidates(order, j, len(rest) > 0, mk0.fold)
		c, o := entryKeyword(s), entryCount(s)
		if c == k {
			continue
		}
		if ub := o + slack; !w.needs(ub) {
			if ub < minO {
				break
			}
			if c < k {
				continue
			}
		}
		// min(hk, hubs(c)) bounds the hub part of the overlap, and the URLs
		// left bound what the cut has not counted: a candidate whose bound
		// can neither rank nor be same-intent is skipped before its URLs,
		// then before its mask, are read. (255 hubs means "255 or more",
		// so it bounds nothing.)
		var mc kmeta
		haveMC, hb, bounded := false, int32(0), true
		if hasHubs {
			mc, haveMC = e.meta[c], true
			// Folds that do not meet: no hub in common, exactly.
			if mc.fold&mk0.fold != 0 {
				hb = min(hk, int32(mc.hc))
				bounded = hk < 255 && mc.hc < 255
			}
		}
		if len(rest) > 0 {
			// With hb = hk this is the slack test above, already passed.
			if ub := o + int32(len(rest)) + hb; hb < hk && bounded && (ub < minO || c < k) && !w.needs(ub) {
				continue
			}
			o += e.sharedLight(c, rest)
		}
		if hb > 0 {
			if ub := o + hb; bounded && (ub < minO || c < k) && !w.needs(ub) {
				continue
			}
			o += shared(mk, e.mask[int(c)*W:int(c)*W+W])
		}
		if o >= minO && c > k {
			if hi, lo := hiLo(vk, e.volOf(c)); ratioWithin(hi, lo, e.opt.MaxRatio) {
				w.fwd = append(w.fwd, k, c, uint32(o))
			}
		}
		if len(w.top) == K {
			worst := &w.top[K-1]
			if o < worst.o {
				continue
			}
			// Where the volumes are in cache the offer's exact test is
			// cheaper than this one's read of kmeta.
			if o == worst.o && !e.runs.ok() {
				if worst.c != worstC {
					worstC = worst.c
					tieSteps = absDiff(int32(e.meta[worstC].lv), lvk) + 6
				}
				if !haveMC {
					mc = e.meta[c]
				}
				if absDiff(int32(mc.lv), lvk) > tieSteps {
					continue
				}
			}
		}
		hi, lo := hiLo(vk, e.volOf(c))
		w.offer(cand{c: c, o: o, hi: hi, lo: lo})
	}
	// After a cut every unseen keyword, hub-only ones included, has
	// overlap at most slack, below the K-th and below the same-intent
	// overlap: there is no hub-only candidate to look for. (Its search
	// would also take a keyword that shares only cut URLs for hub-only.)
	if hasHubs && cut == m {
		w.hubOnly(k, mk)
	}
	for _, h := range touched {
		t.slot[h] = 0
	}
}

// groupAhead is how many groups ahead the walk of a level asks for a
// group's volumes.
const groupAhead = 4

// walkFinish is how many postings walked cost about as much as one random
// read of a seen candidate's light URLs: on 100,000 of the 10M sample
// keywords (one goroutine, two rounds), always intersecting took about
// 1.6 times as long as always walking, and this ratio about as long as
// walking.
var walkFinish uint64 = 8

// candAhead is how many candidates ahead the candidate loop fetches a
// candidate's light URLs, and twice that its other data: on 270,270 of
// the 10M long-tail keywords (two workers, three alternated rounds) 2, 4
// and 8 took 0.94, 0.91 and 0.93 times as long as no fetching.
const candAhead = 4

// fetchPostings asks for the start of the postings of URL ls[i], if any,
// while the URL before it is walked: a posting list starts at random, and
// the long tail's lists are a few entries long.
func (w *worker) fetchPostings(ls []uint32, i int) {
	if i < len(ls) {
		prefetch.At(w.e.pKw, int(w.e.pOff[ls[i]]))
	}
}

// fetchCandidates asks for the data of the candidate 2·candAhead places
// after order[j] that the loop may read: its kmeta if k has hubs (its
// folded mask fold is not 0) or for the tie test that then reads it, and
// its volume unless the runs hold it. Of the one candAhead places after
// it, whose offsets are then in cache, it asks for the light URLs if the
// loop intersects them (urls), and for the mask if the folds meet.
// Without a cut left to finish no light URLs are read, and asking for
// them cost 7% of the compute; a mask asked for when k has no hubs (half
// the keywords of the web shape) or the folds do not meet is never read.
func (w *worker) fetchCandidates(order []uint64, j int, urls bool, fold uint16) {
	e := w.e
	hubs := fold != 0
	if j+2*candAhead < len(order) {
		c := int(entryKeyword(order[j+2*candAhead]))
		if urls {
			prefetch.At(e.lOff, c)
		}
		if hubs || !e.runs.ok() {
			prefetch.At(e.meta, c)
		}
		if !e.runs.ok() {
			prefetch.At(e.vol, c)
		}
	}
	if j+candAhead < len(order) && (urls || hubs) {
		c := int(entryKeyword(order[j+candAhead]))
		if urls {
			prefetch.At(e.lURL, int(e.lOff[c]))
		}
		if hubs && e.meta[c].fold&fold != 0 {
			prefetch.At(e.mask, c*e.w)
		}
	}
}

// The ways to finish the counts after a cut that Options.finish can force.
const (
	finishIntersect = 1
	finishWalk      = 2
)

// seenAbove is the number of seen candidates, k excluded (it has counted
// ck), that shared more than b ≥ 1 URLs.
func seenAbove(reach []int32, b, ck int32) int {
	s := 0
	if int(b)+1 < len(reach) {
		s = int(reach[b+1])
	}
	if ck > b {
		s--
	}
	return s
}

// sharedLight counts the light URLs of c among rest; both lists are sorted.
func (e *engine) sharedLight(c uint32, rest []uint32) int32 {
	lc := e.lURL[e.lOff[c]:e.lOff[c+1]]
	// rest is the tail of k's list from the cut: c's URLs below it are
	// already counted.
	i, _ := slices.BinarySearch(lc, rest[0])
	n, j := int32(0), 0
	for i < len(lc) && j < len(rest) {
		switch a, b := lc[i], rest[j]; {
		case a < b:
			i++
		case a > b:
			j++
		default:
			n++
			i++
			j++
		}
	}
	return n
}

func (w *worker) offer(x cand) {
	K := w.e.opt.TopK
	if len(w.top) == K {
		if !better(&x, &w.top[K-1]) {
			return
		}
		w.top = w.top[:K-1]
	}
	i := len(w.top)
	w.top = append(w.top, x)
	for i > 0 && better(&x, &w.top[i-1]) {
		w.top[i] = w.top[i-1]
		i--
	}
	w.top[i] = x
}

// needs reports whether an H candidate of overlap o could still enter the
// top-K.
func (w *worker) needs(o int32) bool {
	K := w.e.opt.TopK
	return len(w.top) < K || w.top[K-1].o <= o
}

// hubOnly ranks the H candidates of k and collects its H followers.
func (w *worker) hubOnly(k uint32, mk []uint64) {
	e := w.e
	W := e.w
	hk := shared(mk, mk)
	minO := int32(e.opt.MinOverlap)
	if !w.needs(hk) && hk < minO {
		return
	}
	for len(w.levels) <= int(hk) {
		w.levels = append(w.levels, nil)
	}
	for o := range w.levels[:hk+1] {
		w.levels[o] = w.levels[o][:0]
	}
	// Levels below low are never visited: the top-K is full with a worse
	// overlap, and they are below the same-intent overlap.
	low := int32(1)
	if K := e.opt.TopK; len(w.top) == K {
		low = max(1, min(w.top[K-1].o, minO))
	}
	// Level 1 holds almost every group that meets k's mask (a head hub's
	// groups are most of them), and has no followers unless MinOverlap is
	// 1: it is walked through the keywords of each of k's hubs instead
	// (walkHubs), and the groups are scanned for levels 2 and up only.
	byHub := low == 1 && minO > 1
	scan := low
	if byHub {
		scan = 2
	}
	// A group sharing at least scan of k's hk hubs holds one of any
	// hk-scan+1 of them, so only the group lists of the hk-scan+1 hubs
	// with the fewest groups are scanned: a head hub's list, which holds
	// most groups, rarely is.
	hubs := w.hubs[:0]
	if scan <= hk {
		forBits(mk, func(b int) { hubs = append(hubs, uint32(b)) })
		if scan > 1 {
			slices.SortFunc(hubs, func(a, b uint32) int {
				return cmp.Compare(e.hOff[a+1]-e.hOff[a], e.hOff[b+1]-e.hOff[b])
			})
			hubs = hubs[:hk-scan+1]
		}
	}
	w.hubs = hubs
	// A group in the lists of several of those hubs is taken from the
	// first one's: its mask holds a hub scanned before (seen).
	// Every group of b's list shares b with k, so it needs another hub of
	// k's to reach level 2: a test of its words, where counting bits on
	// every group of the lists was most of the scan, and before it a test
	// of its fold, which spares most of those words: on a million web
	// keywords the search took 0.95 times as long (five rounds, one
	// worker, in one process).
	seen := w.scanned
	clear(seen)
	for _, b := range hubs {
		gs := e.hGrp[e.hOff[b]:e.hOff[b+1]]
		ms := e.hGMask[int(e.hOff[b])*W : int(e.hOff[b+1])*W]
		fs := e.hGFold[e.hOff[b]:e.hOff[b+1]]
		other := w.other // k's hubs but b
		copy(other, mk)
		other[b/64] &^= 1 << (b % 64)
		fo := foldMask(other)
		for j, g := range gs {
			if scan > 1 && fs[j]&fo == 0 {
				continue // no other hub of k's
			}
			m := ms[j*W : j*W+W]
			more, dup := uint64(0), uint64(0)
			for i, x := range m {
				more |= x & other[i]
				dup |= x & seen[i]
			}
			if more == 0 && scan > 1 || dup != 0 {
				continue
			}
			if o := shared(mk, m); o >= scan {
				w.levels[o] = append(w.levels[o], g)
			}
		}
		seen[b/64] |= 1 << (b % 64)
	}
	for o := hk; o >= scan; o-- {
		need := w.needs(o)
		if !need && o < minO {
			return
		}
		gs := w.levels[o]
		if len(gs) == 0 {
			continue
		}
		if o >= minO {
			w.followers(k, o, gs)
		}
		if need {
			w.walk(k, o, gs)
		}
	}
	if byHub && w.needs(1) {
		w.walkHubs(k, mk, hk)
	}
}

// followers appends every H candidate c > k of the groups gs, which share
// o hubs with k, within the same-intent volume ratio.
func (w *worker) followers(k uint32, o int32, gs []uint32) {
	e := w.e
	vk := e.vol[k]
	for _, g := range gs {
		m := e.gKw[e.gOff[g]:e.gOff[g+1]]
		p, _ := slices.BinarySearch(m, k+1)
		for _, c := range m[p:] {
			if !ratioWithin(vk, e.volOf(c), e.opt.MaxRatio) {
				break
			}
			if !w.isLight(c) {
				w.fwd = append(w.fwd, k, c, uint32(o))
			}
		}
	}
}

// walk ranks the H candidates of level o, nearest volume first, until no
// remaining one can enter the top-K.
func (w *worker) walk(k uint32, o int32, gs []uint32) {
	e := w.e
	vk := e.vol[k]
	fr := w.fronts[:0]
	for i, g := range gs {
		// A group's volumes start at random: ask for those of the group
		// groupAhead places on while this one is searched.
		if i+groupAhead < len(gs) {
			prefetch.At(e.gVol, int(e.gOff[gs[i+groupAhead]]))
		}
		vs := e.gVol[e.gOff[g]:e.gOff[g+1]]
		// p: first member with volume <= v_k (members are by volume desc).
		p := runStart(vs, vk)
		// The fronts' first members are read once the heap is built. The
		// upward front starts at the first member of the run of equal
		// volume just above k's.
		if p > 0 {
			s := runStart(vs[:p], vs[p-1])
			hi, lo := hiLo(vk, vs[s])
			fr = append(fr, front{hi: hi, lo: lo, g: g, pos: int32(s), step: -1, start: int32(s), end: int32(p)})
			prefetch.At(e.gKw, int(e.gOff[g])+s)
		}
		if p < len(vs) {
			hi, lo := hiLo(vk, vs[p])
			fr = append(fr, front{hi: hi, lo: lo, g: g, pos: int32(p), step: 1})
			prefetch.At(e.gKw, int(e.gOff[g])+p)
		}
	}
	for i := len(fr)/2 - 1; i >= 0; i-- {
		siftDown(fr, i)
	}
	for len(fr) > 0 {
		f := &fr[0]
		if w.levelDone(o, f) {
			break
		}
		from, to := e.gOff[f.g], e.gOff[f.g+1]
		c := e.gKw[from+uint32(f.pos)]
		// Along a front every member ranks after the one before it, so
		// the first one ranked below the K-th ends the front.
		more := !w.belowWorst(c, o, f)
		if more {
			if c != k && !w.isLight(c) {
				w.offer(cand{c: c, o: o, hi: f.hi, lo: f.lo})
			}
			more = groupStep(f, e.gVol[from:to], vk)
		}
		if !more {
			fr[0] = fr[len(fr)-1]
			fr = fr[:len(fr)-1]
		}
		if len(fr) > 0 {
			siftDown(fr, 0)
		}
	}
	w.fronts = fr[:0]
}

// runStart is the first index of vs, volumes in descending order, whose
// volume is v or less: the start of v's run if vs holds v.
func runStart(vs []uint64, v uint64) int {
	p, q := 0, len(vs)
	for p < q {
		h := int(uint(p+q) >> 1)
		if vs[h] > v {
			p = h + 1
		} else {
			q = h
		}
	}
	return p
}

// groupStep moves front f of a group with member volumes vs to its next
// member and returns whether there is one. Both fronts meet each run of
// equal volume in rank order: the downward one as the members lie, the
// upward one a run forward, then the start of the run above it: hubStep's
// walk, over a group's volumes rather than a hub list's entries (two
// layouts of the hottest loop, kept apart rather than reached through a
// function value).
func groupStep(f *front, vs []uint64, vk uint64) bool {
	f.pos++
	if f.step > 0 {
		if int(f.pos) >= len(vs) {
			return false
		}
	} else if f.pos >= f.end {
		if f.start == 0 {
			return false
		}
		f.end = f.start
		f.start = int32(runStart(vs[:f.start], vs[f.start-1]))
		f.pos = f.start
	}
	f.hi, f.lo = hiLo(vk, vs[f.pos])
	return true
}

// walkHubs ranks the H candidates of level 1, nearest volume first, until
// no remaining one can enter the top-K. They are the keywords that share
// exactly one hub with k, so each lies in exactly one of the lists of k's
// hubs: each list is walked outward from k's volume (a front's g is the
// hub), and a member sharing more hubs, ranked on its own level, is passed
// over. Walking a list costs the members near k's volume, where walking
// the groups of level 1 cost a search of each group.
//
// Both fronts of a list meet each run of equal volume in rank order (the
// upward one walks a run forward, then jumps to the start of the run
// above), so a front whose member ranks below the K-th is done: every
// member after it is as far in volume and later in rank, or farther. On
// the Keyword Planner's rounded volumes a head hub's list holds thousands
// of keywords of k's very volume, which the walk otherwise went through
// to the end of the run.
func (w *worker) walkHubs(k uint32, mk []uint64, hk int32) {
	e := w.e
	vk := e.vol[k]
	fr := w.fronts[:0]
	forBits(mk, func(b int) {
		es := e.hk[e.hkOff[b]:e.hkOff[b+1]]
		// p: first member with volume <= v_k (members are by volume desc).
		p := e.hubFirst(b, es, vk)
		if p > 0 {
			s := e.hubFirst(b, es, es[p-1].vol)
			hi, lo := hiLo(vk, es[s].vol)
			fr = append(fr, front{hi: hi, lo: lo, g: uint32(b), pos: int32(s), step: -1, start: int32(s), end: int32(p)})
		}
		if p < len(es) {
			hi, lo := hiLo(vk, es[p].vol)
			fr = append(fr, front{hi: hi, lo: lo, g: uint32(b), pos: int32(p), step: 1})
		}
	})
	if hk == 1 {
		// One list, at most two fronts: the nearer one is the next, no heap.
		w.walkOneHub(k, fr)
		return
	}
	for i := len(fr)/2 - 1; i >= 0; i-- {
		siftDown(fr, i)
	}
	for len(fr) > 0 {
		f := &fr[0]
		if w.levelDone(1, f) {
			break
		}
		es := e.hk[e.hkOff[f.g]:e.hkOff[f.g+1]]
		x := &es[f.pos]
		more := !w.belowWorst(x.kw, 1, f)
		if more {
			if x.kw != k && w.onlyShared(x, mk) && !w.isLight(x.kw) {
				w.offer(cand{c: x.kw, o: 1, hi: f.hi, lo: f.lo})
			}
			more = e.hubStep(f, es, vk)
		}
		if !more {
			fr[0] = fr[len(fr)-1]
			fr = fr[:len(fr)-1]
		}
		if len(fr) > 0 {
			siftDown(fr, 0)
		}
	}
	w.fronts = fr[:0]
}

// walkOneHub is walkHubs for a k with a single hub, whose list has the
// fronts fr (at most two): every member shares exactly that hub with k.
func (w *worker) walkOneHub(k uint32, fr []front) {
	e := w.e
	vk := e.vol[k]
	for len(fr) > 0 {
		f := &fr[0]
		if len(fr) == 2 && frontLess(&fr[1], f) {
			f = &fr[1]
		}
		if w.levelDone(1, f) {
			break
		}
		es := e.hk[e.hkOff[f.g]:e.hkOff[f.g+1]]
		c := es[f.pos].kw
		more := !w.belowWorst(c, 1, f)
		if more {
			if c != k && !w.isLight(c) {
				w.offer(cand{c: c, o: 1, hi: f.hi, lo: f.lo})
			}
			more = e.hubStep(f, es, vk)
		}
		if !more {
			*f = fr[len(fr)-1]
			fr = fr[:len(fr)-1]
		}
	}
	w.fronts = fr[:0]
}

// belowWorst reports whether member c at front f, of level o (its
// overlap with k), ranks below the K-th of a full top-K, which ends f's
// walk (see walkHubs and walk).
func (w *worker) belowWorst(c uint32, o int32, f *front) bool {
	K := w.e.opt.TopK
	if len(w.top) < K {
		return false
	}
	return !better(&cand{c: c, o: o, hi: f.hi, lo: f.lo}, &w.top[K-1])
}

// hubStep moves front f of a hub's list es to its next member and returns
// whether there is one.
func (e *engine) hubStep(f *front, es []hubEntry, vk uint64) bool {
	f.pos++
	if f.step > 0 {
		if int(f.pos) >= len(es) {
			return false
		}
	} else if f.pos >= f.end {
		// The run is done: the run above ends where it started.
		if f.start == 0 {
			return false
		}
		f.end = f.start
		f.start = int32(e.hubFirst(int(f.g), es, es[f.start-1].vol))
		f.pos = f.start
	}
	f.hi, f.lo = hiLo(vk, es[f.pos].vol)
	return true
}

// levelDone reports whether no member of level o at or after front f,
// the nearest, can enter the full top-K.
func (w *worker) levelDone(o int32, f *front) bool {
	K := w.e.opt.TopK
	if len(w.top) < K {
		return false
	}
	worst := &w.top[K-1]
	return worst.o > o || (worst.o == o && cmpRatio(f.hi, f.lo, worst.hi, worst.lo) > 0)
}

// onlyShared reports whether the member x of one of k's hub lists shares
// that hub only with k (mask mk): its mask is read only when it holds two
// other hubs or more, a random read that was a fifth of the walk.
func (w *worker) onlyShared(x *hubEntry, mk []uint64) bool {
	switch x.other {
	case onlyHub:
		return true
	case manyHubs:
		W := w.e.w
		return shared(mk, w.e.mask[int(x.kw)*W:int(x.kw)*W+W]) == 1
	default:
		return mk[x.other/64]&(1<<(x.other%64)) == 0
	}
}

func frontLess(a, b *front) bool { return cmpRatio(a.hi, a.lo, b.hi, b.lo) < 0 }

func siftDown(h []front, i int) {
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		j := l
		if r := l + 1; r < n && frontLess(&h[r], &h[l]) {
			j = r
		}
		if !frontLess(&h[j], &h[i]) {
			return
		}
		h[i], h[j] = h[j], h[i]
		i = j
	}
}
