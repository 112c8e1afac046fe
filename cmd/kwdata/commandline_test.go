package main

import (
	"context"
	"errors"
	"flag"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/pipelines"
)

// goInternals are fragments of Go type names and decoder messages that a
// user-facing message must never carry.
var goInternals = []string{"pipelines.Config", "[]ingest.", "kw.Countries", "cannot unmarshal", "Go struct field", "not found in type"}

// checkMessage fails when an error message is not one line or speaks of
// Go internals.
func checkMessage(tb testing.TB, what string, err error) {
	tb.Helper()
	msg := err.Error()
	if strings.Contains(oneLine(err), "\n") {
		tb.Errorf("%s: message spans lines: %q", what, msg)
	}
	for _, g := range goInternals {
		if strings.Contains(msg, g) {
			tb.Errorf("%s: message %q speaks of Go internals (%q)", what, msg, g)
		}
	}
}

// runCmd runs one command in-process and returns its error, its exit
// status and what it printed.
func runCmd(tb testing.TB, args ...string) (status int, stdout, stderr string, err error) {
	tb.Helper()
	m, out, errb := testMain(tb)
	err = m.Run(context.Background(), args)
	return exitStatus(err), out.String(), errb.String(), err
}

// flagNames lists the flags a command's usage prints, in order.
func flagNames(usage string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`(?m)^  -([a-z0-9-]+)`).FindAllStringSubmatch(usage, -1) {
		out = append(out, m[1])
	}
	return out
}

// commandNames are the registered commands, sorted, and the keys
// subcommands as "keys <sub>".
func commandNames() []string {
	var names []string
	for n := range commands {
		if n == "keys" {
			for sub := range keysUsage {
				names = append(names, "keys "+sub)
			}
			continue
		}
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// TestHelpExitsZero: -h and --help print the usage of every command and
// subcommand on stdout and exit 0, and the usage line names every flag the
// command takes.
func TestHelpExitsZero(t *testing.T) {
	t.Parallel()
	for _, name := range commandNames() {
		for _, h := range []string{"-h", "--help"} {
			t.Run(name+" "+h, func(t *testing.T) {
				args := append(strings.Fields(name), h)
				status, out, errOut, err := runCmd(t, args...)
				if err != nil || status != 0 {
					t.Fatalf("err = %v, exit %d", err, status)
				}
				if errOut != "" {
					t.Errorf("help wrote to stderr: %q", errOut)
				}
				first, _, _ := strings.Cut(out, "\n")
				if !strings.HasPrefix(first, "Usage: kwdata "+name) {
					t.Fatalf("usage starts %q", first)
				}
				for _, f := range flagNames(out) {
					if !strings.Contains(first, "--"+f+" ") && !strings.HasSuffix(first, "--"+f) && !strings.Contains(first, "--"+f+"]") {
						t.Errorf("usage line %q leaves out --%s", first, f)
					}
				}
			})
		}
	}
	for _, args := range [][]string{{"-h"}, {"--help"}, {"help"}, {"keys", "-h"}, {"keys", "--help"}, {"help", "demo"}} {
		status, out, _, err := runCmd(t, args...)
		if err != nil || status != 0 || !strings.Contains(out, "Usage") {
			t.Errorf("kwdata %s: err = %v, exit %d, stdout %q", strings.Join(args, " "), err, status, out)
		}
	}
	if _, out, _, _ := runCmd(t, "demo", "-h"); !strings.Contains(out, "--countries") {
		t.Errorf("demo -h leaves out --countries:\n%s", out)
	}
}

// TestCommandLineMistakes: a wrong command line exits 2 with one message,
// printed once (by main), that says where the right flags are.
func TestCommandLineMistakes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"demo", "--nope"}, "flag provided but not defined: -nope; see 'kwdata demo -h'"},
		{[]string{"similarity", "--data"}, "flag needs an argument: -data; see 'kwdata similarity -h'"},
		{[]string{"--loud", "demo"}, "see 'kwdata help'"},
		{[]string{"keys"}, "keys needs a subcommand"},
		{[]string{"keys", "rotate"}, `unknown keys subcommand "rotate"`},
		{[]string{"keys", "list", "--tier", "paid"}, "flag provided but not defined: -tier; see 'kwdata keys list -h'"},
		{[]string{"sample", "--out", "o", "extra"}, "unexpected argument \"extra\"; see 'kwdata sample -h'"},
		{[]string{"demo", "--countries", "us,xx"}, `"xx" is not a supported country`},
		{[]string{"ingest", "--data", "d", "--date", "2026-11-21", "--country", "xx", "--planner-csv", "a"}, `--country "xx" is not a supported country`},
		{[]string{"build-index", "--data", "d", "--date", "2026-11-21", "--publish", "/mnt/builds"}, "--publish: \"/mnt/builds\" is not an object store location; write s3://BUCKET/PREFIX"},
		{[]string{"build-index", "--data", "d", "--date", "2026-11-21", "--publish", "s3://b/../x"}, "--publish: prefix of"},
		{[]string{"build-index", "--data", "d", "--date", "2026-11-21", "--s3-endpoint", "http://minio:9000"}, "--s3-endpoint needs --publish"},
		{[]string{"build-index", "--data", "d", "--date", "2026-11-21", "--publish", "s3://b/x", "--s3-endpoint", "minio:9000"}, "--s3-endpoint: endpoint \"minio:9000\" is not an http:// or https:// URL"},
		{[]string{"serve", "--data", "d", "--index", "d/index"}, "--index: \"d/index\" is not an object store location"},
		{[]string{"serve", "--data", "d", "--s3-endpoint", "http://minio:9000"}, "--s3-endpoint needs --index"},
	} {
		status, out, errOut, err := runCmd(t, tc.args...)
		if status != 2 || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("kwdata %s: exit %d, err = %v; want exit 2 and %q", strings.Join(tc.args, " "), status, err, tc.want)
			continue
		}
		checkMessage(t, strings.Join(tc.args, " "), err)
		if errOut != "" && !slices.Equal(tc.args, []string{"keys"}) {
			t.Errorf("kwdata %s printed %q itself; main prints the error once", strings.Join(tc.args, " "), errOut)
		}
		if out != "" {
			t.Errorf("kwdata %s printed %q on stdout", strings.Join(tc.args, " "), out)
		}
	}
}

// TestMissingDataFolder: every command that reads a data folder refuses
// one that does not exist, exits 1, and creates nothing.
func TestMissingDataFolder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data := filepath.Join(dir, "nonexist")
	for _, args := range [][]string{
		{"keys", "list", "--data", data},
		{"keys", "create", "--data", data, "--tier", "registered"},
		{"keys", "revoke", "--data", data, "ID"},
		{"keys", "set-tier", "--data", data, "ID", "paid"},
		{"runs", "--data", data},
		{"similarity", "--data", data, "--date", "2026-11-21"},
		{"build-index", "--data", data, "--date", "2026-11-21"},
		{"serve", "--data", data, "--addr", "127.0.0.1:0"},
	} {
		status, out, _, err := runCmd(t, args...)
		if status != 1 || err == nil || !strings.Contains(err.Error(), "does not exist") || !strings.Contains(err.Error(), "--data") {
			t.Errorf("kwdata %s: exit %d, err = %v; want exit 1 saying the folder does not exist", strings.Join(args[:2], " "), status, err)
		}
		if out != "" {
			t.Errorf("kwdata %s printed %q", strings.Join(args[:2], " "), out)
		}
		if _, err := os.Stat(data); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("kwdata %s created %s", strings.Join(args[:2], " "), data)
		}
	}
}

// TestFailedCommandLeavesNoFolders: the commands that may create a data
// folder remove it again when they fail.
func TestFailedCommandLeavesNoFolders(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notAnExport := writeTestFile(t, dir, "notes.txt", "these are my notes\nnot an export\n")
	badSERPs := writeTestFile(t, dir, "serps.jsonl", `{"keyword": "a", "country": "us", "results": "x"}`+"\n")
	cfg := writeTestFile(t, dir, "kwdata.yaml", "data: ./data-from-config\ncountries: [us]\nfiles:\n  us: { planner_csv: [notes.txt] }\n")
	for _, tc := range []struct {
		name   string
		args   []string
		folder string
	}{
		{"ingest", []string{"ingest", "--data", filepath.Join(dir, "new", "data"), "--date", "2026-11-21", "--country", "us", "--planner-csv", notAnExport}, filepath.Join(dir, "new")},
		{"ingest serps", []string{"ingest", "--data", filepath.Join(dir, "new2"), "--date", "2026-11-21", "--country", "us", "--serp-jsonl", badSERPs}, filepath.Join(dir, "new2")},
		{"ingest --config", []string{"ingest", "--config", cfg, "--date", "2026-11-21"}, filepath.Join(dir, "data-from-config")},
		{"ingest --config --data", []string{"ingest", "--config", cfg, "--date", "2026-11-21", "--data", filepath.Join(dir, "new3")}, filepath.Join(dir, "new3")},
	} {
		status, _, errOut, err := runCmd(t, tc.args...)
		if status != 1 {
			t.Errorf("%s: exit %d, err = %v; want 1", tc.name, status, err)
			continue
		}
		checkMessage(t, tc.name, err)
		if strings.Count(oneLine(err), "cannot ingest") > 1 {
			t.Errorf("%s: %q says cannot ingest twice", tc.name, err)
		}
		if _, serr := os.Stat(tc.folder); !errors.Is(serr, os.ErrNotExist) {
			t.Errorf("%s failed (%v) but left %s", tc.name, err, tc.folder)
		}
		for _, g := range goInternals {
			if strings.Contains(errOut, g) {
				t.Errorf("%s: stderr speaks of Go internals: %q", tc.name, errOut)
			}
		}
	}
	// A data folder that existed stays, with what it held.
	keep := filepath.Join(dir, "keep")
	writeTestFile(t, keep, "mine.txt", "x")
	if status, _, _, _ := runCmd(t, "ingest", "--data", keep, "--date", "2026-11-21", "--country", "us", "--planner-csv", notAnExport); status != 1 {
		t.Errorf("ingest of a bad file into an existing folder: exit %d", status)
	}
	if _, err := os.Stat(filepath.Join(keep, "mine.txt")); err != nil {
		t.Errorf("a failed ingest removed a folder it did not create: %v", err)
	}
}

// TestDemoBusyPortUnderMake: under `make demo` the busy-port hint names
// make's ADDR=, which is what the reader types there, not --addr.
func TestDemoBusyPortUnderMake(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	m, _, _ := testMain(t)
	m.Getenv = func(k string) string {
		if k == makeDemoEnv {
			return "1"
		}
		return ""
	}
	err = m.Run(context.Background(), []string{"demo", "--addr", ln.Addr().String(), "--data", filepath.Join(t.TempDir(), "d")})
	if err == nil || !strings.Contains(err.Error(), "make demo ADDR=127.0.0.1:8081") || strings.Contains(err.Error(), "--addr") {
		t.Fatalf("err = %v; want the hint make demo ADDR=127.0.0.1:8081 and no --addr", err)
	}
}

// TestDemoBusyPort: a demo whose address is taken fails at once, before
// any stage, naming --addr, and leaves no folder.
func TestDemoBusyPort(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	data := filepath.Join(t.TempDir(), "demo-data")
	start := time.Now()
	status, _, errOut, err := runCmd(t, "demo", "--addr", ln.Addr().String(), "--data", data)
	if status != 1 || err == nil || !strings.Contains(err.Error(), "already in use") || !strings.Contains(err.Error(), "--addr") {
		t.Fatalf("exit %d, err = %v; want exit 1 naming the busy address and --addr", status, err)
	}
	if strings.Contains(errOut, "1/4") {
		t.Errorf("the demo ran a stage before failing on the address:\n%s", errOut)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the demo took %s to fail on a busy port", d)
	}
	if _, err := os.Stat(data); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the failed demo left %s", data)
	}
}

// TestDateErrors: a --date that is not YYYY-MM-DD, or not a day of the
// calendar, is refused before anything runs, in words that say which.
func TestDateErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := writeTestFile(t, dir, "kwdata.yaml", "data: ./data\ncountries: [us]\nfiles:\n  us: { planner_csv: [us.csv] }\n")
	if err := os.Mkdir(filepath.Join(dir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ date, want string }{
		{"2026/11/21", `--date "2026/11/21" is not YYYY-MM-DD`},
		{"21-11-2026", "is not YYYY-MM-DD"},
		{"2026-13-01", "--date 2026-13-01 does not exist: there is no month 13"},
		{"2026-02-30", "--date 2026-02-30 does not exist: February 2026 has 28 days"},
		{"2028-02-30", "February 2028 has 29 days"},
	} {
		for _, args := range [][]string{
			{"run", "--config", cfg, "--date", tc.date},
			{"ingest", "--config", cfg, "--date", tc.date},
			{"ingest", "--data", filepath.Join(dir, "data"), "--country", "us", "--planner-csv", "x", "--date", tc.date},
			{"similarity", "--data", filepath.Join(dir, "data"), "--date", tc.date},
			{"build-index", "--data", filepath.Join(dir, "data"), "--date", tc.date},
		} {
			status, out, _, err := runCmd(t, args...)
			if status != 2 || err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("kwdata %s --date %s: exit %d, err = %v; want exit 2 and %q", args[0], tc.date, status, err, tc.want)
			}
			if out != "" {
				t.Errorf("kwdata %s --date %s printed %q before the error", args[0], tc.date, out)
			}
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "data")); len(ents) != 0 {
		t.Errorf("refused dates left %d entries in the data folder", len(ents))
	}
}

// TestConfigProblemsThroughTheCommand: a config with a typo reports every
// problem of the file at once, in the user's words.
func TestConfigProblemsThroughTheCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := writeTestFile(t, dir, "kwdata.yaml", "data: ./data\ncountries: [us, xx]\nschedul: \"0 3 * * *\"\ntimezone: Mars/Olympus\nfiles:\n  us: { planner_csv: exports/us.csv }\nretention: { keep_days: lots }\n")
	status, out, _, err := runCmd(t, "run", "--config", cfg)
	if status != 1 || err == nil {
		t.Fatalf("exit %d, err = %v", status, err)
	}
	checkMessage(t, "run", err)
	for _, want := range []string{"schedul (line 3) is not a known key; write schedule", `"xx" is not a supported country`, "Mars/Olympus", `retention.keep_days (line 7) is "lots", not a whole number`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "planner_csv") {
		t.Errorf("a single path for a list was refused: %q", err)
	}
	if out != "" {
		t.Errorf("printed %q", out)
	}
}

// TestKeysCommandAgreesWithRegistration: the CLI keeps one active key per
// email as POST /v1/register does, and warns about paid grants that are
// probably not meant.
func TestKeysCommandAgreesWithRegistration(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	_, key, _, err := runCmd(t, "keys", "create", "--data", data, "--tier", "registered", "--email", "ann@example.com")
	if err != nil || !strings.HasPrefix(key, "kwd_") {
		t.Fatalf("first key: err = %v, out %q", err, key)
	}
	status, out, _, err := runCmd(t, "keys", "create", "--data", data, "--tier", "paid", "--email", "Ann@Example.com")
	if status != 1 || err == nil || !strings.Contains(err.Error(), "ann@example.com") && !strings.Contains(err.Error(), "Ann@Example.com") || !strings.Contains(err.Error(), "already holds an active key") {
		t.Fatalf("second key for the same email: exit %d, err = %v", status, err)
	}
	if out != "" {
		t.Errorf("a refused create printed %q", out)
	}
	list := run(t, "keys", "list", "--data", data)
	if n := strings.Count(list, "ann@example.com"); n != 1 {
		t.Errorf("%d keys of ann@example.com after the refusal:\n%s", n, list)
	}
	id := regexp.MustCompile(`(?m)^(\S+)\s+registered\s+ann@example.com`).FindStringSubmatch(list)
	if id == nil {
		t.Fatalf("no key of ann in\n%s", list)
	}
	if !strings.Contains(err.Error(), id[1]) {
		t.Errorf("refusal %q does not name the existing key %s", err, id[1])
	}

	// Paid with no end, or an end in the past: done, with a warning.
	_, _, warn, _ := runCmd(t, "keys", "set-tier", "--data", data, id[1], "paid")
	if !strings.Contains(warn, "no end date") || !strings.Contains(warn, "--paid-until") {
		t.Errorf("set-tier paid without --paid-until warned %q", warn)
	}
	_, _, warn, _ = runCmd(t, "keys", "create", "--data", data, "--tier", "paid", "--paid-until", "2020-01-31")
	if !strings.Contains(warn, "in the past") || !strings.Contains(warn, "counts as registered") {
		t.Errorf("create with a past --paid-until warned %q", warn)
	}
	_, _, warn, _ = runCmd(t, "keys", "create", "--data", data, "--tier", "paid", "--paid-until", time.Now().AddDate(0, 1, 0).Format(time.DateOnly))
	if strings.Contains(warn, "warning") {
		t.Errorf("a paid key with a future end warned %q", warn)
	}
	if status, _, _, err := runCmd(t, "keys", "create", "--data", data, "--tier", "registered", "--paid-until", "2030-01-01"); status != 2 {
		t.Errorf("--paid-until on a registered key: exit %d, err = %v", status, err)
	}
	// Once revoked, the email may hold a new key.
	run(t, "keys", "revoke", "--data", data, id[1])
	if _, _, _, err := runCmd(t, "keys", "create", "--data", data, "--tier", "registered", "--email", "ann@example.com"); err != nil {
		t.Errorf("a new key after revoking the old one: %v", err)
	}
}

// TestVersion: kwdata version prints the module version and VCS revision
// of the build.
func TestVersion(t *testing.T) {
	t.Parallel()
	status, out, _, err := runCmd(t, "version")
	if err != nil || status != 0 || !strings.HasPrefix(out, "kwdata ") {
		t.Fatalf("err = %v, exit %d, out %q", err, status, out)
	}
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		ok   bool
		want string
	}{
		{"no build info", nil, false, "kwdata (unknown version: built without module information)"},
		{"tagged release", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.0"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "c559937f"}, {Key: "vcs.time", Value: "2026-11-21T03:00:00Z"}, {Key: "vcs.modified", Value: "false"}}},
			true, "kwdata v1.2.0, revision c559937f (2026-11-21T03:00:00Z), go1.26.8"},
		{"checkout with changes", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "c559937f"}, {Key: "vcs.modified", Value: "true"}}},
			true, "kwdata (devel), revision c559937f with uncommitted changes, go1.26.8"},
		{"no vcs", &debug.BuildInfo{Main: debug.Module{}}, true, "kwdata (devel), revision unknown (build with make build in a git checkout to record it)"},
	} {
		if got := versionLine(tc.bi, tc.ok, ""); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	// A build Go did not stamp (go run, -buildvcs=false) takes the
	// revision the Makefile stamps; Go's own stamp wins when there is one.
	if got, want := versionLine(&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}, true, "0123456789ab-modified"),
		"kwdata (devel), revision 0123456789ab-modified, go1.26.8"; got != want {
		t.Errorf("stamped by make: %q, want %q", got, want)
	}
	if got := versionLine(&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "c559937f"}}}, true, "0123456789ab"); got != "kwdata (devel), revision c559937f" {
		t.Errorf("stamped by Go and make: %q", got)
	}
}

// TestPlainIngestTakesTheRunLock: kwdata ingest with files is refused
// while a run holds the lock, and replaces no partition; without the lock
// it would swap a partition under a running pipeline, which would then
// publish the mix.
func TestPlainIngestTakesTheRunLock(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := newSampleCorpus(t, dir, 40, 5)
	data := filepath.Join(dir, "data")
	const date = "2026-11-21"
	run(t, "ingest", "--data", data, "--date", date, "--country", "us", "--planner-csv", c.planner)
	part := filepath.Join(kw.LakeDir(data), "keywords", "country=us", "date="+date)
	before, err := os.ReadDir(part)
	if err != nil {
		t.Fatal(err)
	}
	beforeInfo, _ := os.Stat(filepath.Join(part, before[0].Name()))

	release, err := pipelines.Lock(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	status, out, _, err := runCmd(t, "ingest", "--data", data, "--date", date, "--country", "us", "--planner-csv", c.planner, "--serp-jsonl", c.serpFile)
	if !errors.Is(err, pipelines.ErrLocked) || status != 1 {
		t.Fatalf("ingest while a run holds the lock: exit %d, err = %v; want the lock refusal", status, err)
	}
	if msg := oneLine(err); !strings.HasPrefix(msg, "cannot ingest") || !strings.Contains(msg, "pid ") {
		t.Errorf("refusal %q does not name the lock's holder", msg)
	}
	if out != "" {
		t.Errorf("a refused ingest printed %q", out)
	}
	after, _ := os.Stat(filepath.Join(part, before[0].Name()))
	if after == nil || !after.ModTime().Equal(beforeInfo.ModTime()) {
		t.Error("a refused ingest replaced the keywords partition")
	}
	if _, err := os.Stat(filepath.Join(kw.LakeDir(data), "serps")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused ingest wrote SERPs: %v", err)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	if out := run(t, "ingest", "--data", data, "--date", date, "--country", "us", "--serp-jsonl", c.serpFile); !strings.Contains(out, "ingested US") {
		t.Errorf("ingest after the lock was released printed %q", out)
	}
}

// The flag package's help error must not leak out of Main.Run.
func TestHelpIsNotAnError(t *testing.T) {
	t.Parallel()
	m, _, _ := testMain(t)
	if err := m.Run(context.Background(), []string{"serve", "-h"}); errors.Is(err, flag.ErrHelp) || err != nil {
		t.Errorf("serve -h: %v", err)
	}
}
