package serve

import (
	"net/http"
	"strings"
	"testing"
)

// TestRegisterPages: a person signs up with the page's two forms; a form
// sent from another site's page is refused.
func TestRegisterPages(t *testing.T) {
	ds := newDemoServer(t)
	w := do(t, ds, "GET", "/register", nil)
	if w.Code != 200 || !strings.Contains(w.Body.String(), `action="/register"`) || w.Header().Get("Content-Security-Policy") == "" {
		t.Fatalf("GET /register: %d\n%s", w.Code, w.Body)
	}
	form := func(target, body string, header http.Header) (int, string) {
		t.Helper()
		w := postJSON(t, ds, target, body, "application/x-www-form-urlencoded", header)
		return w.Code, w.Body.String()
	}
	status, page := form("/register", "email=Ada%40Example.com", nil)
	if status != 200 || !strings.Contains(page, `id="sent"`) || !strings.Contains(page, `value="ada@example.com"`) {
		t.Fatalf("POST /register: %d\n%s", status, page)
	}
	if len(ds.mailer.sent) != 1 {
		t.Fatalf("%d mails", len(ds.mailer.sent))
	}
	status, page = form("/register/verify", "email=ada%40example.com&code=424242", http.Header{"Sec-Fetch-Site": {"same-origin"}})
	if status != 200 || !strings.Contains(page, `<pre id="key">kw_live_`) {
		t.Fatalf("POST /register/verify: %d\n%s", status, page)
	}
	for _, tc := range []struct {
		name, target, body string
		header             http.Header
		regErr             error
		status             int
		want               string
	}{
		{"wrong code", "/register/verify", "email=ada%40example.com&code=1", nil, ErrCodeInvalid, 400, "The code is wrong"},
		{"bad address", "/register", "email=ada", nil, nil, 400, "not valid"},
		{"too many", "/register", "email=ada%40example.com", nil, &TooManyRegistrationsError{Limit: 3}, 429, "3 sign-up codes"},
		{"another site", "/register", "email=ada%40example.com", http.Header{"Sec-Fetch-Site": {"cross-site"}}, nil, 403, "this site"},
		{"another origin", "/register/verify", "email=ada%40example.com&code=424242", http.Header{"Origin": {"https://evil.example"}}, nil, 403, "this site"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds.registrar.err = tc.regErr
			status, page := form(tc.target, tc.body, tc.header)
			if status != tc.status || !strings.Contains(page, tc.want) || !strings.Contains(page, `id="error"`) {
				t.Errorf("%d, want %d with %q:\n%s", status, tc.status, tc.want, page)
			}
		})
	}
	ds.registrar.err = nil
	if w := postJSON(t, ds, "/register", `{"email": "ada@example.com"}`, "", nil); w.Code != 415 {
		t.Errorf("JSON to the page form: %d", w.Code)
	}
}
