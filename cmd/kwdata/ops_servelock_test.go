//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/kwdata/kwdata/internal/testservers"
)

// TestSecondServerOnFolder: a second server on a data folder another
// server holds exits 1 at once with one line that says the folder is in
// use and names the other server's pid; the first serves on.
func TestSecondServerOnFolder(t *testing.T) {
	data := t.TempDir()
	base := startServer(t, data)
	status, out, _, err := runCmd(t, "serve", "--data", data, "--addr", "127.0.0.1:0")
	if status != 1 || !errors.Is(err, errFolderServed) {
		t.Fatalf("second server: exit %d, err = %v; want exit 1 saying the folder is in use", status, err)
	}
	checkMessage(t, "second server", err)
	if msg := err.Error(); !strings.Contains(msg, "in use") || !strings.Contains(msg, fmt.Sprintf("pid %d", os.Getpid())) {
		t.Errorf("refusal %q does not say the folder is in use by pid %d", msg, os.Getpid())
	}
	if out != "" {
		t.Errorf("the refused server printed %q", out)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Get(base + "/healthz")
	if err != nil {
		t.Fatalf("the first server does not answer after the refusal: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("the first server answers /healthz with %d after the refusal", resp.StatusCode)
	}
}

// testSecondServerOnFolder: with the shared Redis store the second server
// on a folder used to start, fail to open the index builds the first
// holds and answer 503 for ever; it exits 1 naming the first one's pid.
func (env *tiersEnv) testSecondServerOnFolder(t *testing.T, rd *testservers.Redis) {
	data := env.fresh(t)
	first := env.start(t, data, "--access", rd.URL())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	second := exec.CommandContext(ctx, env.bin, "serve", "--data", data, "--addr", "127.0.0.1:0", "--access", rd.URL())
	out, err := second.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("a second server on the folder of a running one still runs after 30s:\n%s", out)
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("second server: %v, want exit status 1\n%s", err, out)
	}
	want := fmt.Sprintf("in use: another kwdata server (pid %d ", first.cmd.Process.Pid)
	if !strings.Contains(string(out), want) {
		t.Errorf("second server's output does not say %q:\n%s", want, out)
	}
	tiersWantStatus(t, first.lookup(t, env.keywords[0]), 200, "")
}
