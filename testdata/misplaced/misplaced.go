package misplaced

import "context"

// Job is work.
type Job struct{ ID int }

// Queue is a type.
//
//stream:subscriber "queue"
type Queue struct{}

//stream:subscriber "detached"

// Detached has a blank line between the directive and the function.
func Detached(ctx context.Context, j Job) error {
	//stream:subscriber "inside"
	return nil
}

//stream:subscriber "blank"
func _(ctx context.Context, j Job) error { return nil }
