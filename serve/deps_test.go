package serve

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps keeps storage libraries out of the server: serve reaches the index
// only through kw.Index, so linking Parquet, Arrow or Pebble here means a
// layering mistake (and a bigger, slower-starting binary).
func TestDeps(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not found")
	}
	out, err := exec.Command(goTool, "list", "-deps", "github.com/kwdata/kwdata/serve").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 || !strings.Contains(string(out), "github.com/kwdata/kwdata/kw\n") {
		t.Fatalf("go list -deps printed an implausible list:\n%s", out)
	}
	forbidden := []string{
		"github.com/parquet-go/",
		"github.com/apache/arrow-go/",
		"github.com/cockroachdb/pebble",
		"github.com/kwdata/kwdata/index",
		"github.com/kwdata/kwdata/lake",
	}
	for _, dep := range deps {
		for _, f := range forbidden {
			if strings.HasPrefix(dep, f) {
				t.Errorf("serve depends on %s", dep)
			}
		}
	}
}
