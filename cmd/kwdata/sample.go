package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/kwdata/kwdata/ingest/sample"
)

func (m *Main) runSample(ctx context.Context, args []string) error {
	fs := m.newFlagSet("sample", "--out DIR [--keywords N] [--countries us,gb] [--seed N] [--url-tail N] [--hub-skew E] [--shape sample|web]")
	out := fs.String("out", "", "output folder; one sub-folder per country (required)")
	n := fs.Int("keywords", sample.DefaultKeywords, "keywords per country")
	countries := fs.String("countries", strings.Join(sample.DefaultCountries(), ","), "comma-separated country codes")
	seed := fs.Int64("seed", 1, "seed of the generator: the same seed gives the same files")
	urlTail := fs.Float64("url-tail", 0, "mean own URLs a SERP, found in no other SERP (0: the default shape, about 5; a long tail is about 9)")
	hubSkew := fs.Float64("hub-skew", 0, "Zipf exponent of hub popularity (0: the default, 0.8; larger puts hub draws on fewer hubs)")
	shape := fs.String("shape", sample.ShapeSample, "data shape: sample (intent groups of several) or web (a real long tail: small groups, mid-frequency URLs shared across topics)")
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	if err := require([2]string{"out", *out}); err != nil {
		return err
	}
	res, err := sample.Generate(ctx, sample.Options{
		Out: *out, Keywords: *n, Countries: splitList(*countries), Seed: *seed, Logger: m.Logger,
		URLTail: *urlTail, HubSkew: *hubSkew, Shape: *shape,
	})
	if err != nil {
		return fmt.Errorf("cannot generate sample: %w", err)
	}
	for _, f := range res.Files {
		fmt.Fprintln(m.Stdout, f)
	}
	m.Logger.Info("sample written", "keywords", res.Keywords, "serps", res.SERPs, "serp_rows", res.SERPRows)
	return nil
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
