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
