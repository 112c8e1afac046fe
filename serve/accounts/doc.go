// Package accounts is the room of kwdata's server for people managing
// their account in a browser: the sign-up pages (GET and POST /register,
// POST /register/verify) and the account page (GET /account and its
// forms: sign in by email code or with a pasted key, sign out, create or
// rotate the key, subscribe to the paid tier or manage the subscription).
//
// A signed-in browser holds a server-side session (web.Core.SetSession),
// never an API key. accounts renders HTML with the layout of serve/web and
// reaches sign-up, sessions, keys and billing only through web.Core
// (Registrar, Sessions, Mailer, Billing); the JSON endpoints of the same
// operations belong to serve/api. It knows nothing of the keyword pages,
// the API's handlers or MCP.
package accounts
