//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kwdata/kwdata/internal/testservers"
)

// smallDemo runs the demo on data with a tiny sample until it serves, then
// stops it, and returns what it printed on stderr and its error.
func smallDemo(tb testing.TB, data string) (stderr string, err error) {
	tb.Helper()
	m, _, _ := testMain(tb)
	var out, errb syncBuffer
	m.Stdout, m.Stderr = &out, &errb
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- m.demo(ctx, demoOptions{
			data: data, keywords: 20, countries: []string{"us"},
			serve: serveConfig{addr: ln.Addr().String(), listener: ln},
		})
	}()
	var stopped error
	ended := false
	defer func() {
		if tb.Failed() {
			tb.Logf("the demo's log:\n%s", errb.String())
		}
	}()
	testservers.WaitFor(tb, 3*time.Minute, "the demo to serve", func() bool {
		select {
		case stopped = <-done:
			ended = true
			return true
		default:
		}
		return strings.Contains(out.String(), "Press Ctrl-C")
	})
	if ended {
		return errb.String(), stopped
	}
	cancel()
	return errb.String(), <-done
}

// wantFiles fails unless every file of want holds its content under dir.
func wantFiles(tb testing.TB, dir string, want map[string]string) {
	tb.Helper()
	for name, content := range want {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(b) != content {
			tb.Errorf("%s after the refused demo: %q, %v; want %q", name, b, err, content)
		}
	}
}

// TestDemoRefusesFolderItDidNotMake: the demo replaces its folder, so
// --data naming a folder it did not make (a real data folder with keys
// and run history, or any other) is refused in one line before any stage,
// and loses nothing.
func TestDemoRefusesFolderItDidNotMake(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	files := map[string]string{
		"access/accounts/MANIFEST-000001": "keys",
		"state/history.jsonl":             `{"date":"2026-11-21"}` + "\n",
		"notes.txt":                       "mine",
	}
	for name, content := range files {
		writeTestFile(t, data, name, content)
	}
	file := writeTestFile(t, t.TempDir(), "file", "a file")
	for _, tc := range []struct {
		data, says string
		keep       map[string]string
	}{
		{data, "was not made by it", files},
		{file, "is a file", nil},
	} {
		stderr, err := smallDemo(t, tc.data)
		if err == nil || !strings.HasPrefix(err.Error(), "cannot use "+tc.data+" for the demo") || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), "--data") {
			t.Errorf("demo --data %s: err = %v; want a refusal that says it %s and names --data", tc.data, err, tc.says)
			continue
		}
		checkMessage(t, "demo refusal", err)
		if strings.Contains(stderr, "1/4") {
			t.Errorf("the refused demo ran a stage:\n%s", stderr)
		}
		wantFiles(t, tc.data, tc.keep)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "a file" {
		t.Errorf("the file given as --data is now %q, %v", b, err)
	}
}

// TestDemoRefusesServedFolder: a demo folder that a running server holds
// (another demo, say) is refused with one line that names the server's
// pid, and the server keeps its folder and answers on.
func TestDemoRefusesServedFolder(t *testing.T) {
	data := filepath.Join(t.TempDir(), "demo-data")
	writeTestFile(t, data, demoMarkName, demoMark)
	writeTestFile(t, data, "sample/us/keyword-planner.csv", "served")
	base := startServer(t, data)

	stderr, err := smallDemo(t, data)
	if !errors.Is(err, errFolderServed) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Fatalf("demo on a served folder: err = %v; want a refusal naming pid %d", err, os.Getpid())
	}
	checkMessage(t, "demo refusal", err)
	if strings.Contains(stderr, "1/4") {
		t.Errorf("the refused demo ran a stage:\n%s", stderr)
	}
	wantFiles(t, data, map[string]string{"sample/us/keyword-planner.csv": "served", demoMarkName: demoMark})
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Get(base + "/readyz")
	if err != nil {
		t.Fatalf("the server does not answer after the refused demo: %v", err)
	}
	resp.Body.Close()
	// No index was ever built here, so not ready is the right answer; the
	// server's access folder must not be gone from under it.
	if _, err := os.Stat(accessDir(data)); err != nil {
		t.Errorf("the server's access folder after the refused demo: %v", err)
	}
}

// TestDemoReplacesItsOwnFolder: an empty folder is taken and marked, and
// a folder the demo made is replaced on the next run.
func TestDemoReplacesItsOwnFolder(t *testing.T) {
	data := filepath.Join(t.TempDir(), "demo-data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	if stderr, err := smallDemo(t, data); err != nil {
		t.Fatalf("demo in an empty folder: %v\n%s", err, stderr)
	}
	if _, err := os.Stat(filepath.Join(data, demoMarkName)); err != nil {
		t.Fatalf("the demo did not mark its folder: %v", err)
	}
	stale := writeTestFile(t, data, "lake/keywords/country=zz/stale.parquet", "old")
	if stderr, err := smallDemo(t, data); err != nil {
		t.Fatalf("demo in its own folder: %v\n%s", err, stderr)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the second demo kept what the first left: %v", err)
	}
}
