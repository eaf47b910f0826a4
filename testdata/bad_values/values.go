package badvalues

import "context"

// Job is work.
type Job struct{ ID int }

// Task is work too.
type Task struct{ ID int }

//stream:subscriber "jobs" broker=kafka ack=sometimes queue_type=stream max_payload_bytes=64KB
func Work(ctx context.Context, j Job) error { return nil }

//stream:subscriber "tasks" broker=rabbitmq dead_letter=tasks max_attempts=3 max_attempts=4 ack=auto type=
func Task1(ctx context.Context, t Task) error { return nil }

//stream:subscriber "waits" broker=rabbitmq max_attempts=2 dead_letter=waits.retry dead_letter="x
func Wait(ctx context.Context, t Task) error { return nil }
