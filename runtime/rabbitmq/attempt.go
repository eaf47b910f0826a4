package rabbitmq

import (
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/runtime/adapter"
	"github.com/streamgen/streamgen/runtime/internal/retrycount"
)

// retryCycles sums the counts of the x-death entries that record a message
// expiring from one of the subscription's wait queues: the retry cycles the
// broker saw, for messages retried by tools that keep only x-death. The
// Consumer takes the larger of these and the retry count header.
func retryCycles(headers amqp.Table, isWaitQueue func(string) bool) int {
	deaths, _ := headers["x-death"].([]any)
	total := 0
	for _, e := range deaths {
		entry, ok := e.(amqp.Table)
		if !ok {
			continue
		}
		queue, _ := entry["queue"].(string)
		reason, _ := entry["reason"].(string)
		if reason != "expired" || !isWaitQueue(queue) {
			continue
		}
		if c, ok := integer(entry["count"]); ok {
			total = adapter.AddCycles(total, int(min(c, int64(^uint(0)>>1))))
		}
	}
	return total
}

// returned is how many earlier deliveries of d ended unsettled, as a
// quorum queue counts them in x-delivery-count; 0 for a first delivery
// (whatever header its publisher set) and on a classic queue.
func returned(d *amqp.Delivery) int {
	if !d.Redelivered {
		return 0
	}
	n, ok := integer(d.Headers["x-delivery-count"])
	if !ok || n < 0 {
		return 0
	}
	return int(min(n, int64(retrycount.Max)))
}

// brokerRetries is how many times a quorum queue that retries by itself
// (x-delayed-retry-type returned) took d back to retry it: the times it
// was acquired (x-acquired-count) less those that ended with its worker's
// death (returned, x-delivery-count); 0 for a first delivery.
func brokerRetries(d *amqp.Delivery, returned int) int {
	if !d.Redelivered {
		return 0
	}
	n, ok := integer(d.Headers["x-acquired-count"])
	if !ok || n <= int64(returned) {
		return 0
	}
	return int(min(n-int64(returned), int64(retrycount.Max)))
}

// integer reads an AMQP integer.
func integer(v any) (int64, bool) {
	switch x := v.(type) {
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case int:
		return int64(x), true
	case uint8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint32:
		return int64(x), true
	}
	return 0, false
}
