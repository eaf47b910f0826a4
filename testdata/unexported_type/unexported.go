package unexported

import "context"

type job struct{ ID int }

//stream:subscriber "jobs"
func Work(ctx context.Context, j job) error { return nil }

//stream:subscriber "jobs.ptr"
func WorkPtr(ctx context.Context, j *job) error { return nil }
