package access

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"
)

const childDirEnv = "KWDATA_ACCESS_KILL_TEST_DIR"

// TestKill9 counts in a child process, kills it with SIGKILL and checks
// that every count flushed before the kill survived.
func TestKill9(t *testing.T) {
	if dir := os.Getenv(childDirEnv); dir != "" {
		killChild(t, dir)
		return
	}
	if testing.Short() {
		t.Skip("starts a child process")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKill9$")
	cmd.Env = append(os.Environ(), childDirEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	// The child waits on its standard input until it is killed; the pipe
	// also ends it should this process die first.
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() && sc.Text() != "counting" {
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	clk := newClock(t, "2026-11-22T12:00:00Z")
	s := openStore(t, dir, clk)
	used := 20 - remaining(t, s, mustIdentify(t, s, "", mustAddr(t, "192.0.2.1")))
	if used < 5 || used > 8 {
		t.Errorf("after kill -9: %d lookups counted, want the 5 flushed (up to 8 if a flush beat the kill)", used)
	}
}

// killChild counts 5 lookups, flushes them, counts 3 more and waits to be
// killed.
func killChild(t *testing.T, dir string) {
	clk := newClock(t, "2026-11-22T12:00:00Z")
	s, err := Open(Options{Dir: dir, Now: clk.Now, FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	c := mustIdentify(t, s, "", mustAddr(t, "192.0.2.1"))
	use(t, s, c, 5)
	if err := s.flush(); err != nil {
		t.Fatal(err)
	}
	use(t, s, c, 3)
	fmt.Println("counting")
	// This is the child process: the parent test SIGKILLs it once it
	// reads "counting". Until then it waits on the standard input the
	// parent holds open, which ends only if the parent closes it or dies.
	io.Copy(io.Discard, os.Stdin)
	t.Fatal("not killed: the parent closed the child's standard input")
}
