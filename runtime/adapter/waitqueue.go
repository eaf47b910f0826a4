package adapter

import (
	"time"

	"github.com/streamgen/streamgen/runtime"
)

// WaitQueueFor picks from qs, a subscription's WaitQueues, the wait queue
// for a message whose attempt-th delivery failed. With no delay requested,
// attempt n waits in step min(n, steps). With a requested delay, the
// smallest step at least that long is chosen, or the longest step when
// none is. qs must not be empty. It allocates nothing, so the Consumer
// builds the wait queues once and picks from them for every retry.
func WaitQueueFor(qs []runtime.WaitQueue, attempt int, requested time.Duration) runtime.WaitQueue {
	if requested > 0 {
		for _, q := range qs {
			if q.TTL >= requested {
				return q
			}
		}
		return qs[len(qs)-1]
	}
	i := min(max(attempt, 1), len(qs)) - 1
	return qs[i]
}
