package main

import (
	"encoding/json"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The docs check: what README.md, ARCHITECTURE.md and docs/ quote from the
// code (the flags of the command overview, metric names and labels, the
// problem codes, the routes, the limits, the page's script policy) must be
// what the code has, every relative link must lead to a file, and no text
// may lean on a document the repository does not hold. Figures measured on
// a machine cannot be checked this way; these can.

// repoRoot is the module's root, two folders up from cmd/kwdata.
const repoRoot = "../.."

func readDoc(tb testing.TB, name string) string {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, name))
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// section returns the text of a doc from the heading line that starts with
// heading up to the next heading of the same or a higher level.
func section(tb testing.TB, doc, heading string) string {
	tb.Helper()
	i := strings.Index(doc, "\n"+heading+"\n")
	if i < 0 {
		tb.Fatalf("no heading %q", heading)
	}
	rest := doc[i+len(heading)+2:]
	level := strings.Repeat("#", strings.Count(strings.Fields(heading)[0], "#"))
	for _, h := range regexp.MustCompile(`(?m)^#+ `).FindAllStringIndex(rest, -1) {
		if len(strings.TrimSpace(rest[h[0]:h[1]])) <= len(level) {
			return rest[:h[0]]
		}
	}
	return rest
}

var flagRef = regexp.MustCompile(`--([a-z0-9][a-z0-9-]*)`)

// TestDocsCommandOverview: every command has a line in the command
// overview of docs/OPERATIONS.md, and the line names exactly the command's
// flags (a line ending in "..." names some of them).
func TestDocsCommandOverview(t *testing.T) {
	t.Parallel()
	overview := section(t, readDoc(t, "docs/OPERATIONS.md"), "## Commands")
	block := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(overview)
	if block == nil {
		t.Fatal("no command overview block")
	}
	lines := map[string]string{}
	for _, l := range strings.Split(block[1], "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && f[0] == "kwdata" {
			lines[f[1]] = l
		}
	}
	for name := range commands {
		line, ok := lines[name]
		if !ok {
			t.Errorf("kwdata %s is not in the command overview of docs/OPERATIONS.md", name)
			continue
		}
		var documented []string
		for _, m := range flagRef.FindAllStringSubmatch(line, -1) {
			if !slices.Contains(documented, m[1]) {
				documented = append(documented, m[1])
			}
		}
		var defined []string
		if name == "keys" {
			for sub := range keysUsage {
				_, out, _, _ := runCmd(t, "keys", sub, "-h")
				for _, f := range flagNames(out) {
					if !slices.Contains(defined, f) {
						defined = append(defined, f)
					}
				}
			}
		} else {
			_, out, _, _ := runCmd(t, name, "-h")
			defined = flagNames(out)
		}
		for _, f := range documented {
			if !slices.Contains(defined, f) {
				t.Errorf("docs/OPERATIONS.md: kwdata %s --%s is not a flag of the command (it has %q)", name, f, defined)
			}
		}
		if strings.HasSuffix(strings.TrimSpace(line), "...") {
			continue
		}
		for _, f := range defined {
			if !slices.Contains(documented, f) {
				t.Errorf("docs/OPERATIONS.md: the overview line of kwdata %s leaves out --%s", name, f)
			}
		}
	}
	for name := range lines {
		if _, ok := commands[name]; !ok {
			t.Errorf("docs/OPERATIONS.md's overview lists kwdata %s, which is no command", name)
		}
	}
}

// TestDocsMetricNames: every metric the docs name exists in the code, with
// the labels the docs give it.
func TestDocsMetricNames(t *testing.T) {
	t.Parallel()
	sources := map[string]string{} // metric name -> source of the file defining it
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != repoRoot {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range regexp.MustCompile(`"(kwdata_[a-z_]+)"`).FindAllStringSubmatch(string(b), -1) {
			sources[m[1]] = string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(sources) < 5 {
		t.Fatalf("found only %d metrics in the code", len(sources))
	}
	mention := regexp.MustCompile(`\b(kwdata_[a-z_]+)(\{([a-z_,]*)\})?`)
	for _, doc := range markdownDocs(t) {
		for _, m := range mention.FindAllStringSubmatch(readDoc(t, doc), -1) {
			src, ok := sources[m[1]]
			if !ok {
				t.Errorf("%s names metric %s, which the code does not have", doc, m[1])
				continue
			}
			for _, label := range strings.Split(m[3], ",") {
				if label != "" && !strings.Contains(src, `"`+label+`"`) {
					t.Errorf("%s gives %s the label %s, which its code does not", doc, m[1], label)
				}
			}
		}
	}
}

// TestDocsProblemCodes: the error table of docs/API.md lists exactly the
// problem codes of the OpenAPI document, and the server describes each of
// them at /problems/<code>.
func TestDocsProblemCodes(t *testing.T) {
	t.Parallel()
	errorsSection := section(t, readDoc(t, "docs/API.md"), "## Errors")
	var documented []string
	for _, row := range regexp.MustCompile(`(?m)^\| [0-9]{3} \| (.*?) \|`).FindAllStringSubmatch(errorsSection, -1) {
		for _, c := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(row[1], -1) {
			if !slices.Contains(documented, c[1]) {
				documented = append(documented, c[1])
			}
		}
	}
	var doc struct {
		Components struct {
			Schemas struct {
				Problem struct {
					Properties struct {
						Code struct {
							Enum []string `json:"enum"`
						} `json:"code"`
					} `json:"properties"`
				} `json:"Problem"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal([]byte(readDoc(t, "serve/web/openapi.json")), &doc); err != nil {
		t.Fatal(err)
	}
	codes := doc.Components.Schemas.Problem.Properties.Code.Enum
	if len(codes) < 10 {
		t.Fatalf("the OpenAPI document lists only %d problem codes", len(codes))
	}
	slices.Sort(documented)
	slices.Sort(codes)
	for _, c := range codes {
		if !slices.Contains(documented, c) {
			t.Errorf("docs/API.md's error table leaves out %s", c)
		}
	}
	for _, c := range documented {
		if !slices.Contains(codes, c) {
			t.Errorf("docs/API.md's error table lists %s, which the server never sends", c)
		}
	}
	base := startServer(t, t.TempDir())
	for _, c := range codes {
		resp, err := http.Get(base + "/problems/" + c)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET /problems/%s answers %d", c, resp.StatusCode)
		}
	}
}
