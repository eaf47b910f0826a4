package benchpair

import (
	"fmt"
	"sync/atomic"
	"time"
)

// Gate paces a consumer that keeps running across the rounds of a pair
// benchmark (an App, a consume loop). The consumer calls Begin before it
// handles a message and Done when a message is through; the benchmark fills
// the queue for a round and calls Round. Begin holds the consumer at the
// first message of each round until Round opens it, so a round is timed
// from its start, with the consumer's buffers already full, to its last
// message, and filling the queue is never timed.
//
// Begin and Done are called by one goroutine at a time (a consumer with one
// handler at a time).
type Gate struct {
	batch   int64
	open    chan struct{}
	done    chan time.Time
	inRound atomic.Bool
	count   atomic.Int64
}

// NewGate returns a Gate for rounds of batch messages.
func NewGate(batch int) *Gate {
	return &Gate{batch: int64(batch), open: make(chan struct{}), done: make(chan time.Time, 1)}
}

// Begin waits for the round to open when the message about to be handled
// is the first of a round.
func (g *Gate) Begin() {
	if !g.inRound.Load() {
		<-g.open
		g.inRound.Store(true)
	}
}

// Done counts a message through; the batch-th ends the round.
func (g *Gate) Done() {
	if g.count.Add(1) == g.batch {
		end := time.Now()
		g.count.Store(0)
		g.inRound.Store(false)
		g.done <- end
	}
}

// Round opens a round and returns the time until its last message was
// through, or an error when the consumer did not start it or finish it
// within timeout.
func (g *Gate) Round(timeout time.Duration) (time.Duration, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	start := time.Now()
	select {
	case g.open <- struct{}{}:
	case <-t.C:
		return 0, fmt.Errorf("benchpair: the consumer did not start the round within %v", timeout)
	}
	select {
	case end := <-g.done:
		return end.Sub(start), nil
	case <-t.C:
		return 0, fmt.Errorf("benchpair: %d of %d messages handled within %v", g.count.Load(), g.batch, timeout)
	}
}
