package testservers

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// fatalTB records the Fatalf of WaitFor and ends its goroutine as
// testing's own does.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// runWait runs WaitFor against a fatalTB on a goroutine of its own and
// returns what it failed with ("" when it returned).
func runWait(timeout time.Duration, what string, cond func() bool) string {
	tb := &fatalTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		WaitFor(tb, timeout, what, cond)
	}()
	<-done
	return tb.msg
}

// TestWaitForReturnsOnceTheConditionHolds: WaitFor polls until cond
// holds, however many polls that takes, and returns without failing.
func TestWaitForReturnsOnceTheConditionHolds(t *testing.T) {
	t.Parallel()
	polls := 0
	if msg := runWait(time.Minute, "the fifth poll", func() bool { polls++; return polls == 5 }); msg != "" {
		t.Fatalf("WaitFor failed with %q for a condition that held", msg)
	}
	if polls != 5 {
		t.Errorf("WaitFor polled %d times, want 5: it must stop at the first poll that holds", polls)
	}
}

// TestWaitForFailsNamingWhatItWaitedFor: a condition that never holds
// fails the test after the timeout, with a message that says what it
// waited for.
func TestWaitForFailsNamingWhatItWaitedFor(t *testing.T) {
	t.Parallel()
	start := time.Now()
	polls := 0
	msg := runWait(30*time.Millisecond, "the index to open", func() bool { polls++; return false })
	if !strings.Contains(msg, "the index to open") || !strings.Contains(msg, "30ms") {
		t.Fatalf("WaitFor failed with %q, want the timeout and what it waited for", msg)
	}
	if took := time.Since(start); took < 30*time.Millisecond {
		t.Errorf("WaitFor gave up after %s, before its timeout of 30ms", took)
	}
	if polls < 2 {
		t.Errorf("WaitFor polled %d times in 30ms, want it to keep polling", polls)
	}
}
