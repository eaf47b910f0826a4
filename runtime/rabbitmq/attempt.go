package rabbitmq

import (
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/runtime"
)

// attemptOf returns the 1-based delivery number of a message consumed from
// a subscription whose wait queues are waitQueues:
//
//	1 + max(retry count header, Σ x-death counts of "expired" entries of a wait queue)
//
// Retry copies carry the count header (runtime.RetryCountHeader) and no
// x-death; the broker adds one x-death entry when the copy expires from the
// wait queue. Messages retried by other tools that only keep x-death are
// counted through it. A count header that cannot be read is reported in
// the error and counts as 0. Counts above runtime.MaxRetryCount count as
// that many, as everywhere in the runtime: such a message has used up its
// attempts.
func attemptOf(headers amqp.Table, waitQueues map[string]bool) (int, error) {
	count, err := retryCount(headers[runtime.RetryCountHeader])
	return 1 + max(count, expiredCycles(headers, waitQueues)), err
}

// retryCount reads the retry count header: absent, an AMQP integer, or
// decimal text.
func retryCount(v any) (int, error) {
	var n int64
	switch x := v.(type) {
	case nil:
		return 0, nil
	case string:
		c, err := runtime.ParseRetryCount(x)
		return c, err
	case []byte:
		c, err := runtime.ParseRetryCount(string(x))
		return c, err
	case int8:
		n = int64(x)
	case int16:
		n = int64(x)
	case int32:
		n = int64(x)
	case int64:
		n = x
	case int:
		n = int64(x)
	case uint8:
		n = int64(x)
	case uint16:
		n = int64(x)
	case uint32:
		n = int64(x)
	default:
		return 0, fmt.Errorf("rabbitmq: %s header of type %T is not a count", runtime.RetryCountHeader, v)
	}
	if n < 0 {
		return 0, fmt.Errorf("rabbitmq: %s header is negative (%d)", runtime.RetryCountHeader, n)
	}
	return int(min(n, runtime.MaxRetryCount)), nil
}

// expiredCycles sums the counts of the x-death entries that record a
// message expiring from one of waitQueues: the retry cycles the broker saw,
// up to runtime.MaxRetryCount.
func expiredCycles(headers amqp.Table, waitQueues map[string]bool) int {
	deaths, _ := headers["x-death"].([]any)
	total := 0
	for _, e := range deaths {
		entry, ok := e.(amqp.Table)
		if !ok {
			continue
		}
		queue, _ := entry["queue"].(string)
		reason, _ := entry["reason"].(string)
		if reason != "expired" || !waitQueues[queue] {
			continue
		}
		if c, err := retryCount(entry["count"]); err == nil {
			total = min(total, runtime.MaxRetryCount-c) + c // c ≤ MaxRetryCount: no overflow
		}
	}
	return total
}
