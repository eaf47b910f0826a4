package deadletter

import "context"

type progressKey struct{}

// WithProgress returns a context that makes the operations of a Store run
// with it (Scan, Groups, Select, Replay, Purge, Export) call fn with the
// number of letters read so far, after each letter, from the goroutine
// that reads them; fn must be quick. The streamgen dlq command shows
// progress with it.
func WithProgress(ctx context.Context, fn func(read int)) context.Context {
	return context.WithValue(ctx, progressKey{}, fn)
}

// Progress returns the function WithProgress put in ctx, or one that does
// nothing: a Store calls it with the number of letters read so far.
func Progress(ctx context.Context) func(read int) {
	if fn, ok := ctx.Value(progressKey{}).(func(int)); ok && fn != nil {
		return fn
	}
	return func(int) {}
}
