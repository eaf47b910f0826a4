package rabbitmq

import (
	"fmt"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/adapter"
	"github.com/streamgen/streamgen/runtime/internal/headers"
	"github.com/streamgen/streamgen/runtime/internal/retrycount"
)

// brokerExplanation returns the headers that explain a letter the broker
// dead-lettered itself (runtime.HeaderDeadLetterReason and the constants
// after it, as the runtime writes them for a letter it parks). A
// subscription's queue dead-letters into its dead-letter queue too, so a
// message may have been parked by the broker: one handed back more often
// than a quorum queue's delivery limit (should the worker crash even as it
// parks it), expired, or refused by a full queue. The headers are read
// from the broker's x-death record: its reason, the queue it was
// dead-lettered from, when, and the attempt its retry count says. ok is
// false for a message without one. (A letter the runtime parked explains
// itself: deadletter.NewLetter reads its headers.)
func brokerExplanation(h amqp.Table) (explanation map[string]string, ok bool) {
	death, ok := lastDeath(h)
	if !ok {
		return nil, false
	}
	queue, _ := death["queue"].(string)
	reason, _ := death["reason"].(string)
	at, _ := death["time"].(time.Time)
	text, _ := headers.Text(h[runtime.RetryCountHeader])
	count, _ := retrycount.Parse(text)
	return adapter.DeadLetterHeaders(queue, adapter.Verdict{Reason: brokerReason(reason, queue), Attempt: count + 1}, at), true
}

// lastDeath returns the newest x-death entry: RabbitMQ keeps the entries
// newest first.
func lastDeath(h amqp.Table) (amqp.Table, bool) {
	deaths, _ := h["x-death"].([]any)
	if len(deaths) == 0 {
		return nil, false
	}
	entry, ok := deaths[0].(amqp.Table)
	return entry, ok
}

// brokerReason says in words why the broker dead-lettered a message from
// queue, for its x-death reason.
func brokerReason(reason, queue string) string {
	switch reason {
	case "delivery_limit":
		return "delivered more often than the delivery limit of " + queue + " allows without being settled: the worker crashed or lost its connection each time (dead-lettered by the broker)"
	case "expired":
		return "expired in " + queue + " before it was handled (dead-lettered by the broker)"
	case "maxlen":
		return queue + " was full (dead-lettered by the broker)"
	case "rejected":
		return "rejected without requeue by a consumer of " + queue + " (dead-lettered by the broker)"
	}
	return fmt.Sprintf("dead-lettered by the broker from %s (x-death reason %q)", queue, reason)
}
