package streamtest_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime/streamtest"
)

// firings records which timers fired, and what the clock showed then.
type firings struct {
	mu   sync.Mutex
	got  []string
	when []time.Time
}

func (f *firings) fn(c *streamtest.Clock, name string) func() {
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.got = append(f.got, name)
		f.when = append(f.when, c.Now())
	}
}

func (f *firings) names() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.got)
}

func TestClockStartsAtTheGivenTimeOrTheDefault(t *testing.T) {
	if got := streamtest.NewClock(time.Time{}).Now(); !got.Equal(streamtest.DefaultStart()) {
		t.Errorf("zero start: Now() = %v, want DefaultStart %v", got, streamtest.DefaultStart())
	}
	start := time.Date(2030, 5, 6, 7, 8, 9, 0, time.UTC)
	if got := streamtest.NewClock(start).Now(); !got.Equal(start) {
		t.Errorf("Now() = %v, want %v", got, start)
	}
}

func TestClockStandsStillUntilAdvanced(t *testing.T) {
	c := streamtest.NewClock(time.Time{})
	var f firings
	c.AfterFunc(time.Second, f.fn(c, "a"))
	before := c.Now()
	// Real time passing changes nothing.
	runtimeYield()
	if got := c.Now(); !got.Equal(before) {
		t.Fatalf("the clock moved by itself: %v → %v", before, got)
	}
	if got := f.names(); len(got) != 0 {
		t.Fatalf("fired without Advance: %v", got)
	}
	c.Advance(999 * time.Millisecond)
	if got := f.names(); len(got) != 0 {
		t.Fatalf("fired before its due time: %v", got)
	}
	c.Advance(time.Millisecond)
	if got := f.names(); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("fired %v, want [a]", got)
	}
	if got, want := c.Now(), before.Add(time.Second); !got.Equal(want) {
		t.Errorf("Now() = %v, want %v", got, want)
	}
}

func TestClockFiresInDueOrderAtEachDueTime(t *testing.T) {
	c := streamtest.NewClock(time.Time{})
	start := c.Now()
	var f firings
	// Made out of order; "b1" and "b2" are due at the same instant.
	c.AfterFunc(3*time.Second, f.fn(c, "c"))
	c.AfterFunc(2*time.Second, f.fn(c, "b1"))
	c.AfterFunc(time.Second, f.fn(c, "a"))
	c.AfterFunc(2*time.Second, f.fn(c, "b2"))
	c.AfterFunc(10*time.Second, f.fn(c, "late"))

	c.Advance(5 * time.Second)

	if got, want := f.names(), []string{"a", "b1", "b2", "c"}; !slices.Equal(got, want) {
		t.Fatalf("fired %v, want %v", got, want)
	}
	wantWhen := []time.Duration{time.Second, 2 * time.Second, 2 * time.Second, 3 * time.Second}
	for i, w := range wantWhen {
		if got := f.when[i].Sub(start); got != w {
			t.Errorf("%s saw the clock at +%v, want +%v", f.got[i], got, w)
		}
	}
	if got := c.Now().Sub(start); got != 5*time.Second {
		t.Errorf("after Advance(5s) the clock is at +%v", got)
	}
	if n := c.Pending(); n != 1 {
		t.Errorf("Pending() = %d, want 1 (the late timer)", n)
	}
	next, ok := c.Next()
	if !ok || next.Sub(start) != 10*time.Second {
		t.Errorf("Next() = +%v, %v; want +10s, true", next.Sub(start), ok)
	}
}

func TestClockFiresTimersSetByCallbacksWithinTheSameAdvance(t *testing.T) {
	c := streamtest.NewClock(time.Time{})
	start := c.Now()
	var f firings
	c.AfterFunc(time.Second, func() {
		f.fn(c, "first")()
		c.AfterFunc(time.Second, f.fn(c, "second"))  // due at +2s: within the Advance
		c.AfterFunc(time.Minute, f.fn(c, "outside")) // due at +61s: not
	})
	c.Advance(3 * time.Second)
	if got, want := f.names(), []string{"first", "second"}; !slices.Equal(got, want) {
		t.Fatalf("fired %v, want %v", got, want)
	}
	if got := f.when[1].Sub(start); got != 2*time.Second {
		t.Errorf("second fired at +%v, want +2s", got)
	}
	if c.Pending() != 1 {
		t.Errorf("Pending() = %d, want 1", c.Pending())
	}
}

func TestClockStopCancelsAPendingTimer(t *testing.T) {
	c := streamtest.NewClock(time.Time{})
	var f firings
	tm := c.AfterFunc(time.Second, f.fn(c, "stopped"))
	c.AfterFunc(time.Second, f.fn(c, "kept"))
	if !tm.Stop() {
		t.Fatal("Stop() on a pending timer = false, want true")
	}
	if tm.Stop() {
		t.Error("second Stop() = true, want false")
	}
	c.Advance(time.Second)
	if got := f.names(); !slices.Equal(got, []string{"kept"}) {
		t.Fatalf("fired %v, want [kept]", got)
	}
	fired := c.AfterFunc(time.Second, f.fn(c, "fired"))
	c.Advance(time.Second)
	if fired.Stop() {
		t.Error("Stop() after the timer fired = true, want false")
	}
	if _, ok := c.Next(); ok {
		t.Error("Next() reports a pending timer after all fired or stopped")
	}
}

func TestClockPendingDelaysAreTheAskedDelaysInDueOrder(t *testing.T) {
	c := streamtest.NewClock(time.Time{})
	if got := c.PendingDelays(); len(got) != 0 {
		t.Fatalf("PendingDelays() of a new clock = %v, want none", got)
	}
	var f firings
	c.AfterFunc(3*time.Second, f.fn(c, "c")) // due at +3s
	c.AfterFunc(time.Second, f.fn(c, "a"))   // due at +1s
	c.Advance(500 * time.Millisecond)
	c.AfterFunc(time.Second, f.fn(c, "b"))        // due at +1.5s
	c.AfterFunc(2*time.Second, f.fn(c, "b2"))     // due at +2.5s
	c.AfterFunc(time.Second, f.fn(c, "x")).Stop() // stopped: not pending

	// Made in the order c, a, b, b2; due in the order a, b, b2, c. Each
	// shows what it was set with, not what is left of it.
	want := []time.Duration{time.Second, time.Second, 2 * time.Second, 3 * time.Second}
	if got := c.PendingDelays(); !slices.Equal(got, want) {
		t.Fatalf("PendingDelays() = %v, want %v", got, want)
	}
	c.Advance(time.Second) // a and b fire
	if got, want := c.PendingDelays(), []time.Duration{2 * time.Second, 3 * time.Second}; !slices.Equal(got, want) {
		t.Fatalf("after a and b fired PendingDelays() = %v, want %v", got, want)
	}
	if got := f.names(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("fired %v, want [a b]", got)
	}
}

func TestClockAfterFuncWithoutDelayCallsAtOnce(t *testing.T) {
	c := streamtest.NewClock(time.Time{})
	done := make(chan time.Time)
	c.AfterFunc(0, func() { done <- c.Now() })
	select {
	case got := <-done:
		if !got.Equal(streamtest.DefaultStart()) {
			t.Errorf("callback saw %v, want the unchanged clock %v", got, streamtest.DefaultStart())
		}
	case <-time.After(time.Minute):
		t.Fatal("AfterFunc(0, f) did not call f without Advance")
	}
	if c.Pending() != 0 {
		t.Errorf("Pending() = %d after an immediate timer", c.Pending())
	}
}

func TestClockNegativeAdvanceDoesNotMoveBack(t *testing.T) {
	c := streamtest.NewClock(time.Time{})
	c.Advance(-time.Hour)
	if got := c.Now(); !got.Equal(streamtest.DefaultStart()) {
		t.Errorf("Now() = %v after Advance(-1h), want %v", got, streamtest.DefaultStart())
	}
}

// runtimeYield lets other goroutines run for a moment; the assertion next to
// it does not depend on how long.
func runtimeYield() { time.Sleep(time.Millisecond) }
