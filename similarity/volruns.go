package similarity

import "math"

// maxVolRuns is the most runs of equal volume a volRuns holds: a run's
// number is a byte in its bucket table.
const maxVolRuns = 255

// volRuns finds a keyword's smoothed volume from its rank where the
// volumes take few values, as the planner's do (it rounds them to a few
// dozen: 40 at a million web keywords, 43 at ten million). Ranks run by
// volume descending, so each volume is one run of ranks: start holds the
// first rank of each run, then a sentinel past every rank, and vol each
// run's volume. at[r>>shift] is the run holding rank r>>shift<<shift, from
// which of steps forward over the runs that start in between, usually
// none. The tables take a few kilobytes and stay in cache: the candidate
// loop of the light pass reads a volume for almost every candidate, and
// read from the volumes by rank (80 MB at 10M keywords) that was a cache
// miss a candidate (on the web shape, a quarter of the search at 10M).
// Its zero value holds nothing.
type volRuns struct {
	start []uint32
	vol   []uint64
	at    []uint8
	shift uint8
}

// newVolRuns returns the runs of vol, the smoothed volumes by rank, or
// the zero volRuns if they take more than maxVolRuns values or are not
// in descending order.
func newVolRuns(vol []uint64) volRuns {
	var start []uint32
	var vs []uint64
	for r, v := range vol {
		if r > 0 && v == vol[r-1] {
			continue
		}
		if len(start) == maxVolRuns || (r > 0 && v > vol[r-1]) || uint64(r) >= math.MaxUint32 {
			return volRuns{}
		}
		start, vs = append(start, uint32(r)), append(vs, v)
	}
	if len(start) == 0 {
		return volRuns{}
	}
	start = append(start, math.MaxUint32)
	// At most 65,536 buckets: 64 KiB of table.
	shift := uint8(0)
	for len(vol)>>shift > 1<<16 {
		shift++
	}
	at := make([]uint8, len(vol)>>shift+1)
	run := 0
	for b := range at {
		for uint64(start[run+1]) <= uint64(b)<<shift {
			run++
		}
		at[b] = uint8(run)
	}
	return volRuns{start: start, vol: vs, at: at, shift: shift}
}

// ok reports whether v holds the runs.
func (v *volRuns) ok() bool { return v.at != nil }

// of is the smoothed volume of rank r; v must hold the runs.
func (v *volRuns) of(r uint32) uint64 {
	i := int(v.at[r>>v.shift])
	for v.start[i+1] <= r {
		i++
	}
	return v.vol[i]
}
