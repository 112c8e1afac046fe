// Package similarity owns the similarity stage of kwdata: for every keyword
// of a country its related keywords and its intent leader. Compute is the
// exact, fast implementation; Brute compares every pair and is kept as the
// test oracle; Run reads the lake, computes and writes the related and
// intents datasets.
//
// The rules, which every implementation here must meet exactly:
//
//   - overlap(a, b) is the number of distinct URL keys (kw.URLKey) that the
//     top-20 results of a and b have in common.
//   - related(k) is the first 10 of the keywords with overlap(k, c) ≥ 1,
//     ranked by overlap descending, then by closeness of smoothed volume
//     max(v_k+1, v_c+1) / min(v_k+1, v_c+1) ascending, then volume
//     descending, then text ascending. A missing volume ranks as 0.
//   - a pair is same_intent when overlap ≥ 8 (DefaultMinOverlap) and the
//     smoothed volume ratio is at most 2 (DefaultMaxRatio).
//   - intent leaders: keywords are taken by volume descending, then text
//     ascending; a keyword not yet in a group leads a new one, and every
//     keyword not yet in a group that is same_intent with it joins it.
//     Every keyword has a leader, itself when it leads.
package similarity

import (
	"io"
	"log/slog"
	"math/bits"
	"runtime"
)

// Keyword is one keyword of a country as the stage sees it.
type Keyword struct {
	Text string // normalized; unique within one Compute call
	// Volume is the monthly searches; negative when the source gave none
	// (NoValue), which ranks as 0 and is written as null.
	Volume int64
	// CPCMicros is the CPC; negative when the source gave none, written as
	// null.
	CPCMicros int64
}

// NoValue is a Keyword's Volume or CPCMicros when the source gave none.
const NoValue = -1

// valueOf turns a Keyword's number into the nullable column the related
// dataset holds. It points into the keyword itself, so that ten related
// rows a keyword cost no allocation.
func valueOf(v *int64) *int64 {
	if *v < 0 {
		return nil
	}
	return v
}

// Defaults of the same-intent test, which the command line
// offers as flags.
const (
	DefaultMinOverlap = 8
	DefaultMaxRatio   = 2
)

// Options tunes Compute, Brute and Run. The zero value means every default;
// withDefaults fills them in.
type Options struct {
	// MinOverlap is the least overlap of a same-intent pair. Default
	// DefaultMinOverlap.
	MinOverlap int
	// MaxRatio bounds the smoothed volume ratio max(v+1)/min(v+1) of a
	// same-intent pair. Default DefaultMaxRatio.
	MaxRatio int64
	// TopK is how many related keywords each keyword keeps. Default 10.
	TopK int
	// Workers is the number of goroutines that compute. Default
	// runtime.GOMAXPROCS(0).
	Workers int
	// BatchSize is the number of keywords in one unit of work. Default 256.
	// The output never depends on it; it exists so tests can prove that.
	BatchSize int
	// Logger receives structured progress lines. Default: discard.
	Logger *slog.Logger
	// Progress, if not nil, is called from one goroutine with the number of
	// keywords done and the total, after every batch.
	Progress func(done, total int)

	// hubMinDF overrides the least number of SERPs a URL must appear in to
	// become a hub (0: chosen from the corpus size). Tests lower it so that
	// small corpora exercise the hub paths.
	hubMinDF int
	// maxHubs overrides the most hubs (0: defaultMaxHubs; -1: no hubs).
	maxHubs int
	// noCut makes the light pass walk every light URL of every keyword,
	// so tests can check that the cut changes no output.
	noCut bool
	// noVolRuns makes the engine read every volume by rank, as where
	// they take too many values for volRuns, so tests cover both ways.
	noVolRuns bool
	// finish overrides how a cut finishes the seen candidates' counts
	// (0: by cost, finishIntersect or finishWalk: always that way), so
	// tests cover both ways on small corpora.
	finish int
}

// defaultMaxHubs caps the hub bit mask at four words a keyword. On the 1M
// sample, 512 or 1,024 hubs cost 30–45% more CPU (hub search, wider masks)
// than they save in light counting, and 64 or 128 save nothing.
const defaultMaxHubs = 256

func (o Options) withDefaults() Options {
	if o.MinOverlap <= 0 {
		o.MinOverlap = DefaultMinOverlap
	}
	if o.MaxRatio <= 0 {
		o.MaxRatio = DefaultMaxRatio
	}
	if o.TopK <= 0 {
		o.TopK = 10
	}
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 256
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.maxHubs == 0 {
		o.maxHubs = defaultMaxHubs
	}
	return o
}

// smooth is the smoothed volume v+1 that closeness and the intent ratio use.
// Negative volumes (never produced by ingest) count as 0.
// rankVolume is the volume a keyword ranks by: a missing (negative) one
// ranks as 0.
func rankVolume(v int64) int64 { return max(v, 0) }

func smooth(v int64) uint64 {
	if v < 0 {
		return 1
	}
	return uint64(v) + 1
}

// cmpRatio compares hi1/lo1 with hi2/lo2 exactly, by cross-multiplying into
// 128 bits (smoothed volumes reach 1e10, so the products overflow 64 bits).
func cmpRatio(hi1, lo1, hi2, lo2 uint64) int {
	a1, a0 := bits.Mul64(hi1, lo2)
	b1, b0 := bits.Mul64(hi2, lo1)
	switch {
	case a1 < b1 || (a1 == b1 && a0 < b0):
		return -1
	case a1 > b1 || (a1 == b1 && a0 > b0):
		return 1
	}
	return 0
}

// hiLo orders two smoothed volumes: the closeness of a pair is hi/lo.
func hiLo(a, b uint64) (hi, lo uint64) {
	if a >= b {
		return a, b
	}
	return b, a
}

// ratioWithin reports whether hi <= maxRatio*lo, exactly.
func ratioWithin(hi, lo uint64, maxRatio int64) bool {
	p1, p0 := bits.Mul64(uint64(maxRatio), lo)
	return p1 > 0 || hi <= p0
}
