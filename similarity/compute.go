package similarity

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kwdata/kwdata/internal/prefetch"
	"github.com/kwdata/kwdata/kw"
)

// Compute returns every keyword's related keywords (sorted by keyword text,
// then rank) and every keyword's intent leader (sorted by keyword text), as
// the package doc defines them and exactly as Brute would. keywords[i] has the SERP
// serps[i]: URL keys, possibly nil or empty, possibly with duplicates (they
// count once). Keyword texts must be unique. The output does not depend on
// opt.Workers or opt.BatchSize.
func Compute(ctx context.Context, keywords []Keyword, serps [][]string, opt Options) ([]kw.RelatedRow, []kw.IntentRow, error) {
	opt = opt.withDefaults()
	c, err := newCorpus(keywords, serps)
	if err != nil {
		return nil, nil, err
	}
	related := make([]kw.RelatedRow, 0, len(keywords)*opt.TopK)
	res, err := computeCorpus(ctx, c, opt, func(rows []kw.RelatedRow) error {
		related = append(related, rows...)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	intents := make([]kw.IntentRow, 0, len(keywords))
	err = res.intents(len(keywords), func(rows []kw.IntentRow) error {
		intents = append(intents, rows...)
		return nil
	})
	return related, intents, err
}

// result is what remains of a computation once the related rows are out.
type result struct {
	e           *engine
	leader      []uint32 // by rank: the leader's rank
	overlap     []uint32 // by rank: the overlap with the leader (a leader's own URL count)
	relatedRows int
	leaders     int
}

// intents hands the intent rows to emit in keyword text order, in chunks of
// at most chunk rows.
func (r *result) intents(chunk int, emit func([]kw.IntentRow) error) error {
	return r.intentsOf(0, len(r.e.byText), chunk, emit)
}

// intentsOf is intents for the keywords from lo to hi in text order.
func (r *result) intentsOf(lo, hi, chunk int, emit func([]kw.IntentRow) error) error {
	e := r.e
	chunk = max(1, min(chunk, 64*1024))
	buf := make([]kw.IntentRow, 0, chunk)
	for _, k := range e.byText[lo:hi] {
		buf = append(buf, kw.IntentRow{
			Keyword: e.kws[e.idx[k]].Text,
			Intent:  e.kws[e.idx[r.leader[k]]].Text,
			Overlap: int32(r.overlap[k]),
		})
		if len(buf) == chunk {
			if err := emit(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	if len(buf) > 0 {
		return emit(buf)
	}
	return nil
}

// computeCorpus runs the engine over a corpus, handing the related rows to
// emit in keyword text order, one batch at a time, then clusters intents.
func computeCorpus(ctx context.Context, c *corpus, opt Options, emit func([]kw.RelatedRow) error) (*result, error) {
	start := time.Now()
	log := opt.Logger
	e, err := newEngine(c, opt)
	if err != nil {
		return nil, err
	}
	log.Info("similarity prepared",
		"keywords", e.n, "urls", c.nURL, "hubs", e.hubs, "hub_min_df", e.hubMinDF,
		"hub_groups", len(e.gOff)-1, "light_postings", len(e.pKw), "light_work", e.lightWork,
		"workers", opt.Workers, "elapsed", time.Since(start).Round(time.Millisecond))
	for _, p := range e.phases {
		log.Debug("similarity phase", "phase", p.name, "elapsed", p.elapsed.Round(time.Millisecond))
	}
	res := &result{e: e}
	fwd, err := e.stream(ctx, func(rows []kw.RelatedRow) error {
		res.relatedRows += len(rows)
		return emit(rows)
	})
	if err != nil {
		return nil, err
	}
	pairs := 0
	for _, f := range fwd {
		pairs += len(f) / 3
	}
	// The leader pass and the intent rows need only the rank order, the
	// texts and the URL counts. Dropping the postings and hub groups first,
	// and collecting them at once on a large corpus, keeps them from
	// setting the heap goal while the adjacency arrays are built: at 10M
	// keywords that goal had reached 9 GB.
	e.dropSearch()
	returnMemory(e.n)
	res.leader, res.overlap, res.leaders = e.cluster(fwd)
	log.Info("similarity computed", "keywords", e.n, "related_rows", res.relatedRows,
		"same_intent_pairs", pairs, "leaders", res.leaders,
		"cut_keywords", e.cutKeywords.Load(), "cut_postings", e.cutPostings.Load(),
		"elapsed", time.Since(start).Round(time.Millisecond))
	return res, nil
}

// rowAhead is how many rows ahead batch fetches a related keyword.
const rowAhead = 8

// batchOut is one batch's output.
type batchOut struct {
	b    int
	rows []kw.RelatedRow
	fwd  []uint32
}

// stream computes all keywords on opt.Workers goroutines, in batches of
// keywords in text order, and hands each batch's rows to emit in order; emit
// must not keep the slice after it returns. It returns the same-intent
// follower triples (k, c, overlap), flattened, one slice a batch.
func (e *engine) stream(ctx context.Context, emit func([]kw.RelatedRow) error) ([][]uint32, error) {
	opt := e.opt
	bs := opt.BatchSize
	nb := (e.n + bs - 1) / bs
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// sem bounds the batches computed but not yet emitted. Batches are taken
	// in order after a slot is held, so the next batch to emit always holds
	// one and the pipeline cannot stall.
	sem := make(chan struct{}, 4*opt.Workers)
	results := make(chan batchOut, 4*opt.Workers)
	// free recycles row buffers once emitted, which keeps the garbage
	// collector out of the way at millions of rows.
	free := make(chan []kw.RelatedRow, 8*opt.Workers)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range opt.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wk := e.newWorker()
			for {
				select {
				case sem <- struct{}{}:
				case <-ctx.Done():
					return
				}
				b := int(next.Add(1) - 1)
				if b >= nb {
					<-sem
					return
				}
				var buf []kw.RelatedRow
				select {
				case buf = <-free:
				default:
				}
				out := wk.batch(b, buf[:0])
				select {
				case results <- out:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	go func() {
		wg.Wait()
		close(results)
	}()
	pending := map[int]batchOut{}
	// The batches' pairs stay in their own slices: appending them to one
	// would copy them, and hold twice their size while it grows (at 10M
	// keywords, about 70M pairs of 12 bytes).
	var fwd [][]uint32
	want, done := 0, 0
	var err error
	for out := range results {
		if err != nil {
			continue // drain until the workers have stopped
		}
		pending[out.b] = out
		for {
			o, ok := pending[want]
			if !ok {
				break
			}
			delete(pending, want)
			if err = emit(o.rows); err != nil {
				cancel()
				break
			}
			if len(o.fwd) > 0 {
				fwd = append(fwd, o.fwd)
			}
			select {
			case free <- o.rows:
			default:
			}
			<-sem
			want++
			done = min(e.n, done+bs)
			if opt.Progress != nil {
				opt.Progress(done, e.n)
			}
		}
	}
	if err == nil && want < nb {
		err = ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	return fwd, nil
}

// batch computes batch b of the keywords in text order.
//
// The rows are made once every keyword of the batch is ranked: a related
// keyword's text, volume and CPC are two random reads (its input index,
// then the keyword), which at 10M keywords were a tenth of the stage
// while each waited for the last; with the whole batch's top-Ks known
// they are fetched rowAhead rows (and its index 2·rowAhead rows) before
// they are needed.
func (w *worker) batch(b int, rows []kw.RelatedRow) batchOut {
	e := w.e
	bs := e.opt.BatchSize
	ks := e.byText[b*bs : min(e.n, (b+1)*bs)]
	out := batchOut{b: b, rows: rows}
	w.fwd = w.fwd[:0]
	minO := int32(e.opt.MinOverlap)
	tops, ends := w.tops[:0], w.ends[:0]
	for i, k := range ks {
		w.fetchNext(ks, i)
		w.one(k)
		tops = append(tops, w.top...)
		ends = append(ends, len(tops))
	}
	w.tops, w.ends = tops, ends
	j := 0
	for i, k := range ks {
		text := e.kws[e.idx[k]].Text
		for r := 1; j < ends[i]; r++ {
			if j+2*rowAhead < len(tops) {
				prefetch.At(e.idx, int(tops[j+2*rowAhead].c))
			}
			if j+rowAhead < len(tops) {
				prefetch.At(e.kws, int(e.idx[tops[j+rowAhead].c]))
			}
			x := &tops[j]
			j++
			rk := &e.kws[e.idx[x.c]]
			out.rows = append(out.rows, kw.RelatedRow{
				Keyword: text, Rank: int32(r), Related: rk.Text, Overlap: x.o,
				Volume: valueOf(&rk.Volume), CPCMicros: valueOf(&rk.CPCMicros),
				SameIntent: x.o >= minO && ratioWithin(x.hi, x.lo, e.opt.MaxRatio),
			})
		}
	}
	// A batch's pairs are kept until the leader pass: copied to their exact
	// size, so the append slack of the worker's buffer is not kept with
	// them (at 10M keywords, 164M pairs).
	out.fwd = slices.Clone(w.fwd)
	w.fwd = w.fwd[:0]
	e.cutKeywords.Add(w.cutKeywords)
	e.cutPostings.Add(w.cutPostings)
	w.cutKeywords, w.cutPostings = 0, 0
	return out
}

// cluster runs the leader pass over the same-intent follower triples (k,
// c, overlap), in slices, and returns each rank's leader rank, its overlap
// with the leader (a leader's: its own URL count) and the number of
// leaders. It drops the slices of fwd as it consumes them.
func (e *engine) cluster(fwd [][]uint32) ([]uint32, []uint32, int) {
	n := e.n
	off := bigSlice[uint32](n + 1)
	for _, f := range fwd {
		for i := 0; i < len(f); i += 3 {
			off[f[i]+1]++
		}
	}
	for k := 0; k < n; k++ {
		off[k+1] += off[k]
	}
	adj := bigSlice[uint32](int(off[n]))
	ov := bigSlice[uint32](int(off[n]))
	fill := bigSlice[uint32](n)
	copy(fill, off[:n])
	for j, f := range fwd {
		for i := 0; i < len(f); i += 3 {
			adj[fill[f[i]]] = f[i+1]
			ov[fill[f[i]]] = f[i+2]
			fill[f[i]]++
		}
		fwd[j] = nil
	}
	const none = ^uint32(0)
	leader := bigSlice[uint32](n)
	overlap := bigSlice[uint32](n)
	for i := range leader {
		leader[i] = none
	}
	leaders := 0
	for k := uint32(0); int(k) < n; k++ {
		if leader[k] != none {
			continue
		}
		leader[k] = k
		overlap[k] = uint32(e.urlCount(k))
		leaders++
		for j := off[k]; j < off[k+1]; j++ {
			if c := adj[j]; leader[c] == none {
				leader[c], overlap[c] = k, ov[j]
			}
		}
	}
	return leader, overlap, leaders
}

// dropSearch releases what only the search for related keywords reads.
func (e *engine) dropSearch() {
	e.lURL, e.pOff, e.pKw = nil, nil, nil
	e.gMask, e.gOff, e.gKw, e.gVol = nil, nil, nil, nil
	e.hOff, e.hGrp, e.hGMask, e.hGFold = nil, nil, nil, nil
	e.hkOff, e.hk, e.hkKey = nil, nil, nil
	e.meta, e.vol = nil, nil
}

// urlCount is the number of distinct URL keys of rank k's SERP: its light
// URLs and its hubs.
func (e *engine) urlCount(k uint32) int32 {
	W := e.w
	m := e.mask[int(k)*W : int(k)*W+W]
	return int32(e.lOff[k+1]-e.lOff[k]) + shared(m, m)
}

// fetchNext asks, while ks[i] is searched, for what the search of the next
// keywords reads first, each at random: the light URLs' offset of ks[i+3],
// the light URLs of ks[i+2] (whose offset is then in cache), and the
// posting offsets of each light URL, the kmeta and the mask of ks[i+1].
// Reading the posting offsets to size the walk had been a cache miss a
// URL. On a million web keywords the search took 0.95 times as long (five
// rounds, one worker, in one process).
func (w *worker) fetchNext(ks []uint32, i int) {
	e := w.e
	if i+3 < len(ks) {
		prefetch.At(e.lOff, int(ks[i+3]))
	}
	if i+2 < len(ks) {
		k := ks[i+2]
		prefetch.At(e.lURL, int(e.lOff[k]))
		prefetch.At(e.lURL, int(e.lOff[k+1])-1)
	}
	if i+1 < len(ks) {
		k := ks[i+1]
		for _, l := range e.lURL[e.lOff[k]:e.lOff[k+1]] {
			prefetch.At(e.pOff, int(l))
		}
		prefetch.At(e.meta, int(k))
		prefetch.At(e.mask, int(k)*e.w)
	}
}
