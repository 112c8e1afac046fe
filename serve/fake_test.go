package serve

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/kwdata/kwdata/serve/internal/servetest"
)

// fakeAccess records what the server asks of Access.
type fakeAccess struct {
	mu        sync.Mutex
	err       error // returned by Admit when set
	admits    []int
	clients   []netip.Addr
	committed []int
	cancelled int
}

func (a *fakeAccess) Admit(ctx context.Context, r *http.Request, client netip.Addr, n int) (Ticket, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.admits = append(a.admits, n)
	a.clients = append(a.clients, client)
	if a.err != nil {
		return nil, a.err
	}
	return &fakeTicket{a: a}, nil
}

type fakeTicket struct {
	a    *fakeAccess
	done bool
}

func (t *fakeTicket) Commit(counted int, h http.Header) {
	if t.done {
		return
	}
	t.done = true
	t.a.mu.Lock()
	t.a.committed = append(t.a.committed, counted)
	t.a.mu.Unlock()
	h.Set("RateLimit-Policy", `"daily";q=20;w=86400`)
	h.Set("RateLimit", `"daily";r=19;t=3600`)
}

func (t *fakeTicket) Cancel() {
	if t.done {
		return
	}
	t.done = true
	t.a.mu.Lock()
	t.a.cancelled++
	t.a.mu.Unlock()
}

// testServer is a Server over the fixture with a log captured in a buffer.
type testServer struct {
	*Server
	index  *servetest.Index
	access *fakeAccess
	log    *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newTestServer(tb testing.TB) *testServer {
	tb.Helper()
	ts := &testServer{index: servetest.NewIndex(tb), access: &fakeAccess{}, log: &syncBuffer{}}
	ts.Server = New(Options{
		Index:  ts.index,
		Logger: slog.New(slog.NewTextHandler(ts.log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Now:    func() time.Time { return servetest.BuiltAt.Add(90 * time.Minute) },
		Access: ts.access,
		TrustedProxies: []netip.Prefix{
			netip.MustParsePrefix("10.0.0.0/8"),
		},
	})
	return ts
}

// do sends a request to h and returns the recorded answer.
func do(tb testing.TB, h http.Handler, method, target string, header http.Header) *httptest.ResponseRecorder {
	tb.Helper()
	r := httptest.NewRequest(method, target, nil)
	for k, v := range header {
		r.Header[k] = v
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}
