package wrongresults

import (
	"context"

	"github.com/streamgen/streamgen/runtime"
)

// Job is work.
type Job struct{ ID int }

//stream:subscriber "none"
func None(ctx context.Context, j Job) {}

//stream:subscriber "two"
func Two(ctx context.Context, j Job) (runtime.Outcome, error) { return runtime.Ack(), nil }

//stream:subscriber "three"
func Three(ctx context.Context, j Job) (int, runtime.Outcome, error) { return 0, runtime.Ack(), nil }

//stream:subscriber "bool"
func Bool(ctx context.Context, j Job) bool { return true }

//stream:subscriber "action"
func Action(ctx context.Context, j Job) runtime.Metadata { return runtime.Metadata{} }
