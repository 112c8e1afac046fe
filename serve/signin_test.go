package serve_test

// Signing in by email code, against the real access store: the session
// cookie, sign-out, the forms' origin check, the next parameter, and page
// views counted on the signed-in account.

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kwdata/kwdata/internal/testservers"
	"github.com/kwdata/kwdata/serve"
	"github.com/kwdata/kwdata/serve/access"
	"github.com/kwdata/kwdata/serve/internal/servetest"
	"github.com/kwdata/kwdata/serve/mail"
	"github.com/kwdata/kwdata/serve/web"
)

// mailbox keeps what the server mails.
type mailbox struct {
	mu   sync.Mutex
	sent []serve.Mail
}

func (m *mailbox) SendMail(ctx context.Context, mail serve.Mail) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sent = append(m.sent, mail)
	return nil
}

var mailCode = regexp.MustCompile(`code is (\d{8})`)

// code returns the code of the last mail to to.
func (m *mailbox) code(tb testing.TB, to string) string {
	tb.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := len(m.sent) - 1; i >= 0; i-- {
		if m.sent[i].To == to {
			if c := mailCode.FindStringSubmatch(m.sent[i].Text); c != nil {
				return c[1]
			}
		}
	}
	tb.Fatalf("no code mailed to %s", to)
	return ""
}

// signinEnv is a server over the demo index with a real access store.
type signinEnv struct {
	srv    *serve.Server
	store  *access.Store
	mail   *mailbox
	cookie string // the session cookie's name
}

func newSigninEnv(tb testing.TB, publicURL string, mailer serve.Mailer) *signinEnv {
	tb.Helper()
	st, err := access.Open(access.Options{Dir: tb.TempDir(), FlushInterval: time.Hour,
		RegistrationsPerAddressPerDay: 50, SigninsPerAddressPerDay: 50})
	if err != nil {
		tb.Fatalf("cannot open the access store: %v", err)
	}
	tb.Cleanup(func() { st.Close() })
	env := &signinEnv{store: st, mail: &mailbox{}, cookie: web.SessionCookie(publicURL)}
	if mailer == nil {
		mailer = env.mail
	}
	a := st.ForServer()
	env.srv = serve.New(serve.Options{
		Index:     servetest.NewDemoIndex(tb),
		Logger:    slog.New(slog.DiscardHandler),
		Access:    a,
		Registrar: a,
		Sessions:  a,
		Mailer:    mailer,
		PublicURL: publicURL,
	})
	return env
}

// send sends a request with the session cookie sess (if any) and header.
func (env *signinEnv) send(tb testing.TB, method, target, form, sess string, header http.Header) *httptest.ResponseRecorder {
	tb.Helper()
	var r *http.Request
	if form != "" || method == "POST" {
		r = httptest.NewRequest(method, target, strings.NewReader(form))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	} else {
		r = httptest.NewRequest(method, target, nil)
	}
	for k, v := range header {
		r.Header[k] = v
	}
	if sess != "" {
		r.AddCookie(&http.Cookie{Name: env.cookie, Value: sess})
	}
	w := httptest.NewRecorder()
	env.srv.ServeHTTP(w, r)
	return w
}

// sessionCookie returns the session cookie w sets, or nil.
func (env *signinEnv) sessionCookie(w *httptest.ResponseRecorder) *http.Cookie {
	for _, c := range w.Result().Cookies() {
		if c.Name == env.cookie {
			return c
		}
	}
	return nil
}

// register signs email up through the pages and returns its key.
func (env *signinEnv) register(tb testing.TB, email string) string {
	tb.Helper()
	if w := env.send(tb, "POST", "/register", "email="+url.QueryEscape(email), "", nil); w.Code != 200 {
		tb.Fatalf("POST /register: %d\n%s", w.Code, w.Body)
	}
	w := env.send(tb, "POST", "/register/verify", "email="+url.QueryEscape(email)+"&code="+env.mail.code(tb, email), "", nil)
	m := regexp.MustCompile(`<pre id="key">(kwd_[^<]+)</pre>`).FindStringSubmatch(w.Body.String())
	if w.Code != 200 || m == nil {
		tb.Fatalf("POST /register/verify: %d\n%s", w.Code, w.Body)
	}
	return m[1]
}

// signin signs email in through the account page's forms, with next, and
// returns the answer of the code form.
func (env *signinEnv) signin(tb testing.TB, email, next string) *httptest.ResponseRecorder {
	tb.Helper()
	w := env.send(tb, "POST", "/account/signin", "email="+url.QueryEscape(email)+"&next="+url.QueryEscape(next), "", nil)
	if w.Code != 200 || !strings.Contains(w.Body.String(), `action="/account/signin/verify"`) {
		tb.Fatalf("POST /account/signin: %d\n%s", w.Code, w.Body)
	}
	if strings.HasPrefix(next, "/mcp/") && !strings.Contains(w.Body.String(), `name="next"`) {
		tb.Errorf("the code form drops next:\n%s", w.Body)
	}
	return env.send(tb, "POST", "/account/signin/verify",
		"email="+url.QueryEscape(email)+"&code="+env.mail.code(tb, email)+"&next="+url.QueryEscape(next), "", nil)
}

// session signs email in and returns the session id.
func (env *signinEnv) session(tb testing.TB, email string) string {
	tb.Helper()
	w := env.signin(tb, email, "")
	c := env.sessionCookie(w)
	if w.Code != http.StatusSeeOther || c == nil || c.Value == "" {
		tb.Fatalf("sign-in: %d, cookies %q\n%s", w.Code, w.Header().Values("Set-Cookie"), w.Body)
	}
	return c.Value
}

// TestSigninKeepsKey: signing in never changes the account's API key; the
// key pasted before still answers.
func TestSigninKeepsKey(t *testing.T) {
	env := newSigninEnv(t, "http://kwdata.example", nil)
	key := env.register(t, "ada@example.com")
	sess := env.session(t, "ada@example.com")
	if sess == key || strings.Contains(sess, key) {
		t.Fatal("the session cookie holds the API key")
	}
	if w := env.send(t, "GET", "/v1/keyword?q=running+shoes&country=us", "", "", http.Header{"Authorization": {"Bearer " + key}}); w.Code != 200 {
		t.Errorf("the key after sign-in: %d\n%s", w.Code, w.Body)
	}
	w := env.send(t, "GET", "/account", "", sess, nil)
	if w.Code != 200 || !strings.Contains(w.Body.String(), `id="key-id"`) || strings.Contains(w.Body.String(), key) {
		t.Errorf("GET /account signed in: %d\n%s", w.Code, w.Body)
	}
	// A new mailbox gets a registered account without a key shown.
	nsess := env.session(t, "grace@example.com")
	w = env.send(t, "GET", "/account", "", nsess, nil)
	if w.Code != 200 || !strings.Contains(w.Body.String(), `id="tier">registered`) || !strings.Contains(w.Body.String(), `id="rotate"`) {
		t.Errorf("GET /account of a new mailbox: %d\n%s", w.Code, w.Body)
	}
	// Creating its key shows it once; it answers the API.
	w = env.send(t, "POST", "/account/rotate", "", nsess, nil)
	m := regexp.MustCompile(`<pre id="key">(kwd_[^<]+)</pre>`).FindStringSubmatch(w.Body.String())
	if w.Code != 200 || m == nil {
		t.Fatalf("POST /account/rotate: %d\n%s", w.Code, w.Body)
	}
	if w := env.send(t, "GET", "/v1/keyword?q=running+shoes&country=us", "", "", http.Header{"Authorization": {"Bearer " + m[1]}}); w.Code != 200 {
		t.Errorf("the created key: %d\n%s", w.Code, w.Body)
	}
}

// TestSessionCookie: the cookie is HttpOnly, SameSite=Lax, Path=/ and
// lasts 30 days; on https it is a Secure __Host- cookie, on http a plain
// one without Secure.
func TestSessionCookie(t *testing.T) {
	for _, tc := range []struct {
		publicURL, name string
		secure          bool
	}{
		{"https://kwdata.example", "__Host-kwdata_session", true},
		{"http://kwdata.example", "kwdata_session", false},
	} {
		t.Run(tc.publicURL, func(t *testing.T) {
			env := newSigninEnv(t, tc.publicURL, nil)
			w := env.signin(t, "ada@example.com", "")
			c := env.sessionCookie(w)
			if c == nil || c.Name != tc.name {
				t.Fatalf("cookies %q, want %s", w.Header().Values("Set-Cookie"), tc.name)
			}
			if !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" || c.Secure != tc.secure || c.MaxAge != 30*24*3600 || c.Domain != "" {
				t.Errorf("cookie %s, want HttpOnly, SameSite=Lax, Path=/, Secure %v, Max-Age 30 days, no Domain", w.Header().Get("Set-Cookie"), tc.secure)
			}
			if len(c.Value) < 20 {
				t.Errorf("session id %q is short", c.Value)
			}
		})
	}
}

// TestSignoutEndsSession: signing out ends the session on the server, so
// the old cookie replayed is signed out: the account page shows the
// sign-in form and page views count anonymously.
func TestSignoutEndsSession(t *testing.T) {
	env := newSigninEnv(t, "http://kwdata.example", nil)
	env.register(t, "ada@example.com")
	sess := env.session(t, "ada@example.com")
	w := env.send(t, "POST", "/account/logout", "", sess, nil)
	if c := env.sessionCookie(w); w.Code != http.StatusSeeOther || c == nil || c.MaxAge >= 0 {
		t.Fatalf("POST /account/logout: %d, cookies %q", w.Code, w.Header().Values("Set-Cookie"))
	}
	w = env.send(t, "GET", "/account", "", sess, nil)
	if w.Code != 200 || !strings.Contains(w.Body.String(), `action="/account/signin"`) || strings.Contains(w.Body.String(), `id="key-id"`) {
		t.Errorf("GET /account with the ended session: %d\n%s", w.Code, w.Body)
	}
	w = env.send(t, "GET", "/keyword?q=running+shoes&country=us", "", sess, nil)
	if w.Code != 200 || !strings.Contains(w.Header().Get("RateLimit-Policy"), `"daily"`) {
		t.Errorf("a page view with the ended session: %d, RateLimit-Policy %q, want the anonymous daily one", w.Code, w.Header().Get("RateLimit-Policy"))
	}
}

// TestAccountFormsRefuseOtherSites: every form of the account page sent
// from another site is refused and changes nothing; a GET (a link from
// any site carries the Lax cookie) never signs in or out.
func TestAccountFormsRefuseOtherSites(t *testing.T) {
	env := newSigninEnv(t, "http://kwdata.example", nil)
	key := env.register(t, "ada@example.com")
	sess := env.session(t, "ada@example.com")
	env.send(t, "POST", "/account/signin", "email=ada%40example.com", "", nil)
	code := env.mail.code(t, "ada@example.com")
	forms := map[string]string{
		"/account/signin":        "email=ada%40example.com",
		"/account/signin/verify": "email=ada%40example.com&code=" + code,
		"/account/login":         "key=" + key,
		"/account/logout":        "",
		"/account/rotate":        "",
		"/account/subscribe":     "",
		"/account/manage":        "",
	}
	for path, form := range forms {
		for _, h := range []http.Header{{"Origin": {"https://evil.example"}}, {"Sec-Fetch-Site": {"cross-site"}}} {
			w := env.send(t, "POST", path, form, sess, h)
			if w.Code != http.StatusForbidden || env.sessionCookie(w) != nil {
				t.Errorf("POST %s with %v: %d, cookies %q, want 403 and none", path, h, w.Code, w.Header().Values("Set-Cookie"))
			}
		}
		w := env.send(t, "GET", path+"?"+form, "", sess, nil)
		if env.sessionCookie(w) != nil || w.Code == http.StatusSeeOther {
			t.Errorf("GET %s: %d, cookies %q; a link must change nothing", path, w.Code, w.Header().Values("Set-Cookie"))
		}
	}
	if w := env.send(t, "GET", "/account", "", sess, nil); !strings.Contains(w.Body.String(), `id="key-id"`) {
		t.Errorf("the session ended after refused forms:\n%s", w.Body)
	}
	if w := env.send(t, "GET", "/v1/keyword?q=running+shoes&country=us", "", "", http.Header{"Authorization": {"Bearer " + key}}); w.Code != 200 {
		t.Errorf("the key changed after refused forms: %d", w.Code)
	}
	// The code was not used up by the refused POSTs.
	w := env.send(t, "POST", "/account/signin/verify", "email=ada%40example.com&code="+code, "", nil)
	if w.Code != http.StatusSeeOther {
		t.Errorf("the code after refused forms: %d\n%s", w.Code, w.Body)
	}
}

// TestSigninNext: after the code the browser lands on next when it is a
// path of this site, else on /account.
func TestSigninNext(t *testing.T) {
	env := newSigninEnv(t, "http://kwdata.example", nil)
	i := 0
	for next, want := range map[string]string{
		"":                                     "/account",
		"/mcp/oauth/authorize?client_id=a&x=1": "/mcp/oauth/authorize?client_id=a&x=1",
		"https://evil.example":                 "/account",
		"//evil.example":                       "/account",
		`/\evil.example`:                       "/account",
		"/\t/evil.example":                     "/account",
		"javascript:alert(1)":                  "/account",
		"evil.example":                         "/account",
	} {
		i++ // a mailbox is sent a few codes a day
		w := env.signin(t, fmt.Sprintf("ada%d@example.com", i), next)
		if w.Code != http.StatusSeeOther || w.Header().Get("Location") != want {
			t.Errorf("next %q: %d to %q, want 303 to %q", next, w.Code, w.Header().Get("Location"), want)
		}
	}
	w := env.send(t, "GET", "/account?next="+url.QueryEscape("/mcp/oauth/authorize?client_id=a"), "", "", nil)
	if !strings.Contains(w.Body.String(), `name="next" value="/mcp/oauth/authorize?client_id=a"`) {
		t.Errorf("the sign-in form drops next:\n%s", w.Body)
	}
	w = env.send(t, "GET", "/account?next="+url.QueryEscape("//evil.example"), "", "", nil)
	if strings.Contains(w.Body.String(), "evil.example") {
		t.Errorf("the sign-in form carries a next of another site:\n%s", w.Body)
	}
}

// TestSignedInPageViewsCount: page views of a signed-in registered
// account count on its month exactly, as the account page and the API's
// RateLimit say; a paid account's are unlimited past the anonymous 20.
func TestSignedInPageViewsCount(t *testing.T) {
	env := newSigninEnv(t, "http://kwdata.example", nil)
	key := env.register(t, "ada@example.com")
	sess := env.session(t, "ada@example.com")
	const n = 7
	for i := range n {
		path := "/keyword?q=running+shoes&country=us"
		if i%2 == 1 {
			path = "/intent?q=running+shoes&country=us"
		}
		w := env.send(t, "GET", path, "", sess, nil)
		if w.Code != 200 || !strings.Contains(w.Header().Get("Cache-Control"), "private") {
			t.Fatalf("view %d: %d, Cache-Control %q", i, w.Code, w.Header().Get("Cache-Control"))
		}
	}
	w := env.send(t, "GET", "/account", "", sess, nil)
	if !strings.Contains(w.Body.String(), `id="used">`+strconv.Itoa(n)+`<`) {
		t.Errorf("the account page after %d views:\n%s", n, w.Body)
	}
	w = env.send(t, "GET", "/v1/keyword?q=running+shoes&country=us", "", "", http.Header{"Authorization": {"Bearer " + key}})
	if got, want := w.Header().Get("RateLimit"), `"monthly";r=`+strconv.Itoa(500-n-1); !strings.HasPrefix(got, want) {
		t.Errorf("RateLimit after %d views and a lookup: %q, want %s…", n, got, want)
	}

	// A paid account: no allowance to run out of.
	psess := env.session(t, "grace@example.com")
	id := regexp.MustCompile(`id="key-id">([^<]+)<`).FindStringSubmatch(env.send(t, "GET", "/account", "", psess, nil).Body.String())
	if id == nil {
		t.Fatal("the account page shows no key id")
	}
	if err := env.store.SetTier(context.Background(), id[1], access.Paid, time.Now().Add(48*time.Hour)); err != nil {
		t.Fatalf("SetTier: %v", err)
	}
	for i := range 30 {
		if w := env.send(t, "GET", "/keyword?q=running+shoes&country=us", "", psess, nil); w.Code != 200 {
			t.Fatalf("paid view %d: %d", i, w.Code)
		}
	}
	// Anonymous views from the same address are still held to 20.
	for i := range 21 {
		w := env.send(t, "GET", "/keyword?q=running+shoes&country=us", "", "", nil)
		if i < 20 && w.Code != 200 || i == 20 && w.Code != http.StatusTooManyRequests {
			t.Fatalf("anonymous view %d: %d", i, w.Code)
		}
	}
}

// TestOldKeyCookieCleared: the key cookie of earlier versions is cleared
// on any request that carries it, and opens no account.
func TestOldKeyCookieCleared(t *testing.T) {
	env := newSigninEnv(t, "http://kwdata.example", nil)
	key := env.register(t, "ada@example.com")
	r := httptest.NewRequest("GET", "/account", nil)
	r.AddCookie(&http.Cookie{Name: "kwdata_key", Value: key})
	w := httptest.NewRecorder()
	env.srv.ServeHTTP(w, r)
	cleared := false
	for _, c := range w.Result().Cookies() {
		if c.Name == "kwdata_key" && c.MaxAge < 0 && c.Path == "/account" {
			cleared = true
		}
	}
	if !cleared || strings.Contains(w.Body.String(), `id="key-id"`) {
		t.Errorf("GET /account with the old key cookie: cookies %q\n%s", w.Header().Values("Set-Cookie"), w.Body)
	}
	// Pasting the key opens a session of its account, not a key cookie.
	w = env.send(t, "POST", "/account/login", "key="+key, "", nil)
	c := env.sessionCookie(w)
	if w.Code != http.StatusSeeOther || c == nil || c.Value == key {
		t.Fatalf("POST /account/login: %d, cookies %q", w.Code, w.Header().Values("Set-Cookie"))
	}
	for _, c := range w.Result().Cookies() {
		if c.Name == "kwdata_key" && c.MaxAge >= 0 {
			t.Errorf("the key went into a cookie: %s", c)
		}
	}
	if w := env.send(t, "GET", "/account", "", c.Value, nil); !strings.Contains(w.Body.String(), `id="key-id"`) {
		t.Errorf("the pasted key's session shows no account:\n%s", w.Body)
	}
}

// TestSigninByMailpit signs in through the forms with the code a real SMTP
// server (Mailpit) received.
func TestSigninByMailpit(t *testing.T) {
	mp := testservers.StartMailpit(t, false)
	sender, err := mail.NewSMTP("smtp://"+mp.SMTP, "", "kwdata <no-reply@kwdata.example>")
	if err != nil {
		t.Fatal(err)
	}
	env := newSigninEnv(t, "http://kwdata.example", sender)
	next := "/keyword?q=running+shoes&country=us"
	w := env.send(t, "GET", "/account?next="+url.QueryEscape(next), "", "", nil)
	if w.Code != 200 || !strings.Contains(w.Body.String(), `action="/account/signin"`) {
		t.Fatalf("GET /account: %d\n%s", w.Code, w.Body)
	}
	w = env.send(t, "POST", "/account/signin", "email=Lin%40Example.com&next="+url.QueryEscape(next), "", nil)
	if w.Code != 200 || !strings.Contains(w.Body.String(), `id="code"`) {
		t.Fatalf("POST /account/signin: %d\n%s", w.Code, w.Body)
	}
	msg := mp.Last(t, "lin@example.com")
	code := mailCode.FindStringSubmatch(msg.Text)
	if code == nil || !strings.Contains(msg.Subject, code[1]) || !strings.Contains(msg.Text, "Signing in never changes your") {
		t.Fatalf("the sign-in mail: %+v", msg)
	}
	w = env.send(t, "POST", "/account/signin/verify", "email=lin%40example.com&code="+code[1]+"&next="+url.QueryEscape(next), "", nil)
	c := env.sessionCookie(w)
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != next || c == nil {
		t.Fatalf("POST /account/signin/verify: %d to %q, cookies %q\n%s", w.Code, w.Header().Get("Location"), w.Header().Values("Set-Cookie"), w.Body)
	}
	if w := env.send(t, "GET", next, "", c.Value, nil); w.Code != 200 || !strings.HasPrefix(w.Header().Get("RateLimit"), `"monthly";r=499`) {
		t.Errorf("the page after signing in: %d, RateLimit %q", w.Code, w.Header().Get("RateLimit"))
	}
	w = env.send(t, "GET", "/account", "", c.Value, nil)
	if !strings.Contains(w.Body.String(), `id="used">1<`) || !strings.Contains(w.Body.String(), "lin@example.com") {
		t.Errorf("the account page:\n%s", w.Body)
	}
	// The code is used up.
	if w := env.send(t, "POST", "/account/signin/verify", "email=lin%40example.com&code="+code[1], "", nil); w.Code != http.StatusBadRequest {
		t.Errorf("the code again: %d", w.Code)
	}
}

// TestSigninLinks: every page's header links to sign-in the same way for
// everyone (the home page stays publicly cached), the home page offers a
// free key, and the icon is served.
func TestSigninLinks(t *testing.T) {
	env := newSigninEnv(t, "http://kwdata.example", nil)
	sess := env.session(t, "ada@example.com")
	anon := env.send(t, "GET", "/", "", "", nil)
	signed := env.send(t, "GET", "/", "", sess, nil)
	if anon.Body.String() != signed.Body.String() || anon.Header().Get("Cache-Control") != "public, max-age=300" {
		t.Errorf("the home page differs for a signed-in person, or is not public (%q)", signed.Header().Get("Cache-Control"))
	}
	if b := anon.Body.String(); !strings.Contains(b, `id="get-key"`) || !strings.Contains(b, `href="/account" id="get-key"`) {
		t.Errorf("the home page offers no free key")
	}
	for _, path := range []string{"/", "/keyword?q=running+shoes&country=us", "/intent?q=running+shoes&country=us", "/account", "/register", "/keyword?q=nope&country=us"} {
		b := env.send(t, "GET", path, "", sess, nil).Body.String()
		if !strings.Contains(b, `<a href="/account" id="signin-link" class="signin">Sign in</a>`) || !strings.Contains(b, `<link rel="icon" href="/favicon.svg"`) {
			t.Errorf("%s has no Sign in link or icon", path)
		}
	}
	for _, path := range []string{"/favicon.svg", "/favicon.ico"} {
		w := env.send(t, "GET", path, "", "", nil)
		if w.Code != 200 || w.Header().Get("Content-Type") != "image/svg+xml" || !strings.HasPrefix(w.Body.String(), "<svg") {
			t.Errorf("GET %s: %d %q", path, w.Code, w.Header().Get("Content-Type"))
		}
	}
}
