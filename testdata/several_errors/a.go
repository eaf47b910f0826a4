package several

import "context"

// Job is work.
type Job struct{ ID int }

//stream:subscriber "jobs" broker=rabbitmq max_attempts=3 out_retry=self
func Work(ctx context.Context, j Job) error { return nil }

//stream:subscriber "jobs" max_attempts=zero
func Work2(ctx context.Context, j Job) {}
