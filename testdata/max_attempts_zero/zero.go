package zero

import "context"

// Job is work.
type Job struct{ ID int }

//stream:subscriber "jobs" broker=rabbitmq max_attempts=0
func Work(ctx context.Context, j Job) error { return nil }

//stream:subscriber "more" broker=rabbitmq max_attempts=-2 prefetch=0 concurrency=many
func More(ctx context.Context, j Job) error { return nil }
