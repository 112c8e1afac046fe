package main

import (
	"context"
	"fmt"

	"github.com/kwdata/kwdata/index/objstore"
	"github.com/kwdata/kwdata/pipelines"
	"github.com/kwdata/kwdata/similarity"
)

func (m *Main) runRun(ctx context.Context, args []string) error {
	fs := m.newFlagSet("run", "--config FILE [--date YYYY-MM-DD] [--force] [--allow-missing-related] [--allow-shrink]")
	config := fs.String("config", "", "YAML configuration (required)")
	date := fs.String("date", "", "data date (default: today in the configured time zone)")
	force := fs.Bool("force", false, "run stages that already finished for this date again")
	var allow publishGuards
	allow.flags(fs.FlagSet)
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	if err := require([2]string{"config", *config}); err != nil {
		return err
	}
	if *date != "" {
		if err := checkDate(*date); err != nil {
			return err
		}
	}
	cfg, err := pipelines.LoadConfig(*config, m.Getenv)
	if err != nil {
		return err
	}
	if *date == "" {
		*date = pipelines.DateAt(m.now(), cfg.Location)
	}
	opt := m.pipelineOptions(cfg, allow)
	opt.Force = *force
	rec, err := pipelines.RunOnce(ctx, opt, *date)
	if rec.RunID == "" {
		return err // refused before it started: there is no run to show
	}
	if werr := pipelines.WriteTable(m.Stdout, []pipelines.RunRecord{rec}); werr != nil && err == nil {
		err = werr
	}
	return err
}

func (m *Main) runSchedule(ctx context.Context, args []string) error {
	fs := m.newFlagSet("schedule", "--config FILE")
	config := fs.String("config", "", "YAML configuration with a schedule (required)")
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	if err := require([2]string{"config", *config}); err != nil {
		return err
	}
	cfg, err := pipelines.LoadConfig(*config, m.Getenv)
	if err != nil {
		return err
	}
	// A schedule never overrides the publish guards: an override is for
	// one run that an operator has looked at.
	opt := m.pipelineOptions(cfg, publishGuards{})
	opt.Trigger = pipelines.TriggerSchedule
	s, err := pipelines.NewScheduler(cfg.Schedule, cfg.Timezone, opt)
	if err != nil {
		return err
	}
	return s.Run(ctx)
}

func (m *Main) runRuns(ctx context.Context, args []string) error {
	fs := m.newFlagSet("runs", "--data DIR | --config FILE [--last N] [--json]")
	data := fs.String("data", "", "data folder")
	config := fs.String("config", "", "YAML configuration naming the data folder")
	last := fs.Int("last", 10, "show the last N runs")
	asJSON := fs.Bool("json", false, "print JSON for machines")
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	if *data == "" && *config != "" {
		cfg, err := pipelines.LoadConfig(*config, m.Getenv)
		if err != nil {
			return err
		}
		*data = cfg.Data
	}
	if err := require([2]string{"data", *data}); err != nil {
		return err
	}
	if err := existingData(*data); err != nil {
		return err
	}
	runs, err := pipelines.ReadHistory(*data, *last)
	if err != nil {
		return err
	}
	if *asJSON {
		return pipelines.WriteJSON(m.Stdout, runs)
	}
	return pipelines.WriteTable(m.Stdout, runs)
}

// pipelineOptions wires the real stages into a pipeline run.
func (m *Main) pipelineOptions(cfg *pipelines.Config, allow publishGuards) pipelines.Options {
	stages := []pipelines.Stage{
		{Name: pipelines.StageIngest, Run: func(ctx context.Context, date string, progress func(done, total int64)) (map[string]int64, error) {
			reps, err := cfg.Sources.Run(ctx, m.sourcesOptions(cfg, date, cfg.Countries, progress))
			total := map[string]int64{}
			for _, r := range reps {
				for k, v := range r.Counts {
					total[k] += v
				}
			}
			return total, err
		}},
		{Name: pipelines.StageSimilarity, Run: func(ctx context.Context, date string, progress func(done, total int64)) (map[string]int64, error) {
			stats, err := similarity.Run(ctx, similarity.RunOptions{
				Data: cfg.Data, Date: date, Countries: cfg.Countries, MaxAgeDays: cfg.SERPMaxAgeDays(),
				Options: similarity.Options{Logger: m.Logger, Progress: func(d, t int) { progress(int64(d), int64(t)) }},
			})
			counts := map[string]int64{}
			for _, s := range stats {
				counts["keywords"] += int64(s.Keywords)
				counts["related_rows"] += int64(s.RelatedRows)
			}
			if err != nil {
				return counts, fmt.Errorf("cannot compute similarity: %w", err)
			}
			return counts, nil
		}},
		{Name: pipelines.StageBuildIndex, Run: func(ctx context.Context, date string, _ func(done, total int64)) (map[string]int64, error) {
			// With a publish section the store is checked before the
			// build, and the build uploaded before the data folder points
			// at it: a failed upload fails the stage and leaves no build
			// behind, and the next run builds and uploads again.
			var store *objstore.Client
			if cfg.Publish.To != "" {
				var err error
				if store, err = m.objectStore(ctx, "publish", cfg.Publish.To, cfg.Publish.Endpoint); err == nil {
					err = m.checkTarget(ctx, store, "publish.endpoint in the configuration")
				}
				if err != nil {
					return map[string]int64{}, err
				}
			}
			man, err := m.buildIndexUpload(ctx, cfg.Data, date, allow, store)
			return map[string]int64{"keywords": int64(man.Keys), "bytes": man.Bytes}, err
		}},
	}
	// Retention keeps every SERP partition the similarity stage may read
	// for the published build.
	retention := cfg.Retention
	retention.MaxAgeDays = cfg.SERPMaxAgeDays()
	return pipelines.Options{
		Data: cfg.Data, Stages: stages, Logger: m.Logger, Retention: retention, Progress: m.stageProgress, Now: m.Now,
	}
}
