package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kwdata/kwdata/ingest"
	"github.com/kwdata/kwdata/ingest/sample"
	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/kw/lake"
	"github.com/kwdata/kwdata/similarity"
)

func init() {
	register("demo", "run sample, ingest, similarity and build-index on the sample, then serve it", (*Main).runDemo)
}

// demoOptions is what a demo runs; tests shrink it.
type demoOptions struct {
	data      string
	keywords  int
	countries []string
	serve     serveConfig
}

func (m *Main) runDemo(ctx context.Context, args []string) error {
	fs := m.newFlagSet("demo", "[--addr 127.0.0.1:8080] [--data DIR] [--keywords N]")
	addr := fs.String("addr", "127.0.0.1:8080", "address to serve on")
	data := fs.String("data", "demo-data", "data folder for the sample, the lake and the index (replaced)")
	n := fs.Int("keywords", 20000, "sample keywords per country")
	countries := fs.String("countries", "us,gb,de", "sample countries")
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	return m.demo(ctx, demoOptions{
		data: *data, keywords: *n, countries: splitList(*countries),
		serve: serveConfig{addr: *addr},
	})
}

// demo runs every stage on a fresh sample and serves the result until ctx
// is done.
func (m *Main) demo(ctx context.Context, opt demoOptions) error {
	start := time.Now()
	if err := os.RemoveAll(opt.data); err != nil {
		return fmt.Errorf("cannot clear %s: %w", opt.data, err)
	}
	date := time.Now().UTC().Format(kw.DateLayout)
	in := filepath.Join(opt.data, "sample")
	fmt.Fprintf(m.Stderr, "1/4 generating %d sample keywords for %s into %s\n", opt.keywords, strings.Join(opt.countries, ", "), in)
	if _, err := sample.Generate(ctx, sample.Options{Out: in, Keywords: opt.keywords, Countries: opt.countries, Seed: 1, Logger: m.Logger}); err != nil {
		return fmt.Errorf("cannot generate the sample: %w", err)
	}
	fmt.Fprintf(m.Stderr, "2/4 ingesting into %s\n", kw.LakeDir(opt.data))
	for _, cc := range opt.countries {
		cc = strings.ToLower(cc)
		rep, err := ingest.Run(ctx, ingest.Options{
			Data: opt.data, Date: date, Country: cc, Logger: m.Logger,
			PlannerCSV: []string{filepath.Join(in, cc, "keyword-planner.csv")},
			SERPJSONL:  []string{filepath.Join(in, cc, "serps.jsonl")},
		})
		if err != nil {
			return fmt.Errorf("cannot ingest %s: %w", cc, err)
		}
		fmt.Fprintf(m.Stderr, "    %s: %d keywords, %d SERPs, %d bad rows\n",
			rep.Country, rep.Keywords, rep.SERPs, rep.BadCount)
	}
	fmt.Fprintln(m.Stderr, "3/4 computing related keywords and intents")
	if _, err := m.similarity(ctx, similarity.RunOptions{Data: opt.data, Date: date}); err != nil {
		return err
	}
	fmt.Fprintln(m.Stderr, "4/4 building the index")
	if _, err := m.buildIndex(ctx, opt.data, date, publishGuards{}); err != nil {
		return err
	}
	try, err := demoKeyword(opt.data, opt.countries[0], date)
	if err != nil {
		return err
	}
	cfg := opt.serve
	cfg.data = opt.data
	cfg.ready = func(addr string) {
		q := url.Values{"q": {try}, "country": {strings.ToLower(opt.countries[0])}}.Encode()
		fmt.Fprintf(m.Stdout, "\nkwdata is serving the sample (built in %s). Try:\n\n  curl 'http://%s/v1/keyword?%s'\n  open  http://%s/keyword?%s\n\nPress Ctrl-C to stop.\n",
			time.Since(start).Round(time.Second), addr, q, addr, q)
	}
	return m.serve(ctx, cfg)
}

// demoKeyword picks a keyword worth showing: the most searched one that has
// a full list of related keywords.
func demoKeyword(data, country, date string) (string, error) {
	related, err := lake.Read[kw.RelatedRow](data, kw.DatasetRelated, country, date)
	if err != nil {
		return "", fmt.Errorf("cannot read the related keywords: %w", err)
	}
	full := map[string]bool{}
	for _, r := range related {
		if r.Rank == 10 {
			full[r.Keyword] = true
		}
	}
	best, bestVol := "", int64(-1)
	err = lake.Scan(context.Background(), data, kw.DatasetKeywords, country, date, func(b []kw.KeywordRecord) error {
		for _, r := range b {
			if full[r.Keyword] && r.Volume > bestVol {
				best, bestVol = r.Keyword, r.Volume
			}
		}
		return nil
	})
	if err != nil || best == "" {
		return "", fmt.Errorf("cannot find a keyword with 10 related keywords in the sample: %v", err)
	}
	return best, nil
}
