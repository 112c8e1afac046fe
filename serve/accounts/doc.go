// Package accounts is the room of kwdata's server for people managing
// their key in a browser: the sign-up pages (GET and POST /register,
// POST /register/verify) and the account page (GET /account and its
// forms: sign in with a key, sign out, rotate the key, subscribe to the
// paid tier or manage the subscription).
//
// accounts renders HTML with the layout of serve/web and reaches sign-up,
// keys and billing only through web.Core (Registrar, Mailer, Billing);
// the JSON endpoints of the same operations belong to serve/api. It knows
// nothing of the keyword pages, the API's handlers or MCP.
package accounts
