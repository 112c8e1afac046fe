package accounts

import (
	"strings"
	"testing"

	"github.com/kwdata/kwdata/serve/web"
)

// TestRoutesArePrivate: every answer of the account pages shows or sets
// a key, so a shared cache must never keep one; and the room answers only
// its own paths.
func TestRoutesArePrivate(t *testing.T) {
	seen := map[string]bool{}
	for _, rt := range New(&web.Core{}).Routes() {
		if !rt.Private {
			t.Errorf("%s is not private; its answers show or set a key", rt.Pattern)
		}
		if seen[rt.Pattern] {
			t.Errorf("%s is listed twice", rt.Pattern)
		}
		seen[rt.Pattern] = true
		_, path, _ := strings.Cut(rt.Pattern, " ")
		if !strings.HasPrefix(path, "/register") && !strings.HasPrefix(path, "/account") {
			t.Errorf("%s is outside the room's paths /register and /account", rt.Pattern)
		}
	}
	if len(seen) == 0 {
		t.Fatal("the room lists no routes")
	}
}

// TestTemplatesParse: both pages of the room parse with the shared layout.
func TestTemplatesParse(t *testing.T) {
	for _, name := range []string{"register", "account"} {
		if pageTemplates[name] == nil || pageTemplates[name].Lookup("content") == nil {
			t.Errorf("page %s has no content template", name)
		}
	}
}
