package ingest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kwdata/kwdata/ingest/dataforseo"
	"github.com/kwdata/kwdata/ingest/googleads"
	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/lake"
)

// SourcesOptions says where and for what Sources.Run ingests.
type SourcesOptions struct {
	// Data is the data folder that holds the lake. Required.
	Data string
	// Date is the data date, YYYY-MM-DD. Required.
	Date string
	// Countries are the countries to ingest, in order; the SERP budget is
	// shared among them in this order. Required.
	Countries []string
	// StateDir is the folder of the API checkpoints, which go to
	// StateDir/<source>/<cc>/<date>: a re-run of a date never pays again
	// for what it fetched. Required.
	StateDir string
	// ConfigPath names the configuration file in messages that say what
	// to add to it. Default: "the config".
	ConfigPath string
	// Logger receives bad rows, quota waits and refresh summaries.
	// Default: discard.
	Logger *slog.Logger
	// Progress, when set, is called as each source of each country
	// advances, with its own done and total. Default: none.
	Progress func(done, total int64)
	// Done, when set, is called with each country's report as soon as the
	// country is finished, before the next one starts: an API country can
	// take half an hour. Default: none.
	Done func(CountryReport)
}

// CountryReport says what Sources.Run wrote for one country: its counts by
// name (keywords, serps, and bad_rows when it read export files), as a
// run's history records them.
type CountryReport struct {
	Country string // lower case
	Counts  map[string]int64
}

// Run ingests the sources of every country of opt, in order, for one
// date: a country's export files when Files names them, else keyword
// metrics from Google Ads for its keyword list and SERPs from DataForSEO,
// at most dataforseo.max_serps_per_run in the whole run. It returns a
// report for every country it finished; the first failure stops it.
// Check must have accepted s.
func (s *Sources) Run(ctx context.Context, opt SourcesOptions) ([]CountryReport, error) {
	if opt.Data == "" || opt.StateDir == "" {
		return nil, errors.New("cannot ingest the configured sources: no data or state folder given")
	}
	if opt.ConfigPath == "" {
		opt.ConfigPath = "the config"
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.Progress == nil {
		opt.Progress = func(int64, int64) {}
	}
	budget := s.newSERPBudget(opt.Countries)
	var out []CountryReport
	for _, cc := range opt.Countries {
		counts, err := s.ingestCountry(ctx, opt, strings.ToLower(cc), budget)
		if err != nil {
			return out, err
		}
		rep := CountryReport{Country: strings.ToLower(cc), Counts: counts}
		if opt.Done != nil {
			opt.Done(rep)
		}
		out = append(out, rep)
	}
	return out, nil
}

// serpBudget shares dataforseo.max_serps_per_run among the countries of
// one run: the budget caps the SERPs a run pays for, not the SERPs of each
// country. Each country in turn gets an even share of what is left (rounded
// up), so a country that needs fewer than its share leaves the rest to the
// countries after it. The shares depend only on the budget, the country
// order and what each country picks, so a re-run of a date picks the same
// keywords again.
type serpBudget struct {
	left      int // SERPs the run may still pay for
	countries int // countries still to fetch SERPs from DataForSEO
}

// newSERPBudget returns the budget of a run over countries.
func (s *Sources) newSERPBudget(countries []string) *serpBudget {
	b := &serpBudget{}
	if s.DataForSEO == nil {
		return b
	}
	b.left = s.DataForSEO.MaxSERPsPerRun
	for _, cc := range countries {
		if s.serpsFromAPI(strings.ToLower(cc)) {
			b.countries++
		}
	}
	return b
}

// share is the most the next country may pick.
func (b *serpBudget) share() int {
	if b.countries <= 0 || b.left <= 0 {
		return 0
	}
	return (b.left + b.countries - 1) / b.countries
}

// spend records that the next country picked n SERPs.
func (b *serpBudget) spend(n int) {
	b.left -= n
	b.countries--
}

// ingestCountry fills the keywords and serps partitions of one country and
// date from its sources: export files when Files names them, else the
// Google Ads API for keywords and DataForSEO for SERPs, at most
// budget.share() of them.
func (s *Sources) ingestCountry(ctx context.Context, opt SourcesOptions, cc string, budget *serpBudget) (map[string]int64, error) {
	country, ok := kw.LookupCountry(cc)
	if !ok {
		return nil, fmt.Errorf("country %q is not supported", cc)
	}
	counts := map[string]int64{}
	files := s.Files[cc]
	if len(files.PlannerCSV)+len(files.SERPJSONL) > 0 {
		rep, err := Run(ctx, Options{
			Data: opt.Data, Date: opt.Date, Country: cc, PlannerCSV: files.PlannerCSV, SERPJSONL: files.SERPJSONL,
			USDRate: files.USDRate, Logger: opt.Logger, Progress: func(_ string, done, total int64) { opt.Progress(done, total) },
		})
		// A bad row is reported with its line number, in a
		// scheduled run too, where the log is all the operator reads.
		// The report lists the first MaxBadRows, as a run by hand prints.
		for _, b := range rep.Bad {
			opt.Logger.Warn("bad row skipped", "country", cc, "file", b.File, "line", b.Line, "reason", b.Reason)
		}
		if more := rep.BadCount - len(rep.Bad); more > 0 {
			opt.Logger.Warn("more bad rows skipped, not listed", "country", cc, "count", more)
		}
		var curErr *CurrencyError
		if errors.As(err, &curErr) {
			// The importer's message names the --usd-rate flag, which a
			// run from the configuration does not read.
			return nil, fmt.Errorf("cannot ingest %s: %s:%d: amounts are in %s and no USD rate for %s is given; add files.%s.usd_rate: {%s: RATE} (USD per %s) to %s",
				cc, curErr.File, curErr.Line, curErr.Currency, curErr.Currency, cc, curErr.Currency, curErr.Currency, opt.ConfigPath)
		}
		if err != nil {
			return nil, fmt.Errorf("cannot ingest %s: %w", cc, err)
		}
		counts["keywords"], counts["serps"], counts["bad_rows"] = int64(rep.Keywords), int64(rep.SERPs), int64(rep.BadCount)
	}
	checkpoint := func(source string) string {
		return filepath.Join(opt.StateDir, source, cc, opt.Date)
	}
	if len(files.PlannerCSV) == 0 && s.GoogleAds != nil {
		n, err := s.keywordsFromGoogleAds(ctx, opt, country, checkpoint("googleads"))
		if err != nil {
			return nil, err
		}
		counts["keywords"] = int64(n)
	}
	if s.serpsFromAPI(cc) {
		n, picked, err := s.serpsFromDataForSEO(ctx, opt, country, checkpoint("dataforseo"), budget.share())
		budget.spend(picked)
		if err != nil {
			return nil, err
		}
		counts["serps"] = int64(n)
	}
	return counts, nil
}

func (s *Sources) keywordsFromGoogleAds(ctx context.Context, opt SourcesOptions, country kw.Country, checkpoint string) (int, error) {
	cc := strings.ToLower(country.Code)
	universe, err := readKeywordList(s.Keywords[cc])
	if err != nil {
		return 0, err
	}
	g := s.GoogleAds
	client, err := googleads.New(*g, googleads.Options{Logger: opt.Logger.With("source", "googleads", "country", cc), CheckpointDir: checkpoint,
		Progress: func(done, total int) { opt.Progress(int64(done), int64(total)) }})
	if err != nil {
		return 0, err
	}
	var quota *googleads.QuotaExhaustedError
	if g.ExpandIdeas > 0 {
		// The expansion is checkpointed with the batches, so a re-run of
		// the date fetches metrics for the same universe.
		universe, err = client.ExpandUniverse(ctx, country, universe, g.ExpandIdeas)
		if errors.As(err, &quota) {
			return 0, quotaStopError(quota, country.Code)
		}
		if err != nil {
			return 0, fmt.Errorf("cannot expand the keyword list of %s: %w", country.Code, err)
		}
	}
	recs, err := client.HistoricalMetrics(ctx, country, universe)
	if errors.As(err, &quota) {
		return 0, quotaStopError(quota, country.Code)
	}
	if err != nil {
		return 0, fmt.Errorf("cannot fetch keyword metrics for %s: %w", country.Code, err)
	}
	res, err := WriteKeywords(ctx, opt.Data, cc, opt.Date, recs)
	return res.Keywords, err
}

// quotaStopError tells the operator when to run a date again after the
// Google Ads quota stopped it. The service does not always name a delay,
// and a short one must not round down to "0s".
func quotaStopError(quota *googleads.QuotaExhaustedError, country string) error {
	when := "later (the service named no delay; the daily quota comes back within a day)"
	switch d := quota.RetryAfter; {
	case d >= time.Minute:
		when = "after " + d.Round(time.Minute).String()
	case d > 0:
		when = "after " + d.Round(time.Second).String()
	}
	if quota.BatchesTotal == 0 {
		// Stopped before the first metrics batch: in the keyword idea
		// expansion, which is kept only once it is whole.
		return fmt.Errorf("the Google Ads quota is used up while expanding the keyword list of %s with keyword ideas; run the same date again %s",
			country, when)
	}
	return fmt.Errorf("the Google Ads quota is used up after %d of %d batches for %s; run the same date again %s, finished batches are kept",
		quota.BatchesDone, quota.BatchesTotal, country, when)
}

// scanKeywordColumn hands fn the keyword column of a partition, row by
// row, in the lake's order.
func scanKeywordColumn(ctx context.Context, data, dataset, cc, date string, fn func(keyword string)) error {
	return lake.Scan(ctx, data, dataset, cc, date, []string{"keyword"}, lake.ScanOptions{}, func(b *lake.Batch) error {
		for r := range b.Rows {
			fn(string(b.Bytes(0, r)))
		}
		return nil
	})
}

// serpsFromDataForSEO refreshes at most budget SERPs of country and returns
// how many it wrote and how many it picked (paid for).
func (s *Sources) serpsFromDataForSEO(ctx context.Context, opt SourcesOptions, country kw.Country, checkpoint string, budget int) (written, picked int, err error) {
	cc := strings.ToLower(country.Code)
	d := s.DataForSEO
	if budget <= 0 {
		opt.Logger.Warn("no SERP budget left for this country in this run; its SERPs are not refreshed",
			"country", cc, "max_serps_per_run", d.MaxSERPsPerRun)
		return 0, 0, nil
	}
	// The universe is what has a keyword record on this date; each night
	// refreshes the SERPs that are missing or oldest, within the budget.
	var universe []string
	err = scanKeywordColumn(ctx, opt.Data, kw.DatasetKeywords, cc, opt.Date, func(k string) {
		universe = append(universe, k)
	})
	if err != nil {
		return 0, 0, fmt.Errorf("cannot read the keywords of %s to choose SERPs to refresh: %w", country.Code, err)
	}
	last, err := lastFetched(ctx, opt.Data, cc, opt.Date)
	if err != nil {
		return 0, 0, err
	}
	// A keyword whose task failed or found nothing has no SERP to date it;
	// its last attempt does, or it would be picked first every night.
	attempts, err := dataforseo.LoadAttempts(filepath.Dir(checkpoint))
	if err != nil {
		return 0, 0, err
	}
	for k, t := range attempts.Before(opt.Date) {
		if t.After(last[k]) {
			last[k] = t
		}
	}
	pick := dataforseo.PickRefresh(universe, last, budget)
	cfg := *d
	cfg.MaxSERPsPerRun = budget
	client, err := dataforseo.New(cfg, dataforseo.Options{Logger: opt.Logger.With("source", "dataforseo", "country", cc), CheckpointDir: checkpoint,
		Progress: func(done, total int) { opt.Progress(int64(done), int64(total)) }})
	if err != nil {
		return 0, 0, err
	}
	got, stats, err := client.FetchSERPs(ctx, country, pick)
	if err != nil && !errors.Is(err, dataforseo.ErrTasksPending) {
		return 0, 0, fmt.Errorf("cannot fetch SERPs for %s: %w", country.Code, err)
	}
	if err != nil {
		opt.Logger.Warn("some SERP tasks were not ready; the next run collects them without paying again",
			"country", cc, "pending", stats.Pending)
	}
	if err := attempts.Record(opt.Date, pick); err != nil {
		return 0, 0, err
	}
	serps := make([]SERP, 0, len(got))
	for k, rows := range got {
		serps = append(serps, SERP{Keyword: k, Rows: rows})
	}
	res, err := WriteSERPs(ctx, opt.Data, cc, opt.Date, serps)
	opt.Logger.Info("SERPs refreshed", "country", cc, "budget", budget, "picked", len(pick),
		"collected", stats.Collected, "failed", stats.Failed, "written", res.Keywords)
	return res.Keywords, len(pick), err
}

// lastFetched maps each keyword with a SERP in the lake to the date of its
// newest one. SERPs past max_age_days count too: the similarity stage no
// longer uses them, but their real age must still order them, oldest
// first, rather than their text. The partition of date itself is left
// out: it is the one this run replaces, so a re-run of the date picks the
// same keywords again and the checkpoint collects them without paying
// twice.
func lastFetched(ctx context.Context, data, cc, date string) (map[string]time.Time, error) {
	dates, err := lake.Dates(data, kw.DatasetSERPs, cc)
	if err != nil {
		return nil, err
	}
	out := map[string]time.Time{}
	for _, d := range dates { // ascending, so newer dates overwrite
		if d >= date {
			continue
		}
		t, _ := time.Parse(kw.DateLayout, d)
		err := scanKeywordColumn(ctx, data, kw.DatasetSERPs, cc, d, func(k string) {
			out[k] = t
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
