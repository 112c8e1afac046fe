// Package web holds what every room of kwdata's HTTP server shares, so
// that the rooms (the JSON API, the pages, the MCP endpoint, accounts)
// never import each other: the problem vocabulary (HTTPError, the problem
// codes and the one mapping of error kinds to statuses, Classify, and the
// RFC 9457 document, WriteProblem), request bodies (ReadBody, BodyError),
// the access contract (Access, Ticket, Readier, ClientAddr), keyword and
// country input (ParseKeywordQuery, NormalizeInput, CountryInput), the
// JSON encoding of records, and Core: the index, access tiers, accounts,
// mail and billing behind the lookups every room makes (LookupOne,
// BulkLookup, LookupGroup, NotFound, SendCode) and the answer cache.
//
// web knows no route and no handler: which path answers what is the
// business of the rooms and of the router in serve. Like serve, it reads
// keyword data only through kw.Index and never imports a storage library.
package web
