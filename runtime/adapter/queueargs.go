package adapter

import (
	"time"

	"github.com/streamgen/streamgen/runtime"
)

// RabbitMQVersion is the version of the RabbitMQ broker queues are declared
// on, as far as their arguments depend on it. The zero value is a broker of
// unknown version, declared for as 3.x.
type RabbitMQVersion struct {
	Major, Minor int
}

// AtLeast reports whether v is major.minor or later.
func (v RabbitMQVersion) AtLeast(major, minor int) bool {
	return v.Major > major || v.Major == major && v.Minor >= minor
}

// DefaultDeliveryLimit reports whether the broker gives a quorum queue
// declared without x-delivery-limit a limit anyway: RabbitMQ 4.0 and later
// do (20).
func (v RabbitMQVersion) DefaultDeliveryLimit() bool { return v.AtLeast(4, 0) }

// DelayedRetry reports whether the broker's quorum queues can hold a
// message handed back for a delay before delivering it again
// (x-delayed-retry-*): RabbitMQ 4.3 and later.
func (v RabbitMQVersion) DelayedRetry() bool { return v.AtLeast(4, 3) }

// ArgumentVersions returns the RabbitMQ versions from which the arguments
// Topology gives may differ, oldest first: the zero version (3.x), then
// 4.0 (DefaultDeliveryLimit), then 4.3 (DelayedRetry). Arguments on any
// version are those of the latest of these it is at least; documents that
// describe the queues show each.
func ArgumentVersions() []RabbitMQVersion {
	return []RabbitMQVersion{{}, {Major: 4}, {Major: 4, Minor: 3}}
}

// BrokerRetry returns the delay subscription s's queue holds a retried
// message for on a broker of version v, when the queue retries by itself
// there (runtime.RetryBroker, or RetryAuto where it can): a quorum queue
// on a broker with DelayedRetry, a subscription that retries, with one
// retry delay (runtime.Subscription.BrokerRetryDelay). ok is false when
// its retries are copies through wait queues; why then says what stops
// the queue's own retry, "" when the subscription chose wait queues or
// does not retry.
func BrokerRetry(s *runtime.Subscription, v RabbitMQVersion) (delay time.Duration, ok bool, why string) {
	delay, ok = s.BrokerRetryDelay()
	switch {
	case s.Retry == runtime.RetryQueue || !s.Retries() || s.AutoAck:
		return 0, false, ""
	case s.QueueType != runtime.QuorumQueue:
		return 0, false, "a classic queue cannot delay a message itself"
	case !ok:
		return 0, false, "a queue delays a message handed back by one delay, and retry_delay is a ladder"
	case !v.DelayedRetry():
		return 0, false, "the broker is older than RabbitMQ 4.3, whose quorum queues delay a message handed back"
	}
	return delay, true, ""
}

// DelayedRetryArguments returns the names of the queue arguments by which
// a quorum queue retries by itself (see QueueArguments). A queue that
// exists without them (declared before its subscription retried through
// it) is used as it is, and its subscription retries through wait queues:
// a queue's arguments never change.
func DelayedRetryArguments() []string {
	return []string{"x-delayed-retry-type", "x-delayed-retry-min", "x-delayed-retry-max"}
}

// QueueRole is what a RabbitMQ queue is for.
type QueueRole uint8

const (
	// ConsumedRole is a subscription's queue.
	ConsumedRole QueueRole = iota
	// WaitRole is a wait queue: retry copies wait out a TTL there.
	WaitRole
	// DeadLetterRole is a dead-letter queue: parked messages.
	DeadLetterRole
	// SuspectRole is a subscription's suspect queue: messages that came
	// back after their worker died, each handled alone
	// (runtime.Subscription.SuspectQueue).
	SuspectRole
)

func (r QueueRole) String() string {
	switch r {
	case WaitRole:
		return "wait queue"
	case SuspectRole:
		return "suspect queue"
	case DeadLetterRole:
		return "dead-letter queue"
	}
	return "queue"
}

// Queue is a RabbitMQ queue that subscriptions need, as it is declared:
// durable, not exclusive, not auto-deleted, with Arguments.
type Queue struct {
	Name string
	Role QueueRole
	// Subscription is the name of the subscription that needs the queue
	// (the first, when several do).
	Subscription string
	// TTL is a wait queue's.
	TTL time.Duration
	// Arguments are the queue's arguments, nil when none.
	Arguments map[string]any
	// Defaulted are the arguments among Arguments that the subscription
	// does not ask for but streamgen adds of its own accord (dead-lettering,
	// a delivery limit): a queue declared before streamgen added them lacks
	// them, and runtime/rabbitmq uses it as it is, with a warning.
	Defaulted []string
}

// Topology returns the queues subs need on a RabbitMQ broker of version v,
// each once, with their arguments: the consumed queues first, then the
// wait queues, then the dead-letter queues. A queue that has several roles
// is declared as its first: a dead-letter queue that another subscription
// consumes is declared as that one's queue. runtime/rabbitmq declares
// these queues as they are; documents that describe the queues show them.
func Topology(subs []*runtime.Subscription, v RabbitMQVersion) []Queue {
	var out []Queue
	seen := map[string]bool{}
	add := func(q Queue) {
		if !seen[q.Name] {
			seen[q.Name] = true
			out = append(out, q)
		}
	}
	for _, s := range subs {
		var defaulted []string
		if s.QueueDeadLetter() != "" {
			defaulted = append(defaulted, "x-dead-letter-exchange", "x-dead-letter-routing-key")
			if s.QueueType == runtime.QuorumQueue {
				defaulted = append(defaulted, "x-dead-letter-strategy", "x-overflow")
			}
		}
		if s.QueueType == runtime.QuorumQueue && s.DeliveryLimit == 0 {
			defaulted = append(defaulted, "x-delivery-limit")
		}
		add(Queue{Name: s.Name, Role: ConsumedRole, Subscription: s.Name, Arguments: QueueArguments(s, v), Defaulted: defaulted})
	}
	for _, s := range subs {
		for _, wq := range WaitQueues(s) {
			add(Queue{Name: wq.Name, Role: WaitRole, Subscription: s.Name, TTL: wq.TTL, Arguments: WaitQueueArguments(s, wq, v)})
		}
	}
	for _, s := range subs {
		if name := s.SuspectQueue(); name != "" {
			args := SuspectQueueArguments(s, v)
			var defaulted []string
			if _, ok := args["x-delivery-limit"]; ok {
				defaulted = []string{"x-delivery-limit"}
			}
			add(Queue{Name: name, Role: SuspectRole, Subscription: s.Name, Arguments: args, Defaulted: defaulted})
		}
	}
	for _, s := range subs {
		for _, dl := range s.DeadLetters() {
			args := DeadLetterQueueArguments(s, v)
			var defaulted []string
			if _, ok := args["x-delivery-limit"]; ok {
				// Only on a version that would give it a limit of its own.
				defaulted = []string{"x-delivery-limit"}
			}
			add(Queue{Name: dl, Role: DeadLetterRole, Subscription: s.Name, Arguments: args, Defaulted: defaulted})
		}
	}
	return out
}

// QueueArguments returns the RabbitMQ arguments subscription s's queue
// is declared with on a broker of version v, nil when none:
//
//   - x-queue-type when QueueType is set;
//   - x-delivery-limit (an int64) on a quorum queue, always:
//     DeliveryLimitInForce;
//   - x-single-active-consumer true when SingleActiveConsumer is;
//   - where the queue retries by itself (BrokerRetry, RabbitMQ 4.3),
//     x-delayed-retry-type "returned" with x-delayed-retry-min and
//     x-delayed-retry-max the delay in milliseconds (int64): a message
//     handed back with basic.nack is held that long, the same each time,
//     and counted in x-acquired-count, not x-delivery-count, which goes on
//     counting only the returns of a worker that died (so the Consumer
//     tells a crash from a retry, and the delivery limit bounds crashes
//     alone);
//   - when the subscription has a dead-letter queue (QueueDeadLetter),
//     x-dead-letter-exchange "" and x-dead-letter-routing-key that queue,
//     so that a message the broker gives up on (past the delivery limit,
//     or expired) is parked there rather than dropped; on a quorum queue
//     with x-dead-letter-strategy at-least-once (which needs x-overflow
//     reject-publish), so that it survives the loss of a node on its way.
func QueueArguments(s *runtime.Subscription, v RabbitMQVersion) map[string]any {
	var args map[string]any
	set := func(k string, v any) {
		if args == nil {
			args = map[string]any{}
		}
		args[k] = v
	}
	if s.QueueType != "" {
		set("x-queue-type", string(s.QueueType))
	}
	if limit := s.DeliveryLimitInForce(); limit > 0 {
		set("x-delivery-limit", int64(limit))
	}
	if s.SingleActiveConsumer {
		set("x-single-active-consumer", true)
	}
	if delay, ok, _ := BrokerRetry(s, v); ok {
		ms := max(int64((delay+time.Millisecond-1)/time.Millisecond), 1)
		set("x-delayed-retry-type", "returned")
		set("x-delayed-retry-min", ms)
		set("x-delayed-retry-max", ms)
	}
	if dl := s.QueueDeadLetter(); dl != "" {
		set("x-dead-letter-exchange", "")
		set("x-dead-letter-routing-key", dl)
		if s.QueueType == runtime.QuorumQueue {
			set("x-dead-letter-strategy", "at-least-once")
			set("x-overflow", "reject-publish")
		}
	}
	return args
}

// DeadLetterQueueArguments returns the RabbitMQ arguments the
// dead-letter queues of subscription s are declared with on a broker of
// version v: x-queue-type quorum for a quorum subscription, so parked
// messages are replicated as its own are, and there, where the broker
// gives quorum queues a delivery limit of its own (4.0 and later:
// DefaultDeliveryLimit), x-delivery-limit -1 (no limit), so that reading
// its letters and handing them back never drops one; nil for a classic
// subscription.
func DeadLetterQueueArguments(s *runtime.Subscription, v RabbitMQVersion) map[string]any {
	if s.QueueType != runtime.QuorumQueue {
		return nil
	}
	args := map[string]any{"x-queue-type": string(runtime.QuorumQueue)}
	if v.DefaultDeliveryLimit() {
		args["x-delivery-limit"] = int64(-1)
	}
	return args
}

// SuspectQueueArguments returns the RabbitMQ arguments the suspect queue
// of subscription s (runtime.Subscription.SuspectQueue) is declared with
// on a broker of version v, nil when none: those of its dead-letter
// queues (DeadLetterQueueArguments: x-queue-type quorum for a quorum
// subscription, so that what it holds is replicated as its own messages
// are, and on RabbitMQ 4.0 and later x-delivery-limit -1, for the
// Consumer counts a suspect's crashes itself, and the broker's default
// limit of 20 would drop one whose worker died that often while setting
// it aside again), and x-single-active-consumer when the subscription's
// queue has it.
func SuspectQueueArguments(s *runtime.Subscription, v RabbitMQVersion) map[string]any {
	args := DeadLetterQueueArguments(s, v) // a fresh map: the same quorum rule
	if s.SingleActiveConsumer {
		if args == nil {
			args = map[string]any{}
		}
		args["x-single-active-consumer"] = true
	}
	return args
}
