package duplicate

import "context"

// Job is work.
type Job struct{ ID int }

// Other is named Job on the wire.
type Other struct{ ID int }

//stream:subscriber "jobs" broker=rabbitmq
func Work(ctx context.Context, j Job) error { return nil }

//stream:subscriber "jobs"
func WorkAgain(ctx context.Context, j *Job) error { return nil }

//stream:subscriber "jobs" type=Job
func WorkOther(ctx context.Context, o Other) error { return nil }
