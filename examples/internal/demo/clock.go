package demo

import (
	"time"

	"github.com/streamgen/streamgen/runtime/clock"
)

// ScaledClock is a clock.Clock that runs Factor times faster than the wall
// clock: AfterFunc(30*time.Second, f) calls f after 30s/Factor, and Now
// advances Factor seconds per real second. Every delay the runtime waits
// out itself goes through its Clock, so with a ScaledClock a retry "in 30
// seconds" really is 30 seconds of the service's time, and a demo that
// waits for several of them is still over in a moment.
//
// A ScaledClock does not speed up what the runtime does not time itself,
// such as a RabbitMQ wait queue's TTL, which the broker enforces.
type ScaledClock struct {
	factor int
	origin time.Time // the clock's time when it was made
	real   time.Time // the wall clock's time then, with its monotonic reading
}

var _ clock.Clock = (*ScaledClock)(nil)

// NewScaledClock returns a clock that starts at the current time and runs
// factor times faster. A factor below 1 counts as 1.
func NewScaledClock(factor int) *ScaledClock {
	now := time.Now()
	return &ScaledClock{factor: max(factor, 1), origin: now.Round(0), real: now}
}

// Factor returns how many times faster than the wall clock c runs.
func (c *ScaledClock) Factor() int { return c.factor }

// Now returns the clock's time: its start plus Factor times the real time
// elapsed since.
func (c *ScaledClock) Now() time.Time {
	return c.origin.Add(time.Since(c.real) * time.Duration(c.factor))
}

// AfterFunc calls f in its own goroutine once d has passed on this clock,
// that is after d/Factor of real time.
func (c *ScaledClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	return time.AfterFunc(c.Real(d), f)
}

// Real returns how much real time d on this clock takes.
func (c *ScaledClock) Real(d time.Duration) time.Duration {
	return d / time.Duration(c.factor)
}
