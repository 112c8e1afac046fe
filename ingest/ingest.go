package ingest

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"log/slog"
	"math"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/lake"
	"golang.org/x/sync/errgroup"
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
	// Progress, when set, is called as input is read, with the stage of
	// the file being read and the bytes read so far and the total size of
	// every input file of the run: the planner exports and the SERPs are
	// read at once, so the two stages' calls interleave. Calls come from
	// the reading goroutines, one at a time. Default: none.
	Progress func(stage string, done, total int64)
	// WriteProgress, when set, is called as the partitions are sorted and
	// written: with the records (planner rows and SERP lines) merged into
	// the lake so far, duplicates included, and the records to merge.
	// Calls begin once every input file is read, after the last call of
	// Progress, so total never changes; the keywords partition may be
	// written while the SERPs are still read, and the first call then
	// counts what it wrote meanwhile. The last call has done == total.
	// Calls come one at a time. Default: none.
	WriteProgress func(done, total int64)

	// spillBytes bounds the SERPs and the keyword records held in memory
	// before they are sorted to disk, divided between them by
	// spillBudgets (0: DefaultSpillBytes). Tests lower it to exercise the
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

	// KeywordsCompared are the keywords a run with SERPs compares them
	// with: those of its planner exports, or, without any, those of the
	// date's keywords partition (0: none to compare with).
	// KeywordsWithSERP are those of them that got a SERP with results;
	// Run warns when that is fewer than half of them.
	KeywordsCompared, KeywordsWithSERP int

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
// anything is published: if one is rejected whole (not the expected format,
// a currency without a rate, bad rows and no good one, a read error, ctx
// done), Run writes nothing and returns the error with the report so far.
// Otherwise bad rows do not fail the run; they are in the report, the
// planner exports' first. Both partitions are written to the staging
// folder before either is published; should publishing the serps
// partition fail, the keywords partition published just before stays.
//
// The planner exports are read, sorted and written to the staging folder
// on a goroutine of their own while the SERPs are parsed: the planner
// parse is serial, and in turn with the SERPs it left a core idle for as
// long as it took.
func Run(ctx context.Context, opt Options) (Report, error) {
	opt, err := opt.withDefaults()
	if err != nil {
		return Report{}, fmt.Errorf("cannot ingest: %w", err)
	}
	log := opt.Logger.With("country", opt.Country, "date", opt.Date)
	rep := Report{Country: strings.ToUpper(opt.Country), Date: opt.Date}
	start := time.Now()
	prog, err := newRunProgress(opt.Progress, opt.PlannerCSV, opt.SERPJSONL)
	if err != nil {
		return rep, err
	}
	prog.writeFn = opt.WriteProgress
	for _, files := range [][]string{opt.PlannerCSV, opt.SERPJSONL} {
		if len(files) > 0 {
			prog.reading++
		}
	}

	// The first error is the run's, and stops the other goroutine, whose
	// own error is then only the cancellation.
	g, gctx := errgroup.WithContext(ctx)

	// Both partitions are sorted on disk past their budgets, so that a
	// country of tens of millions of keywords fits in a few GiB; when both
	// are read at once, the keywords take a share of the SERPs' budget.
	serpBudget, keywordBudget := spillBudgets(opt.spillBytes, len(opt.PlannerCSV) > 0, len(opt.SERPJSONL) > 0)
	var (
		krep    Report
		kres    WriteResult
		pending *lake.Writer[kw.KeywordRecord] // the keywords partition, written, not yet published
		sres    WriteResult
		slake   *lake.SERPWriter // the SERPs partition, likewise
	)
	// Whatever was staged and not published is dropped (Abort after a
	// Commit does nothing).
	defer func() {
		if pending != nil {
			pending.Abort()
		}
		if slake != nil {
			slake.Abort()
		}
	}()
	// A run with SERPs counts the keywords that got one: a SERP file of
	// another keyword list matches none, and similarity would then find
	// no related keywords at all.
	var keywordKeys, serpKeys *keySet
	if len(opt.SERPJSONL) > 0 {
		seed := maphash.MakeSeed()
		keywordKeys, serpKeys = &keySet{seed: seed}, &keySet{seed: seed}
	}
	if len(opt.PlannerCSV) > 0 {
		g.Go(func() error {
			var err error
			kres, pending, err = ingestKeywords(gctx, opt, keywordBudget, keywordKeys, &krep, prog, log)
			if err != nil {
				return err
			}
			log.Debug("wrote keywords to staging", "keywords", kres.Keywords, "elapsed", time.Since(start).Round(time.Millisecond))
			return nil
		})
	}

	serps := NewSERPWriter(opt.Data, opt.Country, opt.Date, serpBudget)
	serps.keys = serpKeys
	defer serps.Abort()
	if len(opt.SERPJSONL) > 0 {
		g.Go(func() error {
			var err error
			sres, slake, err = ingestSERPs(gctx, opt, serps, &rep, prog, log, start)
			return err
		})
	}
	err = g.Wait()
	rep = mergeReports(krep, rep)
	if err != nil {
		return rep, err
	}

	if pending != nil {
		err := pending.Commit()
		pending = nil
		if err != nil {
			return rep, fmt.Errorf("cannot write keywords of %s: %w", opt.Country, err)
		}
		rep.Keywords, rep.Duplicates = kres.Keywords, kres.Duplicates
	}
	if slake != nil {
		if err := slake.Commit(); err != nil {
			return rep, fmt.Errorf("cannot write SERPs of %s: %w", opt.Country, err)
		}
		rep.SERPs, rep.SERPRows, rep.SERPDuplicates = sres.Keywords, sres.Rows, sres.Duplicates
	}
	if serpKeys != nil {
		serpCoverage(ctx, opt, keywordKeys, serpKeys, &rep, log)
	}
	log.Info("ingested", "keywords", rep.Keywords, "duplicates", rep.Duplicates,
		"serps", rep.SERPs, "serp_rows", rep.SERPRows, "bad", rep.BadCount,
		"elapsed", time.Since(start).Round(time.Millisecond))
	return rep, nil
}

// serpCoverage counts the keywords that got a SERP, of the run's planner
// exports (keywords, filled as they were written) or else of the date's
// keywords partition, and warns in one line when fewer than half did.
func serpCoverage(ctx context.Context, opt Options, keywords, serps *keySet, rep *Report, log *slog.Logger) {
	if len(opt.PlannerCSV) == 0 {
		ok, err := lakeKeywords(ctx, opt.Data, opt.Country, opt.Date, keywords)
		if err != nil {
			log.Warn("cannot count the keywords that got a SERP", "err", err)
			return
		}
		if !ok {
			return // no keywords on the date yet: nothing to compare with
		}
	}
	rep.KeywordsCompared = len(keywords.hashes)
	rep.KeywordsWithSERP = intersect(keywords.hashes, serps.hashes)
	if rep.KeywordsCompared > 0 && 2*rep.KeywordsWithSERP < rep.KeywordsCompared {
		log.Warn(fmt.Sprintf("only %d of the %d keywords got a SERP; similarity finds related keywords only among those, so check that the SERP files are for this country's planner keywords",
			rep.KeywordsWithSERP, rep.KeywordsCompared), "keywords", rep.KeywordsCompared, "with_serp", rep.KeywordsWithSERP)
	}
}

// ingestSERPs reads the SERP files of opt into serps and writes the serps
// partition into the staging folder; the caller publishes it (Commit) or
// drops it (Abort). rep gets the SERP lines' counts and bad rows. The
// partition is written while the keywords may still be: the merge and the
// encoders have the cores to themselves only once the planner exports are
// done.
func ingestSERPs(ctx context.Context, opt Options, serps *SERPWriter, rep *Report, prog *runProgress, log *slog.Logger, start time.Time) (WriteResult, *lake.SERPWriter, error) {
	err := eachFile(ctx, opt.SERPJSONL, StageSERPs, prog, func(r io.Reader, name string) error {
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
		return WriteResult{}, nil, err
	}
	log.Debug("read SERPs", "elapsed", time.Since(start).Round(time.Millisecond))
	if err := ctx.Err(); err != nil {
		return WriteResult{}, nil, err
	}
	prog.toWrite(serps.added)
	serps.rows.fn = prog.wrote
	res, w, err := serps.write(ctx)
	if err != nil {
		return WriteResult{}, nil, err
	}
	log.Debug("wrote SERPs to staging", "elapsed", time.Since(start).Round(time.Millisecond))
	return res, w, nil
}

// spillBudgets divides the memory budget (0: DefaultSpillBytes) between
// the SERPs and the keyword records of a run. Alone, the SERPs take all of
// it and the keyword records two thirds (their reader leaves more garbage
// for the collector); read at once, the keyword records take a sixth and
// the SERPs the rest, so that the two never hold more than one budget.
func spillBudgets(total int, planner, serps bool) (serpBytes, keywordBytes int) {
	if total <= 0 {
		total = DefaultSpillBytes
	}
	if planner && serps {
		return total - total/6, max(total/6, 1)
	}
	return total, max(total*2/3, 1)
}

// ingestKeywords reads the planner exports of opt into a keywordWriter
// and writes the keywords partition into the staging folder; the caller
// publishes it (Commit) or drops it (Abort). rep gets the planner rows'
// counts and bad rows.
func ingestKeywords(ctx context.Context, opt Options, budget int, keys *keySet, rep *Report, prog *runProgress, log *slog.Logger) (WriteResult, *lake.Writer[kw.KeywordRecord], error) {
	keywords := newKeywordWriter(opt.Data, opt.Country, opt.Date, budget)
	keywords.keys = keys
	defer keywords.abort()
	src := 0
	err := eachFile(ctx, opt.PlannerCSV, StagePlanner, prog, func(r io.Reader, name string) error {
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
		for _, u := range st.Unreadable {
			// One line a column: an export of another interface language
			// can have thousands of such cells, and one says as much.
			log.Warn("planner rows kept with a word kwdata cannot read; "+u.keptAs(), "file", name, "column", u.Column,
				"rows", u.Rows, "first", u.First, "line", u.Line)
		}
		return nil
	})
	if err != nil {
		return WriteResult{}, nil, err
	}
	prog.toWrite(keywords.added)
	keywords.rows.fn = prog.wrote
	return keywords.write(ctx)
}

// mergeReports returns the report of a run from the planner exports'
// part and the SERPs' part (which holds the country and date): the
// planner's bad rows come first, as they did when the files were read one
// after the other.
func mergeReports(planner, serps Report) Report {
	r := serps
	r.KeywordRows, r.Summaries = planner.KeywordRows, planner.Summaries
	r.Bad = append(planner.Bad[:len(planner.Bad):len(planner.Bad)], serps.Bad...)
	r.Bad = r.Bad[:min(len(r.Bad), MaxBadRows)]
	if len(r.Bad) == 0 {
		r.Bad = nil
	}
	r.BadCount = planner.BadCount + serps.BadCount
	return r
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
// reports progress and stops on ctx.
func eachFile(ctx context.Context, names []string, stage string, prog *runProgress, fn func(io.Reader, string) error) error {
	pr := &progressReader{ctx: ctx, stage: stage, prog: prog}
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
	pr.flush(true)
	return nil
}

// inputSize returns the total size of files, or an error naming the first
// that is missing or a folder.
func inputSize(names []string) (int64, error) {
	var total int64
	for _, name := range names {
		st, err := os.Stat(name)
		if err != nil {
			return 0, fmt.Errorf("cannot open %s: %w", name, err)
		}
		if st.IsDir() {
			return 0, fmt.Errorf("cannot read %s: it is a folder, want a file", name)
		}
		total += st.Size()
	}
	return total, nil
}

// runProgress adds up the bytes read of every input file of a run, read
// by one goroutine a stage, and passes the sums on to Options.Progress,
// one call at a time, so that a caller shows one bar for the whole run.
// It does the same for the records the two writers merge, passed on to
// Options.WriteProgress.
type runProgress struct {
	mu            sync.Mutex
	fn            func(stage string, done, total int64)
	done, total   int64
	writeFn       func(done, total int64)
	reading       int // writers whose files are not all read yet
	wdone, wtotal int64
}

func newRunProgress(fn func(string, int64, int64), planner, serps []string) (*runProgress, error) {
	a, err := inputSize(planner)
	if err != nil {
		return nil, err
	}
	b, err := inputSize(serps)
	if err != nil {
		return nil, err
	}
	return &runProgress{fn: fn, total: a + b}, nil
}

// add counts n more bytes read by stage and reports the sums.
func (p *runProgress) add(stage string, n int64) {
	if p.fn == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += n
	p.fn(stage, p.done, max(p.total, p.done))
}

// toWrite counts n more records to merge: those of a writer whose files
// are read. Once every writer's are, it reports what was merged so far.
func (p *runProgress) toWrite(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.wtotal += n
	p.reading--
	if p.reading == 0 && p.wdone > 0 && p.writeFn != nil {
		p.writeFn(p.wdone, max(p.wtotal, p.wdone))
	}
}

// wrote counts n more records merged and reports the sums, once every
// writer's files are read.
func (p *runProgress) wrote(n int64) {
	if p.writeFn == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.wdone += n
	if p.reading == 0 {
		p.writeFn(p.wdone, max(p.wtotal, p.wdone))
	}
}

// rowCounter counts the records a writer merges and passes them on to fn
// every progressRows of them, and the rest at flush: a call a record
// would cost a lock a record.
type rowCounter struct {
	fn      func(n int64) // nil: count nothing
	pending int64
}

const progressRows = 4 << 10

func (c *rowCounter) add(n int) {
	if c.fn == nil {
		return
	}
	c.pending += int64(n)
	if c.pending >= progressRows {
		c.fn(c.pending)
		c.pending = 0
	}
}

func (c *rowCounter) flush() {
	if c.fn != nil && c.pending > 0 {
		c.fn(c.pending)
		c.pending = 0
	}
}

// progressReader stops reading once ctx is done and reports bytes read,
// at most once a progressStep.
type progressReader struct {
	ctx     context.Context
	r       io.Reader
	stage   string
	pending int64 // read, not yet reported
	prog    *runProgress
}

const progressStep = 4 << 20

func (p *progressReader) Read(b []byte) (int, error) {
	if err := p.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := p.r.Read(b)
	p.pending += int64(n)
	p.flush(false)
	return n, err
}

func (p *progressReader) flush(final bool) {
	if final || p.pending >= progressStep {
		p.prog.add(p.stage, p.pending)
		p.pending = 0
	}
}
