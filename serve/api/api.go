// Package api is the room of kwdata's server for programs: the JSON and
// CSV API under /v1 (GET /v1/keyword, POST /v1/keywords, GET /v1/intent,
// GET /v1/explore, GET /v1/suggest, GET /v1/countries), its OpenAPI
// document (GET /v1/openapi.json), sign-up and key rotation by JSON
// (POST /v1/register, /v1/register/verify, /v1/keys/rotate) and the
// billing endpoints (POST /v1/billing/*, the Stripe webhook among them).
//
// api owns the shape of these answers: the keyword answer cache's use,
// CSV downloads, the suggestion rate limit. It knows nothing of HTML
// pages or of MCP; the router in serve mounts its Routes and renders
// their errors as problem documents.
package api

import (
	"github.com/kwdata/kwdata/serve/web"
)

// API answers the /v1 routes. It is safe for concurrent use.
type API struct {
	*web.Core
	suggestLimit *rateLimiter // GET /v1/suggest, per client
}

// New returns the API room over core.
func New(core *web.Core) *API {
	return &API{Core: core, suggestLimit: newRateLimiter(SuggestRate, core.Now)}
}

// Routes lists the routes of the API with their handlers.
func (s *API) Routes() []web.Route {
	return []web.Route{
		{Pattern: "GET /v1/keyword", Handler: s.handleKeyword, Private: true},
		{Pattern: "GET /v1/intent", Handler: s.handleIntent, Private: true},
		{Pattern: "GET /v1/explore", Handler: s.handleExplore, Private: true},
		{Pattern: "GET /v1/suggest", Handler: s.handleSuggest},
		{Pattern: "GET /v1/countries", Handler: s.handleCountries},
		{Pattern: "POST /v1/keywords", Handler: s.handleBulk, Private: true},
		{Pattern: "GET /v1/openapi.json", Handler: s.handleOpenAPI},
		{Pattern: "POST /v1/register", Handler: s.handleRegister, Private: true},
		{Pattern: "POST /v1/register/verify", Handler: s.handleRegisterVerify, Private: true},
		{Pattern: "POST /v1/keys/rotate", Handler: s.handleRotate, Private: true},
		{Pattern: "POST /v1/billing/checkout", Handler: s.handleCheckout, Private: true},
		{Pattern: "POST /v1/billing/portal", Handler: s.handlePortal, Private: true},
		{Pattern: "POST /v1/billing/webhook", Handler: s.handleWebhook, Private: true},
	}
}
