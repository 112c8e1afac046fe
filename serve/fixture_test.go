package serve

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kwdata/kwdata/serve/internal/servetest"
	"github.com/kwdata/kwdata/serve/web"
)

// fakeRegistrar records sign-ups and answers with err when set.
type fakeRegistrar struct {
	mu       sync.Mutex
	err      error
	emails   []string
	clients  []netip.Addr
	codes    []string    // codes verified
	rotated  []string    // keys rotated
	replaces bool        // StartSignup finds a key on the mailbox
	account  AccountInfo // what Account answers; a registered account when empty
}

func (r *fakeRegistrar) StartSignup(ctx context.Context, email string, client netip.Addr) (Signup, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.emails = append(r.emails, email)
	r.clients = append(r.clients, client)
	if r.err != nil {
		return Signup{}, r.err
	}
	return Signup{Email: strings.ToLower(email), Code: "424242", Expires: servetest.BuiltAt.Add(105 * time.Minute), Replaces: r.replaces}, nil
}

func (r *fakeRegistrar) VerifySignup(ctx context.Context, email, code string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.emails = append(r.emails, email)
	r.codes = append(r.codes, code)
	if r.err != nil {
		return "", r.err
	}
	return fmt.Sprintf("kw_live_%s", strings.Repeat("7f3a", 8)), nil
}

func (r *fakeRegistrar) RotateKey(ctx context.Context, key string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rotated = append(r.rotated, key)
	if r.err != nil {
		return "", r.err
	}
	return fmt.Sprintf("kw_live_%s", strings.Repeat("9b1c", 8)), nil
}

func (r *fakeRegistrar) Account(ctx context.Context, key string) (AccountInfo, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return AccountInfo{}, r.err
	}
	if r.account.KeyID == "" {
		return AccountInfo{KeyID: "a1b2c3d4e5f6", Email: "ada@example.com", Tier: "registered", Used: 123, Left: 377, Quota: 500,
			Renews: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}, nil
	}
	return r.account, nil
}

// demoSession is a session of the demo account that fakeSessions always
// knows, for tests that start signed in.
const demoSession = "kws_demo_session_0000000000000000"

// fakeSessions keeps sessions in memory; every sign-in opens the
// registrar's account, so AccountByID answers as Registrar.Account does.
type fakeSessions struct {
	reg      *fakeRegistrar
	mu       sync.Mutex
	live     map[string]string // session id -> account
	n        int
	ended    []string
	accounts []string // accounts whose key was rotated
}

func (f *fakeSessions) StartSignin(ctx context.Context, email string, client netip.Addr) (Signup, error) {
	return f.reg.StartSignup(ctx, email, client)
}

func (f *fakeSessions) VerifySignin(ctx context.Context, email, code string) (string, error) {
	if _, err := f.reg.VerifySignup(ctx, email, code); err != nil {
		return "", err
	}
	return "a1b2c3d4e5f6", nil
}

func (f *fakeSessions) NewSession(ctx context.Context, account string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	id := fmt.Sprintf("kws_fake_session_%016d", f.n)
	f.live[id] = account
	return id, nil
}

func (f *fakeSessions) Session(ctx context.Context, id string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if a, ok := f.live[id]; ok {
		return a, nil
	}
	return "", web.ErrNoSession
}

func (f *fakeSessions) EndSession(ctx context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.live, id)
	f.ended = append(f.ended, id)
	return nil
}

func (f *fakeSessions) AccountByID(ctx context.Context, account string) (AccountInfo, error) {
	return f.reg.Account(ctx, account)
}

func (f *fakeSessions) RotateAccountKey(ctx context.Context, account string) (string, error) {
	f.mu.Lock()
	f.accounts = append(f.accounts, account)
	f.mu.Unlock()
	return f.reg.RotateKey(ctx, account)
}

// fakeBilling answers with fixed pages, or err when set.
type fakeBilling struct {
	mu     sync.Mutex
	err    error
	url    string // the page Checkout and Portal answer; Stripe's when empty
	keys   []string
	events [][]byte
}

func (b *fakeBilling) Checkout(ctx context.Context, key string) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.keys = append(b.keys, key)
	if b.err != nil {
		return "", b.err
	}
	if b.url != "" {
		return b.url, nil
	}
	return "https://checkout.stripe.com/c/pay/cs_test_a1b2c3", nil
}

func (b *fakeBilling) Portal(ctx context.Context, key string) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.keys = append(b.keys, key)
	if b.err != nil {
		return "", b.err
	}
	if b.url != "" {
		return b.url, nil
	}
	return "https://billing.stripe.com/p/session/test_a1b2c3", nil
}

func (b *fakeBilling) CheckoutAccount(ctx context.Context, account string) (string, error) {
	return b.Checkout(ctx, account)
}

func (b *fakeBilling) PortalAccount(ctx context.Context, account string) (string, error) {
	return b.Portal(ctx, account)
}

func (b *fakeBilling) Webhook(ctx context.Context, payload []byte, signature string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.events = append(b.events, payload)
	return b.err
}

// fakeMailer keeps what the server mails.
type fakeMailer struct {
	mu   sync.Mutex
	err  error
	sent []Mail
}

func (m *fakeMailer) SendMail(ctx context.Context, mail Mail) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return m.err
	}
	m.sent = append(m.sent, mail)
	return nil
}

// demoServer is a Server over the demo index.
type demoServer struct {
	*Server
	index     *servetest.Index
	access    *fakeAccess
	registrar *fakeRegistrar
	sessions  *fakeSessions
	mailer    *fakeMailer
	billing   *fakeBilling
	log       *syncBuffer
}

// newDemoServer returns a Server over servetest.NewDemoIndex with fake access and
// registration, at a fixed clock: 2026-11-22 04:30 UTC.
func newDemoServer(tb testing.TB) *demoServer {
	tb.Helper()
	ds := &demoServer{index: servetest.NewDemoIndex(tb), access: &fakeAccess{}, registrar: &fakeRegistrar{}, mailer: &fakeMailer{}, billing: &fakeBilling{}, log: &syncBuffer{}}
	ds.sessions = &fakeSessions{reg: ds.registrar, live: map[string]string{demoSession: "a1b2c3d4e5f6"}}
	ds.Server = New(Options{
		Index:     ds.index,
		Logger:    slog.New(slog.NewTextHandler(ds.log, &slog.HandlerOptions{Level: slog.LevelInfo})),
		Now:       func() time.Time { return servetest.BuiltAt.Add(90 * time.Minute) },
		Access:    ds.access,
		Registrar: ds.registrar,
		Sessions:  ds.sessions,
		Mailer:    ds.mailer,
		Billing:   ds.billing,
		PublicURL: "http://kwdata.example/",
	})
	return ds
}
