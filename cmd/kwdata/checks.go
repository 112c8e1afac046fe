package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/kwdata/kwdata/kw"
)

// existingData refuses a data folder that does not exist. Only the commands
// that fill a data folder (sample, ingest, demo) may create one; for every
// other command a missing folder is a typo, and going on would print an
// empty answer or leave a new folder behind.
func existingData(data string) error {
	fi, err := os.Stat(data)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("data folder %s does not exist; check --data (kwdata ingest or kwdata demo create one)", data)
	case err != nil:
		return fmt.Errorf("cannot read data folder %s: %w", data, err)
	case !fi.IsDir():
		return fmt.Errorf("data folder %s is a file, not a folder; check --data", data)
	}
	return nil
}

// newFolderGuard returns a function that removes the topmost folder of path
// that does not exist yet, for a command that may create path and then
// fail: a failed command leaves no new folder behind. It removes nothing
// when path exists already.
func newFolderGuard(path string) (undo func()) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return func() {}
	}
	top := ""
	for p := abs; ; p = filepath.Dir(p) {
		if _, err := os.Lstat(p); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return func() {}
		}
		top = p
		if filepath.Dir(p) == p {
			break
		}
	}
	if top == "" {
		return func() {}
	}
	return func() { _ = os.RemoveAll(top) }
}

// dateShape is YYYY-MM-DD, before asking whether the day exists.
var dateShape = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}$`)

// checkDate refuses a --date that is not YYYY-MM-DD or not a day of the
// calendar, saying which of the two it is.
func checkDate(v string) error {
	if !dateShape.MatchString(v) {
		return usageError{fmt.Errorf("--date %q is not YYYY-MM-DD; write e.g. 2026-11-21", v)}
	}
	if _, err := time.Parse(kw.DateLayout, v); err == nil {
		return nil
	}
	year, _ := strconv.Atoi(v[:4])
	month, _ := strconv.Atoi(v[5:7])
	if month < 1 || month > 12 {
		return usageError{fmt.Errorf("--date %s does not exist: there is no month %d", v, month)}
	}
	last := time.Date(year, time.Month(month)+1, 0, 0, 0, 0, 0, time.UTC).Day()
	return usageError{fmt.Errorf("--date %s does not exist: %s %d has %d days", v, time.Month(month), year, last)}
}

// checkCountry refuses a --country that kwdata does not support, in the
// words of the command line.
func checkCountry(cc string) error {
	if _, ok := kw.LookupCountry(cc); !ok {
		return usageError{fmt.Errorf("--country %q is not a supported country; write an ISO 3166-1 alpha-2 code such as us, gb or de (GET /v1/countries of a running server lists them all)", cc)}
	}
	return nil
}

func (m *Main) runVersion(ctx context.Context, args []string) error {
	fs := m.newFlagSet("version", "")
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	bi, ok := debug.ReadBuildInfo()
	fmt.Fprintln(m.Stdout, versionLine(bi, ok, revision))
	return nil
}

// revision is the VCS revision `make build` stamps with -ldflags
// "-X main.revision=...", for builds Go itself does not stamp (go run,
// -buildvcs=false, a tree whose git Go cannot run).
var revision string

// versionLine describes a build: the module version (a tag, a
// pseudo-version, or "(devel)" for a build from a checkout), the VCS
// revision and its time, whether the tree had uncommitted changes, and the
// Go version. stamped is the revision the Makefile stamped, used when the
// build information has none.
func versionLine(bi *debug.BuildInfo, ok bool, stamped string) string {
	if !ok || bi == nil {
		return "kwdata (unknown version: built without module information)"
	}
	version := bi.Main.Version
	if version == "" {
		version = "(devel)"
	}
	var rev, at, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	parts := []string{"kwdata " + version}
	switch {
	case rev == "" && stamped != "":
		parts = append(parts, "revision "+stamped)
	case rev == "":
		parts = append(parts, "revision unknown (build with make build in a git checkout to record it)")
	default:
		r := "revision " + rev
		if at != "" {
			r += " (" + at + ")"
		}
		if modified == "true" {
			r += " with uncommitted changes"
		}
		parts = append(parts, r)
	}
	if bi.GoVersion != "" {
		parts = append(parts, bi.GoVersion)
	}
	return strings.Join(parts, ", ")
}
