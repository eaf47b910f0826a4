package typo

import "context"

// Job is work.
type Job struct{ ID int }

// Work is annotated with a typo.
//
//stream:subscribr "jobs"
func Work(ctx context.Context, j Job) error { return nil }

// Other has the tool misspelt.
//
//steam:subscriber "other"
func Other(ctx context.Context, j Job) error { return nil }

// Spaced has a space after the slashes.
//
// stream:subscriber "spaced"
func Spaced(ctx context.Context, j Job) error { return nil }

// Unknown uses a directive that does not exist.
//
//stream:emitter "out"
func Unknown(ctx context.Context, j Job) error { return nil }

//stream:subscriber "fine"
func Fine(ctx context.Context, j Job) error { return nil }
