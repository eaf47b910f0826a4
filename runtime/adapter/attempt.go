package adapter

import "github.com/streamgen/streamgen/runtime/internal/retrycount"

// attemptOf is the one rule for a delivery's number: 1 + the larger of the
// retry count the message carries and the retry cycles its broker
// recorded (two records of the same retries through wait queues), + the
// retries its queue delayed itself since it arrived (brokerRetries,
// Delivery.BrokerRetries), bounded by retrycount.Max. Capped to
// maxAttempts by the caller once the handler is known, so that a forged
// count makes the delivery the last attempt, never one beyond it.
func attemptOf(count, cycles, brokerRetries int) int {
	return 1 + AddCycles(min(max(count, cycles, 0), retrycount.Max), brokerRetries)
}

// AddCycles adds n retry cycles to total, as an adapter sums the counts of
// a broker's entries, without passing retrycount.Max (or
// overflowing). A negative n adds nothing.
func AddCycles(total, n int) int {
	if n <= 0 {
		return total
	}
	return min(total, retrycount.Max-min(n, retrycount.Max)) + min(n, retrycount.Max)
}
