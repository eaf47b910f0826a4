package ambiguous

import "context"

// Job is work.
type Job struct{ ID int }

// Ping checks liveness.
type Ping struct{}

// Note is written down.
type Note struct{ Text string }

//stream:subscriber "jobs" broker=rabbitmq
func Work(ctx context.Context, j Job) error { return nil }

//stream:subscriber "pings" broker=zeromq
func Pong(ctx context.Context, p Ping) error { return nil }

//stream:subscriber "notes" max_attempts=2
func Write(ctx context.Context, n Note) error { return nil }
