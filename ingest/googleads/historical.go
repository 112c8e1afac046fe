package googleads

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"

	"github.com/kwdata/kwdata/kw"
)

// HistoricalMetrics returns the keyword records of keywords in country, one
// per requested keyword the service knows, sorted by keyword.
//
// Keywords are normalized with kw.NormalizeKeyword (invalid ones are logged
// and skipped), deduplicated, sorted, and sent in batches of
// Options.BatchSize. Results are matched to requested keywords by text and
// close variants, never by position, so every requested keyword a result
// covers gets that result's record; where two results cover one keyword the
// larger volume wins. Bids and CPCs are USD micros: before its first request
// the client reads the account's currency, converts with Config.USDRate
// when it is not USD, and refuses the account when no rate is given. With
// Options.CheckpointDir set, each finished batch is saved, and a re-run for
// the same keywords loads finished batches instead of requesting them again.
func (c *Client) HistoricalMetrics(ctx context.Context, country kw.Country, keywords []string) ([]kw.KeywordRecord, error) {
	norm, bad := normalizeAll(keywords)
	if bad > 0 {
		c.log.Warn("skipped keywords that do not normalize", "country", country.Code, "count", bad)
	}
	slices.Sort(norm)
	var batches [][]string
	for i := 0; i < len(norm); i += c.opt.BatchSize {
		batches = append(batches, norm[i:min(i+c.opt.BatchSize, len(norm))])
	}
	cp := checkpoint{dir: c.opt.CheckpointDir, country: country.Code}
	var out []kw.KeywordRecord
	done := 0
	for i, batch := range batches {
		recs, ok, err := cp.load(i, batch)
		if err != nil {
			return nil, err
		}
		if ok {
			c.log.Debug("reusing checkpointed batch", "country", country.Code, "batch", i)
		} else {
			recs, err = c.historicalBatch(ctx, country, batch)
			if err != nil {
				var qe *QuotaExhaustedError
				if errors.As(err, &qe) {
					qe.BatchesDone, qe.BatchesTotal = done, len(batches)
				}
				return nil, fmt.Errorf("cannot fetch batch %d of %d for %s: %w", i+1, len(batches), country.Code, err)
			}
			if err := cp.save(i, batch, recs); err != nil {
				return nil, err
			}
		}
		out = append(out, recs...)
		done++
		if c.opt.Progress != nil {
			c.opt.Progress(done, len(batches))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Keyword < out[j].Keyword })
	return out, nil
}

func (c *Client) historicalBatch(ctx context.Context, country kw.Country, batch []string) ([]kw.KeywordRecord, error) {
	cur, err := c.accountCurrency(ctx)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(historicalMetricsRequest{
		Keywords:                 batch,
		GeoTargetConstants:       []string{"geoTargetConstants/" + strconv.FormatInt(country.GeoTarget, 10)},
		Language:                 "languageConstants/" + strconv.FormatInt(country.Language, 10),
		KeywordPlanNetwork:       "GOOGLE_SEARCH",
		HistoricalMetricsOptions: historicalMetricsOptions{IncludeAverageCpc: true},
	})
	if err != nil {
		return nil, fmt.Errorf("cannot encode request: %w", err)
	}
	resp, err := c.call(ctx, ":generateKeywordHistoricalMetrics", body)
	if err != nil {
		return nil, err
	}
	r, err := decodeHistoricalMetrics(resp)
	if err != nil {
		return nil, err
	}
	for _, res := range r.Results {
		if err := cur.toUSD(res.KeywordMetrics); err != nil {
			return nil, fmt.Errorf("cannot convert the amounts of %q: %w", res.Text, err)
		}
	}
	recs := matchResults(batch, r.Results)
	if missing := len(batch) - len(recs); missing > 0 {
		c.log.Debug("keywords without metrics", "country", country.Code, "count", missing)
	}
	return recs, nil
}

// matchResults gives every requested keyword the record of the result whose
// text or close variants name it (normalized). A keyword covered by several
// results keeps the largest volume, the first on ties. The output follows
// the order of requested.
func matchResults(requested []string, results []historicalResult) []kw.KeywordRecord {
	want := make(map[string]int, len(requested))
	for i, k := range requested {
		want[k] = i
	}
	best := make(map[string]kw.KeywordRecord)
	for _, r := range results {
		names := append([]string{r.Text}, r.CloseVariants...)
		seen := make(map[string]bool, len(names))
		for _, name := range names {
			k, err := kw.NormalizeKeyword(name)
			if err != nil || seen[k] {
				continue
			}
			seen[k] = true
			if _, ok := want[k]; !ok {
				continue
			}
			rec := toRecord(k, r.KeywordMetrics)
			if old, ok := best[k]; !ok || kw.MoreVolume(rec.Volume, old.Volume) {
				best[k] = rec
			}
		}
	}
	out := make([]kw.KeywordRecord, 0, len(best))
	for _, k := range requested {
		if rec, ok := best[k]; ok {
			out = append(out, rec)
		}
	}
	return out
}

// toRecord maps KeywordPlanHistoricalMetrics onto a keyword record.
// Absent values are nil, never zero, months the service has no
// volume for (monthlySearches null) included.
func toRecord(keyword string, m *keywordMetrics) kw.KeywordRecord {
	rec := kw.KeywordRecord{Keyword: keyword, Source: Source}
	if m == nil {
		return rec
	}
	nonNeg := func(v optInt64) *int64 {
		if !v.Valid {
			return nil
		}
		return kw.Ptr(max(v.V, 0))
	}
	rec.Volume = nonNeg(m.AvgMonthlySearches)
	if m.CompetitionIndex.Valid {
		rec.Competition = kw.Ptr(float64(min(max(m.CompetitionIndex.V, 0), 100)) / 100)
	}
	rec.CompetitionLevel = competitionLevel(m.Competition)
	rec.BidLowMicros = nonNeg(m.LowTopOfPageBidMicros)
	rec.BidHighMicros = nonNeg(m.HighTopOfPageBidMicros)
	switch low, high := rec.BidLowMicros, rec.BidHighMicros; {
	case m.AverageCpcMicros.Valid:
		rec.CPCMicros = nonNeg(m.AverageCpcMicros)
	case low != nil && high != nil:
		// Midpoint rounded half up; halves of a micro do not matter, but
		// the rule keeps the planner import and this client in step.
		rec.CPCMicros = kw.Ptr((*low + *high + 1) / 2)
	case low != nil:
		rec.CPCMicros = low
	case high != nil:
		rec.CPCMicros = high
	}
	rec.Monthly = monthly(m.MonthlySearchVolumes)
	return rec
}

// monthly converts MonthlySearchVolume entries to "YYYY-MM" oldest first;
// a month given twice keeps its last value, and a month without
// monthlySearches (the service has no figure for it) has nil searches, as
// a blank month of a planner export does.
func monthly(in []monthlySearchVolume) []kw.MonthlySearches {
	byMonth := make(map[string]*int64, len(in))
	for _, v := range in {
		mon := monthNumber(v.Month)
		if mon == 0 || !v.Year.Valid || v.Year.V < 1 || v.Year.V > 9999 {
			continue
		}
		var s *int64
		if v.MonthlySearches.Valid {
			s = kw.Ptr(max(v.MonthlySearches.V, 0))
		}
		byMonth[fmt.Sprintf("%04d-%02d", v.Year.V, mon)] = s
	}
	if len(byMonth) == 0 {
		return nil
	}
	out := make([]kw.MonthlySearches, 0, len(byMonth))
	for m, s := range byMonth {
		out = append(out, kw.MonthlySearches{Month: m, Searches: s})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Month < out[j].Month })
	return out
}

// normalizeAll normalizes and deduplicates keywords, keeping first
// occurrences in order, and counts those that do not normalize.
func normalizeAll(keywords []string) (out []string, bad int) {
	seen := make(map[string]bool, len(keywords))
	for _, k := range keywords {
		n, err := kw.NormalizeKeyword(k)
		if err != nil {
			bad++
			continue
		}
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out, bad
}
