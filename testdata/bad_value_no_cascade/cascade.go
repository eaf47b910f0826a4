package cascade

import "context"

type Job struct {
	ID int `json:"id"`
}

// A bad max_attempts and a misspelt one must each be reported once, without
// the out_retry check that would read them.

//stream:subscriber "jobs" broker=zeromq max_attempts=five out_retry=self
func Work(ctx context.Context, job Job) error { return nil }

//stream:subscriber "tasks" broker=zeromq max_attemps=3 out_retry=self
func Task(ctx context.Context, job Job) error { return nil }

//stream:subscriber "chores" broker=zeromq max_attempts=0 out_retry=self
func Chore(ctx context.Context, job Job) error { return nil }
