package serve

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestRegister(t *testing.T) {
	tests := []struct {
		name        string
		body        string
		contentType string // "" sends application/json; "-" sends none
		regErr      error
		noRegistrar bool
		wantStatus  int
		wantCode    string
		wantCalls   int
		wantHeader  map[string]string
	}{
		{name: "created", body: `{"email":" ada@example.com "}`, wantStatus: 201, wantCalls: 1,
			wantHeader: map[string]string{"Cache-Control": "no-store", "Content-Type": "application/json"}},
		{name: "taken", body: `{"email":"ada@example.com"}`, regErr: ErrEmailTaken, wantStatus: 409, wantCode: CodeEmailTaken, wantCalls: 1},
		{name: "invalid per registrar", body: `{"email":"ada@localhost"}`, regErr: errors.Join(errors.New("no dot"), ErrInvalidEmail), wantStatus: 400, wantCode: CodeInvalidEmail, wantCalls: 1},
		{name: "no at sign", body: `{"email":"ada"}`, wantStatus: 400, wantCode: CodeInvalidEmail},
		{name: "empty email", body: `{"email":""}`, wantStatus: 400, wantCode: CodeInvalidEmail},
		{name: "too long", body: `{"email":"` + strings.Repeat("a", 250) + `@b.example"}`, wantStatus: 400, wantCode: CodeInvalidEmail},
		{name: "malformed", body: `{"email":`, wantStatus: 400, wantCode: CodeInvalidBody},
		{name: "unknown field", body: `{"email":"a@b.example","tier":"paid"}`, wantStatus: 400, wantCode: CodeInvalidBody},
		{name: "too many", body: `{"email":"ada@example.com"}`, regErr: &TooManyRegistrationsError{RetryAfter: 90*time.Minute + 1},
			wantStatus: 429, wantCode: CodeTooManyRegistrations, wantCalls: 1, wantHeader: map[string]string{"Retry-After": "5401"}},
		{name: "store failure", body: `{"email":"ada@example.com"}`, regErr: errors.New("disk on fire"), wantStatus: 500, wantCode: CodeInternal, wantCalls: 1},
		{name: "body too large", body: `{"email":"` + strings.Repeat("a", 5000) + `"}`, wantStatus: 413, wantCode: CodeBodyTooLarge},
		{name: "not offered", body: `{"email":"ada@example.com"}`, noRegistrar: true, wantStatus: 404, wantCode: CodeNotFound},
		{name: "JSON with a charset", body: `{"email":"ada@example.com"}`, contentType: "application/json; charset=utf-8", wantStatus: 201, wantCalls: 1},
		// Forms and text/plain are what a page of another site can send
		// without a preflight.
		{name: "text/plain", body: `{"email":"ada@example.com"}`, contentType: "text/plain", wantStatus: 415, wantCode: CodeInvalidBody},
		{name: "form", body: `{"email":"ada@example.com"}`, contentType: "application/x-www-form-urlencoded", wantStatus: 415, wantCode: CodeInvalidBody},
		{name: "no Content-Type", body: `{"email":"ada@example.com"}`, contentType: "-", wantStatus: 415, wantCode: CodeInvalidBody},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := newDemoServer(t)
			ds.registrar.err = tt.regErr
			h := http.Handler(ds)
			if tt.noRegistrar {
				h = New(Options{Index: ds.index, Logger: slog.New(slog.DiscardHandler)})
			}
			r := httptest.NewRequest("POST", "/v1/register", strings.NewReader(tt.body))
			r.RemoteAddr = "198.51.100.7:4000"
			switch tt.contentType {
			case "":
				r.Header.Set("Content-Type", "application/json")
			case "-":
			default:
				r.Header.Set("Content-Type", tt.contentType)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", w.Code, tt.wantStatus, w.Body)
			}
			if tt.wantCode != "" {
				checkProblem(t, w, tt.wantCode)
			} else {
				var resp registerResponse
				if err := json.Unmarshal(w.Body.Bytes(), &resp); err != nil || !regexp.MustCompile(`^kw_\w+$`).MatchString(resp.Key) || resp.Tier != "registered" {
					t.Errorf("answer %s (%v)", w.Body, err)
				}
				golden(t, "register_created.json", w.Body.Bytes())
			}
			if strings.Contains(w.Body.String(), "disk on fire") {
				t.Error("the cause reached the client")
			}
			if len(ds.registrar.emails) != tt.wantCalls {
				t.Errorf("%d registrar calls, want %d", len(ds.registrar.emails), tt.wantCalls)
			}
			if tt.wantCalls > 0 && (ds.registrar.emails[0] != strings.TrimSpace(ds.registrar.emails[0]) ||
				ds.registrar.clients[0] != netip.MustParseAddr("198.51.100.7")) {
				t.Errorf("registrar got %q from %v", ds.registrar.emails, ds.registrar.clients)
			}
			for k, v := range tt.wantHeader {
				if got := w.Header().Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
		})
	}
}

func TestCORS(t *testing.T) {
	ds := newDemoServer(t)
	for _, tt := range []struct {
		name, method, target string
		header               http.Header
		wantStatus           int
		wantAllowOrigin      bool
		wantMethods          string
	}{
		{"simple GET", "GET", "/v1/keyword?q=running+shoes", http.Header{"Origin": {"https://agent.example"}}, 200, true, ""},
		{"problem too", "GET", "/v1/keyword", http.Header{"Origin": {"https://agent.example"}}, 400, true, ""},
		{"preflight GET", "OPTIONS", "/v1/keyword", http.Header{"Origin": {"https://agent.example"}, "Access-Control-Request-Method": {"GET"},
			"Access-Control-Request-Headers": {"authorization"}}, 204, true, "GET, HEAD"},
		{"preflight POST", "OPTIONS", "/v1/keywords", http.Header{"Origin": {"https://agent.example"}, "Access-Control-Request-Method": {"POST"}}, 204, true, "POST"},
		{"countries", "GET", "/v1/countries", http.Header{"Origin": {"null"}}, 200, true, ""},
		// Without Origin the fields are there too, so a cache that keeps
		// an answer made for a program can hand it to a browser.
		{"no Origin, same fields", "GET", "/v1/keyword?q=running+shoes", nil, 200, true, ""},
		{"cacheable document without Origin", "GET", "/v1/openapi.json", nil, 200, true, ""},
		{"pages are not shared", "GET", "/", http.Header{"Origin": {"https://agent.example"}}, 200, false, ""},
		{"MCP is not shared", "OPTIONS", "/mcp", http.Header{"Origin": {"https://agent.example"}, "Access-Control-Request-Method": {"POST"}}, 405, false, ""},
		// Registration is not shared: a page could register keys for
		// addresses of its choosing through its visitors' browsers.
		{"registration is not shared", "OPTIONS", "/v1/register", http.Header{"Origin": {"https://agent.example"},
			"Access-Control-Request-Method": {"POST"}, "Access-Control-Request-Headers": {"content-type"}}, 405, false, ""},
		{"registration answers carry no CORS fields", "POST", "/v1/register", http.Header{"Origin": {"https://agent.example"}}, 415, false, ""},
		{"unknown v1 path", "OPTIONS", "/v1/nothing", nil, 404, false, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := do(t, ds, tt.method, tt.target, tt.header)
			if w.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d", w.Code, tt.wantStatus)
			}
			if got := w.Header().Get("Access-Control-Allow-Origin") == "*"; got != tt.wantAllowOrigin {
				t.Errorf("Access-Control-Allow-Origin %q", w.Header().Get("Access-Control-Allow-Origin"))
			}
			if w.Header().Get("Access-Control-Allow-Credentials") != "" {
				t.Error("credentials allowed")
			}
			if !tt.wantAllowOrigin && w.Header().Get("Access-Control-Allow-Methods") != "" {
				t.Errorf("Access-Control-Allow-Methods %q on a route that is not shared", w.Header().Get("Access-Control-Allow-Methods"))
			}
			if tt.wantMethods != "" {
				h := w.Header()
				if h.Get("Access-Control-Allow-Methods") != tt.wantMethods || !strings.Contains(h.Get("Access-Control-Allow-Headers"), "Authorization") ||
					!strings.Contains(h.Get("Access-Control-Allow-Headers"), "X-API-Key") || w.Body.Len() != 0 {
					t.Errorf("preflight answered %v", h)
				}
			} else if tt.wantAllowOrigin && !strings.Contains(w.Header().Get("Access-Control-Expose-Headers"), "RateLimit-Policy") {
				t.Errorf("Expose-Headers %q", w.Header().Get("Access-Control-Expose-Headers"))
			}
		})
	}
	if len(ds.access.admits) != 2 { // the two keyword lookups; never a preflight
		t.Errorf("preflights reached Access: %v", ds.access.admits)
	}
}

func TestLLMsTxt(t *testing.T) {
	ds := newDemoServer(t)
	r := httptest.NewRequest("GET", "/llms.txt", nil)
	r.Host = "kwdata.example"
	w := httptest.NewRecorder()
	ds.ServeHTTP(w, r)
	if w.Code != 200 || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/markdown") {
		t.Fatalf("status %d Content-Type %q", w.Code, w.Header().Get("Content-Type"))
	}
	body := w.Body.String()
	golden(t, "llms.txt", w.Body.Bytes())
	lines := strings.Split(body, "\n")
	if lines[0] != "# kwdata" || lines[1] != "" || !strings.HasPrefix(lines[2], "> ") {
		t.Errorf("llms.txt must open with an H1 and a blockquote:\n%s", body)
	}
	var sections []string
	links := regexp.MustCompile(`(?m)^- \[[^\]]+\]\((http://kwdata\.example/[^)]*)\)`).FindAllStringSubmatch(body, -1)
	for _, l := range lines {
		if strings.HasPrefix(l, "## ") {
			sections = append(sections, l[3:])
		}
		if strings.HasPrefix(l, "# ") && l != lines[0] {
			t.Errorf("a second H1: %q", l)
		}
	}
	if strings.Join(sections, ",") != "API,MCP,Optional" || len(links) < 7 {
		t.Errorf("sections %q, %d links", sections, len(links))
	}
	for _, want := range []string{"20 lookups per UTC day", "500 lookups per UTC month", "4.99 USD", "/v1/openapi.json", "keyword_lookup", "Bearer"} {
		if !strings.Contains(body, want) {
			t.Errorf("llms.txt lacks %q", want)
		}
	}
	// Every linked path answers.
	for _, l := range links {
		u := strings.TrimPrefix(l[1], "http://kwdata.example")
		method := "GET"
		if u == "/mcp" {
			continue // POST only
		}
		if w := do(t, ds, method, u, nil); w.Code != 200 {
			t.Errorf("link %s answers %d", u, w.Code)
		}
	}

	// Without a public URL, links are relative, whatever the Host.
	ts := newTestServer(t)
	r = httptest.NewRequest("GET", "/llms.txt", nil)
	r.Host = "evil)[x](y"
	w = httptest.NewRecorder()
	ts.ServeHTTP(w, r)
	if strings.Contains(w.Body.String(), "evil") || !strings.Contains(w.Body.String(), "(/v1/openapi.json)") {
		t.Errorf("a strange Host reached the links")
	}
}
