package access

import (
	"encoding/json"
	"github.com/kwdata/kwdata/internal/testservers"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCloseWithIdleAdminClient: a client that connects to the admin socket
// and sends nothing does not hold Close up (it used to, for the socket's
// one-minute command timeout, past systemd's stop timeout, so the final
// flush never ran); the counts are flushed, and the idle client is told
// the server is stopping.
func TestCloseWithIdleAdminClient(t *testing.T) {
	dir := t.TempDir()
	clk := newClock(t, "2026-11-22T12:00:00Z")
	s := openStore(t, dir, clk)
	client := mustAddr(t, "192.0.2.30")
	use(t, s, mustIdentify(t, s, "", client), 7)

	idle, err := net.Dial("unix", filepath.Join(dir, adminSockName))
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	// A second client that sent half a command is idle too.
	half, err := net.Dial("unix", filepath.Join(dir, adminSockName))
	if err != nil {
		t.Fatal(err)
	}
	defer half.Close()
	if _, err := half.Write([]byte(`{"op":`)); err != nil {
		t.Fatal(err)
	}
	// Close only once the server holds both connections, so the test
	// proves that Close ends them rather than racing their accept.
	waitAdminConns(t, s, 2)

	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(20 * time.Second): // far below the old minute, far above a Close
		t.Fatal("Close still waits for an idle admin client after 20s")
	}
	idle.SetReadDeadline(time.Now().Add(10 * time.Second))
	var resp adminResponse
	if err := json.NewDecoder(idle).Decode(&resp); err != nil {
		t.Fatalf("the idle client got no answer: %v", err)
	}
	if !strings.Contains(resp.Error, "stopping") {
		t.Errorf("the idle client was told %q; want that the server is stopping", resp.Error)
	}

	s = openStore(t, dir, clk)
	if got := remaining(t, s, mustIdentify(t, s, "", client)); got != 13 {
		t.Errorf("anonymous remaining after Close with an idle admin client = %d, want 13 (7 flushed)", got)
	}
}

// waitAdminConns waits until the admin server holds n connections.
func waitAdminConns(tb testing.TB, s *Store, n int) {
	tb.Helper()
	var got int
	if !testservers.Poll(20*time.Second, func() bool {
		s.admin.mu.Lock()
		got = len(s.admin.conns)
		s.admin.mu.Unlock()
		return got >= n
	}) {
		tb.Fatalf("the admin socket holds %d connections after 20s, want %d", got, n)
	}
}
