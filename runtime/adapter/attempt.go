package adapter

import "github.com/streamgen/streamgen/runtime"

// attemptOf is the one rule for a delivery's number: 1 + the larger of the
// retry count the message carries and the retry cycles its broker
// recorded, each bounded by runtime.MaxRetryCount. Capped to maxAttempts by
// the caller once the handler is known, so that a forged count makes the
// delivery the last attempt, never one beyond it.
func attemptOf(count, cycles int) int {
	return 1 + min(max(count, cycles, 0), runtime.MaxRetryCount)
}

// AddCycles adds n retry cycles to total, as an adapter sums the counts of
// a broker's entries, without passing runtime.MaxRetryCount (or
// overflowing). A negative n adds nothing.
func AddCycles(total, n int) int {
	if n <= 0 {
		return total
	}
	return min(total, runtime.MaxRetryCount-min(n, runtime.MaxRetryCount)) + min(n, runtime.MaxRetryCount)
}
