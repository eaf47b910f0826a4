package testkit

import (
	"testing"
	"time"
)

// Patience is how long a test waits for something to happen before it
// fails. It is generous: the machine may be busy.
const Patience = 30 * time.Second

// pollInterval is how often Eventually checks its condition.
const pollInterval = 5 * time.Millisecond

// Eventually polls cond until it holds, failing t after Patience.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	eventually(t, what, cond, Patience)
}

func eventually(t testing.TB, what string, cond func() bool, patience time.Duration) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(pollInterval)
	}
}
