// Package waitqueue names a RabbitMQ subscription's wait queues: the rule
// both the runtime's validation and the adapters' Consumer follow.
package waitqueue

import (
	"time"

	"github.com/streamgen/streamgen/internal/annotvalue"
)

// DefaultDelay is the retry delay of a subscription that sets none.
const DefaultDelay = 10 * time.Second

// Queue is a RabbitMQ wait queue: a retry copy sits in it for TTL, then
// the broker dead-letters it back to the subscription's queue.
type Queue struct {
	Name string
	TTL  time.Duration
}

// Of returns the wait queues of subscription sub, whose handlers retry
// when retries is set, with retry delays delays (none: DefaultDelay):
// none when no handler retries, "<sub>.retry" for a single delay, and one
// "<sub>.retry.<delay>" per step of a ladder.
func Of(sub string, retries bool, delays []time.Duration) []Queue {
	if !retries {
		return nil
	}
	if len(delays) == 0 {
		delays = []time.Duration{DefaultDelay}
	}
	if len(delays) == 1 {
		return []Queue{{Name: sub + ".retry", TTL: delays[0]}}
	}
	out := make([]Queue, len(delays))
	for i, d := range delays {
		out[i] = Queue{Name: sub + ".retry." + annotvalue.FormatDuration(d), TTL: d}
	}
	return out
}
