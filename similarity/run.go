package similarity

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/kwdata/kwdata/internal/prefetch"
	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/lake"
)

// RunOptions says which lake partitions Run reads and writes.
type RunOptions struct {
	// Data is the data folder that holds the lake. Required.
	Data string
	// Date is the data date (YYYY-MM-DD) whose keywords are compared and
	// whose related and intents partitions are written. Required.
	Date string
	// Countries limits the run to these country codes (either case).
	// Default: every country with a keywords partition on Date.
	Countries []string
	// MaxAgeDays is the oldest SERP used, in days before Date: a SERP dated
	// Date-MaxAgeDays counts, one a day older does not. Default
	// kw.DefaultSERPMaxAgeDays.
	MaxAgeDays int
	// Options tunes the computation; see Options for its defaults.
	Options
}

// RunStats reports one country's run.
type RunStats struct {
	Country     string // lower case, as in the lake
	Keywords    int    // keywords with a record on Date
	WithSERP    int    // of those, keywords with a SERP within MaxAgeDays
	RelatedRows int
	Duration    time.Duration
}

// Run is the similarity stage: for each country it reads the keywords
// partition of Date and, for every keyword, its newest SERP among the serps
// partitions dated within MaxAgeDays up to and including Date; computes as
// Compute does; and writes the related and intents partitions of Date, each
// atomically. Only keywords with a record are compared; SERP rows of other
// keywords are ignored. Progress restarts at zero for each country.
func Run(ctx context.Context, opt RunOptions) ([]RunStats, error) {
	if opt.Data == "" {
		return nil, errors.New("no data folder given; pass the folder that holds lake/")
	}
	day, err := time.Parse(kw.DateLayout, opt.Date)
	if err != nil {
		return nil, fmt.Errorf("cannot use date %q; want YYYY-MM-DD: %w", opt.Date, err)
	}
	if opt.MaxAgeDays <= 0 {
		opt.MaxAgeDays = kw.DefaultSERPMaxAgeDays
	}
	opt.Options = opt.Options.withDefaults()
	countries := opt.Countries
	if len(countries) == 0 {
		countries, err = lake.Countries(opt.Data, kw.DatasetKeywords, opt.Date)
		if err != nil {
			return nil, fmt.Errorf("cannot list countries of %s: %w", opt.Date, err)
		}
		if len(countries) == 0 {
			return nil, fmt.Errorf("no keywords partition on %s in %s; run kwdata ingest first", opt.Date, kw.LakeDir(opt.Data))
		}
	}
	var stats []RunStats
	for _, cc := range countries {
		cc = strings.ToLower(cc)
		if _, ok := kw.LookupCountry(cc); !ok {
			return stats, fmt.Errorf("cannot compute country %q: not a supported country code", cc)
		}
		st, err := runCountry(ctx, opt, cc, day)
		if err != nil {
			return stats, fmt.Errorf("cannot compute similarity of %s on %s: %w", cc, opt.Date, err)
		}
		stats = append(stats, st)
	}
	return stats, nil
}

// readKeywords reads the keyword, volume and CPC of a keywords partition
// in the lake's order, decoding row groups on workers goroutines. Each row
// group's texts share one string, so a keyword costs no allocation of its
// own.
func readKeywords(ctx context.Context, data, cc, date string, workers int) ([]Keyword, error) {
	n, err := lake.Rows(data, kw.DatasetKeywords, cc, date)
	if err != nil {
		return nil, err
	}
	// The related rows read ten keywords of this array, and their texts,
	// at random a keyword: on huge pages, most of those reads do not also
	// miss the TLB.
	kws := bigSlice[Keyword](int(n))[:0]
	var arena textArena
	decode := func(b *lake.Batch) error {
		group, _ := b.Aux.([]Keyword)
		group = group[:0]
		size := 0
		for r := range b.Rows {
			size += len(b.Bytes(0, r))
		}
		buf := arena.alloc(size)
		for r := range b.Rows {
			buf = append(buf, b.Bytes(0, r)...)
		}
		// The arena's bytes are never written again.
		texts, at := unsafe.String(unsafe.SliceData(buf), len(buf)), 0
		for r := range b.Rows {
			k := Keyword{Text: texts[at : at+len(b.Bytes(0, r))], Volume: NoValue, CPCMicros: NoValue}
			at += len(k.Text)
			if v, ok := b.Int64(1, r); ok {
				k.Volume = v
			}
			if v, ok := b.Int64(2, r); ok {
				k.CPCMicros = v
			}
			group = append(group, k)
		}
		b.Aux = group
		return nil
	}
	err = lake.Scan(ctx, data, kw.DatasetKeywords, cc, date, []string{"keyword", "volume?", "cpc_micros?"},
		lake.ScanOptions{Workers: workers, Decode: decode},
		func(b *lake.Batch) error {
			kws = append(kws, b.Aux.([]Keyword)...)
			return nil
		})
	return kws, err
}

// textArena hands out the room for keyword texts from chunks on huge
// pages (bigSlice), each twice the last, from 1 MiB up to 64 MiB. The
// related rows' texts are read at random over all of them: at 10M web
// keywords, with the texts in the heap's 4 KiB pages, copying them was
// the largest part of writing those rows, itself a quarter of the stage's
// CPU, and writing 8M such rows took 0.67–0.91 times as long with the
// texts on huge pages (six alternated rounds, median 0.84). It is safe
// for concurrent use.
type textArena struct {
	mu    sync.Mutex
	chunk []byte
}

// alloc returns an empty slice with room for n bytes.
func (a *textArena) alloc(n int) []byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	if cap(a.chunk)-len(a.chunk) < n {
		size := min(max(2*cap(a.chunk), 1<<20), 64<<20)
		a.chunk = bigSlice[byte](max(size, n))[:0]
	}
	s := a.chunk[len(a.chunk) : len(a.chunk) : len(a.chunk)+n]
	a.chunk = a.chunk[:len(a.chunk)+n]
	return s
}

func runCountry(ctx context.Context, opt RunOptions, cc string, day time.Time) (RunStats, error) {
	start := time.Now()
	log := opt.Logger.With("country", cc, "date", opt.Date)
	st := RunStats{Country: cc}
	kws, err := readKeywords(ctx, opt.Data, cc, opt.Date, opt.Workers)
	if err != nil {
		return st, fmt.Errorf("cannot read keywords: %w", err)
	}
	st.Keywords = len(kws)
	c, withSERP, err := readSERPs(ctx, opt, cc, day, kws, log)
	if err != nil {
		return st, err
	}
	st.WithSERP = withSERP
	// Reading leaves garbage larger than the corpus (the URL tables, at
	// 10M keywords 2 GiB): collected now, not once the engine's
	// allocations had doubled the heap.
	collect(len(kws))
	log.Info("similarity input read", "keywords", len(kws), "with_serp", withSERP,
		"elapsed", time.Since(start).Round(time.Millisecond))

	rw, err := lake.Create[kw.RelatedRow](opt.Data, kw.DatasetRelated, cc, opt.Date)
	if err != nil {
		return st, err
	}
	defer rw.Abort() // no-op once committed
	iw, err := lake.Create[kw.IntentRow](opt.Data, kw.DatasetIntents, cc, opt.Date)
	if err != nil {
		return st, err
	}
	defer iw.Abort()
	o := opt.Options
	o.Logger = log
	res, err := computeCorpus(ctx, c, o, func(rows []kw.RelatedRow) error { return writeRelated(rw, rows) })
	if err != nil {
		return st, err
	}
	// The intent rows are made and written in as many sections as there
	// are workers, each at least intentSection rows: nothing else is left
	// to run beside them, and on one goroutine they had kept one core of
	// two idle for the last few tenths of a second of a run at 1M web
	// keywords (0.40-0.43 s from "similarity computed" to "similarity
	// written", against 0.24-0.34 s in two sections; three alternated
	// pairs).
	n := len(res.e.byText)
	parts := max(1, min(opt.Workers, n/intentSection))
	sizes := make([]int, parts)
	for i := range sizes {
		sizes[i] = section(n, parts, i+1) - section(n, parts, i)
	}
	if err := iw.WriteSections(sizes, func(i int, emit func([]kw.IntentRow) error) error {
		lo := section(n, parts, i)
		return res.intentsOf(lo, lo+sizes[i], 64*1024, emit)
	}); err != nil {
		return st, err
	}
	if err := rw.Commit(); err != nil {
		return st, err
	}
	if err := iw.Commit(); err != nil {
		return st, err
	}
	st.RelatedRows = res.relatedRows
	st.Duration = time.Since(start)
	log.Info("similarity written", "keywords", st.Keywords, "with_serp", st.WithSERP,
		"related_rows", st.RelatedRows, "leaders", res.leaders, "elapsed", st.Duration.Round(time.Millisecond))
	return st, nil
}

// intentSection is the fewest intent rows a section of its own is worth:
// below, a partition stays one file. Tests lower it.
var intentSection = 1 << 18

// readSERPs builds the corpus of kws: each keyword's newest SERP dated
// within MaxAgeDays up to day. Of that SERP's rows, in the lake's order
// (by rank), it keeps those whose rank is in the top kw.MaxRank (kw.InTop),
// at most kw.MaxRank of them; rows without a url_key are skipped and not
// counted.
func readSERPs(ctx context.Context, opt RunOptions, cc string, day time.Time, kws []Keyword, log interface {
	Info(string, ...any)
}) (*corpus, int, error) {
	dates, err := lake.Dates(opt.Data, kw.DatasetSERPs, cc)
	if err != nil {
		return nil, 0, fmt.Errorf("cannot list SERP dates: %w", err)
	}
	oldest := day.AddDate(0, 0, -opt.MaxAgeDays)
	var use []string
	for _, d := range dates {
		t, err := time.Parse(kw.DateLayout, d)
		if err != nil || t.After(day) || t.Before(oldest) {
			continue
		}
		use = append(use, d)
	}
	slices.Reverse(use) // newest first

	// SERP rows are matched to keywords on the decoding goroutines: by a
	// forward merge with the sorted keyword list while rows arrive sorted
	// (the lake's order), by binary search when they jump back, and through
	// a map if the keywords themselves are not sorted.
	sorted := slices.IsSortedFunc(kws, func(a, b Keyword) int { return strings.Compare(a.Text, b.Text) })
	var byText map[string]uint32
	if !sorted {
		byText = make(map[string]uint32, len(kws))
		for i, k := range kws {
			byText[k.Text] = uint32(i)
		}
	}
	// The builder's ids get room at once for as many rows as may be kept
	// (every row, at most kw.MaxRank a keyword), which costs only the pages
	// the kept rows touch.
	rows := int64(0)
	for _, d := range use {
		n, err := lake.Rows(opt.Data, kw.DatasetSERPs, cc, d)
		if err != nil {
			return nil, 0, fmt.Errorf("cannot read SERPs of %s: %w", d, err)
		}
		rows += n
	}
	b := corpusBuilder{kws: kws, urls: bigSlice[uint32](int(min(rows, int64(len(kws))*kw.MaxRank)))[:0]}
	// The interner's tables start sized for one distinct URL every two rows
	// kept, about what the web shape has (at a million keywords, 9.8M URLs
	// in 19M rows): no growth there, one doubling at most where URLs are
	// rarer, and where they are more shared a table no larger than the
	// web shape's of as many rows.
	urls := newShardedInterner(opt.Workers, cap(b.urls)/2)
	defer urls.stop()
	var inFlight *internBatch
	// from[i] is 1 + the position in use of the date keyword i's SERP came
	// from; rows of older dates for that keyword are skipped. kept[i] is the
	// number of rows of that SERP kept so far: it is only ever non-zero for
	// the date from[i] names.
	from := make([]uint32, len(kws))
	kept := make([]uint8, len(kws))
	withSERP, badURLs := 0, 0
	for di, d := range use {
		tag := uint32(di + 1)
		// Each batch is matched to keywords on the reading goroutines.
		match := func(cb *lake.Batch) error {
			m, _ := cb.Aux.(*serpMatch)
			if m == nil {
				m = &serpMatch{}
				cb.Aux = m
			}
			m.match(cb, kws, sorted, byText, urls)
			return nil
		}
		err := lake.Scan(ctx, opt.Data, kw.DatasetSERPs, cc, d, []string{"keyword", "url_key", "rank"},
			lake.ScanOptions{Workers: opt.Workers, Decode: match},
			func(cb *lake.Batch) error {
				m := cb.Aux.(*serpMatch)
				ib := urls.batch(len(b.urls))
				for j, i := range m.kw {
					if i < 0 || (from[i] != 0 && from[i] != tag) || !kw.InTop(m.rank[j]) || kept[i] >= kw.MaxRank {
						continue
					}
					if m.h[j] == emptyURL {
						badURLs++ // ingest always writes url_key; nothing to compare
						continue
					}
					if from[i] == 0 {
						from[i] = tag
						withSERP++
					}
					kept[i]++
					b.add(int(i), 0)
					urls.add(ib, m.h[j])
				}
				// The shards intern this batch while the previous one's ids
				// are written and the next one is filtered.
				urls.send(ib)
				if inFlight != nil {
					urls.finish(inFlight, b.urls)
				}
				inFlight = ib
				return nil
			})
		if err != nil {
			return nil, 0, fmt.Errorf("cannot read SERPs of %s: %w", d, err)
		}
	}
	if inFlight != nil {
		urls.finish(inFlight, b.urls)
	}
	if badURLs > 0 {
		log.Info("similarity skipped SERP rows without a url_key", "rows", badURLs)
	}
	nURL, ids, err := urls.close()
	if err != nil {
		return nil, 0, err
	}
	// The URL tables are garbage now (2 GiB at 10M keywords): returned
	// before build allocates its pass's array (8 bytes a URL) beside the
	// rows, or they set the peak. On a smaller corpus they are collected
	// and kept, and the array takes their pages: fresh pages, each a
	// fault, had been half of build's pass, which runs on one core.
	collect(len(kws))
	c, err := b.build(nURL, ids)
	return c, withSERP, err
}

// relatedChunk is how many related rows writeRelated hands the writer at
// a time: the 64 rows at which the writer may end a page, so the files'
// bytes are those of one call a batch. Writing 3M rows that point at
// random among 10M keywords took 0.80 of the time of one call a batch
// with chunks of 64, 0.90 with chunks of 256 (medians of five rounds).
const relatedChunk = 64

// writeRelated writes a batch of related rows, a chunk at a time, asking
// for the related keywords' texts and volumes of the next chunk before a
// chunk is written. Those are random reads over every keyword (at 10M
// keywords, gigabytes), and the writer copying them one row after another
// waited for each: at 10M web keywords those copies and reads were two
// thirds of the writer's CPU samples, a seventh of the stage's.
func writeRelated(w *lake.Writer[kw.RelatedRow], rows []kw.RelatedRow) error {
	fetchRelated(rows[:min(len(rows), relatedChunk)])
	for i := 0; i < len(rows); i += relatedChunk {
		end := min(len(rows), i+relatedChunk)
		fetchRelated(rows[end:min(len(rows), end+relatedChunk)])
		if err := w.Write(rows[i:end]...); err != nil {
			return err
		}
	}
	return nil
}

// fetchRelated asks for the first and the last bytes of each row's related
// text (which straddles two cache lines more often than not: 51 bytes on
// average at 10M web keywords) and for its volume and CPC (one keyword
// record). Asking for the last bytes too, writing 8M such rows took 0.92
// times as long (the median of three alternated rounds).
func fetchRelated(rows []kw.RelatedRow) {
	for i := range rows {
		r := &rows[i]
		prefetch.String(r.Related)
		if n := len(r.Related); n > 1 {
			prefetch.String(r.Related[n-1:])
		}
		if r.Volume != nil {
			prefetch.Of(r.Volume)
		} else {
			prefetch.Of(r.CPCMicros)
		}
	}
}

// emptyURL marks a SERP row without a url_key in serpMatch.h.
var emptyURL = [2]uint64{}

// serpMatch is one batch of SERP rows as keyword indexes (-1: no record),
// URL key hashes and ranks, worked out on the decoding goroutines.
type serpMatch struct {
	kw   []int32
	h    [][2]uint64
	rank []int32
}

func (m *serpMatch) match(cb *lake.Batch, kws []Keyword, sorted bool, byText map[string]uint32, urls *shardedInterner) {
	m.kw, m.h, m.rank = m.kw[:0], m.h[:0], m.rank[:0]
	var prev []byte
	idx := int32(-1)
	cur := 0 // sorted: the first keyword not below prev
	for r := range cb.Rows {
		k := cb.Bytes(0, r)
		if r == 0 || !bytes.Equal(k, prev) {
			switch {
			case !sorted:
				i, ok := byText[string(k)]
				idx = -1
				if ok {
					idx = int32(i)
				}
			default:
				if r == 0 || bytes.Compare(k, prev) < 0 {
					cur, _ = slices.BinarySearchFunc(kws, k, func(x Keyword, t []byte) int { return strings.Compare(x.Text, string(t)) })
				} else {
					for cur < len(kws) && kws[cur].Text < string(k) {
						cur++
					}
				}
				idx = -1
				if cur < len(kws) && kws[cur].Text == string(k) {
					idx = int32(cur)
				}
			}
			prev = k
		}
		m.kw = append(m.kw, idx)
		m.rank = append(m.rank, cb.Int32(2, r))
		if u := cb.Bytes(1, r); len(u) > 0 {
			m.h = append(m.h, urls.hash(u))
		} else {
			m.h = append(m.h, emptyURL)
		}
	}
}
