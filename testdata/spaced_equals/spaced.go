// Package spaced writes max_attempts with spaces around =: one error,
// and out_retry, which needs max_attempts, is not reported too.
package spaced

import "context"

// Job is a job.
type Job struct{ ID int }

//stream:subscriber "jobs" broker=zeromq max_attempts = 3 out_retry=self
func Work(ctx context.Context, j Job) error { return nil }
