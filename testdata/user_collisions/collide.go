package collide

import "context"

// Job is work.
type Job struct{ ID int }

// Mount is the user's own.
func Mount() {}

// PublishJob is the user's own.
func PublishJob() {}

//stream:subscriber "jobs"
func Work(ctx context.Context, j Job) error { return nil }

// PublishJobAsync is the user's own too.
func PublishJobAsync() {}

// TaskAsync's publisher would be the Async twin of Task's.
type (
	Task      struct{ ID int }
	TaskAsync struct{ ID int }
)

//stream:subscriber "tasks"
func Run(ctx context.Context, t Task) error { return nil }

//stream:subscriber "tasks.async"
func RunAsync(ctx context.Context, t TaskAsync) error { return nil }
