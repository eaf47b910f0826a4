// Package noannotations has a function but no //stream:subscriber.
package noannotations

import "context"

// Job is work.
type Job struct{ ID int }

// Work is not annotated.
func Work(ctx context.Context, j Job) error { return nil }
