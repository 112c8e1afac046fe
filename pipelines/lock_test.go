package pipelines

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A helper process: with KWDATA_LOCK_HELPER set to a data folder, the test
// binary takes the run lock, says "locked" and waits for stdin to close.
func TestMain(m *testing.M) {
	if data := os.Getenv("KWDATA_LOCK_HELPER"); data != "" {
		release, err := Lock(data, nil)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("locked")
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		_ = release()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// startHolder starts a process that holds the run lock of data.
func startHolder(tb testing.TB, data string) (cmd *exec.Cmd, done func()) {
	tb.Helper()
	cmd = exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "KWDATA_LOCK_HELPER="+data)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "locked" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		tb.Fatalf("helper said %q, %v", line, err)
	}
	return cmd, func() {
		stdin.Close()
		_ = cmd.Wait()
	}
}

// deadPID returns the pid of a process that has exited.
func deadPID(tb testing.TB) int {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		tb.Fatal(err)
	}
	pid := cmd.Process.Pid
	if processAlive(pid) {
		tb.Skip("the pid of an exited process was reused already")
	}
	return pid
}

func TestLockRefusesASecondHolderInTheSameProcess(t *testing.T) {
	data := t.TempDir()
	release, err := Lock(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Lock(data, nil)
	var le *LockedError
	if !errors.As(err, &le) || !errors.Is(err, ErrLocked) {
		t.Fatalf("second Lock: %v, want a LockedError", err)
	}
	host, _ := os.Hostname()
	if le.Holder.PID != os.Getpid() || le.Holder.Host != host || le.Holder.Started.IsZero() {
		t.Errorf("holder = %+v, want this process on %s", le.Holder, host)
	}
	if !strings.Contains(err.Error(), fmt.Sprint(os.Getpid())) {
		t.Errorf("message %q does not name the holder's pid", err)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	if err := release(); err != nil {
		t.Errorf("second release: %v", err)
	}
	release, err = Lock(data, nil)
	if err != nil {
		t.Fatalf("Lock after release: %v", err)
	}
	release()
}

func TestLockRefusedWhileAnotherProcessHoldsIt(t *testing.T) {
	data := t.TempDir()
	cmd, done := startHolder(t, data)
	_, err := Lock(data, nil)
	var le *LockedError
	if !errors.As(err, &le) || le.Holder.PID != cmd.Process.Pid {
		t.Fatalf("Lock while held: %v, want a LockedError naming pid %d", err, cmd.Process.Pid)
	}
	done()
	release, err := Lock(data, nil)
	if err != nil {
		t.Fatalf("Lock after the holder released: %v", err)
	}
	release()
}

func TestLockOfAKilledProcessIsTakenOver(t *testing.T) {
	data := t.TempDir()
	cmd, done := startHolder(t, data)
	pid := cmd.Process.Pid
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	done()
	logger, logs := newLogger()
	release, err := Lock(data, logger)
	if err != nil {
		t.Fatalf("Lock after the holder died: %v", err)
	}
	defer release()
	if !strings.Contains(logs.String(), "stale lock") || !strings.Contains(logs.String(), fmt.Sprintf("pid=%d", pid)) {
		t.Errorf("no takeover line naming pid %d in %q", pid, logs.String())
	}
}

func TestStaleLockFileIsTakenOver(t *testing.T) {
	data := t.TempDir()
	pid := deadPID(t)
	path := filepath.Join(StateDir(data), "run.lock")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	b, _ := json.Marshal(LockHolder{PID: pid, Host: host, Started: time.Now().Add(-time.Hour)})
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	logger, logs := newLogger()
	release, err := Lock(data, logger)
	if err != nil {
		t.Fatalf("Lock over a stale lock: %v", err)
	}
	if !strings.Contains(logs.String(), "taking over a stale lock") || !strings.Contains(logs.String(), fmt.Sprintf("pid=%d", pid)) {
		t.Errorf("no takeover line naming pid %d in %q", pid, logs.String())
	}
	var h LockHolder
	b, _ = os.ReadFile(path)
	if err := json.Unmarshal(b, &h); err != nil || h.PID != os.Getpid() {
		t.Errorf("lock file holds %q, want this process", b)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); len(b) != 0 {
		t.Errorf("released lock still names a holder: %q", b)
	}
	// A free lock is not stale: no takeover line the next time.
	logger, logs = newLogger()
	release, err = Lock(data, logger)
	if err != nil {
		t.Fatal(err)
	}
	release()
	if strings.Contains(logs.String(), "stale") {
		t.Errorf("free lock reported as stale: %q", logs.String())
	}
}

func TestProcessAlive(t *testing.T) {
	tests := []struct {
		pid  int
		want bool
	}{
		{os.Getpid(), true},
		{0, false},
		{-1, false},
		{deadPID(t), false},
	}
	for _, tt := range tests {
		if got := processAlive(tt.pid); got != tt.want {
			t.Errorf("processAlive(%d) = %v, want %v", tt.pid, got, tt.want)
		}
	}
}
