package quorumkeys

import "context"

// Job is work.
type Job struct{ ID int }

//stream:subscriber "jobs" broker=rabbitmq delivery_limit=5 single_active_consumer=yes
func Work(ctx context.Context, j Job) error { return nil }

//stream:subscriber "tasks" broker=rabbitmq queue_type=quorum delivery_limit=0
func Task(ctx context.Context, j Job) error { return nil }
