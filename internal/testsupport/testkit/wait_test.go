package testkit

import (
	"testing"
	"time"
)

func TestEventuallyReturnsOnceTheConditionHolds(t *testing.T) {
	calls := 0
	Eventually(t, "the third call", func() bool {
		calls++
		return calls == 3
	})
	if calls != 3 {
		t.Errorf("cond called %d times, want 3 (it stops once it holds)", calls)
	}
}

func TestEventuallyFailsNamingWhatItWaitedFor(t *testing.T) {
	r := &recordingTB{TB: t}
	r.inTest(func() {
		eventually(r, "a condition that never holds", func() bool { return false }, 20*time.Millisecond)
		t.Error("eventually returned although the condition never held")
	})
	if got, want := r.end(), "timed out waiting for a condition that never holds"; got != want {
		t.Errorf("failures %q, want %q", got, want)
	}
}
