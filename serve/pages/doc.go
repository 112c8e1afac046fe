// Package pages is the room of kwdata's server for people with a
// browser: the home page (GET /), the keyword and intent pages
// (GET /keyword, GET /intent) with their charts and error pages, the
// keyword explorer (GET /explore), the
// search box's script (GET /suggest.js), and llms.txt, the map of the
// site for language models.
//
// pages renders HTML with the layout of serve/web and counts each view
// as a lookup through web.Core, like the API; it knows nothing of the
// JSON API's handlers, of MCP or of accounts.
package pages
