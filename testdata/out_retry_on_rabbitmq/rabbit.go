package outretry

import "context"

// Job is work.
type Job struct{ ID int }

//stream:subscriber "jobs" broker=rabbitmq max_attempts=3 out_retry=self
func Work(ctx context.Context, j Job) error { return nil }
