// Package serve owns kwdata's HTTP interface (docs/API.md is its
// reference): routing, the
// JSON answers of GET /v1/keyword, POST /v1/keywords and GET /v1/countries,
// sign-up by email, key rotation and billing (POST /v1/register,
// /v1/register/verify, /v1/keys/rotate, /v1/billing/*), the HTML pages
// (/, /keyword, /register, /account), the agent interfaces
// (/v1/openapi.json, /llms.txt, the MCP endpoint POST /mcp), CORS for
// /v1/*, RFC 9457 problem documents, health and readiness probes,
// Prometheus metrics, the client address behind trusted proxies, and a
// graceful listener loop.
//
// serve reads keyword data only through kw.Index, so this package never
// imports Parquet, Arrow, Pebble, index or lake (deps_test.go enforces
// it); the kwdata binary, which wires every stage, links them all. Access
// tiers plug in through the Access interface (serve/access implements it
// with Pebble for its counters) without changing any handler, and
// accounts, mail and payments through Registrar, Mailer and Billing.
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
