package main

import (
	"context"
	"html"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kwdata/kwdata/internal/testservers"
)

// TestDemoExamplesAnswer runs the demo on a small sample and follows every
// link it offers a newcomer (the URLs it prints and the home page's
// examples): each answers 200, and the home page names only the countries
// the demo built.
func TestDemoExamplesAnswer(t *testing.T) {
	t.Parallel()
	m, _, _ := testMain(t)
	var out syncBuffer
	m.Stdout = &out
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- m.demo(ctx, demoOptions{
			data: filepath.Join(t.TempDir(), "demo-data"), keywords: 300, countries: []string{"us", "de"},
			serve: serveConfig{addr: ln.Addr().String(), listener: ln},
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("demo: %v", err)
		}
	})
	client := &http.Client{Timeout: 10 * time.Second}
	get := func(u string) (int, string) {
		t.Helper()
		resp, err := client.Get(u)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	testservers.WaitFor(t, 2*time.Minute, "the demo to start serving", func() bool {
		select {
		case err := <-done:
			t.Fatalf("demo stopped: %v", err)
		default:
		}
		return strings.Contains(out.String(), "Press Ctrl-C")
	})
	printed := regexp.MustCompile(`(?m)^  (http://\S+)$`).FindAllStringSubmatch(out.String(), -1)
	if len(printed) < 2 {
		t.Fatalf("the demo printed no URLs to open:\n%s", out.String())
	}
	if strings.Contains(out.String(), "open ") {
		t.Errorf("the demo prints a platform command:\n%s", out.String())
	}
	for _, p := range printed {
		if status, _ := get(p[1]); status != 200 {
			t.Errorf("printed URL %s answers %d", p[1], status)
		}
	}
	status, home := get(base + "/")
	if status != 200 {
		t.Fatalf("home page answers %d", status)
	}
	block := regexp.MustCompile(`(?s)<div class="examples">(.*?)</div>`).FindStringSubmatch(home)
	if block == nil {
		t.Fatal("the home page offers no examples")
	}
	links := regexp.MustCompile(`href="([^"]+)"`).FindAllStringSubmatch(block[1], -1)
	countries := map[string]bool{}
	for _, l := range links {
		href := html.UnescapeString(l[1])
		status, page := get(base + href)
		if status != 200 {
			t.Errorf("example %s answers %d", href, status)
		}
		if !strings.Contains(page, "Related keywords") && !strings.Contains(page, "related") {
			t.Errorf("example %s is not a keyword page", href)
		}
		countries[href[len(href)-2:]] = true
	}
	if !countries["us"] || !countries["de"] {
		t.Errorf("examples %q do not cover both countries of the demo", links)
	}
	if !strings.Contains(home, "in 2 countries") {
		t.Error("the home page does not say the demo holds 2 countries")
	}
}
