package zmtp

import (
	"context"
	"time"

	"github.com/streamgen/streamgen/runtime/clock"
	"github.com/streamgen/streamgen/runtime/internal/wait"
)

// Backoff between attempts to reach a peer.
const (
	FirstRedial = 100 * time.Millisecond
	MaxRedial   = 2 * time.Second
)

// Backoff spaces out the attempts to reach a peer: FirstRedial after the
// first failure, doubling up to MaxRedial. The zero value is ready.
type Backoff struct {
	next time.Duration
}

// Wait waits out the next pause on clock, or until ctx ends (then it
// returns ctx.Err()).
func (b *Backoff) Wait(ctx context.Context, clock clock.Clock) error {
	d := max(b.next, FirstRedial)
	b.next = min(2*d, MaxRedial)
	return wait.Sleep(ctx, clock, d)
}

// Reset makes the next pause FirstRedial again, after a success.
func (b *Backoff) Reset() { b.next = 0 }
