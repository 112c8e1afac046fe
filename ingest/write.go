package ingest

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/lake"
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
// rows are written sorted by keyword (byte order). recs is reordered and
// reused in place; callers must not use it afterwards.
func WriteKeywords(ctx context.Context, data, country, date string, recs []kw.KeywordRecord) (WriteResult, error) {
	slices.SortStableFunc(recs, func(a, b kw.KeywordRecord) int { return strings.Compare(a.Keyword, b.Keyword) })
	out := recs[:0]
	for i := 0; i < len(recs); {
		best, j := i, i+1
		for ; j < len(recs) && recs[j].Keyword == recs[i].Keyword; j++ {
			if kw.MoreVolume(recs[j].Volume, recs[best].Volume) {
				best = j
			}
		}
		r := recs[best]
		// A source without change figures (the Google Ads API gives only
		// the series) gets them from its series; the planner export states
		// or computes its own, and its "--" stays null.
		if r.Source != SourcePlanner && r.YoYChange == nil && r.ThreeMonthChange == nil {
			r.YoYChange, r.ThreeMonthChange = kw.Changes(r.Monthly)
		}
		out = append(out, r)
		i = j
	}
	res := WriteResult{Keywords: len(out), Rows: len(out), Duplicates: len(recs) - len(out)}
	clear(recs[len(out):]) // drop references the partition does not need
	w, err := lake.Create[kw.KeywordRecord](data, kw.DatasetKeywords, country, date)
	if err != nil {
		return res, fmt.Errorf("cannot write keywords of %s: %w", country, err)
	}
	for len(out) > 0 {
		if err := ctx.Err(); err != nil {
			w.Abort()
			return res, err
		}
		n := min(len(out), writeBatch)
		if err := w.Write(out[:n]...); err != nil {
			w.Abort()
			return res, fmt.Errorf("cannot write keywords of %s: %w", country, err)
		}
		out = out[n:]
	}
	if err := w.Commit(); err != nil {
		return res, fmt.Errorf("cannot write keywords of %s: %w", country, err)
	}
	return res, nil
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
