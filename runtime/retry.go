package runtime

import "time"

// RetryPath says who waits out a RabbitMQ subscription's retry delay (the
// annotation's retry=).
type RetryPath string

const (
	// RetryAuto, the default, is RetryBroker where it works (a quorum
	// queue on RabbitMQ 4.3 or later, one retry delay), else RetryQueue.
	RetryAuto RetryPath = ""
	// RetryQueue sends a failed message's copy to a wait queue, whose TTL
	// sends it back to the subscription's queue, and acknowledges the
	// original: two broker writes per retry, on every version.
	RetryQueue RetryPath = "queue"
	// RetryBroker hands a failed message back to its quorum queue
	// (basic.nack with requeue), which holds it for the retry delay itself
	// (RabbitMQ 4.3's x-delayed-retry-*): no copy, no wait queue write.
	// The queue delays what is handed back by one delay, the same each
	// time, so RetryDelays holds one delay at most. On a broker older
	// than 4.3, or a queue declared earlier without the arguments, the
	// subscription retries through wait queues, and says so at startup.
	RetryBroker RetryPath = "broker"
)

// BrokerRetryDelay returns the delay a RabbitMQ 4.3 quorum queue holds a
// retried message of s for when the queue retries it itself, and whether
// s asks for that or allows it (Retry): a quorum queue, acknowledged by
// hand, with handlers that retry and one retry delay (DefaultRetryDelay
// when none is set). Whether the broker can is the broker adapter's to
// say.
func (s *Subscription) BrokerRetryDelay() (time.Duration, bool) {
	if s.Retry == RetryQueue || s.QueueType != QuorumQueue || s.AutoAck || !s.Retries() || len(s.RetryDelays) > 1 {
		return 0, false
	}
	if len(s.RetryDelays) == 1 {
		return s.RetryDelays[0], true
	}
	return DefaultRetryDelay, true
}

// validateRetry checks Retry against the rest of s.
func (s *Subscription) validateRetry(add func(int, string, string, ...any)) {
	switch s.Retry {
	case RetryAuto, RetryQueue:
		return
	case RetryBroker:
	default:
		add(-1, "retry", "retry=%s is not a retry path: use retry=broker (the quorum queue waits out the delay, RabbitMQ 4.3 and later) or retry=queue (wait queues)", s.Retry)
		return
	}
	switch {
	case s.QueueType != QuorumQueue:
		add(-1, "retry", "retry=broker needs a quorum queue (RabbitMQ delays a handed-back message only in one): add queue_type=quorum, or use retry=queue")
	case s.AutoAck:
		add(-1, "retry", "retry=broker retries messages, which ack=auto cannot: remove one of them")
	case len(s.RetryDelays) > 1:
		add(-1, "retry_delay", "retry=broker takes one retry_delay: RabbitMQ delays a message handed back by the same time each time, so a ladder cannot be expressed; give one delay, or use retry=queue for the ladder")
	}
}
