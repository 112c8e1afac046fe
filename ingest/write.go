package ingest

import (
	"context"
	"math"

	"github.com/kwdata/kwdata/kw"
)

// SERP is one keyword's organic results in one country, as every SERP
// source produces them.
type SERP struct {
	Keyword string       // normalized
	Rows    []kw.SERPRow // at most kw.MaxRank, in rank order
}

// WriteResult counts what a writer put into the lake.
type WriteResult struct {
	Keywords   int // distinct keywords written
	Rows       int // rows written
	Duplicates int // records or SERPs dropped for another of the same keyword
}

// writeBatch is the number of rows handed to the lake writer at a time.
const writeBatch = 64 * 1024

// WriteKeywords writes recs as the keywords partition of country and date,
// atomically, replacing a partition of the same date. It keeps one record
// a keyword: the one with the largest volume (a row without one counts
// below a volume of 0), the first in recs on ties;
// rows are written sorted by keyword (byte order). recs is not changed.
func WriteKeywords(ctx context.Context, data, country, date string, recs []kw.KeywordRecord) (WriteResult, error) {
	w := newKeywordWriter(data, country, date, math.MaxInt)
	defer w.abort()
	for i := range recs {
		if err := w.add(&recs[i], 0); err != nil {
			return WriteResult{}, err
		}
	}
	return w.commit(ctx)
}

// WriteSERPs writes serps as the serps partition of country and date,
// atomically, replacing a partition of the same date. It keeps the last
// SERP with rows of each keyword in serps (the newest, when sources append
// as they fetch), or the last one when none has rows; rows are written sorted by keyword, then rank, with their Keyword
// set to their SERP's. serps and the rows are reordered and reused in
// place; callers must not use them afterwards. SERPWriter does the same
// for more SERPs than fit in memory.
func WriteSERPs(ctx context.Context, data, country, date string, serps []SERP) (WriteResult, error) {
	w := NewSERPWriter(data, country, date, math.MaxInt)
	defer w.Abort()
	for _, s := range serps {
		if err := w.Add(s); err != nil {
			return WriteResult{}, err
		}
	}
	return w.Commit(ctx)
}
