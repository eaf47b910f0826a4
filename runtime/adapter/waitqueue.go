package adapter

import (
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/internal/waitqueue"
)

// WaitQueue is a RabbitMQ wait queue: a retry copy sits in it for TTL, then
// the broker dead-letters it back to the subscription's queue.
type WaitQueue = waitqueue.Queue

// WaitQueues returns the RabbitMQ wait queues of subscription s: none when
// no handler retries, "<name>.retry" for a single delay, and one
// "<name>.retry.<delay>" per step of a ladder.
func WaitQueues(s *runtime.Subscription) []WaitQueue {
	return waitqueue.Of(s.Name, s.Retries(), s.RetryDelays)
}

// WaitQueueArguments returns the RabbitMQ arguments the wait queue q of the
// subscription s is declared with on a broker of version v (the same on
// every version today): x-message-ttl, q.TTL in milliseconds
// (rounded up, at least 1, as an int64), and x-dead-letter-exchange ""
// with x-dead-letter-routing-key s.Name, which send an expired retry copy
// back to the subscription's queue. A quorum subscription's wait queue is
// a quorum queue (x-queue-type quorum) that moves expired copies back
// at least once (x-dead-letter-strategy at-least-once, which needs
// x-overflow reject-publish), so a copy survives the loss of a node on
// its way back. Topology gives them with the wait queue.
func WaitQueueArguments(s *runtime.Subscription, q WaitQueue, v RabbitMQVersion) map[string]any {
	args := map[string]any{
		"x-message-ttl":             max(int64((q.TTL+time.Millisecond-1)/time.Millisecond), 1), // 0 would expire copies at once
		"x-dead-letter-exchange":    "",
		"x-dead-letter-routing-key": s.Name,
	}
	if s.QueueType == runtime.QuorumQueue {
		args["x-queue-type"] = string(runtime.QuorumQueue)
		args["x-dead-letter-strategy"] = "at-least-once"
		args["x-overflow"] = "reject-publish"
	}
	return args
}

// WaitQueueFor picks from qs, a subscription's WaitQueues, the wait queue
// for a message whose attempt-th delivery failed. With no delay requested,
// attempt n waits in step min(n, steps). With a requested delay, the
// smallest step at least that long is chosen, or the longest step when
// none is. qs must not be empty. It allocates nothing, so the Consumer
// builds the wait queues once and picks from them for every retry.
func WaitQueueFor(qs []WaitQueue, attempt int, requested time.Duration) WaitQueue {
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
