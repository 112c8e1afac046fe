package pipelines

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImports keeps the runner out of the sources: the API clients belong
// to the ingest stage, which owns their configuration sections and
// defaults, so an import of one here would be a second home for them.
func TestImports(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not found")
	}
	out, err := exec.Command(goTool, "list", "-f", `{{join .Imports "\n"}}`, "github.com/kwdata/kwdata/pipelines").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	imports := strings.Fields(string(out))
	if len(imports) < 5 || !strings.Contains(string(out), "github.com/kwdata/kwdata/kw\n") {
		t.Fatalf("go list printed an implausible list:\n%s", out)
	}
	for _, imp := range imports {
		if strings.HasPrefix(imp, "github.com/kwdata/kwdata/ingest/") {
			t.Errorf("pipelines imports %s; the ingest stage owns it", imp)
		}
	}
}
