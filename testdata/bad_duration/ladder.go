package badduration

import "context"

// Job is work.
type Job struct{ ID int }

//stream:subscriber "jobs" max_attempts=3 retry_delay=10x
func Work(ctx context.Context, j Job) error { return nil }

//stream:subscriber "ladder" max_attempts=3 retry_delay=10s,5s,0s
func Ladder(ctx context.Context, j Job) error { return nil }

//stream:subscriber "nothing" retry_delay=1m
func Nothing(ctx context.Context, j Job) error { return nil }

//stream:subscriber "slow" timeout=2x
func Slow(ctx context.Context, j Job) error { return nil }

//stream:subscriber "never" timeout=-1s
func Never(ctx context.Context, j Job) error { return nil }
