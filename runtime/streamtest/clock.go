package streamtest

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/streamgen/streamgen/runtime/clock"
)

// DefaultStart returns the time a Clock made with a zero start time shows
// first, 2025-01-01 00:00:00 UTC: a fixed instant, so logs and dead-letter
// headers are the same on every run.
func DefaultStart() time.Time { return time.Date(2025, time.January, 1, 0, 0, 0, 0, time.UTC) }

// Clock is a fake clock.Clock. Time stands still until Advance moves it;
// Advance then calls the functions of the timers that fall due, one at a
// time, in the order they are due (timers due at the same instant in the
// order they were made), each at its own due time and each run to completion
// before the next. The order of events is therefore the same on every run.
//
// A Clock is safe for concurrent use. A Harness makes its own; a Clock is
// also usable alone, for code that takes a clock.Clock.
type Clock struct {
	advancing sync.Mutex // one Advance at a time

	mu     sync.Mutex
	now    time.Time
	seq    uint64
	timers []*fakeTimer
	// track, when set, is told about every callback that starts (+1) and
	// returns (-1), so a Broker can count it as work in progress.
	track func(delta int)
}

// NewClock returns a fake clock that shows start, or DefaultStart when start
// is the zero time.
func NewClock(start time.Time) *Clock {
	if start.IsZero() {
		start = DefaultStart()
	}
	return &Clock{now: start}
}

var _ clock.Clock = (*Clock)(nil)

// Now returns the fake time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc arranges for f to be called in its own goroutine once Advance
// has moved the clock d past now. With d ≤ 0, f is called at once, in its
// own goroutine, as time.AfterFunc does.
func (c *Clock) AfterFunc(d time.Duration, f func()) clock.Timer {
	c.mu.Lock()
	c.seq++
	t := &fakeTimer{clock: c, due: c.now.Add(d), delay: d, seq: c.seq, f: f}
	if d > 0 {
		c.timers = append(c.timers, t)
		c.mu.Unlock()
		return t
	}
	track := c.track
	c.mu.Unlock()
	c.start(t, track)
	return t
}

// Advance moves the clock d forward. Every timer due by then fires in due
// order: the clock first shows its due time, then its function runs and
// returns before the next timer is considered. A function may set new
// timers; those due within d fire in the same Advance.
func (c *Clock) Advance(d time.Duration) {
	c.advance(d, nil)
}

// advance is Advance with a hook called after each fired function returned,
// with the clock still at that timer's due time.
func (c *Clock) advance(d time.Duration, afterEach func()) {
	c.advancing.Lock()
	defer c.advancing.Unlock()
	target := c.Now().Add(max(d, 0))
	for {
		done := c.fireNext(target)
		if done == nil {
			break
		}
		<-done
		if afterEach != nil {
			afterEach()
		}
	}
	c.mu.Lock()
	if target.After(c.now) {
		c.now = target
	}
	c.mu.Unlock()
}

// fireNext starts the earliest timer due by target and returns a channel
// closed when its function returns, or nil when no timer is due.
func (c *Clock) fireNext(target time.Time) <-chan struct{} {
	c.mu.Lock()
	next := -1
	for i, t := range c.timers {
		if t.due.After(target) {
			continue
		}
		if next < 0 || t.before(c.timers[next]) {
			next = i
		}
	}
	if next < 0 {
		c.mu.Unlock()
		return nil
	}
	t := c.timers[next]
	c.timers = append(c.timers[:next], c.timers[next+1:]...)
	if t.due.After(c.now) {
		c.now = t.due
	}
	track := c.track
	c.mu.Unlock()
	return c.start(t, track)
}

// start runs t's function in its own goroutine, telling track (when not
// nil) before it starts and after it returns. c.mu must not be held: track
// takes the broker's lock, which may be held while calling AfterFunc.
func (c *Clock) start(t *fakeTimer, track func(int)) <-chan struct{} {
	done := make(chan struct{})
	if track != nil {
		track(+1)
	}
	go func() {
		defer close(done)
		if track != nil {
			defer track(-1)
		}
		t.f()
	}()
	return done
}

// Pending returns how many timers wait for the clock to reach them.
func (c *Clock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// PendingDelays returns the delay each pending timer was set with (the d of
// its AfterFunc), earliest due first: a test can check that a retry copy
// waits the 30 seconds it asked for without moving the clock.
func (c *Clock) PendingDelays() []time.Duration {
	c.mu.Lock()
	pending := slices.Clone(c.timers)
	c.mu.Unlock()
	slices.SortFunc(pending, func(a, b *fakeTimer) int {
		if byDue := a.due.Compare(b.due); byDue != 0 {
			return byDue
		}
		return cmp.Compare(a.seq, b.seq)
	})
	delays := make([]time.Duration, len(pending))
	for i, t := range pending {
		delays[i] = t.delay
	}
	return delays
}

// Next returns when the earliest pending timer is due, and false when no
// timer is pending.
func (c *Clock) Next() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var first *fakeTimer
	for _, t := range c.timers {
		if first == nil || t.before(first) {
			first = t
		}
	}
	if first == nil {
		return time.Time{}, false
	}
	return first.due, true
}

// setTrack installs the work-tracking hook; see Clock.track.
func (c *Clock) setTrack(track func(delta int)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.track = track
}

type fakeTimer struct {
	clock *Clock
	due   time.Time
	delay time.Duration // what AfterFunc was asked to wait
	seq   uint64
	f     func()
}

func (t *fakeTimer) before(u *fakeTimer) bool {
	if !t.due.Equal(u.due) {
		return t.due.Before(u.due)
	}
	return t.seq < u.seq
}

// Stop cancels the timer; it reports whether it was still pending.
func (t *fakeTimer) Stop() bool {
	c := t.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, u := range c.timers {
		if u == t {
			c.timers = append(c.timers[:i], c.timers[i+1:]...)
			return true
		}
	}
	return false
}
