package adapter

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/streamgen/streamgen/runtime/clock"
	"github.com/streamgen/streamgen/runtime/internal/wait"
)

// delayedCopies sends ZeroMQ retry copies once their delay has passed on
// the App's clock, each from the clock's callback, so that a worker never
// waits for one. ZeroMQ stores nothing, so a copy still waiting when the
// broker stops is lost; stop reports each one.
type delayedCopies struct {
	clock clock.Clock

	mu      sync.Mutex
	pending map[*pendingCopy]struct{}
	closed  bool
	running sync.WaitGroup
	// busy counts what running counts, so that a wait on nothing returns
	// at once whatever the context.
	busy atomic.Int64
}

// pendingCopy is a copy waiting for its delay to pass.
type pendingCopy struct {
	timer clock.Timer
	lost  func()
}

func newDelayedCopies(clock clock.Clock) *delayedCopies {
	return &delayedCopies{clock: clock, pending: map[*pendingCopy]struct{}{}}
}

// schedule runs send after delay, or calls lost when the copies are
// stopped first (or were stopped already).
func (s *delayedCopies) schedule(delay time.Duration, send, lost func()) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		lost()
		return
	}
	s.running.Add(1)
	s.busy.Add(1)
	p := &pendingCopy{lost: lost}
	s.pending[p] = struct{}{}
	// The lock is held until p.timer is set, so the callback (which takes
	// the lock first) always sees it.
	p.timer = s.clock.AfterFunc(delay, func() {
		s.mu.Lock()
		_, ok := s.pending[p]
		delete(s.pending, p)
		s.mu.Unlock()
		if !ok {
			return // stop took it
		}
		defer s.done()
		send()
	})
	s.mu.Unlock()
}

// stop cancels the copies still waiting, reports each as lost, and returns
// how many there were. Copies being sent go on; wait waits for them.
func (s *delayedCopies) stop() int {
	s.mu.Lock()
	s.closed = true
	lost := make([]*pendingCopy, 0, len(s.pending))
	for p := range s.pending {
		p.timer.Stop()
		lost = append(lost, p)
	}
	clear(s.pending)
	s.mu.Unlock()
	for _, p := range lost {
		p.lost()
		s.done()
	}
	return len(lost)
}

// waiting returns how many copies wait for their delay.
func (s *delayedCopies) waiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending)
}

func (s *delayedCopies) done() {
	s.busy.Add(-1)
	s.running.Done()
}

// wait waits until the copies being sent are sent, or ctx ends.
func (s *delayedCopies) wait(ctx context.Context) error {
	if s.busy.Load() == 0 {
		return nil
	}
	return wait.Group(ctx, &s.running)
}
