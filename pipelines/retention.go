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
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	p := &pruner{ctx: ctx, data: data, r: r.withDefaults(), logger: logger}
	day, err := time.Parse(kw.DateLayout, today)
	if err != nil {
		return p.rep, fmt.Errorf("cannot apply retention: date %q is not YYYY-MM-DD", today)
	}
	p.rep.Cutoff = day.AddDate(0, 0, -p.r.KeepDays).Format(kw.DateLayout)
	builds, err := listBuilds(data)
	if err != nil {
		return p.rep, fmt.Errorf("cannot apply retention: %w", err)
	}
	if p.rep.Published, err = index.Published(data); err != nil {
		return p.rep, fmt.Errorf("cannot apply retention: %w", err)
	}
	p.pruneBuilds(builds)
	p.prunePartitions()
	p.pruneState()
	p.pruneLeftovers(time.Now())
	return p.finish()
}

// pruner carries one ApplyRetention through its steps: what it deleted so
// far, and every failure, since deletion goes on past one.
type pruner struct {
	ctx    context.Context
	data   string
	r      Retention
	logger *slog.Logger
	rep    RetentionReport
	errs   []error
}

// remove deletes path and notes it, relative to the data folder, in list.
func (p *pruner) remove(path string, list *[]string) {
	if p.ctx.Err() != nil {
		return
	}
	if err := os.RemoveAll(path); err != nil {
		p.errs = append(p.errs, fmt.Errorf("cannot delete %s: %w", path, err))
		return
	}
	if rel, err := filepath.Rel(p.data, path); err == nil {
		path = filepath.ToSlash(rel)
	}
	*list = append(*list, path)
}

// pruneBuilds keeps the newest KeepBuilds builds and the published one,
// and learns the published build's data date on the way.
func (p *pruner) pruneBuilds(builds []build) {
	for i, b := range builds {
		if b.id == p.rep.Published {
			p.rep.PublishedDate = b.dataDate
		}
		if b.id == p.rep.Published || i >= len(builds)-p.r.KeepBuilds {
			p.rep.KeptBuilds = append(p.rep.KeptBuilds, b.id)
			continue
		}
		p.remove(filepath.Join(kw.IndexDir(p.data), b.id), &p.rep.DeletedBuilds)
	}
}

// prunePartitions deletes expired lake partitions
// (<data>/lake/<dataset>/country=<cc>/date=<d>/). If the published build
// has no readable manifest, its date is unknown and no partition is safe
// to delete.
func (p *pruner) prunePartitions() {
	rep := &p.rep
	var parts []string
	var err error
	if rep.Published != "" && rep.PublishedDate == "" {
		p.logger.Warn("keeping every lake partition: the published build has no readable manifest",
			slog.String("published", rep.Published))
	} else if parts, err = filepath.Glob(filepath.Join(kw.LakeDir(p.data), "*", "country=*", "date=*")); err != nil {
		p.errs = append(p.errs, fmt.Errorf("cannot list lake partitions: %w", err))
	}
	if rep.PublishedDate != "" {
		if pd, err := time.Parse(kw.DateLayout, rep.PublishedDate); err == nil {
			rep.SERPsFrom = pd.AddDate(0, 0, -p.r.MaxAgeDays).Format(kw.DateLayout)
		}
	}
	sort.Strings(parts)
	for _, part := range parts {
		d := strings.TrimPrefix(filepath.Base(part), "date=")
		if !expired(d, rep.Cutoff, rep.PublishedDate) {
			continue
		}
		dataset := filepath.Base(filepath.Dir(filepath.Dir(part)))
		if dataset == kw.DatasetSERPs && rep.SERPsFrom != "" && d >= rep.SERPsFrom && d <= rep.PublishedDate {
			continue
		}
		p.remove(part, &rep.DeletedPartitions)
	}
}

// pruneState deletes the stage markers of dates whose partitions are gone
// (running such a date again must not skip stages whose output no longer
// exists) and the API checkpoints (<data>/state/<source>/<cc>/<date>/) of
// the same dates: a checkpoint only saves paying again for a date that is
// run again, and dates past the cutoff have no partitions left to run
// against.
func (p *pruner) pruneState() {
	rep := &p.rep
	entries, err := os.ReadDir(StateDir(p.data))
	if err != nil || (rep.Published != "" && rep.PublishedDate == "") {
		return
	}
	for _, e := range entries {
		if e.IsDir() && expired(e.Name(), rep.Cutoff, rep.PublishedDate) {
			p.remove(filepath.Join(StateDir(p.data), e.Name()), &rep.DeletedState)
		}
	}
	checkpoints, err := filepath.Glob(filepath.Join(StateDir(p.data), "*", "*", "*"))
	if err != nil {
		p.errs = append(p.errs, fmt.Errorf("cannot list API checkpoints: %w", err))
	}
	sort.Strings(checkpoints)
	for _, c := range checkpoints {
		source := filepath.Base(filepath.Dir(filepath.Dir(c)))
		if _, err := time.Parse(kw.DateLayout, source); err == nil {
			continue // a marker folder's content
		}
		if info, err := os.Stat(c); err == nil && info.IsDir() && expired(filepath.Base(c), rep.Cutoff, rep.PublishedDate) {
			p.remove(c, &rep.DeletedState)
		}
	}
}

// pruneLeftovers deletes the staging leftovers of writes that crashed
// (lake.StagingDir, index.Unfinished), judged by their files' times
// against now: not written to for leftoverAge.
func (p *pruner) pruneLeftovers(now time.Time) {
	var leftovers []string
	if entries, err := os.ReadDir(lake.StagingDir(p.data)); err == nil {
		for _, e := range entries {
			leftovers = append(leftovers, filepath.Join(lake.StagingDir(p.data), e.Name()))
		}
	}
	if unfinished, err := index.Unfinished(p.data); err == nil {
		leftovers = append(leftovers, unfinished...)
	}
	for _, l := range leftovers {
		if newest, err := newestModTime(l); err == nil && now.Sub(newest) > leftoverAge {
			p.remove(l, &p.rep.DeletedLeftovers)
		}
	}
}

// finish logs what was done and joins the failures.
func (p *pruner) finish() (RetentionReport, error) {
	if err := p.ctx.Err(); err != nil {
		p.errs = append(p.errs, err)
	}
	rep := p.rep
	p.logger.Info("retention applied", slog.String("published", rep.Published),
		slog.String("published_date", rep.PublishedDate), slog.String("cutoff", rep.Cutoff),
		slog.Int("builds_kept", len(rep.KeptBuilds)), slog.Int("builds_deleted", len(rep.DeletedBuilds)),
		slog.Int("partitions_deleted", len(rep.DeletedPartitions)), slog.Int("leftovers_deleted", len(rep.DeletedLeftovers)))
	if len(p.errs) > 0 {
		return rep, fmt.Errorf("cannot apply retention fully: %w", errors.Join(p.errs...))
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
