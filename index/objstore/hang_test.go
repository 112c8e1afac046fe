package objstore

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/kwdata/kwdata/internal/testservers"
	"github.com/prometheus/client_golang/prometheus"
)

// hungStore listens on loopback and accepts every connection, but never
// reads or answers: an S3 server stopped with SIGSTOP. It returns the
// store's URL.
func hungStore(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	tb.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + ln.Addr().String()
}

func clientOf(tb testing.TB, endpoint string, timeout time.Duration) *Client {
	tb.Helper()
	c, err := New(aws.Config{Credentials: credentials.NewStaticCredentialsProvider("kwdatatest", "kwdatatestsecret", "")},
		Location{Bucket: testBucket, Prefix: "hung"}, Options{Endpoint: endpoint, Timeout: timeout})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// TestSyncFromHungStore: a store that accepts connections and never
// answers fails the sync once the timeout passes: one log line that
// names the silence, and kwdata_index_sync_failing set.
func TestSyncFromHungStore(t *testing.T) {
	c := clientOf(t, hungStore(t), 300*time.Millisecond)
	var logs lockedBuffer
	reg := prometheus.NewRegistry()
	s, err := NewSyncer(c, SyncOptions{Data: t.TempDir(), Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		PollInterval: time.Hour, MinRetry: time.Hour, Metrics: NewMetrics(reg)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	testservers.WaitFor(t, 15*time.Second, "kwdata_index_sync_failing = 1", func() bool {
		return metricValue(t, reg, "kwdata_index_sync_failing", "") == 1
	})
	testservers.WaitFor(t, 5*time.Second, "the log line of the failed sync", func() bool {
		return strings.Contains(logs.String(), "cannot sync")
	})
	cancel()
	<-done
	out := logs.String()
	t.Log(strings.TrimSpace(out))
	if n := strings.Count(out, "cannot sync"); n != 1 {
		t.Errorf("%d log lines about the failed sync, want 1", n)
	}
	if !strings.Contains(out, "sent nothing for 300ms") {
		t.Errorf("the log does not say the store went silent")
	}
	if got := metricValue(t, reg, "kwdata_index_syncs_total", "failed"); got != 1 {
		t.Errorf("failed syncs = %v, want 1", got)
	}
}

// TestPublishToHungStore: an upload to a store that never answers fails
// after the timeout instead of waiting for ever.
func TestPublishToHungStore(t *testing.T) {
	pipe := t.TempDir()
	m := buildDate(t, pipe, "2026-11-01", 20, 100, 0)
	c := clientOf(t, hungStore(t), 300*time.Millisecond)
	done := make(chan error, 1)
	go func() { _, err := c.Publish(context.Background(), pipe, m.BuildID); done <- err }()
	select {
	case err := <-done:
		var stall *StallError
		if !errors.As(err, &stall) {
			t.Fatalf("Publish to a silent store = %v, want a StallError", err)
		}
		t.Log(err)
	case <-time.After(30 * time.Second):
		t.Fatal("Publish to a silent store still waits after 30s")
	}
	if err := c.Check(context.Background()); !errors.As(err, new(*StallError)) {
		t.Errorf("Check of a silent store = %v, want a StallError", err)
	}
}

// TestSyncStallsMidDownload: a store that stops sending in the middle of
// a table fails the sync after the timeout; the served build stays and no
// partial download is left.
func TestSyncStallsMidDownload(t *testing.T) {
	ctx := context.Background()
	direct, store := startStore(t, "hung")
	pipe, srv := t.TempDir(), t.TempDir()
	m1 := buildDate(t, pipe, "2026-11-01", 50, 100, 0)
	publish(t, direct, pipe, m1.BuildID)
	if _, err := newSyncer(t, direct, srv, nil).Sync(ctx); err != nil {
		t.Fatal(err)
	}
	m2 := buildDate(t, pipe, "2026-11-02", 50, 100, 1)
	publish(t, direct, pipe, m2.BuildID)

	// A proxy that passes everything but the tables' bodies, of which it
	// sends the first bytes and then nothing.
	target, err := url.Parse(store.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.FlushInterval = -1
	proxy.ModifyResponse = func(r *http.Response) error {
		if r.Request.Method == http.MethodGet && strings.HasSuffix(r.Request.URL.Path, ".sst") {
			r.Body = &stallingBody{ReadCloser: r.Body, left: 100, done: r.Request.Context().Done()}
		}
		return nil
	}
	ps := httptest.NewServer(proxy)
	defer ps.Close()

	c := clientOf(t, ps.URL, 2*time.Second)
	s := newSyncer(t, c, srv, nil)
	done := make(chan error, 1)
	go func() { _, err := s.Sync(ctx); done <- err }()
	select {
	case err := <-done:
		if !errors.As(err, new(*StallError)) {
			t.Fatalf("Sync from a store that stalls mid-table = %v, want a StallError", err)
		}
		t.Log(err)
	case <-time.After(60 * time.Second):
		t.Fatal("Sync from a store that stalls mid-table still waits after 60s")
	}
	if p := published(t, srv); p != m1.BuildID {
		t.Errorf("local CURRENT = %q, want %s", p, m1.BuildID)
	}
	if got := localBuilds(t, srv); !slices.Equal(got, []string{m1.BuildID}) {
		t.Errorf("local builds %v, want only %s", got, m1.BuildID)
	}
	if left := incoming(t, srv); len(left) > 0 {
		t.Errorf("download folders left: %v", left)
	}
}

// stallingBody passes the first left bytes of a body, then blocks until
// done.
type stallingBody struct {
	io.ReadCloser
	left int
	done <-chan struct{}
}

func (b *stallingBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		<-b.done
		return 0, errors.New("stalled")
	}
	if len(p) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= n
	return n, err
}
