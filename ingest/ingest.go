package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"strings"
	"time"

	"github.com/kwdata/kwdata/kw"
)

// MaxBadRows is the number of bad rows a Report lists; all are counted.
// It is also what an operator is shown, printed by `kwdata ingest` or
// logged by a run, followed by a count of the rest: a file of another
// country is bad on every line, and the first few say why as well as a
// thousand would.
const MaxBadRows = 10

// Progress stages passed to Options.Progress.
const (
	StagePlanner = "planner"
	StageSERPs   = "serps"
)

// Options of one ingest run. Run fills the defaults in one place
// (withDefaults); the zero value of every optional field means its default.
type Options struct {
	// Data is the data folder that holds the lake. Required.
	Data string
	// Date is the data date, YYYY-MM-DD. Required.
	Date string
	// Country is the ISO 3166-1 alpha-2 code of the run, either case; it must
	// be supported (kw.LookupCountry). Required.
	Country string
	// PlannerCSV are Keyword Planner export files; when given, the keywords
	// partition is written from them. Rows of later files come after rows of
	// earlier ones, which decides ties between duplicates.
	PlannerCSV []string
	// SERPJSONL are SERP JSONL files; when given, the serps partition is
	// written from them. A keyword on several lines keeps its last line
	// with results (its last line when none has any), and later files come
	// after earlier ones. At least one of PlannerCSV and
	// SERPJSONL is required.
	SERPJSONL []string
	// USDRate maps a currency code (either case) to its value in USD per unit
	// ("EUR": 1.08). USD needs no entry. Default none: a planner export in
	// any other currency is refused with a *CurrencyError.
	USDRate map[string]float64
	// Logger receives one line per file and one summary. Default: discard.
	Logger *slog.Logger
	// Progress, when set, is called from the reading goroutine as input is
	// read, with the bytes read so far and the total size of the stage's
	// files. Default: none.
	Progress func(stage string, done, total int64)

	// spillBytes bounds the SERPs, and the keyword records, held in memory
	// before they are sorted to disk (0: DefaultSpillBytes for SERPs, two
	// thirds of it for keyword records). Tests lower it to exercise the
	// merge.
	spillBytes int
}

// withDefaults checks opt and fills in its defaults.
func (opt Options) withDefaults() (Options, error) {
	if opt.Data == "" {
		return opt, errors.New("no data folder given")
	}
	if _, err := time.Parse(kw.DateLayout, opt.Date); err != nil {
		return opt, fmt.Errorf("date %q is not YYYY-MM-DD", opt.Date)
	}
	c, ok := kw.LookupCountry(opt.Country)
	if !ok {
		return opt, fmt.Errorf("country %q is not supported; write an ISO 3166-1 alpha-2 code such as us, gb or de (GET /v1/countries lists them all)", opt.Country)
	}
	opt.Country = strings.ToLower(c.Code)
	if len(opt.PlannerCSV) == 0 && len(opt.SERPJSONL) == 0 {
		return opt, errors.New("no input files given: pass a planner export, a SERP JSONL file, or both")
	}
	for cur, rate := range opt.USDRate {
		if math.IsNaN(rate) || math.IsInf(rate, 0) || rate <= 0 {
			return opt, fmt.Errorf("USD rate of %s is %v; want a positive number (USD per %s)", cur, rate, cur)
		}
		if strings.EqualFold(cur, "USD") && rate != 1 {
			return opt, fmt.Errorf("USD rate of USD is %v; USD needs no rate", rate)
		}
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	return opt, nil
}

// BadRow is one input line that was rejected; the run went on without it.
type BadRow struct {
	File   string
	Line   int // 1-based physical line of the file
	Reason string
}

// String formats the row as "file:line: reason".
func (b BadRow) String() string { return fmt.Sprintf("%s:%d: %s", b.File, b.Line, b.Reason) }

// Report says what one Run read and wrote.
type Report struct {
	Country string // upper case
	Date    string

	KeywordRows int // planner rows accepted, before deduplication
	Summaries   int // planner rows without a keyword (a segmentation's "All" total), skipped
	Keywords    int // distinct keywords written
	Duplicates  int // planner rows dropped for another row of the same keyword

	SERPLines      int // non-blank SERP JSONL lines read
	SERPs          int // distinct keywords whose SERP was written
	SERPRows       int // result rows written
	SERPDuplicates int // SERP lines replaced by a later line of the same keyword
	SkippedResults int // results dropped: no valid rank or no valid URL key
	Truncated      int // results dropped for a rank past kw.MaxRank, or beyond kw.MaxRank of a line

	Bad      []BadRow // the first MaxBadRows bad rows
	BadCount int      // all bad rows
}

// addBad counts a bad row and keeps it if the list has room.
func (r *Report) addBad(b BadRow) {
	r.BadCount++
	if len(r.Bad) < MaxBadRows {
		r.Bad = append(r.Bad, b)
	}
}

// Run ingests the planner exports and SERP JSONL files of opt into the lake:
// the keywords partition when PlannerCSV is given, the serps partition when
// SERPJSONL is, each written atomically. Every file is parsed before
// anything is written: if one is rejected whole (not the expected format, a
// currency without a rate, bad rows and no good one, a read error, ctx
// done), Run writes nothing and returns the error with the report so far.
// Otherwise bad rows do not fail the run; they are in the report. Should writing the serps partition fail, the
// keywords partition written just before stays.
func Run(ctx context.Context, opt Options) (Report, error) {
	opt, err := opt.withDefaults()
	if err != nil {
		return Report{}, fmt.Errorf("cannot ingest: %w", err)
	}
	log := opt.Logger.With("country", opt.Country, "date", opt.Date)
	rep := Report{Country: strings.ToUpper(opt.Country), Date: opt.Date}
	start := time.Now()

	// Both partitions are sorted on disk past opt.spillBytes each, so that
	// a country of tens of millions of keywords fits in a few GiB.
	keywords := newKeywordWriter(opt.Data, opt.Country, opt.Date, opt.spillBytes)
	defer keywords.abort()
	if len(opt.PlannerCSV) > 0 {
		src := 0
		err := eachFile(ctx, opt.PlannerCSV, StagePlanner, opt.Progress, func(r io.Reader, name string) error {
			fb := fileBad{add: rep.addBad}
			st, empty, err := parsePlanner(r, name, opt.USDRate, fb.bad, func(rec *kw.KeywordRecord) error {
				return keywords.add(rec, src)
			})
			if err == nil {
				err = fb.refuse(name, st)
			}
			if err != nil {
				return err
			}
			keywords.dropMonths(src, empty)
			src++
			rep.KeywordRows += st.Records
			rep.Summaries += st.Summaries
			log.Info("read planner export", "file", name, "rows", st.Records, "bad", st.Bad, "summaries", st.Summaries)
			if len(st.MissingColumns) > 0 {
				log.Warn("planner export lacks columns; their fields stay null", "file", name, "columns", st.MissingColumns)
			}
			return nil
		})
		if err == nil {
			// Once keywords went to disk, the rest follows them, so that
			// their memory is free for the SERPs.
			err = keywords.sorter.release()
		}
		if err != nil {
			return rep, err
		}
	}

	serps := NewSERPWriter(opt.Data, opt.Country, opt.Date, opt.spillBytes)
	defer serps.Abort()
	if len(opt.SERPJSONL) > 0 {
		err := eachFile(ctx, opt.SERPJSONL, StageSERPs, opt.Progress, func(r io.Reader, name string) error {
			var spillErr error
			fb := fileBad{add: rep.addBad}
			st, err := parseEncodedSERPs(r, name, opt.Country, func(keyword, rows []byte) {
				if spillErr == nil {
					spillErr = serps.addEncoded(keyword, rows)
				}
			}, fb.bad)
			if err == nil {
				err = spillErr
			}
			if err == nil {
				err = fb.refuse(name, st)
			}
			rep.SERPLines += st.Lines
			rep.SkippedResults += st.SkippedResults
			rep.Truncated += st.Truncated
			if err != nil {
				return err
			}
			log.Info("read SERP JSONL", "file", name, "serps", st.Records, "rows", st.Rows, "bad", st.Bad,
				"skipped_results", st.SkippedResults, "truncated", st.Truncated)
			return nil
		})
		if err != nil {
			return rep, err
		}
	}

	if len(opt.PlannerCSV) > 0 {
		res, err := keywords.commit(ctx)
		if err != nil {
			return rep, err
		}
		rep.Keywords, rep.Duplicates = res.Keywords, res.Duplicates
	}
	if len(opt.SERPJSONL) > 0 {
		res, err := serps.Commit(ctx)
		if err != nil {
			return rep, err
		}
		rep.SERPs, rep.SERPRows, rep.SERPDuplicates = res.Keywords, res.Rows, res.Duplicates
	}
	log.Info("ingested", "keywords", rep.Keywords, "duplicates", rep.Duplicates,
		"serps", rep.SERPs, "serp_rows", rep.SERPRows, "bad", rep.BadCount,
		"elapsed", time.Since(start).Round(time.Millisecond))
	return rep, nil
}

// fileBad passes one file's bad rows on to the report and remembers the
// first, to name it should the file have no good row.
type fileBad struct {
	add   func(BadRow)
	first BadRow
	seen  bool
}

func (f *fileBad) bad(b BadRow) {
	if !f.seen {
		f.first, f.seen = b, true
	}
	f.add(b)
}

// refuse returns a *NoGoodRowsError for a file with bad rows and no good
// one, and a *NoRowsError for a file without data rows (an empty SERP
// JSONL file, a header-only export): either would replace a partition
// with nothing, which a nightly run must never publish.
func (f *fileBad) refuse(name string, st ParseStats) error {
	switch {
	case st.Records > 0:
		return nil
	case st.Bad > 0:
		return &NoGoodRowsError{File: name, Bad: st.Bad, First: f.first}
	default:
		return &NoRowsError{File: name, Summaries: st.Summaries}
	}
}

// eachFile opens each file in turn and hands it to fn through a reader that
// reports progress over all files of the stage and stops on ctx.
func eachFile(ctx context.Context, names []string, stage string, progress func(string, int64, int64), fn func(io.Reader, string) error) error {
	var total int64
	for _, name := range names {
		st, err := os.Stat(name)
		if err != nil {
			return fmt.Errorf("cannot open %s: %w", name, err)
		}
		if st.IsDir() {
			return fmt.Errorf("cannot read %s: it is a folder, want a file", name)
		}
		total += st.Size()
	}
	pr := &progressReader{ctx: ctx, stage: stage, total: total, fn: progress}
	for _, name := range names {
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("cannot open %s: %w", name, err)
		}
		pr.r = f
		err = fn(pr, name)
		f.Close()
		if err != nil {
			return err
		}
	}
	pr.report(true)
	return nil
}

// progressReader stops reading once ctx is done and reports bytes read,
// at most once a progressStep.
type progressReader struct {
	ctx         context.Context
	r           io.Reader
	stage       string
	done, total int64
	last        int64
	fn          func(stage string, done, total int64)
}

const progressStep = 4 << 20

func (p *progressReader) Read(b []byte) (int, error) {
	if err := p.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := p.r.Read(b)
	p.done += int64(n)
	p.report(false)
	return n, err
}

func (p *progressReader) report(final bool) {
	if p.fn != nil && (final || p.done-p.last >= progressStep) {
		p.last = p.done
		p.fn(p.stage, p.done, max(p.total, p.done))
	}
}
