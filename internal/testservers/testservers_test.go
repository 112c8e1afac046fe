package testservers

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// recordTB is a testing.TB that records Fatalf and Skipf instead of
// ending the test.
type recordTB struct {
	testing.TB
	fatal, skip string
}

func (r *recordTB) Helper() {}
func (r *recordTB) Fatalf(format string, args ...any) {
	if r.fatal == "" {
		r.fatal = fmt.Sprintf(format, args...)
	}
}
func (r *recordTB) Skipf(format string, args ...any) {
	if r.fatal == "" && r.skip == "" {
		r.skip = fmt.Sprintf(format, args...)
	}
}

// TestSkipForTool: a missing tool skips the test and notes it for make
// test, unless KWDATA_REQUIRE_SERVERS=1 says it must run: then it fails.
func TestSkipForTool(t *testing.T) {
	for _, tt := range []struct {
		name, require string
		fail          bool
	}{
		{"skips", "", false},
		{"fails when required", "1", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			noted := filepath.Join(t.TempDir(), "skipped")
			t.Setenv("KWDATA_SKIPPED", noted)
			t.Setenv("KWDATA_REQUIRE_SERVERS", tt.require)
			r := &recordTB{TB: t}
			SkipForTool(r, "sometool", "apt-get install sometool")
			b, _ := os.ReadFile(noted)
			switch {
			case tt.fail && (r.fatal == "" || !strings.Contains(r.fatal, "sometool")):
				t.Errorf("KWDATA_REQUIRE_SERVERS=1: Fatalf %q, want a failure naming the tool", r.fatal)
			case !tt.fail && (r.fatal != "" || !strings.Contains(r.skip, "apt-get install sometool")):
				t.Errorf("Fatalf %q, Skipf %q; want a skip saying how to get the tool", r.fatal, r.skip)
			case !tt.fail && !strings.Contains(string(b), t.Name()+" needs sometool"):
				t.Errorf("$KWDATA_SKIPPED holds %q, want a line for %s", b, t.Name())
			}
		})
	}
}

// TestOneSkipHelper: every test that skips for a missing tool goes through
// SkipForTool, so that KWDATA_REQUIRE_SERVERS=1 turns each such skip into
// a failure and CI cannot pass without the tool.
func TestOneSkipHelper(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("cannot find the module root from %s: %v", root, err)
	}
	// A helper of its own, or a skip that says a tool is not installed.
	own := regexp.MustCompile(`func [a-z]\w*[sS]kip\w*\(|\.Skip\w*\([^)]*not installed`)
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") || filepath.Dir(path) == filepath.Join(root, "internal", "testservers") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if own.MatchString(line) {
				rel, _ := filepath.Rel(root, path)
				t.Errorf("%s:%d skips for a tool without testservers.SkipForTool, which fails under KWDATA_REQUIRE_SERVERS=1: %s",
					rel, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestStripeMocksSideBySide: two stripe-mocks run at once, as the tests
// of several packages do, each on loopback ports of its own. Left to its
// default, the second one's HTTPS listener found :12112 taken and the
// mock exited at start.
func TestStripeMocksSideBySide(t *testing.T) {
	t.Parallel()
	for _, base := range []string{StartStripeMock(t), StartStripeMock(t)} {
		if !strings.HasPrefix(base, "http://127.0.0.1:") {
			t.Errorf("stripe-mock at %s, want a loopback address", base)
		}
	}
}
