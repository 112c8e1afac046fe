package agent

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/kwdata/kwdata/serve/web"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultToolExploreLimit is the page size of keyword_explore when limit
// is not given: smaller than the API's, since a model reads every row.
const DefaultToolExploreLimit = 25

// exploreArgs are the arguments of keyword_explore. Numbers stay
// json.Number so that a CPC bound reaches the parser as the digits the
// model wrote, compared exactly against the stored micros.
type exploreArgs struct {
	Q              *string     `json:"q"`
	Country        string      `json:"country"`
	Mode           string      `json:"mode"`
	Include        []string    `json:"include"`
	Exclude        []string    `json:"exclude"`
	MinVolume      json.Number `json:"min_volume"`
	MaxVolume      json.Number `json:"max_volume"`
	MinCPC         json.Number `json:"min_cpc"`
	MaxCPC         json.Number `json:"max_cpc"`
	MinCompetition json.Number `json:"min_competition"`
	MaxCompetition json.Number `json:"max_competition"`
	MinWords       json.Number `json:"min_words"`
	MaxWords       json.Number `json:"max_words"`
	Intent         string      `json:"intent"`
	Sort           string      `json:"sort"`
	Order          string      `json:"order"`
	Limit          json.Number `json:"limit"`
	Cursor         string      `json:"cursor"`
	Group          string      `json:"group"`
}

// values is a as the URL parameters of GET /v1/explore.
func (a *exploreArgs) values() url.Values {
	v := url.Values{}
	set := func(name, s string) {
		if s != "" {
			v.Set(name, s)
		}
	}
	if a.Q != nil {
		v.Set("q", *a.Q)
	}
	set("country", a.Country)
	set("mode", a.Mode)
	set("include", strings.Join(a.Include, ","))
	set("exclude", strings.Join(a.Exclude, ","))
	set("min_volume", a.MinVolume.String())
	set("max_volume", a.MaxVolume.String())
	set("min_cpc", a.MinCPC.String())
	set("max_cpc", a.MaxCPC.String())
	set("min_competition", a.MinCompetition.String())
	set("max_competition", a.MaxCompetition.String())
	set("min_words", a.MinWords.String())
	set("max_words", a.MaxWords.String())
	set("intent", a.Intent)
	set("sort", a.Sort)
	set("order", a.Order)
	set("limit", a.Limit.String())
	if a.Limit == "" {
		v.Set("limit", strconv.Itoa(DefaultToolExploreLimit))
	}
	set("cursor", a.Cursor)
	set("group", a.Group)
	return v
}

// toolKeywordExplore is the keyword_explore tool: GET /v1/explore as a
// tool, with a page of 25 by default.
func (s *Agent) toolKeywordExplore(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	call, err := toolCall(ctx)
	if err != nil {
		return nil, err
	}
	var a exploreArgs
	if err := decodeArgs(req.Params.Arguments, &a); err != nil {
		return nil, badArgs(err)
	}
	q, err := web.ParseExplore(a.values())
	if err != nil {
		return nil, badArgs(err)
	}
	h := http.Header{}
	ans, err := s.Explore(call.r, q, h)
	call.setHeader(h)
	if err != nil {
		return s.toolFailure(call, err)
	}
	return toolDocument(web.AppendExploreJSON(nil, &ans)), nil
}

// keywordExploreTool describes keyword_explore; its input schema lists
// every parameter of GET /v1/explore.
var keywordExploreTool = &mcp.Tool{
	Name:  "keyword_explore",
	Title: "Keyword explorer",
	Description: "Find the keywords of one country that hold some words, filtered on volume, CPC, competition and word count, " +
		"sorted exactly, a page at a time: the answer has the exact total of matches, one page of keywords with volume, " +
		"CPC (USD), competition (0-1) and intent group, and next_cursor for the next page (null after the last). " +
		"group=intent answers one row per intent group among the matches instead, with members matched, their summed " +
		"volume and the top 3 members. Each keyword (or group) returned counts as one lookup against the allowance; " +
		"the total, the cursor and an empty page are free. When fewer lookups are left than the page holds, the page is " +
		"cut to what is left and says truncated_by_quota: true.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{` +
		`"q":{"type":"string","minLength":1,"description":"One or more words, e.g. \"running shoes\". Case and spacing do not matter."},` +
		`"country":{"type":"string","default":"us","description":"ISO 3166-1 alpha-2 country code, either case."},` +
		`"mode":{"type":"string","enum":["terms","phrase","questions"],"default":"terms","description":"terms: keywords holding every word of q in any order; phrase: the words of q in order and adjacent; questions: terms, and the keyword begins with a question word of the country's language."},` +
		`"include":{"type":"array","items":{"type":"string"},"description":"Keep only keywords holding at least one of these words."},` +
		`"exclude":{"type":"array","items":{"type":"string"},"description":"Drop keywords holding any of these words."},` +
		`"min_volume":{"type":"integer","minimum":0,"description":"Lowest monthly search volume, inclusive."},` +
		`"max_volume":{"type":"integer","minimum":0,"description":"Highest monthly search volume, inclusive."},` +
		`"min_cpc":{"type":"number","minimum":0,"description":"Lowest cost per click in USD (up to six decimals), inclusive, compared exactly."},` +
		`"max_cpc":{"type":"number","minimum":0,"description":"Highest cost per click in USD (up to six decimals), inclusive."},` +
		`"min_competition":{"type":"number","minimum":0,"maximum":1,"description":"Lowest competition, 0 to 1, inclusive."},` +
		`"max_competition":{"type":"number","minimum":0,"maximum":1,"description":"Highest competition, 0 to 1, inclusive."},` +
		`"min_words":{"type":"integer","minimum":0,"description":"Fewest words in the keyword."},` +
		`"max_words":{"type":"integer","minimum":0,"description":"Most words in the keyword."},` +
		`"intent":{"type":"string","description":"Keep only members of the intent group led by this keyword (the intent of a result)."},` +
		`"sort":{"type":"string","enum":["volume","cpc","competition","words","keyword"],"default":"volume","description":"What to sort by; ties go by keyword text, and keywords missing the value come last."},` +
		`"order":{"type":"string","enum":["desc","asc"],"description":"desc by default, asc for sort=keyword."},` +
		`"limit":{"type":"integer","minimum":1,"maximum":1000,"default":25,"description":"Keywords (or groups) per page; each counts as one lookup."},` +
		`"cursor":{"type":"string","description":"next_cursor of the previous answer to the same query, for the next page."},` +
		`"group":{"type":"string","enum":["intent"],"description":"intent: one row per intent group among the matches, by summed volume."}},` +
		`"required":["q"],"additionalProperties":false}`),
	OutputSchema: web.OpenAPISchema("ExploreResponse"),
	Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(false), IdempotentHint: true},
}
