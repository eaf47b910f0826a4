package typeerror

import "context"

// Job is work.
type Job struct {
	ID    int
	Owner Person
}

//stream:subscriber "jobs"
func Work(ctx context.Context, j Job) error {
	return undefinedHelper(j)
}

//stream:subscriber "other"
func Other(ctx context.Context, j Missing) error { return nil }
