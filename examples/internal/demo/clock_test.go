package demo

import (
	"testing"
	"time"
)

func TestScaledClockFactor(t *testing.T) {
	if f := NewScaledClock(100).Factor(); f != 100 {
		t.Errorf("Factor() = %d, want 100", f)
	}
	if f := NewScaledClock(0).Factor(); f != 1 {
		t.Errorf("a factor of 0 gives Factor() = %d, want 1", f)
	}
	if r := NewScaledClock(100).Real(30 * time.Second); r != 300*time.Millisecond {
		t.Errorf("Real(30s) at 100× = %v, want 300ms", r)
	}
}

func TestScaledClockNowRunsFactorTimesFaster(t *testing.T) {
	c := NewScaledClock(100)
	before := c.Now()
	realStart := time.Now()
	for time.Since(realStart) < 10*time.Millisecond {
		time.Sleep(time.Millisecond)
	}
	// At least 10ms of real time passed between the two readings, so at
	// least a second passed on the clock.
	if d := c.Now().Sub(before); d < time.Second {
		t.Fatalf("the clock moved %v while 10ms passed, want at least 1s", d)
	}
}

func TestScaledClockAfterFuncFiresNoEarlierThanItsDelayOnTheClock(t *testing.T) {
	c := NewScaledClock(1000)
	scheduled := c.Now()
	fired := make(chan time.Time, 1)
	c.AfterFunc(10*time.Second, func() { fired <- c.Now() })
	select {
	case at := <-fired:
		if d := at.Sub(scheduled); d < 10*time.Second {
			t.Fatalf("fired %v after it was scheduled on the clock, want at least 10s", d)
		}
	case <-time.After(time.Minute):
		t.Fatal("AfterFunc(10s) at 1000× did not fire within a minute")
	}
}

func TestScaledClockTimerStops(t *testing.T) {
	c := NewScaledClock(2)
	timer := c.AfterFunc(time.Hour, func() { t.Error("a stopped timer fired") })
	if !timer.Stop() {
		t.Fatal("Stop() = false for a timer that had not fired")
	}
	if timer.Stop() {
		t.Fatal("a second Stop() = true")
	}
}
