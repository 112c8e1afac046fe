// Package pipelines owns kwdata's nightly pipeline runner: the order of the
// stages, their per-date completion markers, the run lock, the cron
// scheduler, the run history and the retention of old index builds and lake
// partitions. It also owns the configuration file (Config, LoadConfig) that
// `kwdata schedule` and `kwdata run` read.
//
// It runs no stage code itself. Stages arrive as function values (Stage);
// cmd/kwdata builds them as closures over the ingest, similarity and index
// packages. That keeps the orchestration testable with fake stages and keeps
// the stages unaware of each other. The file's source sections (keywords,
// files, googleads, dataforseo) decode straight into ingest.Sources, which
// owns their defaults and their checks; this package reads the file, checks
// the run settings and reports every problem of both at once. Retention
// asks package index and package lake where builds, the pointer and
// staging leftovers are, rather than knowing their layout itself.
//
// Files under the data folder:
//
//	<data>/state/history.jsonl          one JSON record per finished stage and run
//	<data>/state/<date>/<stage>.done    a stage finished for a date (JSON)
//	<data>/state/run.lock               held while a run is in progress
//	<data>/state/scheduler.lock         held while a scheduler is running
//
// A run executes its stages in order. A stage whose marker exists for the
// date is skipped (unless Options.Force); once a stage runs, every later stage
// runs too, because its earlier output is now stale. A failed stage stops the
// run without touching the published index, and the next run of the same
// date starts again from that stage.
package pipelines
