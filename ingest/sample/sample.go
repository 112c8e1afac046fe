// Package sample owns kwdata's deterministic sample-data generator: it writes,
// per country, a Google Keyword Planner export (keyword-planner.csv) and a
// SERP JSONL file (serps.jsonl) with the structure real data has.
//
// The structure is what the later stages are tested and benchmarked on:
// keywords are built from topics and modifiers and fall into intent groups
// whose results share most URLs; groups of a topic share a few URLs; a
// Zipf-popular set of hub URLs appears in many SERPs; URLs come in spelling
// variants that normalize to one kw.URLKey; volumes sit on the planner's
// rounding buckets so that ties are common. A few rows are deliberately
// awkward (ranges, odd case, duplicates, short or missing SERPs, SERPs of
// keywords the planner file lacks) so that ingest meets them too.
//
// The same Options always give byte-identical files.
package sample

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kwdata/kwdata/kw"
)

// PlannerFile is the name of the planner export in each country folder.
const PlannerFile = "keyword-planner.csv"

// SERPFile is the name of the SERP JSONL file in each country folder.
const SERPFile = "serps.jsonl"

// MaxKeywords bounds Options.Keywords; the vocabulary yields a few million
// distinct keywords per country and the files grow by about 1.4 KB a keyword.
const MaxKeywords = 20_000_000

// DefaultKeywords is the number of keywords a country gets when
// Options.Keywords is 0: enough for every page and API answer to look
// real, small enough that `kwdata demo` is up in about a minute.
const DefaultKeywords = 20000

// DefaultCountries returns the countries of a sample when Options names
// none: three markets with different languages and sizes.
func DefaultCountries() []string { return []string{"us", "gb", "de"} }

// Options says what to generate. The zero value of every field except Out
// means its default; Generate fills the defaults in one place (withDefaults).
type Options struct {
	// Out is the output folder; one sub-folder per country is created in it.
	// Required.
	Out string
	// Keywords is the number of distinct keywords in each country's planner
	// file. Default DefaultKeywords; at most MaxKeywords.
	Keywords int
	// Countries are ISO 3166-1 alpha-2 codes, either case (written in lower
	// case). Default DefaultCountries().
	Countries []string
	// Seed selects the data set. Default 1.
	Seed int64
	// Months is the number of monthly-searches columns. Default 12.
	Months int
	// Now dates the export: the last monthly column is the calendar month
	// before Now's (in Now's location), and the preamble carries Now. It
	// changes nothing else. Default time.Now().
	Now time.Time
	// URLTail is the mean number of a SERP's results that are the
	// keyword's own pages, found in no other SERP: the long tail of URLs.
	// Default 0: the group core holds 12–18 results, so about 5 a SERP
	// are the keyword's own. Real corpora run longer tails (about 9 new
	// URLs a SERP), which give the similarity stage fewer shared URLs to
	// count and more to intern; at most MaxURLTail.
	URLTail float64
	// HubSkew is the Zipf exponent of hub popularity: hub i is drawn with
	// weight 1/(i+1)^HubSkew. Default 0: 0.8, with the most popular hub in
	// about 4.5% of SERPs. The hub draws a SERP stay those of the default,
	// so a larger exponent (0.9, say) puts the same hub results on fewer,
	// more frequent hubs; between MinHubSkew and MaxHubSkew.
	HubSkew float64
	// Shape is ShapeSample (the default, "") or ShapeWeb: the web's long
	// tail, where intent groups are small and most SERPs share only a few
	// mid-frequency URLs with others. URLTail does not apply to ShapeWeb.
	Shape string
	// Logger receives one line per country. Default: discard.
	Logger *slog.Logger
}

// Bounds of Options.URLTail and Options.HubSkew.
const (
	MaxURLTail = 16
	MinHubSkew = 0.5
	MaxHubSkew = 2
)

// Result counts what Generate wrote, totalled over all countries.
type Result struct {
	Files    []string // paths of the files written, per country planner then SERPs
	Keywords int      // distinct keywords in the planner files
	SERPs    int      // lines in the SERP files
	SERPRows int      // results in the SERP files
}

func (o Options) withDefaults() (Options, error) {
	if o.Out == "" {
		return o, fmt.Errorf("output folder is empty; pass --out DIR")
	}
	if o.Keywords == 0 {
		o.Keywords = DefaultKeywords
	}
	if o.Keywords < 0 || o.Keywords > MaxKeywords {
		return o, fmt.Errorf("keywords %d out of range; pass 1 to %d", o.Keywords, MaxKeywords)
	}
	if len(o.Countries) == 0 {
		o.Countries = DefaultCountries()
	}
	seen := make(map[string]bool, len(o.Countries))
	ccs := make([]string, 0, len(o.Countries))
	for _, c := range o.Countries {
		cc := strings.ToLower(strings.TrimSpace(c))
		if _, ok := kw.LookupCountry(cc); !ok {
			return o, fmt.Errorf("country %q is not supported; pass ISO 3166-1 alpha-2 codes such as us,gb,de", c)
		}
		if !seen[cc] {
			seen[cc] = true
			ccs = append(ccs, cc)
		}
	}
	o.Countries = ccs
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Months == 0 {
		o.Months = 12
	}
	if o.Months < 1 || o.Months > 48 {
		return o, fmt.Errorf("months %d out of range; pass 1 to 48", o.Months)
	}
	if o.URLTail < 0 || o.URLTail > MaxURLTail {
		return o, fmt.Errorf("url tail %g out of range; pass 0 (the default shape) to %d own URLs a SERP", o.URLTail, MaxURLTail)
	}
	if o.Shape == "" {
		o.Shape = ShapeSample
	}
	if o.Shape != ShapeSample && o.Shape != ShapeWeb {
		return o, fmt.Errorf("shape %q is unknown; pass %s or %s", o.Shape, ShapeSample, ShapeWeb)
	}
	if o.Shape == ShapeWeb && o.URLTail != 0 {
		return o, fmt.Errorf("url tail %g does not apply to the %s shape; drop --url-tail", o.URLTail, ShapeWeb)
	}
	if o.HubSkew == 0 {
		o.HubSkew = hubExponent
	}
	if o.HubSkew < MinHubSkew || o.HubSkew > MaxHubSkew {
		return o, fmt.Errorf("hub skew %g out of range; pass a Zipf exponent from %g to %g (default %g)", o.HubSkew, MinHubSkew, float64(MaxHubSkew), hubExponent)
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o, nil
}

// Generate writes keyword-planner.csv and serps.jsonl for every country of
// opt into opt.Out/<cc>/. Each file is written under a temporary name and
// renamed into place, so a failed run leaves no half-written file behind.
func Generate(ctx context.Context, opt Options) (Result, error) {
	opt, err := opt.withDefaults()
	if err != nil {
		return Result{}, err
	}
	var res Result
	for _, cc := range opt.Countries {
		start := time.Now()
		dir := filepath.Join(opt.Out, cc)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return res, fmt.Errorf("cannot create output folder %s: %w", dir, err)
		}
		st, err := generateCountry(ctx, opt, cc, dir)
		if err != nil {
			return res, fmt.Errorf("cannot generate sample data for %s: %w", cc, err)
		}
		res.Files = append(res.Files, filepath.Join(dir, PlannerFile), filepath.Join(dir, SERPFile))
		res.Keywords += st.keywords
		res.SERPs += st.serps
		res.SERPRows += st.serpRows
		opt.Logger.Info("sample data written", "country", cc, "dir", dir,
			"keywords", st.keywords, "planner_rows", st.plannerRows, "groups", st.groups,
			"serps", st.serps, "serp_rows", st.serpRows, "elapsed", time.Since(start).Round(time.Millisecond))
	}
	return res, nil
}
