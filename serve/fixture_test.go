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

	"github.com/kwdata/kwdata/kw"
)

// demoRelated are the related keywords of "running shoes" in the demo
// fixture: realistic names and numbers, in rank order (overlap descending).
var demoRelated = []kw.RelatedKeyword{
	{Keyword: "running shoe", Volume: i64(246000), CPCMicros: i64(1_190_000), Overlap: 16, SameIntent: true},
	{Keyword: "best running shoes", Volume: i64(90500), CPCMicros: i64(1_450_000), Overlap: 14},
	{Keyword: "running sneakers", Volume: i64(165000), CPCMicros: i64(1_050_000), Overlap: 12, SameIntent: true},
	{Keyword: "running shoes for women", Volume: i64(74000), CPCMicros: i64(1_120_000), Overlap: 11},
	{Keyword: "mens running shoes", Volume: i64(60500), CPCMicros: i64(1_080_000), Overlap: 10},
	{Keyword: "trail running shoes", Volume: i64(49500), CPCMicros: i64(980_000), Overlap: 9},
	{Keyword: "nike running shoes", Volume: i64(40500), CPCMicros: i64(870_000), Overlap: 8},
	{Keyword: "cushioned running shoes", Volume: i64(14800), CPCMicros: i64(1_310_000), Overlap: 7},
	{Keyword: "running shoes sale", Volume: i64(12100), CPCMicros: i64(640_000), Overlap: 6},
	{Keyword: "wide running shoes", Volume: i64(8100), CPCMicros: i64(0), Overlap: 5},
}

// demoSeason is a seasonal curve of 12 months, November to October, in
// per mille of the average month.
var demoSeason = []int64{820, 905, 1220, 1100, 1010, 1000, 1000, 905, 1000, 1000, 905, 1000}

// seasonalTrend returns 12 months from 2025-11 to 2026-10 around avg.
func seasonalTrend(avg int64) []kw.MonthlySearches {
	out := make([]kw.MonthlySearches, 12)
	start := time.Date(2025, 11, 1, 0, 0, 0, 0, time.UTC)
	for i := range out {
		out[i] = kw.MonthlySearches{Month: start.AddDate(0, i, 0).Format("2006-01"), Searches: i64(avg * demoSeason[i] / 1000)}
	}
	return out
}

// newDemoIndex is the fake index of the handler tests with a realistic
// "running shoes" in the United States: 12 seasonal months and 10 related
// keywords that all have pages of their own. The OpenAPI examples, the
// golden files and the browser test read it.
func newDemoIndex(tb testing.TB) *fakeIndex {
	tb.Helper()
	f := newFakeIndex(tb)
	f.panicOn = ""
	f.add(kw.Entry{
		Keyword: "running shoes", Country: "US", Volume: i64(301000), CPCMicros: i64(1_234_999),
		Competition: f64(0.87), CompetitionLevel: "HIGH", Intent: "running shoes",
		Trend: seasonalTrend(301000), Related: demoRelated,
	})
	for i, r := range demoRelated {
		intent := r.Keyword
		if r.SameIntent {
			intent = "running shoes"
		}
		back := []kw.RelatedKeyword{{Keyword: "running shoes", Volume: i64(301000), CPCMicros: i64(1_234_999), Overlap: r.Overlap, SameIntent: r.SameIntent}}
		for j, o := range demoRelated {
			if j != i && len(back) < 4 {
				o.Overlap, o.SameIntent = max(o.Overlap-3, 1), false
				back = append(back, o)
			}
		}
		f.add(kw.Entry{
			Keyword: r.Keyword, Country: "US", Volume: r.Volume, CPCMicros: r.CPCMicros,
			Competition: f64(0.5 + float64(i)/40), Intent: intent, Trend: seasonalTrend(*r.Volume), Related: back,
		})
	}
	us := 0
	for k := range f.entries {
		if k[0] == "US" {
			us++
		}
	}
	f.info.Countries = map[string]int{"US": us, "DE": 1}
	return f
}

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
	return Signup{Email: strings.ToLower(email), Code: "424242", Expires: testBuiltAt.Add(105 * time.Minute), Replaces: r.replaces}, nil
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
	index     *fakeIndex
	access    *fakeAccess
	registrar *fakeRegistrar
	mailer    *fakeMailer
	billing   *fakeBilling
	log       *syncBuffer
}

// newDemoServer returns a Server over newDemoIndex with fake access and
// registration, at a fixed clock: 2026-11-22 04:30 UTC.
func newDemoServer(tb testing.TB) *demoServer {
	tb.Helper()
	ds := &demoServer{index: newDemoIndex(tb), access: &fakeAccess{}, registrar: &fakeRegistrar{}, mailer: &fakeMailer{}, billing: &fakeBilling{}, log: &syncBuffer{}}
	ds.Server = New(Options{
		Index:     ds.index,
		Logger:    slog.New(slog.NewTextHandler(ds.log, &slog.HandlerOptions{Level: slog.LevelInfo})),
		Now:       func() time.Time { return testBuiltAt.Add(90 * time.Minute) },
		Access:    ds.access,
		Registrar: ds.registrar,
		Mailer:    ds.mailer,
		Billing:   ds.billing,
		PublicURL: "http://kwdata.example/",
	})
	return ds
}

// i64 and f64 are the nullable numbers of records and entries.
func i64(v int64) *int64     { return &v }
func f64(v float64) *float64 { return &v }
