package zmqretry

import "context"

// Job is work.
type Job struct{ ID int }

// Ping checks liveness.
type Ping struct{}

//stream:subscriber "jobs" broker=zeromq max_attempts=5
func Work(ctx context.Context, j Job) error { return nil }

//stream:subscriber "pings" broker=zeromq out_retry=self
func Pong(ctx context.Context, p Ping) error { return nil }
