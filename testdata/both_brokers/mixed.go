// Package mixed mounts on both brokers: broker= where nothing else tells,
// broker-specific keys elsewhere.
package mixed

import "context"

// Job is work to do.
type Job struct{ ID int }

// Audit records a job.
type Audit struct{ JobID int }

// Ping checks liveness.
type Ping struct{}

// Notice tells someone.
type Notice struct{ Text string }

//stream:subscriber "jobs" broker=rabbitmq max_attempts=3
func Work(ctx context.Context, j Job) error { return nil }

//stream:subscriber "audit" broker=zeromq
func Record(ctx context.Context, a Audit) error { return nil }

//stream:subscriber "pings" max_attempts=2 out_retry=self
func Pong(ctx context.Context, p Ping) error { return nil }

//stream:subscriber "notices" retry_delay=1m max_attempts=2
func Notify(ctx context.Context, n Notice) error { return nil }
