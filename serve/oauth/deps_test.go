package oauth

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps keeps the authorization server a room of its own: the
// standard library, kw, the MCP SDK's OAuth packages and golang.org/x.
// The composing server wires it; it never reaches back into serve.
func TestDeps(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not found")
	}
	out, err := exec.Command(goTool, "list", "-deps", "github.com/kwdata/kwdata/serve/oauth").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	allowed := []string{
		"github.com/kwdata/kwdata/serve/oauth", "github.com/kwdata/kwdata/kw",
		"github.com/modelcontextprotocol/go-sdk/", "golang.org/x/",
		"github.com/segmentio/", // the SDK's JSON
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps printed an implausible list:\n%s", out)
	}
	for _, dep := range deps {
		first, _, _ := strings.Cut(dep, "/")
		if !strings.Contains(first, ".") {
			continue // standard library
		}
		ok := false
		for _, a := range allowed {
			ok = ok || strings.HasPrefix(dep, a)
		}
		if !ok {
			t.Errorf("serve/oauth depends on %s", dep)
		}
	}
}
