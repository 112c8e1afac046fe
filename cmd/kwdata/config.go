package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
// every configured country, for one date, into data when it is given and
// else into the config's data folder.
func (m *Main) ingestFromConfig(ctx context.Context, path, data, date, country string) (err error) {
	// --data replaces the config's data:, so one config can feed a
	// scratch folder (a backfill, a test) without editing it.
	cfg, err := pipelines.LoadConfigData(path, m.Getenv, data)
	if err != nil {
		return err
	}
	// A failed ingest leaves no data folder it created behind.
	undo := newFolderGuard(cfg.Data)
	defer func() {
		if err != nil {
			undo()
		}
	}()
	if date == "" {
		date = pipelines.DateAt(m.now(), cfg.Location)
	}
	countries := cfg.Countries
	if country != "" {
		cc := strings.ToLower(country)
		if !slices.Contains(cfg.Countries, cc) {
			return fmt.Errorf("country %q is not in the countries of %s (%s); add it there or pick one of them",
				cc, path, strings.Join(cfg.Countries, ", "))
		}
		countries = []string{cc}
	}
	// A manual ingest writes the same partitions as a run: it must not
	// overlap a scheduled or manual run.
	release, err := m.runLock(cfg.Data, "ingest")
	if err != nil {
		return err
	}
	defer release()
	update, finish := m.progress("ingest")
	defer finish()
	budget := newSERPBudget(cfg, countries)
	for _, cc := range countries {
		counts, err := m.ingestCountry(ctx, cfg, cc, date, budget, update)
		if err != nil {
			return err
		}
		fmt.Fprintf(m.Stdout, "ingested %s %s: %d keywords, %d SERPs, %d bad rows\n",
			strings.ToUpper(cc), date, counts["keywords"], counts["serps"], counts["bad_rows"])
	}
	return nil
}

// serpBudget shares dataforseo.max_serps_per_run among the countries of
// one run: SPEC §4 caps the SERPs a run pays for, not the SERPs of each
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
func newSERPBudget(cfg *pipelines.Config, countries []string) *serpBudget {
	b := &serpBudget{}
	if cfg.DataForSEO == nil {
		return b
	}
	b.left = cfg.DataForSEO.MaxSERPsPerRun
	for _, cc := range countries {
		if serpsFromAPI(cfg, strings.ToLower(cc)) {
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

// serpsFromAPI reports whether the SERPs of cc come from DataForSEO.
func serpsFromAPI(cfg *pipelines.Config, cc string) bool {
	return cfg.DataForSEO != nil && len(cfg.Files[cc].SERPJSONL) == 0
}

// ingestCountry fills the keywords and serps partitions of one country and
// date from its configured sources: export files when the config names
// them, else the Google Ads API for keywords and DataForSEO for SERPs, at
// most budget.share() of them.
func (m *Main) ingestCountry(ctx context.Context, cfg *pipelines.Config, cc, date string, budget *serpBudget, progress func(done, total int64)) (map[string]int64, error) {
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
			USDRate: files.USDRate, Logger: m.Logger, Progress: func(_ string, done, total int64) { progress(done, total) },
		})
		// SPEC §4: a bad row is reported with its line number, in a
		// scheduled run too, where the log is all the operator reads.
		for _, b := range rep.Bad {
			m.Logger.Warn("bad row skipped", "country", cc, "file", b.File, "line", b.Line, "reason", b.Reason)
		}
		if more := rep.BadCount - len(rep.Bad); more > 0 {
			m.Logger.Warn("more bad rows skipped, not listed", "country", cc, "count", more)
		}
		var curErr *ingest.CurrencyError
		if errors.As(err, &curErr) {
			// The importer's message names the --usd-rate flag, which a
			// config run does not read.
			return nil, fmt.Errorf("cannot ingest %s: %s:%d: amounts are in %s and no USD rate for %s is given; add files.%s.usd_rate: {%s: RATE} (USD per %s) to %s",
				cc, curErr.File, curErr.Line, curErr.Currency, curErr.Currency, cc, curErr.Currency, curErr.Currency, cfg.Path)
		}
		if err != nil {
			return nil, fmt.Errorf("cannot ingest %s: %w", cc, err)
		}
		counts["keywords"], counts["serps"], counts["bad_rows"] = int64(rep.Keywords), int64(rep.SERPs), int64(rep.BadCount)
	}
	checkpoint := func(source string) string {
		return filepath.Join(pipelines.StateDir(cfg.Data), source, cc, date)
	}
	if len(files.PlannerCSV) == 0 && cfg.GoogleAds != nil {
		n, err := m.keywordsFromGoogleAds(ctx, cfg, country, date, checkpoint("googleads"), progress)
		if err != nil {
			return nil, err
		}
		counts["keywords"] = int64(n)
	}
	if serpsFromAPI(cfg, cc) {
		n, picked, err := m.serpsFromDataForSEO(ctx, cfg, country, date, checkpoint("dataforseo"), budget.share(), progress)
		budget.spend(picked)
		if err != nil {
			return nil, err
		}
		counts["serps"] = int64(n)
	}
	return counts, nil
}

func (m *Main) keywordsFromGoogleAds(ctx context.Context, cfg *pipelines.Config, country kw.Country, date, checkpoint string,
	progress func(done, total int64)) (int, error) {
	cc := strings.ToLower(country.Code)
	universe, err := readKeywordList(cfg.Keywords[cc])
	if err != nil {
		return 0, err
	}
	g := cfg.GoogleAds
	client, err := googleads.New(googleads.Config{
		Endpoint: g.Endpoint, APIVersion: g.APIVersion, CustomerID: g.CustomerID, LoginCustomerID: g.LoginCustomerID,
		TokenURL: g.TokenURL, ClientID: g.ClientID, ClientSecret: g.ClientSecret, RefreshToken: g.RefreshToken,
		DeveloperToken: g.DeveloperToken, RequestsPerSecond: g.RequestsPerSecond, USDRate: g.USDRate,
	}, googleads.Options{Logger: m.Logger.With("source", "googleads", "country", cc), CheckpointDir: checkpoint,
		Progress: func(done, total int) { progress(int64(done), int64(total)) }})
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
	res, err := ingest.WriteKeywords(ctx, cfg.Data, cc, date, recs)
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

// keywordName reads only the keyword column of a partition.
type keywordName struct {
	Keyword string `parquet:"keyword"`
}

// serpsFromDataForSEO refreshes at most budget SERPs of country and returns
// how many it wrote and how many it picked (paid for).
func (m *Main) serpsFromDataForSEO(ctx context.Context, cfg *pipelines.Config, country kw.Country, date, checkpoint string, budget int,
	progress func(done, total int64)) (written, picked int, err error) {
	cc := strings.ToLower(country.Code)
	d := cfg.DataForSEO
	if budget <= 0 {
		m.Logger.Warn("no SERP budget left for this country in this run; its SERPs are not refreshed",
			"country", cc, "max_serps_per_run", d.MaxSERPsPerRun)
		return 0, 0, nil
	}
	// The universe is what has a keyword record on this date; each night
	// refreshes the SERPs that are missing or oldest, within the budget.
	var universe []string
	err = lake.Scan(ctx, cfg.Data, kw.DatasetKeywords, cc, date, func(b []keywordName) error {
		for _, r := range b {
			universe = append(universe, r.Keyword)
		}
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("cannot read the keywords of %s to choose SERPs to refresh: %w", country.Code, err)
	}
	last, err := lastFetched(ctx, cfg.Data, cc, date)
	if err != nil {
		return 0, 0, err
	}
	// A keyword whose task failed or found nothing has no SERP to date it;
	// its last attempt does, or it would be picked first every night.
	attempts, err := dataforseo.LoadAttempts(filepath.Dir(checkpoint))
	if err != nil {
		return 0, 0, err
	}
	for k, t := range attempts.Before(date) {
		if t.After(last[k]) {
			last[k] = t
		}
	}
	pick := dataforseo.PickRefresh(universe, last, budget)
	client, err := dataforseo.New(dataforseo.Config{
		Endpoint: d.Endpoint, Login: d.Login, Password: d.Password, MaxSERPsPerRun: budget, MaxAgeDays: d.MaxAgeDays,
	}, dataforseo.Options{Logger: m.Logger.With("source", "dataforseo", "country", cc), CheckpointDir: checkpoint, Progress: func(done, total int) { progress(int64(done), int64(total)) }})
	if err != nil {
		return 0, 0, err
	}
	got, stats, err := client.FetchSERPs(ctx, country, pick)
	if err != nil && !errors.Is(err, dataforseo.ErrTasksPending) {
		return 0, 0, fmt.Errorf("cannot fetch SERPs for %s: %w", country.Code, err)
	}
	if err != nil {
		m.Logger.Warn("some SERP tasks were not ready; the next run collects them without paying again",
			"country", cc, "pending", stats.Pending)
	}
	if err := attempts.Record(date, pick); err != nil {
		return 0, 0, err
	}
	serps := make([]ingest.SERP, 0, len(got))
	for k, rows := range got {
		serps = append(serps, ingest.SERP{Keyword: k, Rows: rows})
	}
	res, err := ingest.WriteSERPs(ctx, cfg.Data, cc, date, serps)
	m.Logger.Info("SERPs refreshed", "country", cc, "budget", budget, "picked", len(pick),
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
