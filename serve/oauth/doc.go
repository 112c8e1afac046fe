// Package oauth is kwdata's own OAuth 2.1 authorization server for AI
// agents: the metadata documents, client registration, the authorization
// and token endpoints, and the bearer check of the OAuth MCP endpoint. It
// keeps its clients, codes and tokens in a Store, which the access store
// implements.
package oauth
