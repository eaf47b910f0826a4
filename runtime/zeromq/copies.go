package zeromq

import (
	"context"
	"sync"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/internal/wait"
)

// copyScheduler sends retry copies, each from its own goroutine so that a
// worker never waits for one: at once when no delay was asked for, else
// once the delay has passed on the clock. ZeroMQ stores nothing, so a copy
// still waiting when the broker stops is lost; stop reports each one.
type copyScheduler struct {
	clock runtime.Clock
	ctx   context.Context

	mu      sync.Mutex
	pending map[*pendingCopy]struct{}
	closed  bool
	running sync.WaitGroup
}

// pendingCopy is a copy waiting for its delay to pass.
type pendingCopy struct {
	timer runtime.Timer
	lost  func()
}

func newCopyScheduler(ctx context.Context, clock runtime.Clock) *copyScheduler {
	return &copyScheduler{clock: clock, ctx: ctx, pending: map[*pendingCopy]struct{}{}}
}

// schedule runs send after delay, or calls lost when the scheduler stops
// first (or has stopped already).
func (s *copyScheduler) schedule(delay time.Duration, send func(context.Context), lost func()) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		lost()
		return
	}
	s.running.Add(1)
	if delay <= 0 {
		s.mu.Unlock()
		go func() {
			defer s.running.Done()
			send(s.ctx)
		}()
		return
	}
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
		defer s.running.Done()
		send(s.ctx)
	})
	s.mu.Unlock()
}

// stop cancels the copies still waiting, reports each as lost, and returns
// how many there were. Copies being sent go on; wait waits for them.
func (s *copyScheduler) stop() int {
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
		s.running.Done()
	}
	return len(lost)
}

// wait waits until the copies being sent are sent, or ctx ends.
func (s *copyScheduler) wait(ctx context.Context) error {
	return wait.Group(ctx, &s.running)
}
