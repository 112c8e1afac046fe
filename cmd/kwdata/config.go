package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/kwdata/kwdata/ingest"
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
	update, finish := m.progress("ingest", "")
	defer finish()
	opt := m.sourcesOptions(cfg, date, countries, update)
	opt.Done = func(r ingest.CountryReport) {
		fmt.Fprintf(m.Stdout, "ingested %s %s: %d keywords, %d SERPs, %d bad rows\n",
			strings.ToUpper(r.Country), date, r.Counts["keywords"], r.Counts["serps"], r.Counts["bad_rows"])
	}
	_, err = cfg.Sources.Run(ctx, opt)
	return err
}

// sourcesOptions wires a run of the configured sources of cfg.
func (m *Main) sourcesOptions(cfg *pipelines.Config, date string, countries []string, progress func(done, total int64)) ingest.SourcesOptions {
	return ingest.SourcesOptions{
		Data: cfg.Data, Date: date, Countries: countries, StateDir: pipelines.StateDir(cfg.Data),
		ConfigPath: cfg.Path, Logger: m.Logger, Progress: progress,
	}
}
