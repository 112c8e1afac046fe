//go:build kwdatatestclock

package main

import (
	"os"
	"time"
)

// A binary built with the kwdatatestclock tag runs its clock ahead of
// the wall clock by $KWDATA_TEST_CLOCK_OFFSET (testClockEnv), a Go
// duration such as 9h30m. The tests that run kwdata as processes build it
// so: every process they start then shares one clock the test chose, far
// from the UTC midnight at which the access windows renew. A release build
// reads no such variable.
func init() {
	testClock = func(getenv func(string) string) func() time.Time {
		v := getenv(testClockEnv)
		if v == "" {
			return time.Now
		}
		off, err := time.ParseDuration(v)
		if err != nil {
			// Only tests build this file; a wrong offset is their bug.
			os.Stderr.WriteString("kwdata: " + testClockEnv + "=" + v + " is not a Go duration such as 9h30m\n")
			os.Exit(2)
		}
		return func() time.Time { return time.Now().Add(off) }
	}
}
