// Package foreign has a file named like the generated one that streamgen
// did not write: it is not overwritten.
package foreign

import "context"

// Job is work.
type Job struct{ ID int }

//stream:subscriber "jobs"
func Work(ctx context.Context, j Job) error { return nil }
