package serve

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestQuotaHintByPolicy: a spent anonymous allowance is answered with "get
// a free key", a spent registered one with "upgrade to paid", each once.
func TestQuotaHintByPolicy(t *testing.T) {
	daily := http.Header{"Ratelimit-Policy": {`"daily";q=20;w=86400`}}
	monthly := http.Header{"Ratelimit-Policy": {`"monthly";q=500;w=2592000`}}
	tests := []struct {
		name              string
		qe                *QuotaError
		want, wantNot     []string
		pageWant, pageNot []string
	}{
		{name: "anonymous", qe: &QuotaError{RetryAfter: time.Hour, Header: daily},
			want: []string{"POST /v1/register"}, wantNot: []string{"Upgrade"},
			pageWant: []string{"Register for a free API key", "/v1/register"}, pageNot: []string{"Upgrade this key"}},
		{name: "registered", qe: &QuotaError{RetryAfter: time.Hour, Header: monthly},
			want: []string{"Upgrade this API key to the paid tier"}, wantNot: []string{"register"},
			pageWant: []string{"Upgrade this key to the paid tier", "monthly allowance is used up"}, pageNot: []string{"Register for a free", "/v1/register"}},
		{name: "registered, detail from access", qe: &QuotaError{RetryAfter: time.Hour, Header: monthly,
			Detail: "monthly allowance of 500 lookups is used up; upgrade to the paid tier or retry in 1h0m0s"},
			want: []string{"Monthly allowance of 500 lookups is used up; upgrade to the paid tier", "It resets at"}, wantNot: []string{"register", "Upgrade this API key"}},
		{name: "anonymous, detail from access", qe: &QuotaError{RetryAfter: time.Hour, Header: daily,
			Detail: "daily allowance of 20 lookups is used up; register for an API key (POST /v1/register) or retry in 1h0m0s"},
			want: []string{"Daily allowance", "It resets at"}, wantNot: []string{"A free API key"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := newDemoServer(t)
			ds.access.err = tt.qe
			w := mcpPost(t, ds, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"keyword_lookup","arguments":{"keyword":"running shoes"}}}`, nil)
			var resp struct {
				Result toolResult `json:"result"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &resp); err != nil || !resp.Result.IsError || len(resp.Result.Content) != 1 {
				t.Fatalf("answer %s (%v)", w.Body, err)
			}
			text := resp.Result.Content[0].Text
			for _, s := range tt.want {
				if !strings.Contains(text, s) {
					t.Errorf("tool error %q lacks %q", text, s)
				}
			}
			for _, s := range tt.wantNot {
				if strings.Contains(text, s) {
					t.Errorf("tool error %q has %q", text, s)
				}
			}
			if n := strings.Count(text, "/v1/register"); n > 1 {
				t.Errorf("tool error %q repeats the hint", text)
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
