package unknownkey

import "context"

// Job is work.
type Job struct{ ID int }

//stream:subscriber "jobs" max_attemps=3 colour=red retrydelay=1s
func Work(ctx context.Context, j Job) error { return nil }

//stream:subscriber "more" broker=rabbitmq deadletter
func More(ctx context.Context, j Job) error { return nil }
