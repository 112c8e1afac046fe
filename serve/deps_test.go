package serve

import (
	"os/exec"
	"strings"
	"testing"
)

// module is the import path of this repository.
const module = "github.com/kwdata/kwdata/"

// rooms are the packages of the server's audiences. Each talks to the
// others only through serve/web and the router in serve, so a change to
// one never touches another's code or tests.
var rooms = []string{
	module + "serve/api",      // programs: the /v1 JSON and CSV API
	module + "serve/pages",    // people: the HTML pages
	module + "serve/agent",    // AI agents: the MCP endpoint
	module + "serve/accounts", // people: sign-up and account pages
	module + "serve/oauth",    // agents: the authorization server
}

// storage are the libraries and stages the server never links: it reads
// keyword data only through kw.Index.
var storage = []string{
	"github.com/parquet-go/",
	"github.com/apache/arrow-go/",
	"github.com/cockroachdb/pebble",
	module + "index",
	module + "lake",
}

// goDeps lists pkg and everything it imports, tests excluded.
func goDeps(tb testing.TB, pkg string) []string {
	tb.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		tb.Skip("go tool not found")
	}
	out, err := exec.Command(goTool, "list", "-deps", pkg).CombinedOutput()
	if err != nil {
		tb.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 || deps[len(deps)-1] != pkg {
		tb.Fatalf("go list -deps %s printed an implausible list:\n%s", pkg, out)
	}
	return deps
}

// TestDeps keeps storage libraries out of the server and out of every
// room: serve reaches the index only through kw.Index, so linking Parquet,
// Arrow or Pebble here means a layering mistake (and a bigger,
// slower-starting binary).
func TestDeps(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	for _, pkg := range append([]string{module + "serve", module + "serve/web"}, rooms...) {
		for _, dep := range goDeps(t, pkg) {
			for _, f := range storage {
				if strings.HasPrefix(dep, f) {
					t.Errorf("%s depends on %s", pkg, dep)
				}
			}
		}
	}
}

// TestRoomsStayApart proves that no room imports a sibling room, and that
// serve/web, which every room imports, imports none of them nor serve.
func TestRoomsStayApart(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	for _, pkg := range append([]string{module + "serve/web"}, rooms...) {
		for _, dep := range goDeps(t, pkg) {
			if dep == module+"serve" {
				t.Errorf("%s imports serve: the router imports the rooms, never the other way round", pkg)
			}
			for _, room := range rooms {
				if dep != pkg && (dep == room || strings.HasPrefix(dep, room+"/")) {
					t.Errorf("%s imports the room %s; move what both need to serve/web", pkg, dep)
				}
			}
		}
	}
}
