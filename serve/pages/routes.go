package pages

import "github.com/kwdata/kwdata/serve/web"

// Pages answers the HTML pages. It is safe for concurrent use.
type Pages struct {
	*web.Core
}

// New returns the pages room over core.
func New(core *web.Core) *Pages { return &Pages{Core: core} }

// Routes lists the routes of the pages.
func (s *Pages) Routes() []web.Route {
	return []web.Route{
		{Pattern: "GET /llms.txt", Handler: s.handleLLMs},
		{Pattern: "GET /", Handler: s.handleHome},
		{Pattern: "GET /keyword", Handler: s.signedIn(s.handleKeywordPage)},
		{Pattern: "GET /intent", Handler: s.signedIn(s.handleIntentPage)},
		{Pattern: "GET /explore", Handler: s.signedIn(s.handleExplorePage)},
		{Pattern: "GET /suggest.js", Handler: s.handleSuggestScript},
		{Pattern: "GET /favicon.svg", Handler: s.handleFavicon},
		{Pattern: "GET /favicon.ico", Handler: s.handleFavicon},
	}
}
