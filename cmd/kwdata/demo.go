package main

import (
	"context"
	"fmt"
	"github.com/kwdata/kwdata/serve"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/kwdata/kwdata/ingest"
	"github.com/kwdata/kwdata/ingest/sample"
	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/similarity"
)

// demoOptions is what a demo runs; tests shrink it.
type demoOptions struct {
	data      string
	keywords  int
	countries []string
	serve     serveConfig
}

func (m *Main) runDemo(ctx context.Context, args []string) error {
	fs := m.newFlagSet("demo", "[--addr 127.0.0.1:8080] [--data DIR] [--keywords N] [--countries us,gb,de]")
	addr := fs.String("addr", serve.DefaultAddr, "address to serve on")
	data := fs.String("data", "demo-data", "data folder for the sample, the lake and the index; replaced on each run, so only a new or empty folder or one an earlier demo made")
	n := fs.Int("keywords", sample.DefaultKeywords, "sample keywords per country")
	countries := fs.String("countries", strings.Join(sample.DefaultCountries(), ","), "sample countries")
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	list := splitList(*countries)
	if len(list) == 0 {
		return usageError{fmt.Errorf("--countries is empty; write e.g. --countries us,gb,de")}
	}
	for _, cc := range list {
		if _, ok := kw.LookupCountry(cc); !ok {
			return usageError{fmt.Errorf("--countries: %q is not a supported country; write ISO 3166-1 alpha-2 codes such as us,gb,de", cc)}
		}
	}
	if *n < 1 {
		return usageError{fmt.Errorf("--keywords is %d; write 1 or more", *n)}
	}
	return m.demo(ctx, demoOptions{
		data: *data, keywords: *n, countries: list,
		serve: serveConfig{addr: *addr},
	})
}

// demo runs every stage on a fresh sample and serves the result until ctx
// is done.
func (m *Main) demo(ctx context.Context, opt demoOptions) (err error) {
	start := time.Now()
	// The address is taken first: a busy port should fail the demo in a
	// moment, not after every stage has run.
	ln := opt.serve.listener
	if ln == nil {
		hint := flagAddrHint
		if m.Getenv != nil && m.Getenv(makeDemoEnv) != "" {
			hint = "make demo ADDR=%s"
		}
		if ln, err = listen(opt.serve.addr, hint); err != nil {
			return err
		}
	}
	served := false
	defer func() {
		if !served {
			ln.Close()
		}
	}()
	undo := newFolderGuard(opt.data)
	defer func() {
		if err != nil && !served {
			undo()
		}
	}()
	release, err := m.claimDemoFolder(opt.data)
	if err != nil {
		return err
	}
	// Held from here until the server stops: the folder is in use from
	// the first stage on.
	defer release()
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
			return fmt.Errorf("cannot ingest the sample of %s: %w", strings.ToUpper(cc), err)
		}
		fmt.Fprintf(m.Stderr, "    %s: %d keywords, %d SERPs, %d bad rows\n",
			rep.Country, rep.Keywords, rep.SERPs, rep.BadCount)
	}
	fmt.Fprintln(m.Stderr, "3/4 computing related keywords and intents")
	if _, err := m.similarity(ctx, similarity.RunOptions{Data: opt.data, Date: date}); err != nil {
		return err
	}
	fmt.Fprintln(m.Stderr, "4/4 building the index")
	man, err := m.buildIndex(ctx, opt.data, date, publishGuards{})
	if err != nil {
		return err
	}
	first := strings.ToUpper(opt.countries[0])
	if len(man.Examples[first]) == 0 {
		return fmt.Errorf("the sample index has no keyword of %s to show", first)
	}
	cfg := opt.serve
	cfg.data = opt.data
	cfg.listener = ln
	cfg.lockHeld = true
	cfg.ready = func(addr string) {
		q := url.Values{"q": {man.Examples[first][0]}, "country": {strings.ToLower(first)}}.Encode()
		fmt.Fprintf(m.Stdout, "\nkwdata is serving the sample (built in %s). Open in a browser:\n\n  http://%s/\n  http://%s/keyword?%s\n\nor ask the API:\n\n  curl 'http://%s/v1/keyword?%s'\n\nPress Ctrl-C to stop.\n",
			time.Since(start).Round(time.Second), addr, addr, q, addr, q)
	}
	served = true
	return m.serve(ctx, cfg)
}
