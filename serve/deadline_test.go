package serve

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// lazyPipe returns the two ends of an in-memory connection, the first a
// lazyConn with the given horizon.
func lazyPipe(tb testing.TB, horizon time.Duration) (*lazyConn, net.Conn) {
	tb.Helper()
	a, b := net.Pipe()
	tb.Cleanup(func() { a.Close(); b.Close() })
	return newLazyConn(a, horizon), b
}

// ioResult is what a Read or Write returned, and when.
type ioResult struct {
	n   int
	err error
	at  time.Duration
}

// The sleeps in these tests run inside synctest bubbles: they move the
// bubble's fake clock to the instant a peer acts (writes, reads, sets a
// deadline), which is what the tests are about; none waits for an event.

func TestLazyConnReadDeadlines(t *testing.T) {
	for _, tc := range []struct {
		name string
		// deadlines are set in order, as offsets from the start; zero
		// clears the deadline.
		deadlines []time.Duration
		writeAt   time.Duration // the peer writes then (0: never)
		want      ioResult
	}{
		{"extended deadline ends the read at the later time",
			[]time.Duration{time.Second, 3 * time.Second}, 0, ioResult{0, os.ErrDeadlineExceeded, 3 * time.Second}},
		{"extended past the horizon",
			[]time.Duration{time.Second, 40 * time.Second}, 0, ioResult{0, os.ErrDeadlineExceeded, 40 * time.Second}},
		{"shortened deadline fires on time",
			[]time.Duration{3 * time.Second, time.Second}, 0, ioResult{0, os.ErrDeadlineExceeded, time.Second}},
		{"deadline set after none fires on time",
			[]time.Duration{0, 2 * time.Second}, 0, ioResult{0, os.ErrDeadlineExceeded, 2 * time.Second}},
		{"cleared deadline lets the read wait for data",
			[]time.Duration{time.Second, 0}, 60 * time.Second, ioResult{5, nil, 60 * time.Second}},
		{"data before an extended deadline",
			[]time.Duration{time.Second, 10 * time.Second}, 7 * time.Second, ioResult{5, nil, 7 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c, peer := lazyPipe(t, 5*time.Second)
				start := time.Now()
				for _, d := range tc.deadlines {
					var dl time.Time
					if d != 0 {
						dl = start.Add(d)
					}
					if err := c.SetReadDeadline(dl); err != nil {
						t.Fatal(err)
					}
				}
				if tc.writeAt > 0 {
					time.AfterFunc(tc.writeAt, func() { peer.Write([]byte("hello")) })
				}
				n, err := c.Read(make([]byte, 16))
				got := ioResult{n, err, time.Since(start)}
				if got.n != tc.want.n || !errors.Is(got.err, tc.want.err) || (tc.want.err == nil && got.err != nil) || got.at != tc.want.at {
					t.Errorf("Read = %d, %v after %v; want %d, %v after %v", got.n, got.err, got.at, tc.want.n, tc.want.err, tc.want.at)
				}
			})
		})
	}
}

// TestLazyConnStopsBlockedRead is what net/http does at the end of every
// request: a deadline in the past, set from another goroutine, ends a
// read that waits, and a deadline cleared afterwards lets the next read
// wait again.
func TestLazyConnStopsBlockedRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, peer := lazyPipe(t, 5*time.Second)
		c.SetReadDeadline(time.Now().Add(30 * time.Second))
		done := make(chan ioResult)
		start := time.Now()
		go func() {
			n, err := c.Read(make([]byte, 1))
			done <- ioResult{n, err, time.Since(start)}
		}()
		time.AfterFunc(time.Second, func() { c.SetReadDeadline(time.Unix(1, 0)) })
		r := <-done
		if !errors.Is(r.err, os.ErrDeadlineExceeded) || r.at != time.Second {
			t.Fatalf("blocked Read = %d, %v after %v; want a timeout after 1s", r.n, r.err, r.at)
		}
		c.SetReadDeadline(time.Time{})
		time.AfterFunc(time.Minute, func() { peer.Write([]byte("x")) })
		if n, err := c.Read(make([]byte, 1)); n != 1 || err != nil {
			t.Fatalf("Read after the deadline was cleared = %d, %v; want the byte written a minute later", n, err)
		}
	})
}

func TestLazyConnWriteDeadlines(t *testing.T) {
	for _, tc := range []struct {
		name     string
		first    time.Duration // write deadline, then moved to second
		second   time.Duration
		readAt   []time.Duration // the peer reads 4 bytes at each
		wantN    int
		wantErr  error
		wantTime time.Duration
	}{
		{"extended deadline lets a slow reader finish",
			time.Second, 10 * time.Second, []time.Duration{500 * time.Millisecond, 2 * time.Second, 9 * time.Second}, 10, nil, 9 * time.Second},
		{"extended deadline still ends a stuck write",
			time.Second, 3 * time.Second, []time.Duration{500 * time.Millisecond}, 4, os.ErrDeadlineExceeded, 3 * time.Second},
		{"shortened deadline ends a stuck write on time",
			10 * time.Second, 2 * time.Second, nil, 0, os.ErrDeadlineExceeded, 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c, peer := lazyPipe(t, 5*time.Second)
				start := time.Now()
				c.SetWriteDeadline(start.Add(tc.first))
				c.SetWriteDeadline(start.Add(tc.second))
				var mu sync.Mutex
				var got []byte
				atTimes(start, tc.readAt, func() {
					buf := make([]byte, 4)
					n, _ := peer.Read(buf)
					mu.Lock()
					got = append(got, buf[:n]...)
					mu.Unlock()
				})
				n, err := c.Write([]byte("0123456789"))
				at := time.Since(start)
				if n != tc.wantN || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) || at != tc.wantTime {
					t.Fatalf("Write = %d, %v after %v; want %d, %v after %v", n, err, at, tc.wantN, tc.wantErr, tc.wantTime)
				}
				synctest.Wait()
				mu.Lock()
				defer mu.Unlock()
				if string(got) != "0123456789"[:n] {
					t.Errorf("peer read %q; want %q, each byte once and in order", got, "0123456789"[:n])
				}
			})
		})
	}
}

// armCounter counts how often a connection's deadlines are really moved.
type armCounter struct {
	net.Conn
	mu           *sync.Mutex
	reads, write *int
}

func (c armCounter) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	*c.reads++
	c.mu.Unlock()
	return c.Conn.SetReadDeadline(t)
}

func (c armCounter) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	*c.write++
	c.mu.Unlock()
	return c.Conn.SetWriteDeadline(t)
}

type countingListener struct {
	net.Listener
	mu           sync.Mutex
	reads, write int
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return armCounter{c, &l.mu, &l.reads, &l.write}, nil
}

// TestLazyConnUnderHTTPServer runs keep-alive requests through a net/http
// server with every timeout set, as Serve does: the connection's timers
// move about twice a request instead of about eight times, and the
// header timeout still ends a connection whose client stalls.
func TestLazyConnUnderHTTPServer(t *testing.T) {
	const requests = 50
	const headerTimeout = 300 * time.Millisecond
	for _, tc := range []struct {
		name               string
		lazy               bool
		minMoves, maxMoves int // per request, read and write together
	}{
		{"lazy", true, 0, 2},
		{"net/http alone", false, 5, 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			cl := &countingListener{Listener: ln}
			var served net.Listener = cl
			if tc.lazy {
				served = lazyListener{cl, headerTimeout} // as Serve does
			}
			srv := &http.Server{
				Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					io.WriteString(w, "ok "+r.URL.Query().Get("i"))
				}),
				ReadHeaderTimeout: headerTimeout,
				ReadTimeout:       15 * time.Second,
				WriteTimeout:      30 * time.Second,
				IdleTimeout:       120 * time.Second,
			}
			go srv.Serve(served)
			t.Cleanup(func() { srv.Close() })

			c, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(30 * time.Second))
			br := bufio.NewReader(c)
			for i := range requests {
				fmt.Fprintf(c, "GET /?i=%d HTTP/1.1\r\nHost: x\r\n\r\n", i)
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || string(body) != fmt.Sprintf("ok %d", i) {
					t.Fatalf("request %d: body %q, %v", i, body, err)
				}
			}
			cl.mu.Lock()
			moves := cl.reads + cl.write
			cl.mu.Unlock()
			// The first request of a connection arms both deadlines once.
			if moves < tc.minMoves*requests || moves > tc.maxMoves*requests+2 {
				t.Errorf("%d deadline moves for %d requests; want %d to %d a request", moves, requests, tc.minMoves, tc.maxMoves)
			}
			t.Logf("%d deadline moves for %d requests", moves, requests)

			// A stalled header: the server hangs up after its header
			// timeout (bounded wait: the client's own deadline).
			start := time.Now()
			io.WriteString(c, "GET / HTTP/1.1\r\nHo")
			rest, err := io.ReadAll(br)
			if err != nil {
				t.Fatalf("reading after a stalled header: %v (the server did not hang up)", err)
			}
			if waited := time.Since(start); waited < headerTimeout {
				t.Errorf("the server hung up after %v, before its header timeout", waited)
			}
			if len(rest) > 0 && !strings.HasPrefix(string(rest), "HTTP/1.1 ") {
				t.Errorf("unexpected answer to a stalled header: %q", rest)
			}
		})
	}
}

// atTimes calls fn at each instant start+at[i] of the bubble's clock, one
// call after the other: the next is scheduled when the one before ends.
func atTimes(start time.Time, at []time.Duration, fn func()) {
	var step func(i int)
	step = func(i int) {
		if i < len(at) {
			time.AfterFunc(time.Until(start.Add(at[i])), func() {
				fn()
				step(i + 1)
			})
		}
	}
	step(0)
}
