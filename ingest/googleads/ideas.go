package googleads

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/kwdata/kwdata/kw"
)

// maxIdeaPages guards against a service that keeps handing out page tokens.
const maxIdeaPages = 1000

// KeywordIdeas expands seeds into keyword ideas for country and returns
// their normalized texts in the order the service ranked them, without
// duplicates, at most maxResults of them (maxResults ≤ 0: no limit). Seeds
// are sent MaxSeedKeywords at a time and each query is followed through its
// pages (pageToken/nextPageToken).
func (c *Client) KeywordIdeas(ctx context.Context, country kw.Country, seeds []string, maxResults int) ([]string, error) {
	// Only the texts are kept, so the amounts need no currency.
	recs, err := c.keywordIdeas(ctx, country, seeds, maxResults, nil)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.Keyword
	}
	return out, nil
}

// KeywordIdeaRecords is KeywordIdeas with each idea's metrics as a keyword
// record (the same mapping as HistoricalMetrics, amounts in USD micros).
func (c *Client) KeywordIdeaRecords(ctx context.Context, country kw.Country, seeds []string, maxResults int) ([]kw.KeywordRecord, error) {
	cur, err := c.accountCurrency(ctx)
	if err != nil {
		return nil, err
	}
	return c.keywordIdeas(ctx, country, seeds, maxResults, cur)
}

// keywordIdeas queries GenerateKeywordIdeas; cur converts the amounts, and
// nil leaves them in the account's currency.
func (c *Client) keywordIdeas(ctx context.Context, country kw.Country, seeds []string, maxResults int, cur *accountCurrency) ([]kw.KeywordRecord, error) {
	norm, bad := normalizeAll(seeds)
	if bad > 0 {
		c.log.Warn("skipped seed keywords that do not normalize", "country", country.Code, "count", bad)
	}
	pageSize := c.opt.IdeasPageSize
	if maxResults > 0 && maxResults < pageSize {
		pageSize = maxResults
	}
	var out []kw.KeywordRecord
	index := map[string]int{}
	full := func() bool { return maxResults > 0 && len(out) >= maxResults }
	for i := 0; i < len(norm) && !full(); i += MaxSeedKeywords {
		group := norm[i:min(i+MaxSeedKeywords, len(norm))]
		token := ""
		for page := 0; !full(); page++ {
			if page == maxIdeaPages {
				return nil, fmt.Errorf("keyword ideas for %s did not end after %d pages", country.Code, maxIdeaPages)
			}
			// The service wants the same request fields on every page
			// of one query; only the token changes.
			body, err := json.Marshal(keywordIdeasRequest{
				GeoTargetConstants:       []string{"geoTargetConstants/" + strconv.FormatInt(country.GeoTarget, 10)},
				Language:                 "languageConstants/" + strconv.FormatInt(country.Language, 10),
				KeywordPlanNetwork:       "GOOGLE_SEARCH",
				PageSize:                 pageSize,
				PageToken:                token,
				KeywordSeed:              keywordSeed{Keywords: group},
				HistoricalMetricsOptions: historicalMetricsOptions{IncludeAverageCpc: true},
			})
			if err != nil {
				return nil, fmt.Errorf("cannot encode request: %w", err)
			}
			resp, err := c.call(ctx, ":generateKeywordIdeas", body)
			if err != nil {
				return nil, fmt.Errorf("cannot fetch keyword ideas for %s: %w", country.Code, err)
			}
			r, err := decodeKeywordIdeas(resp)
			if err != nil {
				return nil, err
			}
			for _, res := range r.Results {
				k, err := kw.NormalizeKeyword(res.Text)
				if err != nil {
					continue // ideas longer than our limits are not ours to keep
				}
				if err := cur.toUSD(res.KeywordIdeaMetrics); err != nil {
					return nil, fmt.Errorf("cannot convert the amounts of %q: %w", res.Text, err)
				}
				rec := toRecord(k, res.KeywordIdeaMetrics)
				if j, ok := index[k]; ok {
					if kw.MoreVolume(rec.Volume, out[j].Volume) {
						out[j] = rec
					}
					continue
				}
				if full() {
					break
				}
				index[k] = len(out)
				out = append(out, rec)
			}
			if r.NextPageToken == "" || r.NextPageToken == token {
				break
			}
			token = r.NextPageToken
		}
	}
	return out, nil
}

// ExpandUniverse returns the normalized keywords, in order and without
// duplicates, followed by at most maxNew keyword ideas the service suggests
// for them that the list does not hold yet. The keywords are the seeds,
// MaxSeedKeywords a query, in list order; expansion stops as soon as maxNew
// new keywords are found, so a long list costs only the queries needed.
// maxNew ≤ 0 expands nothing and sends no request.
//
// With Options.CheckpointDir set, the result is saved there, and a re-run
// with the same keywords and maxNew returns it without a request. Ideas
// change from day to day, so without it a re-run of a date would pay for
// the expansion again and, with other ideas, shift the sorted batches of
// HistoricalMetrics so that none of the checkpointed ones matched.
func (c *Client) ExpandUniverse(ctx context.Context, country kw.Country, keywords []string, maxNew int) ([]string, error) {
	norm, bad := normalizeAll(keywords)
	if bad > 0 {
		c.log.Warn("skipped keywords that do not normalize", "country", country.Code, "count", bad)
	}
	if maxNew <= 0 {
		return norm, nil
	}
	cp := checkpoint{dir: c.opt.CheckpointDir, country: country.Code}
	saved, ok, err := cp.loadUniverse(norm, maxNew)
	if err != nil {
		return nil, err
	}
	if ok {
		c.log.Info("reusing the checkpointed keyword expansion", "country", country.Code, "listed", len(norm), "new", len(saved)-len(norm))
		return saved, nil
	}
	out, err := c.expand(ctx, country, norm, maxNew)
	if err != nil {
		return nil, err
	}
	if err := cp.saveUniverse(len(norm), maxNew, out); err != nil {
		return nil, err
	}
	return out, nil
}

// expand asks for ideas seeded with norm until maxNew new keywords are found
// or the seeds run out.
func (c *Client) expand(ctx context.Context, country kw.Country, norm []string, maxNew int) ([]string, error) {
	seeds := norm[:len(norm):len(norm)] // appending to out must not write into it
	out := norm
	have := make(map[string]bool, len(norm)+max(maxNew, 0))
	for _, k := range norm {
		have[k] = true
	}
	added := 0
	for i := 0; i < len(seeds) && added < maxNew; i += MaxSeedKeywords {
		group := seeds[i:min(i+MaxSeedKeywords, len(seeds))]
		// Ideas include the seeds themselves and other listed keywords,
		// so ask for enough to find the new ones among them.
		ideas, err := c.KeywordIdeas(ctx, country, group, maxNew-added+len(group))
		if err != nil {
			return nil, err
		}
		for _, k := range ideas {
			if added == maxNew {
				break
			}
			if !have[k] {
				have[k] = true
				out = append(out, k)
				added++
			}
		}
	}
	c.log.Info("keyword universe expanded", "country", country.Code, "listed", len(seeds), "new", added)
	return out, nil
}
