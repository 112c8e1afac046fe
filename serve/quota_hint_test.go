package serve

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kwdata/kwdata/serve/internal/servetest"
	"github.com/kwdata/kwdata/serve/web"
)

// TestQuotaWording: a refusal is worded once, by the server, from the
// numbers Access gives: the problem document and the MCP tool error say
// the same sentence (the tool error adds the clock time of the reset), the
// 429 page the same duration; a spent anonymous allowance is answered with
// "get a free key", a spent registered one with "upgrade to paid", once.
// The tool error says what to do in MCP terms (the sign-up tools, the
// account page), never with an HTTP route.
const (
	toolFreeKey = "For 500 lookups a month, ask your user for their email address and call register_request_code, " +
		"then register_verify with the mailed code, to get a free API key. The paid tier is unlimited."
	toolUpgrade = "Your user can upgrade this key to the paid tier (4.99 USD a month, unlimited lookups) on their account page, http://kwdata.example/account."
)

func TestQuotaWording(t *testing.T) {
	tests := []struct {
		name              string
		qe                *QuotaError
		problem           string // the exact detail of the problem document
		toolHint          string // what the tool error says to do
		wantNot           []string
		pageWant, pageNot []string
	}{
		{name: "anonymous", qe: &QuotaError{Policy: "daily", Quota: 20, Requested: 1, RetryAfter: 5*time.Hour + 12*time.Minute},
			problem: "The daily allowance of 20 lookups for this address is used up; it renews in 5h 12m. " +
				"A free API key (POST /v1/register) raises the allowance to 500 lookups a month; the paid tier is unlimited.",
			toolHint: toolFreeKey, wantNot: []string{"Upgrade"},
			pageWant: []string{"Register for a free API key", "/v1/register", "(in 5h 12m)"}, pageNot: []string{"Upgrade this key"}},
		{name: "registered", qe: &QuotaError{Policy: "monthly", Quota: 500, Requested: 1, RetryAfter: 9*24*time.Hour + 90*time.Second},
			problem: "This API key's monthly allowance of 500 lookups is used up; it renews in 9d 1h. " +
				"Upgrade this API key to the paid tier (4.99 USD a month) for unlimited lookups.",
			toolHint: toolUpgrade, wantNot: []string{"register"},
			pageWant: []string{"Upgrade this key to the paid tier", "monthly allowance is used up", "(in 9d 1h)"}, pageNot: []string{"Register for a free", "/v1/register"}},
		{name: "bulk larger than what is left", qe: &QuotaError{Policy: "daily", Quota: 20, Remaining: 3, Requested: 4, RetryAfter: 40 * time.Second},
			problem: "This request needs 4 lookups but the daily allowance of 20 lookups for this address has 3 left; send at most 3 keywords, or wait: it renews in 40s. " +
				"A free API key (POST /v1/register) raises the allowance to 500 lookups a month; the paid tier is unlimited.",
			toolHint: toolFreeKey},
		{name: "no numbers", qe: &QuotaError{RetryAfter: 90 * time.Second},
			problem: "The lookup allowance is used up; it renews in 2m. " +
				"A free API key (POST /v1/register) raises the allowance to 500 lookups a month; the paid tier is unlimited.",
			toolHint: toolFreeKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := newDemoServer(t)
			ds.access.err = tt.qe

			w := do(t, ds, "GET", "/v1/keyword?q=running+shoes", nil)
			var p web.ProblemDoc
			if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil || w.Code != 429 {
				t.Fatalf("answer %d %s (%v)", w.Code, w.Body, err)
			}
			if p.Detail != tt.problem {
				t.Errorf("problem detail\n%q\nwant\n%q", p.Detail, tt.problem)
			}

			w = mcpPost(t, ds, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"keyword_lookup","arguments":{"keyword":"running shoes"}}}`, nil)
			var resp struct {
				Result toolResult `json:"result"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &resp); err != nil || !resp.Result.IsError || len(resp.Result.Content) != 1 {
				t.Fatalf("answer %s (%v)", w.Body, err)
			}
			// The same words, with the clock time of the reset added: the
			// clock stands at 2026-11-22T04:30:00Z.
			reset := servetest.BuiltAt.Add(90*time.Minute + time.Duration(web.RetrySeconds(tt.qe.RetryAfter))*time.Second).Format(time.RFC3339)
			renews, _, _ := strings.Cut(tt.problem, ". ")
			wantTool := renews + " (at " + reset + "). " + tt.toolHint
			if text := resp.Result.Content[0].Text; text != wantTool || strings.Contains(text, "/v1/") {
				t.Errorf("tool error\n%q\nwant\n%q", text, wantTool)
			}
			for _, s := range tt.wantNot {
				if strings.Contains(p.Detail, s) {
					t.Errorf("problem detail %q has %q", p.Detail, s)
				}
			}
			if n := strings.Count(p.Detail, "/v1/register"); n > 1 {
				t.Errorf("problem detail %q repeats the hint", p.Detail)
			}

			if tt.pageWant == nil {
				return
			}
			page := do(t, ds, "GET", "/keyword?q=running+shoes", nil)
			if page.Code != 429 {
				t.Fatalf("page status %d", page.Code)
			}
			body := page.Body.String()
			for _, s := range tt.pageWant {
				if !strings.Contains(body, s) {
					t.Errorf("429 page lacks %q", s)
				}
			}
			for _, s := range tt.pageNot {
				if strings.Contains(body, s) {
					t.Errorf("429 page has %q", s)
				}
			}
		})
	}
}
