package zmqkeys

import "context"

// Job is work.
type Job struct{ ID int }

//stream:subscriber "jobs" broker=zeromq max_attempts=3 out_retry=self retry_delay=10s ack=manual queue_type=quorum delivery_limit=5 single_active_consumer=true
func Work(ctx context.Context, j Job) error { return nil }
