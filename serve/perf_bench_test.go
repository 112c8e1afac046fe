package serve

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/kwdata/kwdata/serve/internal/servetest"
)

// BenchmarkRouter compares the server's own router (an exact-path map, then
// the prefix routes) with an http.ServeMux holding the same routes as Go
// 1.22 patterns, each answering to a no-op handler: an exact API route, a
// prefix route, a page, and a path that matches nothing. The mux case
// includes what ServeHTTP does around the match (path cleaning, r.Pattern,
// a 404 for the unmatched path); the hand-written case the match, the
// method's handler and a call of the no-op.
func BenchmarkRouter(b *testing.B) {
	s := New(Options{Index: servetest.NewIndex(b)})
	noop := func(http.ResponseWriter, *http.Request) error { return nil }
	mux := http.NewServeMux()
	for path, rt := range s.routes {
		p := path
		switch {
		case rt.prefix != "":
			p = rt.prefix + "{rest...}"
		case path == "/":
			p = "/{$}"
		}
		for m := range rt.methods {
			if m != http.MethodHead { // a GET pattern answers HEAD too
				mux.HandleFunc(m+" "+p, func(http.ResponseWriter, *http.Request) {})
			}
		}
	}
	for _, tc := range []struct{ name, method, target string }{
		{"api", "GET", "/v1/keyword?q=running+shoes&country=us"},
		{"prefix", "GET", "/problems/missing_q"},
		{"page", "POST", "/account/login"},
		{"unmatched", "GET", "/no/such/path"},
	} {
		r := httptest.NewRequest(tc.method, tc.target, nil)
		w := &discardWriter{h: http.Header{}}
		b.Run("hand/"+tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rt := s.match(r.URL.Path)
				label := routeUnmatched
				if rt != nil {
					label = rt.pattern
				}
				if rt.handlerFor(r.Method) != nil {
					_ = noop(w, r)
				}
				_ = label
			}
		})
		b.Run("servemux/"+tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				mux.ServeHTTP(w, r)
				_ = r.Pattern // the metrics label
			}
		})
	}
}

// BenchmarkConnDeadlines measures sequential keep-alive requests over
// loopback through an http.Server with Serve's four timeouts, on plain
// connections and on lazyConns (see deadline.go): the difference is the
// cost of net/http's deadline moves, about eight a request.
func BenchmarkConnDeadlines(b *testing.B) {
	for _, bc := range []struct {
		name string
		wrap func(net.Listener) net.Listener
	}{
		{"plain", func(l net.Listener) net.Listener { return l }},
		{"lazy", func(l net.Listener) net.Listener { return lazyListener{l, ReadHeaderTimeout} }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			srv := &http.Server{
				Handler:           http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") }),
				ReadHeaderTimeout: ReadHeaderTimeout, ReadTimeout: ReadTimeout,
				WriteTimeout: WriteTimeout, IdleTimeout: IdleTimeout,
			}
			go srv.Serve(bc.wrap(ln))
			b.Cleanup(func() { srv.Close() })
			conn, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			br := bufio.NewReader(conn)
			req := []byte("GET / HTTP/1.1\r\nHost: bench\r\n\r\n")
			b.ReportAllocs()
			for b.Loop() {
				if _, err := conn.Write(req); err != nil {
					b.Fatal(err)
				}
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}

// BenchmarkDeadlineMoves isolates what lazyConn saves: the deadline moves
// net/http makes on a keep-alive connection for one request (see
// deadline.go), on a loopback TCP connection, plain and lazy.
func BenchmarkDeadlineMoves(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	for _, bc := range []struct {
		name string
		wrap func(net.Conn) net.Conn
	}{
		{"plain", func(c net.Conn) net.Conn { return c }},
		{"lazy", func(c net.Conn) net.Conn { return newLazyConn(c, ReadHeaderTimeout) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			raw, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer raw.Close()
			c := bc.wrap(raw)
			past := time.Unix(1, 0)
			b.ReportAllocs()
			for b.Loop() {
				now := time.Now()
				c.SetReadDeadline(now.Add(ReadTimeout))
				c.SetWriteDeadline(now.Add(WriteTimeout))
				c.SetReadDeadline(time.Time{})
				c.SetReadDeadline(past)
				c.SetReadDeadline(time.Time{})
				c.SetWriteDeadline(time.Time{})
				c.SetReadDeadline(now.Add(IdleTimeout))
				c.SetReadDeadline(now.Add(ReadHeaderTimeout))
			}
		})
	}
}
