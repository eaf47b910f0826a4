// Package billing is the example of the README: one ZeroMQ subscription
// whose handler retries a failed job after 30 seconds, five times at most.
package billing

import (
	"context"
	"errors"
	"time"

	"github.com/streamgen/streamgen/runtime"
)

// Job is one billing job.
type Job struct {
	ID     uint64 `json:"id"`
	Amount int64  `json:"amount"`
}

//stream:subscriber "jobs" broker=zeromq max_attempts=5 out_retry=self
func Work(ctx context.Context, job Job) error {
	if job.Amount < 0 {
		return runtime.RetryAfter(30*time.Second, errors.New("negative amount"))
	}
	return nil
}
