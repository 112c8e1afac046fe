// Command kwdata runs kwdata's pipeline stages and its server. It only parses
// flags and configuration and wires the stage packages together; every stage
// lives in its own package.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"golang.org/x/term"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	tuneRuntime(commandName(os.Args[1:]), os.Getenv)
	m := NewMain()
	err := m.Run(ctx, os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "kwdata: %s\n", oneLine(err))
	}
	os.Exit(exitStatus(err))
}

// serveGCPercent is the GOGC of serve and demo unless the environment
// sets one. Pebble's block cache lives outside the Go heap, so a server's
// heap is small and the default GOGC=100 collects every few MB of request
// garbage; a higher target trades tens of MB for fewer collections.
const serveGCPercent = 400

// ingestMemoryLimit is the soft memory limit of an ingest. Its sort
// buffers (ingest.DefaultSpillBytes) stay live for most of the run, and
// the garbage collector's default lets the heap grow to twice what is
// live: that headroom, not the records, took a 10M-keyword ingest to
// 3.8 GiB. The live heap stays well below the limit, so the collector
// only runs more often near it.
const ingestMemoryLimit = 3 << 30

// tuneRuntime sets the garbage collector for the command the process runs:
// GOGC=serveGCPercent for a server, a soft memory limit for an ingest.
// GOGC and GOMEMLIMIT, when set, win. Only main calls it: the settings
// belong to the whole process, so Main, which tests run many of at once,
// never changes them.
func tuneRuntime(command string, getenv func(string) string) {
	switch command {
	case "serve", "demo":
		if getenv("GOGC") == "" {
			debug.SetGCPercent(serveGCPercent)
		}
	case "ingest":
		if getenv("GOMEMLIMIT") == "" {
			debug.SetMemoryLimit(ingestMemoryLimit)
		}
	}
}

// commandName returns the command args name, after the global flags, or ""
// when there is none.
func commandName(args []string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			if i+1 < len(args) {
				return args[i+1]
			}
			return ""
		case a == "-log-level" || a == "--log-level":
			i++ // its value
		case strings.HasPrefix(a, "-"):
		default:
			return a
		}
	}
	return ""
}

// exitStatus is the process status of a command's error: 0 for success
// (-h and --help included), 2 for a mistake in the command line, 1 for
// any other failure.
func exitStatus(err error) int {
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		return 2
	}
	return 1
}

// Main is the kwdata program; tests drive it without a process, many at
// once: it reads the environment only through Getenv and the clock only
// through Now, and leaves process-wide settings (the garbage collector,
// signal handlers aside from serve's SIGHUP) to main.
type Main struct {
	Stdout io.Writer
	Stderr io.Writer
	Stdin  io.Reader
	// Logger receives structured log lines; by default text lines on Stderr.
	Logger *slog.Logger
	// Level is the level of Logger, which --log-level and KWDATA_LOG_LEVEL
	// set. Nil leaves Logger's level as its maker chose it.
	Level *slog.LevelVar
	// Getenv resolves ${VAR} in configuration files and reads
	// KWDATA_LOG_LEVEL and the secrets serve and keys take from the
	// environment (SMTP, Redis and Stripe); os.Getenv in NewMain, and
	// nothing set when nil.
	Getenv func(string) string
	// Now is the clock of pipeline run dates, run history, key expiry and
	// the access windows of serve; time.Now when nil.
	Now func() time.Time

	// term, when set, is the terminal of Stderr: progress shows a bar
	// there, and Logger writes through it.
	term *barTerminal
}

// now reads m.Now, or the wall clock when it is unset.
func (m *Main) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

// getenv reads m.Getenv, or nothing when it is unset.
func (m *Main) getenv(key string) string {
	if m.Getenv != nil {
		return m.Getenv(key)
	}
	return ""
}

// NewMain returns a Main wired to the process's standard streams.
func NewMain() *Main {
	level := new(slog.LevelVar) // info
	var logTo io.Writer = os.Stderr
	var tty *barTerminal
	if term.IsTerminal(int(os.Stderr.Fd())) {
		tty = &barTerminal{out: os.Stderr, every: barEvery}
		logTo = tty
	}
	return &Main{
		Stdout: os.Stdout, Stderr: os.Stderr, Stdin: os.Stdin,
		Logger: slog.New(slog.NewTextHandler(logTo, &slog.HandlerOptions{Level: level})),
		Level:  level,
		Getenv: os.Getenv,
		Now:    processClock(),
		term:   tty,
	}
}

// processClock returns the clock of the process: time.Now, unless a test
// build (the kwdatatestclock tag) sets testClock.
func processClock() func() time.Time {
	if testClock != nil {
		return testClock(os.Getenv)
	}
	return time.Now
}

// testClock is nil in a release build; see testclock.go.
var testClock func(getenv func(string) string) func() time.Time

// testClockEnv names the offset of a test build's clock (testclock.go).
const testClockEnv = "KWDATA_TEST_CLOCK_OFFSET"

// logLevelEnv names the environment variable that sets the log level when
// --log-level is not given, handy in a systemd unit's Environment=.
const logLevelEnv = "KWDATA_LOG_LEVEL"

// globalFlags parses the flags given before the command name and returns
// the rest of args.
func (m *Main) globalFlags(args []string) ([]string, error) {
	fs := flag.NewFlagSet("kwdata", flag.ContinueOnError)
	// Errors are returned and printed once, by main; help goes to Stdout.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	level := fs.String("log-level", "", "debug, info, warn or error; debug adds a line per HTTP request (default info, or $"+logLevelEnv+")")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			m.usage(m.Stdout)
			return nil, err
		}
		return nil, usageError{fmt.Errorf("%w; see 'kwdata help'", err)}
	}
	if *level == "" {
		*level = m.getenv(logLevelEnv)
	}
	if *level != "" {
		var l slog.Level
		if err := l.UnmarshalText([]byte(*level)); err != nil {
			return nil, usageError{fmt.Errorf("log level %q is not one of debug, info, warn, error", *level)}
		}
		if m.Level != nil {
			m.Level.Set(l)
		}
	}
	return fs.Args(), nil
}

// command is one subcommand: a one-line summary and its runner.
type command struct {
	summary string
	run     func(m *Main, ctx context.Context, args []string) error
}

// commandTable is the whole command line, in the order a night runs and
// usage lists it.
var commandTable = []struct {
	name string
	command
}{
	{"sample", command{"write a deterministic sample planner export and SERP file per country", (*Main).runSample}},
	{"ingest", command{"import planner exports and SERP files (or the configured APIs) into the lake", (*Main).runIngest}},
	{"similarity", command{"compute related keywords and intent leaders for one date", (*Main).runSimilarity}},
	{"build-index", command{"compile one date of the lake into a new index and publish it", (*Main).runBuildIndex}},
	{"serve", command{"answer the HTTP API and pages from the published index", (*Main).runServe}},
	{"keys", command{"create, list, revoke and re-tier API keys (create|list|revoke|set-tier)", (*Main).runKeys}},
	{"access", command{"copy the embedded access store (keys, this period's counts) to Redis (migrate)", (*Main).runAccess}},
	{"run", command{"run the whole pipeline once now for one date", (*Main).runRun}},
	{"schedule", command{"run the whole pipeline on the configured cron schedule", (*Main).runSchedule}},
	{"runs", command{"show the history of pipeline runs", (*Main).runRuns}},
	{"demo", command{"run sample, ingest, similarity and build-index on the sample, then serve it", (*Main).runDemo}},
	{"version", command{"print the module version and the VCS revision kwdata was built from", (*Main).runVersion}},
}

// commands finds a command by name.
var commands = func() map[string]command {
	m := make(map[string]command, len(commandTable))
	for _, c := range commandTable {
		m[c.name] = c.command
	}
	return m
}()

// Run runs the subcommand named by args[0].
func (m *Main) Run(ctx context.Context, args []string) error {
	args, err := m.globalFlags(args)
	if errors.Is(err, flag.ErrHelp) {
		return nil // usage printed
	} else if err != nil {
		return err
	}
	if len(args) == 0 {
		m.usage(m.Stderr)
		return usageError{errors.New("no command given; see 'kwdata help'")}
	}
	switch args[0] {
	case "-h", "-help", "--help":
		m.usage(m.Stdout)
		return nil
	case "help":
		if len(args) > 1 {
			// "kwdata help demo" is "kwdata demo -h".
			return m.Run(ctx, []string{args[1], "-h"})
		}
		m.usage(m.Stdout)
		return nil
	}
	c, ok := commands[args[0]]
	if !ok {
		return usageError{fmt.Errorf("unknown command %q; see 'kwdata help'", args[0])}
	}
	err = c.run(m, ctx, args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return nil // the command printed its usage, as asked
	}
	return err
}

// usage prints the list of commands to w: Stdout when asked for, Stderr
// when the command line was wrong.
func (m *Main) usage(w io.Writer) {
	fmt.Fprintln(w, "kwdata: keyword search volume, CPC, competition and related keywords.")
	fmt.Fprintln(w, "\nUsage: kwdata [--log-level debug|info|warn|error] <command> [flags]   (kwdata <command> -h for its flags)")
	fmt.Fprintln(w, "\nCommands:")
	for _, c := range commandTable {
		fmt.Fprintf(w, "  %-12s %s\n", c.name, c.summary)
	}
}

// flagSet is a subcommand's flags with the usage line -h prints.
type flagSet struct {
	*flag.FlagSet
	m     *Main
	usage string
}

// newFlagSet returns a flag set for a subcommand that reports errors instead
// of exiting, so tests can drive commands in-process. The flag package
// prints nothing itself: -h prints the usage to Stdout (exit 0), and a
// wrong flag becomes one error that main prints once.
func (m *Main) newFlagSet(name, usage string) *flagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &flagSet{FlagSet: fs, m: m, usage: usage}
}

// printUsage writes the usage line and every flag with its default to w.
func (fs *flagSet) printUsage(w io.Writer) {
	fmt.Fprintf(w, "Usage: kwdata %s %s\n\nFlags:\n", fs.Name(), fs.usage)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// parseErr turns a flag package error into the command's answer: the usage
// on Stdout and flag.ErrHelp for -h or --help, else a usage error that
// names where the flags are listed.
func (fs *flagSet) parseErr(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		fs.printUsage(fs.m.Stdout)
		return err
	}
	return usageError{fmt.Errorf("%w; see 'kwdata %s -h'", err, fs.Name())}
}

// parse parses flags and refuses positional arguments the command does not take.
func parse(fs *flagSet, args []string, positional int) error {
	if err := fs.Parse(args); err != nil {
		return fs.parseErr(err)
	}
	if fs.NArg() > positional {
		return usageError{fmt.Errorf("unexpected argument %q; see 'kwdata %s -h'", fs.Arg(positional), fs.Name())}
	}
	return nil
}

// usageError marks a mistake in the command line (exit status 2).
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// count writes n with the noun in its singular or plural: "1 country",
// "2 countries".
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// oneLine folds an error onto one line: every failure is reported in one
// line a log or a terminal shows whole.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

// require returns a usage error naming the first empty flag.
func require(flags ...[2]string) error {
	for _, f := range flags {
		if f[1] == "" {
			return usageError{fmt.Errorf("--%s is required", f[0])}
		}
	}
	return nil
}
