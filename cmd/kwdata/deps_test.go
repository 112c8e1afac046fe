package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImports keeps the command a wiring of stages: it parses flags and
// the configuration and calls stages, so reading the lake or calling an
// API client directly here means stage logic has crept into it.
func TestImports(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs go list")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not found")
	}
	out, err := exec.Command(goTool, "list", "-f", `{{join .Imports "\n"}}`, "github.com/kwdata/kwdata/cmd/kwdata").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	imports := strings.Fields(string(out))
	if len(imports) < 5 || !strings.Contains(string(out), "github.com/kwdata/kwdata/pipelines\n") {
		t.Fatalf("go list printed an implausible list:\n%s", out)
	}
	for _, imp := range imports {
		switch imp {
		case "github.com/kwdata/kwdata/lake", "github.com/kwdata/kwdata/ingest/googleads", "github.com/kwdata/kwdata/ingest/dataforseo":
			t.Errorf("cmd/kwdata imports %s; ask the stage that owns it", imp)
		}
	}
}
