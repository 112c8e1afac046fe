package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kwdata/kwdata/ingest"
	"github.com/kwdata/kwdata/ingest/dataforseo"
	"github.com/kwdata/kwdata/ingest/googleads"
	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/kw/lake"
	"github.com/kwdata/kwdata/pipelines"
)

// ingestFromConfig ingests the configured sources of one country, or of
// every configured country, for one date.
func (m *Main) ingestFromConfig(ctx context.Context, path, data, date, country string) error {
	cfg, err := pipelines.LoadConfig(path, m.Getenv)
	if err != nil {
		return err
	}
	if data != "" {
		cfg.Data = data
	}
	if date == "" {
		date = pipelines.DateAt(time.Now(), cfg.Location)
	}
	countries := cfg.Countries
	if country != "" {
		countries = []string{strings.ToLower(country)}
	}
	update, finish := m.progress("ingest")
	defer finish()
	for _, cc := range countries {
		counts, err := m.ingestCountry(ctx, cfg, cc, date, update)
		if err != nil {
			return err
		}
		fmt.Fprintf(m.Stdout, "ingested %s %s: %d keywords, %d SERPs\n",
			strings.ToUpper(cc), date, counts["keywords"], counts["serps"])
	}
	return nil
}

// ingestCountry fills the keywords and serps partitions of one country and
// date from its configured sources: export files when the config names
// them, else the Google Ads API for keywords and DataForSEO for SERPs.
func (m *Main) ingestCountry(ctx context.Context, cfg *pipelines.Config, cc, date string, progress func(done, total int64)) (map[string]int64, error) {
	cc = strings.ToLower(cc)
	country, ok := kw.LookupCountry(cc)
	if !ok {
		return nil, fmt.Errorf("country %q is not supported", cc)
	}
	counts := map[string]int64{}
	files := cfg.Files[cc]
	if len(files.PlannerCSV)+len(files.SERPJSONL) > 0 {
		rep, err := ingest.Run(ctx, ingest.Options{
			Data: cfg.Data, Date: date, Country: cc, PlannerCSV: files.PlannerCSV, SERPJSONL: files.SERPJSONL,
			Logger: m.Logger, Progress: func(_ string, done, total int64) { progress(done, total) },
		})
		if err != nil {
			return nil, fmt.Errorf("cannot ingest %s: %w", cc, err)
		}
		counts["keywords"], counts["serps"], counts["bad_rows"] = int64(rep.Keywords), int64(rep.SERPs), int64(rep.BadCount)
	}
	state := filepath.Join(pipelines.StateDir(cfg.Data), "%s", cc, date)
	if len(files.PlannerCSV) == 0 && cfg.GoogleAds != nil {
		n, err := m.keywordsFromGoogleAds(ctx, cfg, country, date, fmt.Sprintf(state, "googleads"))
		if err != nil {
			return nil, err
		}
		counts["keywords"] = int64(n)
	}
	if len(files.SERPJSONL) == 0 && cfg.DataForSEO != nil {
		n, err := m.serpsFromDataForSEO(ctx, cfg, country, date, fmt.Sprintf(state, "dataforseo"))
		if err != nil {
			return nil, err
		}
		counts["serps"] = int64(n)
	}
	return counts, nil
}

func (m *Main) keywordsFromGoogleAds(ctx context.Context, cfg *pipelines.Config, country kw.Country, date, checkpoint string) (int, error) {
	cc := strings.ToLower(country.Code)
	universe, err := readKeywordList(cfg.Keywords[cc])
	if err != nil {
		return 0, err
	}
	g := cfg.GoogleAds
	client, err := googleads.New(googleads.Config{
		Endpoint: g.Endpoint, APIVersion: g.APIVersion, CustomerID: g.CustomerID, LoginCustomerID: g.LoginCustomerID,
		TokenURL: g.TokenURL, ClientID: g.ClientID, ClientSecret: g.ClientSecret, RefreshToken: g.RefreshToken,
		DeveloperToken: g.DeveloperToken, RequestsPerSecond: g.RequestsPerSecond,
	}, googleads.Options{Logger: m.Logger.With("source", "googleads", "country", cc), CheckpointDir: checkpoint})
	if err != nil {
		return 0, err
	}
	recs, err := client.HistoricalMetrics(ctx, country, universe)
	var quota *googleads.QuotaExhaustedError
	if errors.As(err, &quota) {
		return 0, fmt.Errorf("the Google Ads daily quota is used up after %d of %d batches for %s; run the same date again after %s, finished batches are kept",
			quota.BatchesDone, quota.BatchesTotal, country.Code, quota.RetryAfter.Round(time.Minute))
	}
	if err != nil {
		return 0, fmt.Errorf("cannot fetch keyword metrics for %s: %w", country.Code, err)
	}
	res, err := ingest.WriteKeywords(ctx, cfg.Data, cc, date, recs)
	return res.Keywords, err
}

// keywordName reads only the keyword column of a partition.
type keywordName struct {
	Keyword string `parquet:"keyword"`
}

func (m *Main) serpsFromDataForSEO(ctx context.Context, cfg *pipelines.Config, country kw.Country, date, checkpoint string) (int, error) {
	cc := strings.ToLower(country.Code)
	d := cfg.DataForSEO
	// The universe is what has a keyword record on this date; each night
	// refreshes the SERPs that are missing or oldest, within the budget.
	var universe []string
	err := lake.Scan(ctx, cfg.Data, kw.DatasetKeywords, cc, date, func(b []keywordName) error {
		for _, r := range b {
			universe = append(universe, r.Keyword)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("cannot read the keywords of %s to choose SERPs to refresh: %w", country.Code, err)
	}
	last, err := lastFetched(ctx, cfg.Data, cc, date, d.MaxAgeDays)
	if err != nil {
		return 0, err
	}
	pick := dataforseo.PickRefresh(universe, last, d.MaxSERPsPerRun)
	client, err := dataforseo.New(dataforseo.Config{
		Endpoint: d.Endpoint, Login: d.Login, Password: d.Password, MaxSERPsPerRun: d.MaxSERPsPerRun, MaxAgeDays: d.MaxAgeDays,
	}, dataforseo.Options{Logger: m.Logger.With("source", "dataforseo", "country", cc), CheckpointDir: checkpoint})
	if err != nil {
		return 0, err
	}
	got, stats, err := client.FetchSERPs(ctx, country, pick)
	if err != nil && !errors.Is(err, dataforseo.ErrTasksPending) {
		return 0, fmt.Errorf("cannot fetch SERPs for %s: %w", country.Code, err)
	}
	if err != nil {
		m.Logger.Warn("some SERP tasks were not ready; the next run collects them without paying again",
			"country", cc, "pending", stats.Pending)
	}
	serps := make([]ingest.SERP, 0, len(got))
	for k, rows := range got {
		serps = append(serps, ingest.SERP{Keyword: k, Rows: rows})
	}
	res, err := ingest.WriteSERPs(ctx, cfg.Data, cc, date, serps)
	m.Logger.Info("SERPs refreshed", "country", cc, "picked", len(pick), "collected", stats.Collected, "failed", stats.Failed, "written", res.Keywords)
	return res.Keywords, err
}

// lastFetched maps each keyword with a SERP in the lake, no older than
// maxAge days before date, to the date of its newest one. The partition of
// date itself is left out: it is the one this run replaces, so a re-run of
// the date picks the same keywords again and the checkpoint collects them
// without paying twice.
func lastFetched(ctx context.Context, data, cc, date string, maxAge int) (map[string]time.Time, error) {
	day, err := time.Parse(kw.DateLayout, date)
	if err != nil {
		return nil, fmt.Errorf("date %q is not YYYY-MM-DD", date)
	}
	oldest := day.AddDate(0, 0, -maxAge).Format(kw.DateLayout)
	dates, err := lake.Dates(data, kw.DatasetSERPs, cc)
	if err != nil {
		return nil, err
	}
	out := map[string]time.Time{}
	for _, d := range dates { // ascending, so newer dates overwrite
		if d < oldest || d >= date {
			continue
		}
		t, _ := time.Parse(kw.DateLayout, d)
		err := lake.Scan(ctx, data, kw.DatasetSERPs, cc, d, func(b []keywordName) error {
			for _, r := range b {
				out[r.Keyword] = t
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("cannot read the SERPs of %s on %s: %w", cc, d, err)
		}
	}
	return out, nil
}

// readKeywordList reads a keyword universe file: one keyword a line; blank
// lines and lines starting with # are skipped.
func readKeywordList(path string) ([]string, error) {
	if path == "" {
		return nil, errors.New("no keyword list is configured for this country; add keywords: {cc: FILE} to the config")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read the keyword list: %w", err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", path, err)
	}
	return out, nil
}
