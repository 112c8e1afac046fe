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
	"sort"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	m := NewMain()
	if err := m.Run(ctx, os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(2)
		}
		var ue usageError
		fmt.Fprintf(os.Stderr, "kwdata: %s\n", oneLine(err))
		if errors.As(err, &ue) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// Main is the kwdata program; tests drive it without a process.
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
	// KWDATA_LOG_LEVEL; os.Getenv by default.
	Getenv func(string) string
	// Now is the clock of pipeline run dates and run history; time.Now
	// when nil.
	Now func() time.Time
}

// now reads m.Now, or the wall clock when it is unset.
func (m *Main) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

// NewMain returns a Main wired to the process's standard streams.
func NewMain() *Main {
	level := new(slog.LevelVar) // info
	return &Main{
		Stdout: os.Stdout, Stderr: os.Stderr, Stdin: os.Stdin,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})),
		Level:  level,
		Getenv: os.Getenv,
	}
}

// logLevelEnv names the environment variable that sets the log level when
// --log-level is not given, handy in a systemd unit's Environment=.
const logLevelEnv = "KWDATA_LOG_LEVEL"

// globalFlags parses the flags given before the command name and returns
// the rest of args.
func (m *Main) globalFlags(args []string) ([]string, error) {
	fs := flag.NewFlagSet("kwdata", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.Usage = m.usage
	level := fs.String("log-level", "", "debug, info, warn or error; debug adds a line per HTTP request (default info, or $"+logLevelEnv+")")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, usageError{err}
	}
	if *level == "" && m.Getenv != nil {
		*level = m.Getenv(logLevelEnv)
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

var commands = map[string]command{}

func register(name, summary string, run func(m *Main, ctx context.Context, args []string) error) {
	commands[name] = command{summary, run}
}

// Run runs the subcommand named by args[0].
func (m *Main) Run(ctx context.Context, args []string) error {
	args, err := m.globalFlags(args)
	if errors.Is(err, flag.ErrHelp) {
		return nil // usage printed
	} else if err != nil {
		return err
	}
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		m.usage()
		if len(args) == 0 {
			return usageError{errors.New("no command given; see 'kwdata help'")}
		}
		return nil
	}
	c, ok := commands[args[0]]
	if !ok {
		return usageError{fmt.Errorf("unknown command %q; see 'kwdata help'", args[0])}
	}
	return c.run(m, ctx, args[1:])
}

func (m *Main) usage() {
	fmt.Fprintln(m.Stderr, "kwdata: keyword search volume, CPC, competition and related keywords.")
	fmt.Fprintln(m.Stderr, "\nUsage: kwdata [--log-level debug|info|warn|error] <command> [flags]   (kwdata <command> -h for its flags)")
	fmt.Fprintln(m.Stderr, "\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(m.Stderr, "  %-12s %s\n", n, commands[n].summary)
	}
}

// newFlagSet returns a flag set for a subcommand that reports errors instead
// of exiting, so tests can drive commands in-process.
func (m *Main) newFlagSet(name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.Usage = func() {
		fmt.Fprintf(m.Stderr, "Usage: kwdata %s %s\n\nFlags:\n", name, usage)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses flags and refuses positional arguments the command does not take.
func parse(fs *flag.FlagSet, args []string, positional int) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() > positional {
		return usageError{fmt.Errorf("unexpected argument %q", fs.Arg(positional))}
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

// oneLine folds an error onto one line, as the spec asks of every failure.
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
