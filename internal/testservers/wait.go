package testservers

import (
	"testing"
	"time"
)

// maxPoll is the longest pause between two polls of WaitFor: short
// enough that a test ends soon after its condition holds, long enough
// that a poll of a server does not keep a core busy on a loaded machine.
const maxPoll = 50 * time.Millisecond

// WaitFor polls cond until it holds, pausing 1 ms after the first poll
// and twice as long after each next one, up to 50 ms, and fails tb
// ("waited 5s for <what>; it never happened") once timeout has passed
// without it. This is how a test waits for something another goroutine
// or process does: never a sleep of a fixed length. Call it from the
// test's goroutine, as tb.Fatal requires; cond runs there too.
func WaitFor(tb testing.TB, timeout time.Duration, what string, cond func() bool) {
	tb.Helper()
	if !Poll(timeout, cond) {
		tb.Fatalf("waited %s for %s; it never happened", timeout, what)
	}
}

// Poll polls cond as WaitFor does and reports whether it held before
// timeout passed. It fails no test, so it serves a goroutine of the test
// and a wait whose failure message needs the last state cond saw.
func Poll(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for pause := time.Millisecond; !cond(); pause = min(2*pause, maxPoll) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pause)
	}
	return true
}
