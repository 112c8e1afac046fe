// Package agent is the room of kwdata's server for AI agents: the MCP
// endpoint (POST /mcp, and POST /mcp/oauth for a request the router has
// signed in as an account), built on the official Go SDK, with its tools
// (keyword_lookup, keyword_lookup_bulk, intent_group and sign-up by
// email), the Origin rule that guards it against DNS rebinding, and the
// bounds on what one request may cost. Tools count lookups through the
// same web.Core as the JSON API and return the very documents it returns.
//
// agent knows nothing of routes other than its own, of the pages or of
// the JSON API's handlers; the router in serve mounts it and renders its
// errors.
package agent

import (
	"net/http"

	"github.com/kwdata/kwdata/serve/web"
)

// Agent answers POST /mcp. It is safe for concurrent use.
type Agent struct {
	*web.Core
	origins map[string]bool // web.CanonicalOrigin of the allowed web origins
	signIn  string          // URL of the sign-in endpoint POST /mcp/oauth; empty while agents cannot sign in
	mcp     *mcpEndpoint    // the SDK server behind POST /mcp
}

// New returns the MCP room over core. Pages of the origins (each already
// web.CanonicalOrigin) may call it besides pages on a loopback host.
// signIn is the absolute URL of the sign-in endpoint (POST /mcp/oauth),
// which the texts for agents name, or "" when agents cannot sign in.
func New(core *web.Core, origins map[string]bool, signIn string) *Agent {
	s := &Agent{Core: core, origins: origins, signIn: signIn}
	s.mcp = s.newMCPEndpoint()
	return s
}

// Routes lists the route of the MCP endpoint.
func (s *Agent) Routes() []web.Route {
	return []web.Route{{Pattern: "POST /mcp", Handler: s.handleMCP, Private: true}}
}

// ServeMCP answers one POST of an MCP endpoint: POST /mcp, and POST
// /mcp/oauth once the router has checked the request's access token and
// put its account in the context (web.WithAccount), on which every tool
// call then counts.
func (s *Agent) ServeMCP(w http.ResponseWriter, r *http.Request) error { return s.handleMCP(w, r) }

// Slots is how many POST /mcp requests may be inside the SDK at once.
func (s *Agent) Slots() int { return cap(s.mcp.slots) }

// Waiting is how many POST /mcp requests wait for a slot; tests poll it.
func (s *Agent) Waiting() int64 { return s.mcp.waiting.Load() }

// SetSlots changes Slots; benchmarks use it to measure the server
// without the bound. Call it before serving.
func (s *Agent) SetSlots(n int) { s.mcp.slots = make(chan struct{}, n) }
