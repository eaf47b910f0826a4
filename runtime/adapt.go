package runtime

import "context"

// HandlerFunc is the function Handle calls for each decoded message of type
// T. The adapters below turn a handler of each shape streamgen accepts into
// one; generated Mount functions use them, so that a handler is mounted with
// a call instead of a function literal:
//
//	runtime.Handle[Job]("Job", runtime.Policy{MaxAttempts: 5}, runtime.ValueFunc(Work))
//
// The adapter's name says how the handler takes the message (Value: T,
// Pointer: *T), whether it also takes the Metadata (Meta), and whether it
// returns an Outcome instead of an error (Outcome):
//
//	handler                                      adapter
//	func(context.Context, T) error               ValueFunc
//	func(context.Context, *T) error              PointerFunc
//	func(context.Context, T, Metadata) error     ValueMetaFunc
//	func(context.Context, *T, Metadata) error    PointerMetaFunc
//	func(context.Context, T) Outcome             ValueOutcomeFunc
//	func(context.Context, *T) Outcome            PointerOutcomeFunc
//	func(context.Context, T, Metadata) Outcome   ValueMetaOutcomeFunc
//	func(context.Context, *T, Metadata) Outcome  PointerMetaOutcomeFunc
//
// A value handler gets a copy of the decoded message; a pointer handler gets
// the decoded message itself. An error result is mapped by OutcomeOf; an
// Outcome result is passed on as it is. An adapter is made once, when the
// subscription is built; calling it allocates nothing beyond what the
// handler does. Each adapter panics when given a nil function, so that the
// mistake shows when the subscription is built rather than at every
// message.
type HandlerFunc[T any] = func(ctx context.Context, msg *T, md Metadata) Outcome

// ValueFunc adapts func(ctx, T) error.
func ValueFunc[T any](fn func(ctx context.Context, msg T) error) HandlerFunc[T] {
	mustHandler(fn == nil, "ValueFunc")
	return func(ctx context.Context, msg *T, _ Metadata) Outcome {
		return OutcomeOf(fn(ctx, *msg))
	}
}

// PointerFunc adapts func(ctx, *T) error.
func PointerFunc[T any](fn func(ctx context.Context, msg *T) error) HandlerFunc[T] {
	mustHandler(fn == nil, "PointerFunc")
	return func(ctx context.Context, msg *T, _ Metadata) Outcome {
		return OutcomeOf(fn(ctx, msg))
	}
}

// ValueMetaFunc adapts func(ctx, T, Metadata) error.
func ValueMetaFunc[T any](fn func(ctx context.Context, msg T, md Metadata) error) HandlerFunc[T] {
	mustHandler(fn == nil, "ValueMetaFunc")
	return func(ctx context.Context, msg *T, md Metadata) Outcome {
		return OutcomeOf(fn(ctx, *msg, md))
	}
}

// PointerMetaFunc adapts func(ctx, *T, Metadata) error.
func PointerMetaFunc[T any](fn func(ctx context.Context, msg *T, md Metadata) error) HandlerFunc[T] {
	mustHandler(fn == nil, "PointerMetaFunc")
	return func(ctx context.Context, msg *T, md Metadata) Outcome {
		return OutcomeOf(fn(ctx, msg, md))
	}
}

// ValueOutcomeFunc adapts func(ctx, T) Outcome.
func ValueOutcomeFunc[T any](fn func(ctx context.Context, msg T) Outcome) HandlerFunc[T] {
	mustHandler(fn == nil, "ValueOutcomeFunc")
	return func(ctx context.Context, msg *T, _ Metadata) Outcome {
		return fn(ctx, *msg)
	}
}

// PointerOutcomeFunc adapts func(ctx, *T) Outcome.
func PointerOutcomeFunc[T any](fn func(ctx context.Context, msg *T) Outcome) HandlerFunc[T] {
	mustHandler(fn == nil, "PointerOutcomeFunc")
	return func(ctx context.Context, msg *T, _ Metadata) Outcome {
		return fn(ctx, msg)
	}
}

// ValueMetaOutcomeFunc adapts func(ctx, T, Metadata) Outcome.
func ValueMetaOutcomeFunc[T any](fn func(ctx context.Context, msg T, md Metadata) Outcome) HandlerFunc[T] {
	mustHandler(fn == nil, "ValueMetaOutcomeFunc")
	return func(ctx context.Context, msg *T, md Metadata) Outcome {
		return fn(ctx, *msg, md)
	}
}

// PointerMetaOutcomeFunc adapts func(ctx, *T, Metadata) Outcome, the shape
// Handle takes: it returns fn itself, and is there so that every shape is
// mounted the same way.
func PointerMetaOutcomeFunc[T any](fn func(ctx context.Context, msg *T, md Metadata) Outcome) HandlerFunc[T] {
	mustHandler(fn == nil, "PointerMetaOutcomeFunc")
	return fn
}

// mustHandler panics, naming the adapter, when it was given a nil function.
func mustHandler(isNil bool, adapter string) {
	if isNil {
		panic("runtime: " + adapter + " of a nil handler function")
	}
}
