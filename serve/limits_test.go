package serve

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kwdata/kwdata/serve/api"
)

// TestOversizedRequests: a URL past MaxHeaderBytes is refused by net/http
// itself with a plain-text 431 before any handler runs (it offers no hook
// to render a problem document), and a body past an endpoint's limit is a
// 413 body_too_large problem. The error table of docs/API.md lists both.
func TestOversizedRequests(t *testing.T) {
	ds := newDemoServer(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, ln, ds, nil) }()
	t.Cleanup(func() { cancel(); <-served })
	addr := ln.Addr().String()

	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "GET /v1/keyword?q="+strings.Repeat("a", 100<<10)+" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("100 KB URL: %d, want 431", resp.StatusCode)
	}

	body := `{"keywords": ["` + strings.Repeat("a", api.MaxBulkBody) + `"]}`
	resp, err = http.Post("http://"+addr+"/v1/keywords", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), `"code":"body_too_large"`) {
		t.Errorf("oversized bulk body: %d %s, want 413 body_too_large", resp.StatusCode, b)
	}

	readme, err := os.ReadFile("../docs/API.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{`(?m)^\| 413 \| ` + "`body_too_large`", `(?m)^\| 431 \| `} {
		if !regexp.MustCompile(row).Match(readme) {
			t.Errorf("docs/API.md's error table has no row matching %s", row)
		}
	}
}
