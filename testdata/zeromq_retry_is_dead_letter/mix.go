// Package mix sends retry copies and dead letters to one queue, which
// would mix them: refused at the dead_letter key.
package mix

import "context"

// Job is retried through jobs.later, and parked there too.
type Job struct{ ID int }

//stream:subscriber "jobs" broker=zeromq max_attempts=3 out_retry=jobs.later dead_letter=jobs.later
func Work(ctx context.Context, j Job) error { return nil }

// Invoice is parked where Job's retry copies go.
type Invoice struct{ ID int }

//stream:subscriber "jobs" broker=zeromq dead_letter=jobs.later
func Bill(ctx context.Context, i Invoice) error { return nil }
