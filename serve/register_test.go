package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kwdata/kwdata/serve/web"
)

func TestRegister(t *testing.T) {
	tests := []struct {
		name        string
		body        string
		contentType string // "" sends application/json; "-" sends none
		regErr      error
		mailErr     error
		noRegistrar bool
		wantStatus  int
		wantCode    string
		wantCalls   int
		wantMails   int
		wantHeader  map[string]string
	}{
		{name: "code sent", body: `{"email":" ada@example.com "}`, wantStatus: 202, wantCalls: 1, wantMails: 1,
			wantHeader: map[string]string{"Cache-Control": "private, no-store", "Content-Type": "application/json"}},
		{name: "invalid per registrar", body: `{"email":"ada@localhost"}`, regErr: errors.Join(errors.New("no dot"), ErrInvalidEmail), wantStatus: 400, wantCode: CodeInvalidEmail, wantCalls: 1},
		{name: "no at sign", body: `{"email":"ada"}`, wantStatus: 400, wantCode: CodeInvalidEmail},
		{name: "empty email", body: `{"email":""}`, wantStatus: 400, wantCode: CodeInvalidEmail},
		{name: "too long", body: `{"email":"` + strings.Repeat("a", 250) + `@b.example"}`, wantStatus: 400, wantCode: CodeInvalidEmail},
		{name: "malformed", body: `{"email":`, wantStatus: 400, wantCode: CodeInvalidBody},
		{name: "unknown field", body: `{"email":"a@b.example","tier":"paid"}`, wantStatus: 400, wantCode: CodeInvalidBody},
		{name: "too many", body: `{"email":"ada@example.com"}`, regErr: &TooManyRegistrationsError{RetryAfter: 90*time.Minute + 1},
			wantStatus: 429, wantCode: CodeTooManyRegistrations, wantCalls: 1, wantHeader: map[string]string{"Retry-After": "5401"}},
		{name: "store failure", body: `{"email":"ada@example.com"}`, regErr: errors.New("disk on fire"), wantStatus: 500, wantCode: CodeInternal, wantCalls: 1},
		{name: "mail failure", body: `{"email":"ada@example.com"}`, mailErr: errors.New("disk on fire"), wantStatus: 503, wantCode: CodeMailUnavailable, wantCalls: 1,
			wantHeader: map[string]string{"Retry-After": "60"}},
		{name: "body too large", body: `{"email":"` + strings.Repeat("a", 5000) + `"}`, wantStatus: 413, wantCode: CodeBodyTooLarge},
		{name: "not offered", body: `{"email":"ada@example.com"}`, noRegistrar: true, wantStatus: 404, wantCode: CodeNotFound},
		{name: "JSON with a charset", body: `{"email":"ada@example.com"}`, contentType: "application/json; charset=utf-8", wantStatus: 202, wantCalls: 1, wantMails: 1},
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
			ds.mailer.err = tt.mailErr
			h := http.Handler(ds)
			if tt.noRegistrar {
				h = New(Options{Index: ds.index, Logger: slog.New(slog.DiscardHandler)})
			}
			w := postJSON(t, h, "/v1/register", tt.body, tt.contentType, nil)
			if w.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", w.Code, tt.wantStatus, w.Body)
			}
			if tt.wantCode != "" {
				checkProblem(t, w, tt.wantCode)
			} else {
				var resp web.CodeSentResponse
				if err := json.Unmarshal(w.Body.Bytes(), &resp); err != nil || resp.Status != "code_sent" || resp.Email != "ada@example.com" || resp.ExpiresIn != 900 {
					t.Errorf("answer %s (%v)", w.Body, err)
				}
				golden(t, "register_code_sent.json", w.Body.Bytes())
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
			if len(ds.mailer.sent) != tt.wantMails {
				t.Fatalf("%d mails sent, want %d", len(ds.mailer.sent), tt.wantMails)
			}
			if tt.wantMails > 0 {
				m := ds.mailer.sent[0]
				if m.To != "ada@example.com" || !strings.Contains(m.Subject, "424242") || !strings.Contains(m.Text, "424242") ||
					!strings.Contains(m.Text, "http://kwdata.example/register") || !strings.Contains(m.Text, "15 minutes") {
					t.Errorf("mail %+v", m)
				}
			}
			for k, v := range tt.wantHeader {
				if got := w.Header().Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
		})
	}
}

// TestRegisterSameAnswer: a mailbox that holds a key gets the same answer
// as a new one; only the mail differs.
func TestRegisterSameAnswer(t *testing.T) {
	var bodies []string
	var texts []string
	for _, replaces := range []bool{false, true} {
		ds := newDemoServer(t)
		ds.registrar.replaces = replaces
		w := postJSON(t, ds, "/v1/register", `{"email": "ada@example.com"}`, "", nil)
		bodies = append(bodies, fmt.Sprint(w.Code, w.Header(), w.Body))
		texts = append(texts, ds.mailer.sent[0].Text)
	}
	if bodies[0] != bodies[1] {
		t.Errorf("the answers differ:\n%s\n%s", bodies[0], bodies[1])
	}
	if !strings.Contains(texts[1], "stops working") || strings.Contains(texts[0], "stops working") {
		t.Errorf("the mails do not say what the code does:\n%s\n%s", texts[0], texts[1])
	}
}

func TestRegisterVerify(t *testing.T) {
	for _, tt := range []struct {
		name       string
		body       string
		regErr     error
		wantStatus int
		wantCode   string
	}{
		{"created", `{"email": "ada@example.com", "code": " 424242 "}`, nil, 201, ""},
		{"wrong code", `{"email": "ada@example.com", "code": "111111"}`, ErrCodeInvalid, 400, CodeInvalidCode},
		{"empty code", `{"email": "ada@example.com", "code": ""}`, nil, 400, CodeInvalidCode},
		{"huge code", `{"email": "ada@example.com", "code": "` + strings.Repeat("1", 17) + `"}`, nil, 400, CodeInvalidCode},
		{"no email", `{"code": "424242"}`, nil, 400, CodeInvalidEmail},
		{"unknown field", `{"email": "ada@example.com", "code": "424242", "tier": "paid"}`, nil, 400, CodeInvalidBody},
		{"store failure", `{"email": "ada@example.com", "code": "424242"}`, errors.New("disk on fire"), 500, CodeInternal},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ds := newDemoServer(t)
			ds.registrar.err = tt.regErr
			w := postJSON(t, ds, "/v1/register/verify", tt.body, "", nil)
			if w.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", w.Code, tt.wantStatus, w.Body)
			}
			if tt.wantCode != "" {
				checkProblem(t, w, tt.wantCode)
				return
			}
			var resp web.RegisterResponse
			if err := json.Unmarshal(w.Body.Bytes(), &resp); err != nil || !regexp.MustCompile(`^kw_\w+$`).MatchString(resp.Key) || resp.Tier != "registered" {
				t.Errorf("answer %s (%v)", w.Body, err)
			}
			if w.Header().Get("Cache-Control") != "private, no-store" || ds.registrar.codes[0] != "424242" {
				t.Errorf("Cache-Control %q, code passed %q", w.Header().Get("Cache-Control"), ds.registrar.codes)
			}
		})
	}
}

func TestRotate(t *testing.T) {
	for _, tt := range []struct {
		name       string
		header     http.Header
		regErr     error
		wantStatus int
		wantKey    string // the key passed to the Registrar
	}{
		{"bearer", http.Header{"Authorization": {"Bearer kwd_old"}}, nil, 201, "kwd_old"},
		{"x-api-key", http.Header{"X-Api-Key": {"kwd_old"}}, nil, 201, "kwd_old"},
		{"no key", nil, nil, 401, ""},
		{"basic auth", http.Header{"Authorization": {"Basic a3dkOg=="}}, nil, 401, ""},
		{"unknown key", http.Header{"Authorization": {"Bearer kwd_old"}}, ErrInvalidKey, 401, "kwd_old"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ds := newDemoServer(t)
			ds.registrar.err = tt.regErr
			w := postJSON(t, ds, "/v1/keys/rotate", "", "-", tt.header)
			if w.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", w.Code, tt.wantStatus, w.Body)
			}
			if tt.wantStatus == 401 {
				checkProblem(t, w, CodeInvalidKey)
			}
			if tt.wantKey != "" && (len(ds.registrar.rotated) != 1 || ds.registrar.rotated[0] != tt.wantKey) {
				t.Errorf("rotated %q, want %q", ds.registrar.rotated, tt.wantKey)
			}
			if tt.wantKey == "" && len(ds.registrar.rotated) != 0 {
				t.Errorf("rotated %q without a key", ds.registrar.rotated)
			}
		})
	}
}

// postJSON sends a POST from 198.51.100.7 with body as JSON ("" content
// type) or as contentType ("-" for none).
func postJSON(tb testing.TB, h http.Handler, target, body, contentType string, header http.Header) *httptest.ResponseRecorder {
	tb.Helper()
	r := httptest.NewRequest("POST", target, strings.NewReader(body))
	r.RemoteAddr = "198.51.100.7:4000"
	switch contentType {
	case "":
		r.Header.Set("Content-Type", "application/json")
	case "-":
	default:
		r.Header.Set("Content-Type", contentType)
	}
	for k, v := range header {
		r.Header[k] = v
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
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
		if u == "/mcp" || u == "/mcp/oauth" {
			continue // POST only; the sign-in endpoint needs a token (TestMCPOAuthRequiresToken)
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
