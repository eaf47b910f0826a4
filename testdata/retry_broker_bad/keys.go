package retrybroker

import "context"

// Job is work.
type Job struct{ ID int }

//stream:subscriber "jobs" broker=rabbitmq max_attempts=3 retry=broker
func Work(ctx context.Context, j Job) error { return nil }

//stream:subscriber "tasks" broker=rabbitmq queue_type=quorum max_attempts=3 retry=broker retry_delay=1s,1m
func Task(ctx context.Context, j Job) error { return nil }

//stream:subscriber "chores" broker=rabbitmq queue_type=quorum max_attempts=3 retry=soon
func Chore(ctx context.Context, j Job) error { return nil }
