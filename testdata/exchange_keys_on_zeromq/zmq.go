package exchangezmq

import "context"

// Job is work.
type Job struct{ ID int }

//stream:subscriber "jobs" broker=zeromq exchange=orders exchange_type=topic binding=order.*
func Work(ctx context.Context, j Job) error { return nil }
