package unquoted

import "context"

// Job is work.
type Job struct{ ID int }

//stream:subscriber jobs max_attempts=3
func Work(ctx context.Context, j Job) error { return nil }

//stream:subscriber "jobs "more" broker=zeromq
func Broken(ctx context.Context, j Job) error { return nil }

//stream:subscriber "again" "twice"
func Twice(ctx context.Context, j Job) error { return nil }
