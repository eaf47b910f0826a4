package missingname

import "context"

// Job is work.
type Job struct{ ID int }

//stream:subscriber max_attempts=3
func Work(ctx context.Context, j Job) error { return nil }

//stream:subscriber
func Idle(ctx context.Context, j Job) error { return nil }

//stream:subscriber "" broker=zeromq
func Empty(ctx context.Context, j Job) error { return nil }
