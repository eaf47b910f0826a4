package mixedkeys

import "context"

// Job is work.
type Job struct{ ID int }

//stream:subscriber "jobs" max_attempts=3 out_retry=self retry_delay=5s
func Work(ctx context.Context, j Job) error { return nil }
