package clock_test

import (
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime/clock"
)

func TestSystem(t *testing.T) {
	var c clock.Clock = clock.System{}
	before := time.Now()
	if now := c.Now(); now.Before(before) {
		t.Errorf("Now() = %v, before %v", now, before)
	}
	fired := make(chan struct{})
	c.AfterFunc(time.Millisecond, func() { close(fired) })
	select {
	case <-fired:
	case <-time.After(time.Minute):
		t.Fatal("AfterFunc did not fire")
	}
	never := c.AfterFunc(time.Hour, func() { t.Error("a stopped timer fired") })
	if !never.Stop() {
		t.Error("Stop() on a pending timer = false")
	}
}
