package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/kwdata/kwdata/ingest"
)

func (m *Main) runIngest(ctx context.Context, args []string) error {
	fs := m.newFlagSet("ingest", "--data DIR --date YYYY-MM-DD --country CC [--planner-csv FILE]... [--serp-jsonl FILE]... [--usd-rate EUR=1.08]... | --config FILE [--date YYYY-MM-DD] [--country CC] [--data DIR]")
	data := fs.String("data", "", "data folder that holds the lake (required without --config; with --config, replaces the config's data:)")
	date := fs.String("date", "", "data date, YYYY-MM-DD (required)")
	country := fs.String("country", "", "country code, e.g. us (required with files; with --config, default every configured country)")
	var planner, serps, rates stringList
	fs.Var(&planner, "planner-csv", "Keyword Planner export file (repeatable)")
	fs.Var(&serps, "serp-jsonl", "SERP JSONL file (repeatable)")
	fs.Var(&rates, "usd-rate", "USD per unit of a planner export's currency, as CUR=RATE, e.g. EUR=1.08 (repeatable)")
	config := fs.String("config", "", "YAML configuration naming the API sources")
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	if *config != "" {
		// The config names each country's files and rates; flags beside
		// it would be ignored, so an operator could believe a file was
		// ingested when it was not.
		var given []string
		for _, f := range []struct {
			name string
			vals stringList
		}{{"--planner-csv", planner}, {"--serp-jsonl", serps}, {"--usd-rate", rates}} {
			if len(f.vals) > 0 {
				given = append(given, f.name)
			}
		}
		if len(given) > 0 {
			return usageError{fmt.Errorf("%s cannot be used with --config, which names its own files; list them under files.<cc> in the config (planner_csv, serp_jsonl, usd_rate), or leave out --config",
				strings.Join(given, " and "))}
		}
		if *date != "" {
			if err := checkDate(*date); err != nil {
				return err
			}
		}
		return m.ingestFromConfig(ctx, *config, *data, *date, *country)
	}
	if err := require([2]string{"data", *data}, [2]string{"date", *date}, [2]string{"country", *country}); err != nil {
		return err
	}
	if err := checkDate(*date); err != nil {
		return err
	}
	if err := checkCountry(*country); err != nil {
		return err
	}
	if len(planner) == 0 && len(serps) == 0 {
		return usageError{fmt.Errorf("nothing to ingest; pass --planner-csv FILE, --serp-jsonl FILE or --config FILE")}
	}
	usd, err := parseRates(rates)
	if err != nil {
		return err
	}
	// ingest may create the data folder; a failed one removes it again.
	undo := newFolderGuard(*data)
	err = m.ingestFiles(ctx, ingest.Options{
		Data: *data, Date: *date, Country: *country, PlannerCSV: planner, SERPJSONL: serps, USDRate: usd,
	})
	if err != nil {
		undo()
	}
	return err
}

// ingestFiles runs a manual ingest of export files under the run lock: it
// replaces the partitions of a date, so it must never overlap a scheduled
// or manual run, which would publish a mix of both.
func (m *Main) ingestFiles(ctx context.Context, opt ingest.Options) error {
	release, err := m.runLock(opt.Data, "ingest")
	if err != nil {
		return err
	}
	defer release()
	// Two bars, one after the other: the files read, in MB, then the
	// records sorted and written, which for a large country takes longer.
	read, readDone := m.progress("ingest "+opt.Country+": read", unitBytes)
	write, writeDone := m.progress("ingest "+opt.Country+": sort and write", "rows")
	defer readDone()
	defer writeDone()
	opt.Logger = m.Logger
	opt.Progress = func(_ string, done, total int64) { read(done, total) }
	var writing bool // ingest calls one callback at a time
	opt.WriteProgress = func(done, total int64) {
		if !writing {
			readDone()
			writing = true
		}
		write(done, total)
	}
	rep, err := ingest.Run(ctx, opt)
	readDone()
	writeDone()
	printBadRows(m.Stderr, rep)
	if err != nil {
		return fmt.Errorf("cannot ingest %s: %w", strings.ToUpper(opt.Country), err)
	}
	summaries := ""
	if rep.Summaries > 0 {
		summaries = fmt.Sprintf(", %d summary rows skipped", rep.Summaries)
	}
	fmt.Fprintf(m.Stdout, "ingested %s %s: %d keywords (%d duplicates%s), %d SERPs with %d results, %d bad rows\n",
		rep.Country, rep.Date, rep.Keywords, rep.Duplicates, summaries, rep.SERPs, rep.SERPRows, rep.BadCount)
	return nil
}

// printBadRows prints the bad rows rep lists (the first
// ingest.MaxBadRows), one a line with file and line number, and a count of
// the rest.
func printBadRows(w io.Writer, rep ingest.Report) {
	for _, b := range rep.Bad {
		fmt.Fprintf(w, "bad row: %s\n", b)
	}
	if more := rep.BadCount - len(rep.Bad); more > 0 {
		fmt.Fprintf(w, "... and %d more bad rows\n", more)
	}
}

// parseRates reads --usd-rate CUR=RATE values.
func parseRates(vals []string) (map[string]float64, error) {
	if len(vals) == 0 {
		return nil, nil
	}
	out := make(map[string]float64, len(vals))
	for _, v := range vals {
		cur, rate, ok := strings.Cut(v, "=")
		f, err := strconv.ParseFloat(rate, 64)
		if !ok || err != nil || f <= 0 {
			return nil, usageError{fmt.Errorf("--usd-rate %q is not CUR=RATE with a positive rate, e.g. EUR=1.08", v)}
		}
		out[strings.ToUpper(strings.TrimSpace(cur))] = f
	}
	return out, nil
}
