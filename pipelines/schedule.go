package pipelines

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// specParser reads the schedule key: 5 fields, an optional leading seconds
// field, and descriptors (@daily, @every 6h).
var specParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseSchedule parses a cron spec: 5 fields ("0 3 * * *": minute, hour,
// day of month, month, day of week), optionally preceded by a seconds field,
// or a descriptor (@yearly, @monthly, @weekly, @daily, @hourly,
// @every <duration>). The time zone comes from the timezone key, so
// TZ= and CRON_TZ= prefixes are refused.
func ParseSchedule(spec string) (cron.Schedule, error) {
	spec = strings.TrimSpace(spec)
	if strings.HasPrefix(spec, "TZ=") || strings.HasPrefix(spec, "CRON_TZ=") {
		return nil, fmt.Errorf("%q names a time zone; remove the prefix and set the timezone key instead", spec)
	}
	s, err := specParser.Parse(spec)
	if err != nil {
		return nil, fmt.Errorf("%q is not a cron spec (%v); write 5 fields such as \"0 3 * * *\" (03:00 daily) or a descriptor such as @daily", spec, err)
	}
	// cron rounds shorter intervals up to a second without a word.
	if every, ok := strings.CutPrefix(spec, "@every "); ok {
		if d, err := time.ParseDuration(strings.TrimSpace(every)); err == nil && d < time.Second {
			return nil, fmt.Errorf("%q is shorter than a second; write @every 1s or longer", spec)
		}
	}
	return s, nil
}

// Scheduler runs the pipeline on a cron schedule.
type Scheduler struct {
	spec     string
	schedule cron.Schedule
	loc      *time.Location
	opt      Options
}

// NewScheduler returns a scheduler that runs the pipeline of opt at every
// time spec (ParseSchedule) names, read in timezone ("" is UTC). Each run's
// date is the calendar date in timezone when it fires.
func NewScheduler(spec, timezone string, opt Options) (*Scheduler, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, errors.New("cannot schedule the pipeline: no schedule given; write e.g. schedule: \"0 3 * * *\" in the config")
	}
	sched, err := ParseSchedule(spec)
	if err != nil {
		return nil, fmt.Errorf("cannot schedule the pipeline: schedule %w", err)
	}
	if timezone == "" {
		timezone = DefaultTimezone
	}
	loc, err := time.LoadLocation(timezone)
	if err != nil {
		return nil, fmt.Errorf("cannot schedule the pipeline: timezone %q is not a known time zone: %w", timezone, err)
	}
	if opt.Trigger == "" {
		opt.Trigger = TriggerSchedule
	}
	checked, err := opt.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("cannot schedule the pipeline: %w", err)
	}
	// Keep opt as given: RunOnce fills the defaults itself, and appending
	// the retention stage twice would be harmless but confusing.
	opt.Logger, opt.Now = checked.Logger, checked.Now
	return &Scheduler{spec: spec, schedule: sched, loc: loc, opt: opt}, nil
}

// Next returns the first time after t that the schedule fires.
func (s *Scheduler) Next(t time.Time) time.Time { return s.schedule.Next(t.In(s.loc)) }

// Run takes the scheduler lock of the data folder and runs the pipeline at
// every scheduled time until ctx ends. A second scheduler on the same data
// folder is refused with an error matching ErrLocked. A fire while a run is
// still going is skipped; a fire while a manual run holds the run lock is
// recorded as skipped. When ctx ends, the running stage finishes (see
// Options.StopGrace), no later stage starts, and Run returns nil.
func (s *Scheduler) Run(ctx context.Context) error {
	logger := s.opt.Logger
	release, err := lockScheduler(s.opt.Data, logger)
	if err != nil {
		return fmt.Errorf("cannot start the scheduler: %w", err)
	}
	defer func() {
		if err := release(); err != nil {
			logger.Error("cannot release the scheduler lock", slog.Any("err", err))
		}
	}()
	clog := cronLogger{logger.With(slog.String("component", "cron"))}
	c := cron.New(
		cron.WithLocation(s.loc),
		cron.WithLogger(clog),
		// cron v3.0.1 does not recover panics by default; a panic in a run
		// must not take the scheduler down.
		cron.WithChain(cron.Recover(clog), cron.SkipIfStillRunning(clog)),
	)
	c.Schedule(s.schedule, cron.FuncJob(func() { s.fire(ctx) }))
	c.Start()
	logger.Info("scheduler started", slog.String("schedule", s.spec), slog.String("timezone", s.loc.String()),
		slog.Time("next", s.Next(s.opt.Now())))
	<-ctx.Done()
	logger.Info("scheduler stopping; the running stage finishes first")
	<-c.Stop().Done()
	logger.Info("scheduler stopped")
	return nil
}

// fire runs the pipeline once for the date at fire time.
func (s *Scheduler) fire(ctx context.Context) {
	if ctx.Err() != nil {
		return
	}
	date := DateAt(s.opt.Now(), s.loc)
	rec, err := RunOnce(ctx, s.opt, date)
	switch {
	case errors.Is(err, ErrLocked):
		s.opt.Logger.Warn("scheduled run skipped: another run holds the lock", slog.String("date", date), slog.Any("err", err))
	case err != nil:
		s.opt.Logger.Error("scheduled run did not finish", slog.String("date", date), slog.String("run", rec.RunID), slog.Any("err", err))
	}
	if ctx.Err() == nil {
		s.opt.Logger.Info("next scheduled run", slog.Time("at", s.Next(s.opt.Now())))
	}
}

// cronLogger routes robfig/cron's logger into slog. cron reports every
// wake-up at Info, which would drown the pipeline's own lines, so only
// skips and errors keep their weight.
type cronLogger struct{ l *slog.Logger }

func (c cronLogger) Info(msg string, keysAndValues ...any) {
	if msg == "skip" {
		c.l.Warn("scheduled run skipped: the previous run is still going")
		return
	}
	c.l.Debug("cron "+msg, keysAndValues...)
}

func (c cronLogger) Error(err error, msg string, keysAndValues ...any) {
	c.l.Error("cron "+msg, append(keysAndValues, "err", err)...)
}
