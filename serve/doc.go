// Package serve owns kwdata's HTTP server (docs/API.md is its
// reference): New builds the one router that mounts every room, the
// middleware around each request (CORS for /v1/*, private caching,
// metrics, the access log, panics turned into 500s), the one adapter that
// renders handler errors as RFC 9457 problem documents and logs their
// cause, health and readiness probes, GET /metrics and
// GET /problems/{code}, and the graceful listener loop (Serve).
//
// Each audience has a room of its own, none importing another
// (deps_test.go enforces it):
//
//   - serve/api: programs, the /v1 JSON and CSV API, sign-up, keys and
//     billing by JSON;
//   - serve/pages: people, the HTML pages, suggest.js and llms.txt;
//   - serve/agent: AI agents, the MCP endpoint POST /mcp, and POST
//     /mcp/oauth for agents signed in as an account (the router checks
//     the access token, oauth.go);
//   - serve/accounts: people, the sign-up and account pages;
//   - serve/oauth: agents, the authorization server.
//
// What they share lives below them in serve/web: the problem codes and
// the one mapping of error kinds to statuses, body reading, the Access
// contract, keyword input, record encoding, the page layout, and web.Core,
// the index and access tiers behind every lookup. serve re-exports the
// names its callers have always used (names.go).
//
// serve reads keyword data only through kw.Index, so neither it nor a
// room imports Parquet, Arrow, Pebble, index or lake; the kwdata binary,
// which wires every stage, links them all. Access tiers plug in through
// the Access interface (serve/access implements it with Pebble or Redis
// for its counters) without changing any handler, and accounts, mail and
// payments through Registrar, Mailer and Billing.
//
// Decisions of the API's shape:
//
//   - Problem "type" is the relative URI "/problems/<code>" (RFC 9457 §3.1.1
//     resolves it against the request URL); GET /problems/<code> answers a
//     short plain-text description, so the URI dereferences on every host.
//   - "volume_range" appears, right after "volume", only when the record has
//     a range (planner exports such as "1K – 10K"); otherwise it is absent.
//   - "cpc" and "competition" are JSON numbers in their shortest form:
//     1.2 rather than 1.20, 0 for zero, exactly what encoding/json prints.
//   - An empty country parameter means the default, "us".
//   - GET routes also answer HEAD.
package serve
