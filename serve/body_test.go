package serve

import (
	"bufio"
	"encoding/json"
	"github.com/kwdata/kwdata/internal/testservers"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kwdata/kwdata/serve/web"
)

// bodyTestServer serves ds on a loopback port with a short read timeout,
// so that a slow body times out within the test.
func bodyTestServer(tb testing.TB, ds *demoServer) string {
	tb.Helper()
	srv := httptest.NewUnstartedServer(ds.Server)
	srv.Config.ReadTimeout = 300 * time.Millisecond
	srv.Start()
	tb.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// sendRaw writes head and then body on a new connection to addr. With
// hangUp it closes the connection at once and returns nil; otherwise it
// reads the answer.
func sendRaw(tb testing.TB, addr, head, body string, hangUp bool) *http.Response {
	tb.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, head+body); err != nil {
		tb.Fatal(err)
	}
	if hangUp {
		return nil
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		tb.Fatalf("reading the answer: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(strings.NewReader(string(b)))
	return resp
}

// metricsText fetches GET /metrics of the server at addr.
func metricsText(tb testing.TB, addr string) string {
	tb.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// TestBrokenBodyIsTheClientsFault sends POST bodies that the client breaks
// (a bad chunk length, a body cut short with the client gone, one too slow
// for the read timeout) to every route that reads a body, on a real
// connection. None may be a 500 or log an error: the first and the last
// are answered 400 invalid_body, the one whose client is gone with
// nothing (499 in the metrics), and all are counted by reason.
func TestBrokenBodyIsTheClientsFault(t *testing.T) {
	ds := newDemoServer(t)
	addr := bodyTestServer(t, ds)
	routes := []string{"/v1/keywords", "/v1/register", "/mcp"}
	for _, route := range routes {
		head := "POST " + route + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
		for _, tc := range []struct {
			reason, head, body string
			hangUp             bool
		}{
			{BodyMalformed, "Transfer-Encoding: chunked\r\n\r\n", "zz\r\n{}\r\n0\r\n\r\n", false},
			{BodyIncomplete, "Content-Length: 500\r\n\r\n", `{"keywords": [`, true},
			{BodyTimeout, "Content-Length: 500\r\n\r\n", `{"keywords": [`, false},
		} {
			resp := sendRaw(t, addr, head+tc.head, tc.body, tc.hangUp)
			if resp == nil {
				continue
			}
			var doc web.ProblemDoc
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Content-Type") != ProblemContentType ||
				json.Unmarshal(b, &doc) != nil || doc.Code != CodeInvalidBody {
				t.Errorf("%s, %s body: %d %s %s, want 400 invalid_body", route, tc.reason, resp.StatusCode, resp.Header.Get("Content-Type"), b)
			}
		}
	}

	// The hung-up requests finish on the server after the client left;
	// wait (boundedly) until all three are recorded.
	var m string
	testservers.Poll(10*time.Second, func() bool {
		m = metricsText(t, addr)
		return strings.Count(m, `code="499"`) == len(routes)
	})
	for _, route := range routes {
		if want := `kwdata_http_requests_total{code="499",route="` + route + `"} 1`; !strings.Contains(m, want) {
			t.Errorf("metrics lack %s", want)
		}
		if want := `kwdata_http_requests_total{code="400",route="` + route + `"} 2`; !strings.Contains(m, want) {
			t.Errorf("metrics lack %s", want)
		}
		for _, reason := range []string{BodyMalformed, BodyIncomplete, BodyTimeout} {
			if want := `kwdata_http_body_errors_total{reason="` + reason + `",route="` + route + `"} 1`; !strings.Contains(m, want) {
				t.Errorf("metrics lack %s", want)
			}
		}
	}
	if strings.Contains(m, `code="500"`) {
		t.Errorf("a broken body was counted as a server fault:\n%s", grepLines(m, `code="500"`))
	}
	if log := ds.log.String(); strings.Contains(log, "level=ERROR") {
		t.Errorf("a broken body logged an error:\n%s", log)
	}
	if n := len(ds.registrar.emails); n != 0 {
		t.Errorf("a broken registration body reached the registrar %d times", n)
	}
}
