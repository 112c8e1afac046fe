package index

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/objstorage"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/lake"
)

// BuildOptions configures Build.
type BuildOptions struct {
	// Data is the data folder holding lake/ and index/. Required.
	Data string
	// Date is the lake date to compile, "YYYY-MM-DD". Required.
	Date string
	// Logger receives progress and Pebble's messages. Default: discard.
	Logger *slog.Logger
	// Now stamps the build time and id. Default: time.Now.
	Now func() time.Time
	// FS is where the index is written (the lake is always read from the
	// operating system's file system). Default: vfs.Default. Tests pass
	// pebble's errorfs or vfs.NewMem.
	FS vfs.FS
	// Progress, if set, is called with the keywords done and the total
	// (the keywords partitions' row count), before the first keyword,
	// every progressEvery keywords and at the end of each country.
	Progress func(done, total int)
	// TableBytes is the size at which an SSTable is finished and the next
	// begun. Default: 128 MiB.
	TableBytes int64
	// AllowMissingRelated publishes a build although a country with
	// keywords has no related partition on the date, or one without rows
	// beside SERP rows of the date (its keywords then have no related
	// keywords). Default: refused with ErrMissingRelated.
	AllowMissingRelated bool
	// AllowShrink publishes a build although a country of the published
	// build has no keywords in it, or fewer than half as many. Default:
	// refused with ErrShrink.
	AllowShrink bool
	// BeforePublish, if set, is called with the complete build, in place
	// under <data>/index/<id>/ but not yet named by CURRENT (to upload it
	// elsewhere first). An error fails the build: what it wrote is removed
	// and the published index stays as it was.
	BeforePublish func(ctx context.Context, m Manifest) error
}

// ErrMissingRelated is wrapped in the error of a build refused because a
// country with keywords has no related partition on the date, or one
// without rows although the country has SERPs on the date: the similarity
// stage did not run or failed, or the SERPs match none of the keywords,
// and publishing would replace the related keywords of the published
// build with none.
var ErrMissingRelated = errors.New("a country has keywords but no related partition")

// ErrShrink is wrapped in the error of a build refused because a country
// of the published build would lose all its keywords or more than half of
// them: more likely a failed or partial ingest than a smaller market.
var ErrShrink = errors.New("a country would lose keywords")

func (o *BuildOptions) ensureDefaults() error {
	if o.Data == "" {
		return errors.New("no data folder given")
	}
	if _, err := time.Parse(kw.DateLayout, o.Date); err != nil {
		return fmt.Errorf("date %q is not YYYY-MM-DD", o.Date)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if o.Progress == nil {
		o.Progress = func(int, int) {}
	}
	if o.TableBytes <= 0 {
		o.TableBytes = 128 << 20
	}
	return nil
}

// progressEvery is how many keywords a build writes between progress
// reports (a multiple of the 4096 between cancellation checks).
const progressEvery = 64 << 10

// filterBitsPerKey sizes the bloom filters: 10 bits a key give about 1%
// false positives, so a lookup of an unknown keyword almost never reads a
// data block.
const filterBitsPerKey = 10

// dataBlockBytes is the target size of a data block. Pebble's default of
// 4 KiB holds about 20 entries; a lookup that hits the block cache then
// pays mostly for the index blocks in front of the data. With 16 KiB the
// index is a quarter the size and BenchmarkLookup (256 MiB cache, one
// core) fell from 4.4 to 3.6 us; a lookup that misses the cache reads
// and decompresses 16 KiB instead of 4, which --cache-mb avoids by
// holding the whole index.
const dataBlockBytes = 16 << 10

// dbOptions are the Pebble options of both the build and the store; the
// filter policy must be known to the reader for the filters to be used.
func dbOptions(fs vfs.FS, logger pebbleLogger) *pebble.Options {
	o := &pebble.Options{FS: fs, Logger: logger}
	// Pebble's default treats a corrupt table as fatal to the process. A
	// corrupt build is refused (or, once served, fails the lookups that
	// touch it) while the process goes on.
	o.EventListener = &pebble.EventListener{DataCorruption: func(info pebble.DataCorruptionInfo) {
		logger.log.Error("index data corruption", "path", info.Path, "err", info.Details)
	}}
	for i := range o.Levels {
		o.Levels[i].FilterPolicy = bloom.FilterPolicy(filterBitsPerKey)
		o.Levels[i].BlockSize = dataBlockBytes
		o.Levels[i].Compression = func() *sstable.CompressionProfile { return sstable.SnappyCompression }
	}
	return o
}

// Build compiles the keywords, related and intents partitions of one date,
// for every country with a keywords partition on that date, into a new build
// directory <data>/index/<build-id>/ and publishes it: CURRENT changes in one
// rename. A failed build leaves the published index untouched and removes
// what it wrote.
//
// The three partitions of a country are sorted by keyword, so one merging
// pass streams them straight into SSTables in key order (countries in code
// order), holding no more than a scan batch of each in memory. The tables
// are then ingested into an empty Pebble database.
func Build(ctx context.Context, opt BuildOptions) (Manifest, error) {
	if err := opt.ensureDefaults(); err != nil {
		return Manifest{}, fmt.Errorf("cannot build index: %w", err)
	}
	start := time.Now()
	countries, err := lake.Countries(opt.Data, kw.DatasetKeywords, opt.Date)
	if err != nil {
		return Manifest{}, fmt.Errorf("cannot list keyword partitions of %s: %w", opt.Date, err)
	}
	if len(countries) == 0 {
		return Manifest{}, fmt.Errorf("cannot build index: the lake in %s has no keywords partition dated %s; run ingest for that date first", opt.Data, opt.Date)
	}
	fs := opt.FS
	indexDir := kw.IndexDir(opt.Data)
	counts, total, err := keywordCounts(opt.Data, opt.Date, countries)
	if err != nil {
		return Manifest{}, err
	}
	// The guards run before anything is written: a refused build costs
	// the reading of a few Parquet footers and leaves the index as it was.
	if err := guard(fs, indexDir, opt, counts); err != nil {
		return Manifest{}, fmt.Errorf("cannot publish the index of %s: %w", opt.Date, err)
	}
	if err := fs.MkdirAll(indexDir, 0o755); err != nil {
		return Manifest{}, fmt.Errorf("cannot create index folder %s: %w", indexDir, err)
	}
	now := opt.Now().UTC()
	id, err := newBuildID(now)
	if err != nil {
		return Manifest{}, err
	}
	log := opt.Logger.With("build", id, "date", opt.Date)
	b := &builder{
		opt:     opt,
		log:     log,
		total:   total,
		counts:  counts,
		staging: fs.PathJoin(indexDir, buildingPrefix+id),
		final:   fs.PathJoin(indexDir, id),
		m: Manifest{
			FormatVersion: FormatVersion,
			Explore:       exploreManifestVersion(),
			DataDate:      opt.Date,
			BuiltAt:       now,
			BuildID:       id,
			Countries:     make(map[string]int, len(countries)),
			Examples:      make(map[string][]string, len(countries)),
		},
	}
	log.Info("building index", "countries", len(countries))
	if err := b.build(ctx, countries); err != nil {
		b.abort()
		return Manifest{}, fmt.Errorf("cannot build index of %s: %w", opt.Date, err)
	}
	if err := b.publish(ctx, indexDir); err != nil {
		b.abort()
		return Manifest{}, fmt.Errorf("cannot publish index build %s: %w", id, err)
	}
	log.Info("published index", "keys", b.m.Keys, "bytes", b.m.Bytes, "tables", b.tables, "took", time.Since(start).Round(time.Millisecond))
	return b.m, nil
}

// keywordCounts counts the keywords of each country (upper-case code) from
// the footers of its keywords partition.
func keywordCounts(data, date string, countries []string) (map[string]int, int, error) {
	counts := make(map[string]int, len(countries))
	total := 0
	for _, cc := range countries {
		n, err := lake.Rows(data, kw.DatasetKeywords, cc, date)
		if err != nil {
			return nil, 0, fmt.Errorf("cannot count the keywords of %s: %w", cc, err)
		}
		counts[strings.ToUpper(cc)] = int(n)
		total += int(n)
	}
	return counts, total, nil
}

// guard refuses a build that would publish less than it should: a country
// with keywords but no related partition, or one without rows while the
// country's serps partition of the date has rows (unless
// AllowMissingRelated),
// and a country of the published build left with no keywords or fewer
// than half of them (unless AllowShrink). counts are the new build's
// keywords by upper-case country code. Each refusal names the country
// and both counts, and says how to publish anyway.
func guard(fs vfs.FS, indexDir string, opt BuildOptions, counts map[string]int) error {
	var errs []error
	if !opt.AllowMissingRelated {
		related, err := lake.Countries(opt.Data, kw.DatasetRelated, opt.Date)
		if err != nil {
			return fmt.Errorf("cannot list related partitions of %s: %w", opt.Date, err)
		}
		var missing, empty []string
		for _, cc := range slices.Sorted(maps.Keys(counts)) {
			switch {
			case counts[cc] == 0:
			case !slices.Contains(related, strings.ToLower(cc)):
				missing = append(missing, fmt.Sprintf("%s has %d keywords but no related partition", cc, counts[cc]))
			default:
				// A related partition without rows beside SERPs of the
				// date: the SERPs matched no keyword (a SERP file of
				// another keyword list), which publishes as surely
				// without related keywords as a missing partition.
				n, serps, err := emptyRelated(opt.Data, strings.ToLower(cc), opt.Date)
				if err != nil {
					return err
				}
				if n == 0 && serps > 0 {
					empty = append(empty, fmt.Sprintf("%s has %d keywords and %d SERP rows on %s but no related keywords (its related partition has no rows)", cc, counts[cc], serps, opt.Date))
				}
			}
		}
		var what []string
		if len(missing) > 0 {
			what = append(what, strings.Join(missing, ", ")+" on "+opt.Date)
		}
		what = append(what, empty...)
		if len(what) > 0 {
			next := "run similarity for that date first"
			if len(empty) > 0 {
				next = "check that the SERPs of the date are for its keywords (ingest them again) and run similarity"
			}
			errs = append(errs, guardError{ErrMissingRelated, fmt.Sprintf("%s; %s, or pass --allow-missing-related to publish without related keywords",
				strings.Join(what, ", "), next)})
		}
	}
	if !opt.AllowShrink {
		pub, m, err := publishedManifest(fs, indexDir)
		switch {
		case err != nil:
			// A published build that cannot be read is no measure; the new
			// one replaces it.
			opt.Logger.Warn("cannot read the published build; not comparing keyword counts with it", "build", pub, "err", err)
		case pub != "":
			var shrunk []string
			for _, cc := range slices.Sorted(maps.Keys(m.Countries)) {
				was, now := m.Countries[cc], counts[cc]
				switch {
				case was > 0 && now == 0:
					shrunk = append(shrunk, fmt.Sprintf("%s would have no keywords, the published build has %d", cc, was))
				case 2*now < was:
					shrunk = append(shrunk, fmt.Sprintf("%s would have %d keywords, fewer than half of the %d in the published build", cc, now, was))
				}
			}
			if len(shrunk) > 0 {
				errs = append(errs, guardError{ErrShrink, fmt.Sprintf("%s (build %s of %s); check the lake of %s, or pass --allow-shrink to publish it anyway",
					strings.Join(shrunk, ", "), pub, m.DataDate, opt.Date)})
			}
		}
	}
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	return fmt.Errorf("%w; %w", errs[0], errs[1]) // one line, as every command's reason is
}

// emptyRelated counts, from the footers, the rows of the related
// partition of cc on date and the rows of its serps partition (0 when it
// has none).
func emptyRelated(data, cc, date string) (related, serps int64, err error) {
	if related, err = lake.Rows(data, kw.DatasetRelated, cc, date); err != nil || related > 0 {
		if err != nil {
			err = fmt.Errorf("cannot count the related rows of %s: %w", cc, err)
		}
		return related, 0, err
	}
	serps, err = lake.Rows(data, kw.DatasetSERPs, cc, date)
	if errors.Is(err, lake.ErrNoPartition) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("cannot count the SERP rows of %s: %w", cc, err)
	}
	return 0, serps, nil
}

// guardError is a refusal of guard: its message says what and why, and
// it wraps ErrMissingRelated or ErrShrink for callers that test the kind.
type guardError struct {
	kind error
	msg  string
}

func (e guardError) Error() string { return e.msg }
func (e guardError) Unwrap() error { return e.kind }

// publishedManifest reads the manifest of the build CURRENT names; id is
// "" when none is published.
func publishedManifest(fs vfs.FS, indexDir string) (id string, m Manifest, err error) {
	if id, err = readPointer(fs, indexDir); err != nil || id == "" {
		return id, m, err
	}
	m, err = readManifest(fs, fs.PathJoin(indexDir, id), id)
	return id, m, err
}

// newBuildID names a build by its time, so ids sort by age, and a random
// suffix, so two builds in one second never collide.
func newBuildID(now time.Time) (string, error) {
	var r [3]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", fmt.Errorf("cannot make build id: %w", err)
	}
	return now.Format("20060102T150405Z") + "-" + hex.EncodeToString(r[:]), nil
}

type builder struct {
	opt            BuildOptions
	log            *slog.Logger
	staging, final string
	db             *pebble.DB
	fatal          fatalRecorder
	m              Manifest
	tables         int
	total          int            // keyword rows of every country, for Progress
	counts         map[string]int // keyword rows of each country (upper case)
	renamed        bool           // the build directory has its final name
	published      bool           // CURRENT names the build
}

// abort removes everything the build wrote; the published index is not
// touched, since CURRENT names another build.
func (b *builder) abort() {
	if b.published {
		return
	}
	if b.db != nil {
		if err := b.pebbleCall(b.db.Close); err != nil {
			b.log.Warn("cannot close failed build's database", "err", err)
		}
		b.db = nil
	}
	dir := b.staging
	if b.renamed {
		dir = b.final
	}
	if err := b.opt.FS.RemoveAll(dir); err != nil {
		b.log.Warn("cannot remove failed build", "dir", dir, "err", err)
	}
}

func (b *builder) build(ctx context.Context, countries []string) error {
	fs := b.opt.FS
	sstDir := fs.PathJoin(b.staging, "sst")
	if err := fs.MkdirAll(sstDir, 0o755); err != nil {
		return fmt.Errorf("cannot create %s: %w", sstDir, err)
	}
	// A build's database is abandoned on any error, so Pebble's fatal
	// errors fail the build instead of the process.
	dbo := dbOptions(fs, pebbleLogger{log: b.log.With("component", "pebble"), fatal: b.fatal.record})
	dbo.FormatMajorVersion = pebble.FormatNewest
	dbo.DisableWAL = true
	dbo.DisableAutomaticCompactions = true
	dbo.ErrorIfExists = true
	dbo.EnsureDefaults()
	dbDir := fs.PathJoin(b.staging, dbDirName)
	var db *pebble.DB
	if err := b.pebbleCall(func() (err error) { db, err = pebble.Open(dbDir, dbo); return err }); err != nil {
		return fmt.Errorf("cannot create database %s: %w", dbDir, err)
	}
	b.db = db
	set := &tableSet{
		fs:     fs,
		dir:    sstDir,
		opts:   dbo.MakeWriterOptions(len(dbo.Levels)-1, db.FormatMajorVersion().MaxTableFormat()),
		target: b.opt.TableBytes,
	}
	b.opt.Progress(0, b.total)
	for _, cc := range countries {
		if err := b.country(ctx, set, cc); err != nil {
			return err
		}
		b.opt.Progress(b.m.Keys, b.total)
	}
	if b.m.Keys == 0 {
		return errors.New("the lake has no keywords on that date; refusing to publish an empty index")
	}
	b.m.Bytes, b.m.Probes, b.tables = set.bytes, set.probes, len(set.paths)
	if err := b.pebbleCall(func() error { return db.Ingest(ctx, set.paths) }); err != nil {
		return fmt.Errorf("cannot ingest %d tables: %w", len(set.paths), err)
	}
	b.db = nil
	if err := b.pebbleCall(db.Close); err != nil {
		return fmt.Errorf("cannot close database %s: %w", dbDir, err)
	}
	if err := fs.RemoveAll(sstDir); err != nil {
		return fmt.Errorf("cannot remove %s: %w", sstDir, err)
	}
	body, err := json.MarshalIndent(b.m, "", "  ")
	if err != nil {
		return fmt.Errorf("cannot encode manifest: %w", err)
	}
	if err := writeFileSync(fs, fs.PathJoin(b.staging, manifestName), append(body, '\n')); err != nil {
		return err
	}
	return syncDir(fs, b.staging)
}

// publish renames the complete build into place, then points CURRENT at
// it. Only the last rename changes what is published.
func (b *builder) publish(ctx context.Context, indexDir string) error {
	fs := b.opt.FS
	if err := fs.Rename(b.staging, b.final); err != nil {
		return fmt.Errorf("cannot rename %s to %s: %w", b.staging, b.final, err)
	}
	b.renamed = true
	if err := syncDir(fs, indexDir); err != nil {
		return err
	}
	if b.opt.BeforePublish != nil {
		if err := b.opt.BeforePublish(ctx, b.m); err != nil {
			return err
		}
	}
	tmp := fs.PathJoin(indexDir, pointerTmpName)
	if err := writeFileSync(fs, tmp, []byte(b.m.BuildID+"\n")); err != nil {
		_ = fs.Remove(tmp)
		return err
	}
	if err := fs.Rename(tmp, fs.PathJoin(indexDir, pointerName)); err != nil {
		_ = fs.Remove(tmp)
		return fmt.Errorf("cannot point %s at build %s: %w", pointerName, b.m.BuildID, err)
	}
	b.published = true
	// The new pointer is visible now and names a complete build; if the
	// directory sync fails, a crash may bring back the previous pointer,
	// which names a complete build too. Neither state is wrong, so the
	// build stands.
	if err := syncDir(fs, indexDir); err != nil {
		b.log.Error("published index build, but cannot make the pointer durable", "err", err)
	}
	return nil
}

// pebbleCall runs a call into the build's database. Pebble panics on some
// I/O errors it deems unrecoverable (a failed directory fsync); for a
// build, whose database is discarded on any error, that is one more way
// to fail. The database is abandoned, not closed, after a panic.
func (b *builder) pebbleCall(fn func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			b.db = nil
			err = fmt.Errorf("pebble failed: %v", p)
		}
	}()
	if err := fn(); err != nil {
		return err
	}
	return b.fatal.err()
}

// noRelated is the related section of a keyword without related rows.
var noRelated = []byte{0}

// country merges the keywords, related and intents partitions of one
// country into the table writer. Each stream must be sorted by keyword
// (related: then by rank); an unsorted stream fails the build, since the
// merge would otherwise silently drop rows.
func (b *builder) country(ctx context.Context, set *tableSet, cc string) (err error) {
	data, date := b.opt.Data, b.opt.Date
	code := strings.ToUpper(cc)
	log := b.log.With("country", code)
	keywords := streamKeywords(ctx, data, cc, date)
	defer keywords.close()
	related := streamRelated(ctx, data, cc, date)
	defer related.close()
	intents := intentsCursor(ctx, data, cc, date)
	defer intents.close()
	// The country's keywords go into tables of their own, its intent
	// groups (groupSep) and suggestion tables (prefixSep, wordSep) into
	// others, written by the side builders.
	out := startAsyncTables(ctx, set.writer())
	side := startSideBuilders(ctx, set, cc, b.counts[code])
	defer func() {
		if err != nil {
			out.abort()
			side.abort()
		}
	}()

	var (
		key, val, prev     []byte
		prevIntent, relBuf []byte
		intentBuf          []byte // the keyword's intent, valid for one keyword
		trend              []kw.MonthlySearches
		n, noIntent        int
		orphans, badMonths int
		first              = true
		examples           topKeywords
	)
	for rec := keywords.peek(); rec != nil; rec = keywords.peek() {
		if n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			if n%progressEvery == 0 && n > 0 {
				b.opt.Progress(b.m.Keys+n, b.total)
			}
		}
		if !first && string(prev) >= rec.Keyword {
			return fmt.Errorf("keywords partition of %s is not sorted by keyword or repeats one: %q after %q", code, rec.Keyword, prev)
		}
		first = false
		// The related section of this keyword; sections of keywords that
		// have no record are skipped.
		rel := noRelated
		for k, enc, ok := related.peek(); ok && string(k) <= rec.Keyword; k, enc, ok = related.peek() {
			if string(k) == rec.Keyword {
				// The next peek may hand enc's chunk back to the stream.
				relBuf = append(relBuf[:0], enc...)
				rel = relBuf
			} else {
				orphans++
			}
			related.next()
		}
		intent, overlap := "", int32(0)
		side.fetchLeaders(intents)
		for r := intents.peek(); r != nil && r.Keyword <= rec.Keyword; r = intents.peek() {
			if string(prevIntent) > r.Keyword {
				return fmt.Errorf("intents partition of %s is not sorted by keyword: %q after %q", code, r.Keyword, prevIntent)
			}
			prevIntent = append(prevIntent[:0], r.Keyword...)
			if r.Keyword == rec.Keyword {
				// The next peek may pull the next batch, under the row.
				intentBuf = append(intentBuf[:0], r.Intent...)
				intent, overlap = inPlace(intentBuf), r.Overlap
			} else {
				orphans++
			}
			intents.next()
		}
		if intent == "" {
			intent = rec.Keyword
			noIntent++
		}
		side.note(intent, newMember(rec.Keyword, rec.Volume, rec.CPCMicros, overlap), keywords.textIn(), rec.Competition)
		var bad int
		trend, bad = trendOf(trend, rec.Monthly)
		badMonths += bad
		e := kw.Entry{
			Keyword:          rec.Keyword,
			Volume:           rec.Volume,
			VolumeRange:      rec.VolumeRange,
			CPCMicros:        rec.CPCMicros,
			Competition:      rec.Competition,
			CompetitionLevel: rec.CompetitionLevel,
			YoYChange:        rec.YoYChange,
			ThreeMonthChange: rec.ThreeMonthChange,
			Intent:           intent,
			Trend:            trend,
		}
		examples.offer(rec.Keyword, rec.VolumeOrZero(), len(rel) > len(noRelated))
		val = encodeEntryWithRelated(val[:0], &e, rel)
		var ok bool
		if key, ok = appendKey(key[:0], cc, rec.Keyword); !ok {
			return fmt.Errorf("country code %q is not two letters", cc)
		}
		if !out.add(key, val) {
			return out.finish()
		}
		prev = append(prev[:0], rec.Keyword...)
		n++
		keywords.next()
	}
	for _, err := range []error{keywords.close(), related.close(), intents.err()} {
		if err != nil {
			return fmt.Errorf("cannot read the lake for %s: %w", code, err)
		}
	}
	if err := out.finish(); err != nil {
		return err
	}
	if err := side.finish(); err != nil {
		return err
	}
	nGroups, nPrefixes, nWords, nPostings := side.nGroups, side.nPrefixes, side.nWords+side.nWordRecords, side.nPostings
	if related.missing {
		log.Warn("no related partition; keywords have no related keywords", "dataset", kw.DatasetRelated)
	}
	if intents.missing {
		log.Warn("no intents partition; every keyword is its own intent", "dataset", kw.DatasetIntents)
	}
	if orphans > 0 {
		log.Warn("skipped related or intent rows of keywords without a record", "rows", orphans)
	}
	if badMonths > 0 {
		log.Warn("dropped trend months that are not YYYY-MM or repeat", "months", badMonths)
	}
	b.m.Countries[code] = n
	b.m.Keys += n
	if ex := examples.keywords(); len(ex) > 0 {
		b.m.Examples[code] = ex
	}
	log.Info("indexed country", "keywords", n, "intent_groups", nGroups, "prefix_records", nPrefixes, "word_records", nWords, "explore_postings", nPostings, "without_intent", noIntent)
	return nil
}

// trendOf returns the monthly list oldest first, reusing buf when the list
// must be sorted, and counts the months EncodeEntry will drop. The last 12
// are kept by EncodeEntry.
func trendOf(buf, monthly []kw.MonthlySearches) ([]kw.MonthlySearches, int) {
	bad, sorted := 0, true
	for i := range monthly {
		if _, ok := parseMonth(monthly[i].Month); !ok {
			bad++
		} else if i > 0 && monthly[i].Month <= monthly[i-1].Month {
			sorted = false
		}
	}
	if sorted {
		return monthly, bad
	}
	buf = append(buf[:0], monthly...)
	slices.SortStableFunc(buf, func(a, b kw.MonthlySearches) int { return strings.Compare(a.Month, b.Month) })
	for i := 1; i < len(buf); i++ {
		if buf[i].Month == buf[i-1].Month {
			bad++
		}
	}
	return buf, bad
}

// tableSet is what the table writers of one build share: the options,
// the names of the tables written, their bytes and the probe keys. A
// country's keywords, its intent groups and its suggestion tables are
// written on three goroutines, each into tables of its own: their key
// ranges (country, 0x00 to 0x03) never overlap, so Pebble ingests the
// tables side by side whatever their number.
type tableSet struct {
	fs     vfs.FS
	dir    string
	opts   sstable.WriterOptions
	target int64

	mu     sync.Mutex
	paths  []string
	bytes  int64
	probes []Probe
}

// writer returns a table writer of the set for one run of sorted keys.
func (s *tableSet) writer() *tableWriter { return &tableWriter{set: s} }

// create names the set's next table and creates it.
func (s *tableSet) create() (vfs.File, string, error) {
	s.mu.Lock()
	name := s.fs.PathJoin(s.dir, fmt.Sprintf("%06d.sst", len(s.paths)+1))
	s.paths = append(s.paths, name)
	s.mu.Unlock()
	f, err := s.fs.Create(name, vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, "", fmt.Errorf("cannot create table %s: %w", name, err)
	}
	return f, name, nil
}

func (s *tableSet) addProbe(p Probe) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Contains(s.probes, p) {
		s.probes = append(s.probes, p)
	}
}

// tableSink is an SSTable's file as the table writer writes it, through
// a buffer of tableWriteBytes: Pebble's own (objstorageprovider's
// NewFileWritable) buffers 4 KiB, so every block of a table was a system
// call of its own, 46 thousand of them for a 1M-keyword build and a
// tenth of a 10M build's CPU on a virtual machine.
type tableSink struct {
	f  vfs.File
	bw *bufio.Writer
}

const tableWriteBytes = 1 << 20

var _ objstorage.Writable = (*tableSink)(nil)

func newTableSink(f vfs.File) *tableSink {
	return &tableSink{f: f, bw: bufio.NewWriterSize(f, tableWriteBytes)}
}

// Write buffers p; it never keeps p.
func (t *tableSink) Write(p []byte) error {
	_, err := t.bw.Write(p)
	return err
}

// Finish writes what is buffered, syncs and closes the file.
func (t *tableSink) Finish() error {
	err := t.bw.Flush()
	if err == nil {
		err = t.f.Sync()
	}
	if cerr := t.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Abort closes the file.
func (t *tableSink) Abort() { _ = t.f.Close() }

// tableWriter writes sorted keys into SSTables of about the set's target
// bytes. One goroutine uses it.
type tableWriter struct {
	set   *tableSet
	w     *sstable.Writer
	path  string
	first []byte
	last  []byte
}

func (t *tableWriter) add(key, val []byte) error {
	if t.w == nil {
		f, name, err := t.set.create()
		if err != nil {
			return err
		}
		t.w = sstable.NewWriter(newTableSink(f), t.set.opts)
		t.path = name
		t.first = append(t.first[:0], key...)
	}
	if err := t.w.Set(key, val); err != nil {
		return fmt.Errorf("cannot write table %s: %w", t.path, err)
	}
	t.last = append(t.last[:0], key...)
	if int64(t.w.Raw().EstimatedSize()) >= t.set.target {
		return t.finishTable()
	}
	return nil
}

// finishTable closes the current table (which syncs it, as Ingest
// requires) and notes its first and last keys as probes. A country's
// keywords are a run of tables of their own, so its first and last
// keywords are among them.
func (t *tableWriter) finishTable() error {
	w := t.w
	t.w = nil
	if err := w.Close(); err != nil {
		return fmt.Errorf("cannot finish table %s: %w", t.path, err)
	}
	meta, err := w.Metadata()
	if err != nil {
		return fmt.Errorf("cannot read table metadata: %w", err)
	}
	t.set.mu.Lock()
	t.set.bytes += int64(meta.Size)
	t.set.mu.Unlock()
	for _, k := range [][]byte{t.first, t.last} {
		if cc, word, ok := splitKey(k); ok {
			t.set.addProbe(Probe{Country: cc, Keyword: word})
		}
	}
	return nil
}

// finish closes the current table, if any: the writer's keys end.
func (t *tableWriter) finish() error {
	if t.w == nil {
		return nil
	}
	return t.finishTable()
}

func (t *tableWriter) abort() {
	if t.w != nil {
		_ = t.w.Close()
		t.w = nil
	}
}

// cursor pulls the rows of one lake partition, a scan batch at a time.
type cursor[T any] struct {
	pull    func() ([]T, bool)
	stop    func()
	batch   []T
	i       int
	scanErr error
	missing bool // the partition does not exist; the cursor is empty
}

var errStopScan = errors.New("scan stopped")

// peek returns the current row, or nil at the end.
func (c *cursor[T]) peek() *T {
	for c.i >= len(c.batch) {
		if c.pull == nil {
			return nil
		}
		b, ok := c.pull()
		if !ok {
			c.pull = nil
			return nil
		}
		c.batch, c.i = b, 0
	}
	return &c.batch[c.i]
}

func (c *cursor[T]) next() { c.i++ }

// ahead returns the row d after the current one, if the current batch
// holds it, else nil.
func (c *cursor[T]) ahead(d int) *T {
	if c.i+d < len(c.batch) {
		return &c.batch[c.i+d]
	}
	return nil
}

func (c *cursor[T]) err() error { return c.scanErr }

func (c *cursor[T]) close() { c.stop() }

// topKeywords keeps a country's MaxExamples best examples: keywords with
// related keywords before those without (their page shows the product
// whole), then by volume, then by text.
type topKeywords []example

type example struct {
	keyword string
	volume  int64
	related bool
}

func (t *topKeywords) offer(keyword string, volume int64, related bool) {
	e := example{keyword, volume, related}
	better := func(a, b example) bool {
		if a.related != b.related {
			return a.related
		}
		if a.volume != b.volume {
			return a.volume > b.volume
		}
		return a.keyword < b.keyword
	}
	if len(*t) == MaxExamples && !better(e, (*t)[MaxExamples-1]) {
		return
	}
	i := 0
	for i < len(*t) && better((*t)[i], e) {
		i++
	}
	*t = slices.Insert(*t, i, e)
	if len(*t) > MaxExamples {
		*t = (*t)[:MaxExamples]
	}
}

func (t topKeywords) keywords() []string {
	out := make([]string, len(t))
	for i, e := range t {
		out[i] = e.keyword
	}
	return out
}
