package testkit

import (
	"testing"
	"time"
)

// pollEvery is how often WaitFor re-checks its condition: short enough that
// a test ends soon after the state it waits for appears, long enough not to
// busy-load the Redis server under test.
const pollEvery = 10 * time.Millisecond

// WaitFor polls cond until it holds, or fails the test once timeout has
// passed, naming what it waited for.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(pollEvery)
	}
}
