package wrongparams

import (
	"context"

	"github.com/streamgen/streamgen/runtime"
)

// Job is work.
type Job struct{ ID int }

//stream:subscriber "one"
func One(j Job) error { return nil }

//stream:subscriber "first"
func First(j Job, ctx context.Context) error { return nil }

//stream:subscriber "third"
func Third(ctx context.Context, j Job, attempt int) error { return nil }

//stream:subscriber "variadic"
func Variadic(ctx context.Context, js ...Job) error { return nil }

//stream:subscriber "generic"
func Generic[T any](ctx context.Context, msg T) error { return nil }

//stream:subscriber "basic"
func Basic(ctx context.Context, s string) error { return nil }

//stream:subscriber "map"
func Map(ctx context.Context, m map[string]any) error { return nil }

//stream:subscriber "double"
func Double(ctx context.Context, j **Job) error { return nil }

//stream:subscriber "four"
func Four(ctx context.Context, j Job, md runtime.Metadata, x int) error { return nil }
