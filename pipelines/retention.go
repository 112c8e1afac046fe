package pipelines

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/kwdata/kwdata/index"
	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/lake"
)

// Retention says what ApplyRetention keeps.
type Retention struct {
	// KeepBuilds is the number of newest index builds kept, besides the
	// published one. Default 3. Values below 2 mean 2: a server switches
	// to a new build within seconds of its publication, and until then it
	// still reads the previous one.
	KeepBuilds int `yaml:"keep_builds"`
	// KeepDays keeps lake partitions dated up to this many days before the
	// run date. Default 35, so that month-over-month analysis still finds
	// last month's partitions.
	KeepDays int `yaml:"keep_days"`
	// MaxAgeDays keeps the SERP partitions dated from this many days
	// before the published build's date up to that date: the similarity
	// stage of that build may have used any of them. LoadConfig sets it
	// from dataforseo.max_age_days. Default kw.DefaultSERPMaxAgeDays, the
	// similarity stage's own default.
	MaxAgeDays int `yaml:"-"`
}

// Defaults of Retention.
const (
	DefaultKeepBuilds = 3
	DefaultKeepDays   = 35
)

// minKeepBuilds keeps the build published before the newest one, which a
// server may still be reading when retention runs right after a publish.
const minKeepBuilds = 2

// leftoverAge is how old staging leftovers must be before retention
// removes them: far longer than any write, so a write in progress by a
// manual command is never pulled from under it.
const leftoverAge = 24 * time.Hour

func (r Retention) withDefaults() Retention {
	switch {
	case r.KeepBuilds <= 0:
		r.KeepBuilds = DefaultKeepBuilds
	case r.KeepBuilds < minKeepBuilds:
		r.KeepBuilds = minKeepBuilds
	}
	if r.KeepDays <= 0 {
		r.KeepDays = DefaultKeepDays
	}
	if r.MaxAgeDays <= 0 {
		r.MaxAgeDays = kw.DefaultSERPMaxAgeDays
	}
	return r
}

// RetentionReport lists what ApplyRetention kept and deleted. Paths are
// relative to the data folder, with forward slashes.
type RetentionReport struct {
	Published         string   // build id <data>/index/CURRENT names; "" if none
	PublishedDate     string   // its data date, whose partitions are kept
	SERPsFrom         string   // SERP partitions from this date to PublishedDate are kept
	Cutoff            string   // partitions dated before this were deleted
	KeptBuilds        []string // build ids, oldest first
	DeletedBuilds     []string
	DeletedPartitions []string
	DeletedState      []string // <data>/state/<date> marker folders and <data>/state/<source>/<cc>/<date> checkpoints
	DeletedLeftovers  []string // staging and crashed-build leftovers
}

// RetentionStage returns the retention step as a stage, so that it runs
// last in every run. Its counts are builds_kept, builds_deleted,
// partitions_deleted and leftovers_deleted.
func RetentionStage(data string, r Retention, logger *slog.Logger) Stage {
	return Stage{Name: StageRetention, Run: func(ctx context.Context, date string, progress func(done, total int64)) (map[string]int64, error) {
		rep, err := ApplyRetention(ctx, data, r, date, logger)
		return map[string]int64{
			"builds_kept":        int64(len(rep.KeptBuilds)),
			"builds_deleted":     int64(len(rep.DeletedBuilds)),
			"partitions_deleted": int64(len(rep.DeletedPartitions)),
			"leftovers_deleted":  int64(len(rep.DeletedLeftovers)),
		}, err
	}}
}

// ApplyRetention deletes what r does not keep, relative to today (the run
// date, YYYY-MM-DD):
//
//   - index builds (<data>/index/<id>/ with a manifest.json) beyond the
//     newest r.KeepBuilds, ordered by the manifest's built_at then id; the
//     published build (<data>/index/CURRENT) is never deleted;
//   - lake partitions dated more than r.KeepDays days before today, except
//     those of the published build's data date and the SERP partitions
//     dated within r.MaxAgeDays before it, which its similarity stage may
//     have read;
//   - stage markers (<data>/state/<date>/) and API checkpoints
//     (<data>/state/<source>/<cc>/<date>/) dated before the same cutoff,
//     except those of the published build's data date;
//   - staging leftovers (lake.StagingDir, index.Unfinished) not written to
//     for a day.
//
// If CURRENT exists but cannot be read, nothing is deleted: without knowing
// what is published, nothing is safe to delete. Deletion goes on past a
// failure; the error lists every failure.
func ApplyRetention(ctx context.Context, data string, r Retention, today string, logger *slog.Logger) (RetentionReport, error) {
	var rep RetentionReport
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	r = r.withDefaults()
	day, err := time.Parse(kw.DateLayout, today)
	if err != nil {
		return rep, fmt.Errorf("cannot apply retention: date %q is not YYYY-MM-DD", today)
	}
	rep.Cutoff = day.AddDate(0, 0, -r.KeepDays).Format(kw.DateLayout)

	builds, err := listBuilds(data)
	if err != nil {
		return rep, fmt.Errorf("cannot apply retention: %w", err)
	}
	rep.Published, err = index.Published(data)
	if err != nil {
		return rep, fmt.Errorf("cannot apply retention: %w", err)
	}
	var errs []error
	rel := func(p string) string {
		if r, err := filepath.Rel(data, p); err == nil {
			return filepath.ToSlash(r)
		}
		return p
	}
	remove := func(path string, list *[]string) {
		if err := ctx.Err(); err != nil {
			return
		}
		if err := os.RemoveAll(path); err != nil {
			errs = append(errs, fmt.Errorf("cannot delete %s: %w", path, err))
			return
		}
		*list = append(*list, rel(path))
	}

	// Builds: keep the newest KeepBuilds and the published one.
	for i, b := range builds {
		if b.id == rep.Published {
			rep.PublishedDate = b.dataDate
		}
		if b.id == rep.Published || i >= len(builds)-r.KeepBuilds {
			rep.KeptBuilds = append(rep.KeptBuilds, b.id)
			continue
		}
		remove(filepath.Join(kw.IndexDir(data), b.id), &rep.DeletedBuilds)
	}

	// Partitions: <data>/lake/<dataset>/country=<cc>/date=<d>/. If the
	// published build has no readable manifest, its date is unknown and no
	// partition is safe to delete.
	var parts []string
	if rep.Published != "" && rep.PublishedDate == "" {
		logger.Warn("keeping every lake partition: the published build has no readable manifest",
			slog.String("published", rep.Published))
	} else if parts, err = filepath.Glob(filepath.Join(kw.LakeDir(data), "*", "country=*", "date=*")); err != nil {
		errs = append(errs, fmt.Errorf("cannot list lake partitions: %w", err))
	}
	if rep.PublishedDate != "" {
		if pd, err := time.Parse(kw.DateLayout, rep.PublishedDate); err == nil {
			rep.SERPsFrom = pd.AddDate(0, 0, -r.MaxAgeDays).Format(kw.DateLayout)
		}
	}
	sort.Strings(parts)
	for _, p := range parts {
		d := strings.TrimPrefix(filepath.Base(p), "date=")
		if !expired(d, rep.Cutoff, rep.PublishedDate) {
			continue
		}
		dataset := filepath.Base(filepath.Dir(filepath.Dir(p)))
		if dataset == kw.DatasetSERPs && rep.SERPsFrom != "" && d >= rep.SERPsFrom && d <= rep.PublishedDate {
			continue
		}
		remove(p, &rep.DeletedPartitions)
	}

	// Markers of dates whose partitions are gone: running such a date
	// again must not skip stages whose output no longer exists.
	if entries, err := os.ReadDir(StateDir(data)); err == nil && (rep.Published == "" || rep.PublishedDate != "") {
		for _, e := range entries {
			if e.IsDir() && expired(e.Name(), rep.Cutoff, rep.PublishedDate) {
				remove(filepath.Join(StateDir(data), e.Name()), &rep.DeletedState)
			}
		}
		// API checkpoints: <data>/state/<source>/<cc>/<date>/. A checkpoint
		// only saves paying again for a date that is run again, and dates
		// past the cutoff have no partitions left to run against.
		checkpoints, err := filepath.Glob(filepath.Join(StateDir(data), "*", "*", "*"))
		if err != nil {
			errs = append(errs, fmt.Errorf("cannot list API checkpoints: %w", err))
		}
		sort.Strings(checkpoints)
		for _, p := range checkpoints {
			source := filepath.Base(filepath.Dir(filepath.Dir(p)))
			if _, err := time.Parse(kw.DateLayout, source); err == nil {
				continue // a marker folder's content
			}
			if info, err := os.Stat(p); err == nil && info.IsDir() && expired(filepath.Base(p), rep.Cutoff, rep.PublishedDate) {
				remove(p, &rep.DeletedState)
			}
		}
	}

	// Leftovers of writes that crashed, judged by wall-clock file times.
	now := time.Now()
	var leftovers []string
	if entries, err := os.ReadDir(lake.StagingDir(data)); err == nil {
		for _, e := range entries {
			leftovers = append(leftovers, filepath.Join(lake.StagingDir(data), e.Name()))
		}
	}
	if unfinished, err := index.Unfinished(data); err == nil {
		leftovers = append(leftovers, unfinished...)
	}
	for _, p := range leftovers {
		if newest, err := newestModTime(p); err == nil && now.Sub(newest) > leftoverAge {
			remove(p, &rep.DeletedLeftovers)
		}
	}

	if err := ctx.Err(); err != nil {
		errs = append(errs, err)
	}
	logger.Info("retention applied", slog.String("published", rep.Published),
		slog.String("published_date", rep.PublishedDate), slog.String("cutoff", rep.Cutoff),
		slog.Int("builds_kept", len(rep.KeptBuilds)), slog.Int("builds_deleted", len(rep.DeletedBuilds)),
		slog.Int("partitions_deleted", len(rep.DeletedPartitions)), slog.Int("leftovers_deleted", len(rep.DeletedLeftovers)))
	if len(errs) > 0 {
		return rep, fmt.Errorf("cannot apply retention fully: %w", errors.Join(errs...))
	}
	return rep, nil
}

// expired reports whether a date-named entry falls before cutoff and is not
// the protected date. Names that are not dates are never expired.
func expired(date, cutoff, protected string) bool {
	if _, err := time.Parse(kw.DateLayout, date); err != nil {
		return false
	}
	return date < cutoff && date != protected
}

// build is one complete index build as retention sees it.
type build struct {
	id       string
	dataDate string
	builtAt  time.Time
}

// listBuilds returns the complete builds under <data>/index/ whose
// manifest the index package reads, oldest first (by build time, then
// id). A build it cannot read is foreign or damaged; retention leaves it
// alone.
func listBuilds(data string) ([]build, error) {
	ids, err := index.ListBuilds(data)
	if err != nil {
		return nil, err
	}
	var out []build
	for _, id := range ids {
		m, err := index.ReadManifest(data, id)
		if err != nil {
			continue
		}
		out = append(out, build{id: id, dataDate: m.DataDate, builtAt: m.BuiltAt})
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].builtAt.Equal(out[j].builtAt) {
			return out[i].builtAt.Before(out[j].builtAt)
		}
		return out[i].id < out[j].id
	})
	return out, nil
}

// newestModTime returns the newest modification time of path and
// everything below it, so that a folder whose one big file is still being
// written counts as fresh.
func newestModTime(path string) (time.Time, error) {
	var newest time.Time
	err := filepath.WalkDir(path, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if t := info.ModTime(); t.After(newest) {
			newest = t
		}
		return nil
	})
	return newest, err
}
