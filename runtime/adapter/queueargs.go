package adapter

import "github.com/streamgen/streamgen/runtime"

// QueueArguments returns the RabbitMQ arguments subscription s's queue
// is declared with, nil when none:
//
//   - x-queue-type when QueueType is set;
//   - x-delivery-limit (an int64) on a quorum queue, always:
//     DeliveryLimitInForce;
//   - x-single-active-consumer true when SingleActiveConsumer is;
//   - when the subscription has a dead-letter queue (QueueDeadLetter),
//     x-dead-letter-exchange "" and x-dead-letter-routing-key that queue,
//     so that a message the broker gives up on (past the delivery limit,
//     or expired) is parked there rather than dropped; on a quorum queue
//     with x-dead-letter-strategy at-least-once (which needs x-overflow
//     reject-publish), so that it survives the loss of a node on its way.
func QueueArguments(s *runtime.Subscription) map[string]any {
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
// dead-letter queues of subscription s are declared with: x-queue-type
// quorum for a quorum subscription, so parked messages are replicated as
// its own are; nil otherwise. (On RabbitMQ 4.0 and later runtime/rabbitmq
// adds x-delivery-limit -1 to a quorum dead-letter queue, so that reading
// its letters and handing them back never drops one.)
func DeadLetterQueueArguments(s *runtime.Subscription) map[string]any {
	if s.QueueType == runtime.QuorumQueue {
		return map[string]any{"x-queue-type": string(runtime.QuorumQueue)}
	}
	return nil
}

// SuspectQueueArguments returns the RabbitMQ arguments the suspect queue
// of subscription s (runtime.Subscription.SuspectQueue) is declared with,
// nil when none: x-queue-type quorum for a quorum subscription, so that
// what it holds is replicated as its own messages are, and
// x-single-active-consumer when the subscription's queue has it. (On
// RabbitMQ 4.0 and later runtime/rabbitmq adds x-delivery-limit -1 to a
// quorum suspect queue: the Consumer counts a suspect's crashes itself,
// and the broker's default limit of 20 would drop one whose worker died
// that often while setting it aside again.)
func SuspectQueueArguments(s *runtime.Subscription) map[string]any {
	var args map[string]any
	if s.QueueType == runtime.QuorumQueue {
		args = map[string]any{"x-queue-type": string(runtime.QuorumQueue)}
	}
	if s.SingleActiveConsumer {
		if args == nil {
			args = map[string]any{}
		}
		args["x-single-active-consumer"] = true
	}
	return args
}
