package main

import (
	"context"
	"fmt"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/similarity"
)

func (m *Main) runSimilarity(ctx context.Context, args []string) error {
	fs := m.newFlagSet("similarity", "--data DIR --date YYYY-MM-DD [--country CC] [--max-age-days 30] [--min-overlap 8] [--max-ratio 2]")
	data := fs.String("data", "", "data folder (required)")
	date := fs.String("date", "", "data date, YYYY-MM-DD (required)")
	country := fs.String("country", "", "only this country (default: every country with keywords on the date)")
	maxAge := fs.Int("max-age-days", kw.DefaultSERPMaxAgeDays, "use each keyword's newest SERP at most this many days older than the date")
	minOverlap := fs.Int("min-overlap", similarity.DefaultMinOverlap, "same intent: at least this many shared results")
	maxRatio := fs.Int64("max-ratio", similarity.DefaultMaxRatio, "same intent: smoothed volume ratio at most this")
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	if err := require([2]string{"data", *data}, [2]string{"date", *date}); err != nil {
		return err
	}
	if err := checkDate(*date); err != nil {
		return err
	}
	if err := existingData(*data); err != nil {
		return err
	}
	if *maxAge < 1 {
		return usageError{fmt.Errorf("--max-age-days is %d; write 1 or more", *maxAge)}
	}
	release, err := m.runLock(*data, "compute similarity")
	if err != nil {
		return err
	}
	defer release()
	stats, err := m.similarity(ctx, similarity.RunOptions{
		Data: *data, Date: *date, Countries: splitList(*country), MaxAgeDays: *maxAge,
		Options: similarity.Options{MinOverlap: *minOverlap, MaxRatio: *maxRatio},
	})
	if err != nil {
		return err
	}
	for _, s := range stats {
		fmt.Fprintf(m.Stdout, "similarity %s %s: %d keywords, %d with a SERP, %d related rows in %s\n",
			s.Country, *date, s.Keywords, s.WithSERP, s.RelatedRows, s.Duration.Round(1e6))
	}
	return nil
}

func (m *Main) similarity(ctx context.Context, opt similarity.RunOptions) ([]similarity.RunStats, error) {
	update, finish := m.progress("similarity", "keywords")
	defer finish()
	opt.Logger = m.Logger
	opt.Progress = func(done, total int) { update(int64(done), int64(total)) }
	stats, err := similarity.Run(ctx, opt)
	if err != nil {
		return stats, fmt.Errorf("cannot compute similarity for %s: %w", opt.Date, err)
	}
	return stats, nil
}
