package runtime

import "context"

// HandlerFunc is the set of handler shapes streamgen accepts for messages
// of type T. Handle and HandleJSON take any of them:
//
//	runtime.Handle[Job]("Job", runtime.Policy{MaxAttempts: 5}, Work)
//
// The handler takes the message as a value (a copy of the decoded message)
// or a pointer (the decoded message itself), may also take the Metadata,
// and returns an error, mapped by OutcomeOf, or an Outcome, passed on as it
// is:
//
//	func(context.Context, T) error
//	func(context.Context, *T) error
//	func(context.Context, T, Metadata) error
//	func(context.Context, *T, Metadata) error
//	func(context.Context, T) Outcome
//	func(context.Context, *T) Outcome
//	func(context.Context, T, Metadata) Outcome
//	func(context.Context, *T, Metadata) Outcome
//
// The shape is resolved once, when the Handler is made; a call allocates
// nothing beyond what the handler does. A nil function panics then, so
// that the mistake shows when the subscription is built rather than at
// every message.
type HandlerFunc[T any] interface {
	func(context.Context, T) error |
		func(context.Context, *T) error |
		func(context.Context, T, Metadata) error |
		func(context.Context, *T, Metadata) error |
		func(context.Context, T) Outcome |
		func(context.Context, *T) Outcome |
		func(context.Context, T, Metadata) Outcome |
		func(context.Context, *T, Metadata) Outcome
}

// callOf turns a handler of any HandlerFunc shape into the one shape the
// Consumer calls. It panics on a nil function.
func callOf[T any, F HandlerFunc[T]](fn F) func(ctx context.Context, msg *T, md Metadata) Outcome {
	var call func(ctx context.Context, msg *T, md Metadata) Outcome
	switch f := any(fn).(type) {
	case func(context.Context, T) error:
		if f != nil {
			call = func(ctx context.Context, msg *T, _ Metadata) Outcome { return OutcomeOf(f(ctx, *msg)) }
		}
	case func(context.Context, *T) error:
		if f != nil {
			call = func(ctx context.Context, msg *T, _ Metadata) Outcome { return OutcomeOf(f(ctx, msg)) }
		}
	case func(context.Context, T, Metadata) error:
		if f != nil {
			call = func(ctx context.Context, msg *T, md Metadata) Outcome { return OutcomeOf(f(ctx, *msg, md)) }
		}
	case func(context.Context, *T, Metadata) error:
		if f != nil {
			call = func(ctx context.Context, msg *T, md Metadata) Outcome { return OutcomeOf(f(ctx, msg, md)) }
		}
	case func(context.Context, T) Outcome:
		if f != nil {
			call = func(ctx context.Context, msg *T, _ Metadata) Outcome { return f(ctx, *msg) }
		}
	case func(context.Context, *T) Outcome:
		if f != nil {
			call = func(ctx context.Context, msg *T, _ Metadata) Outcome { return f(ctx, msg) }
		}
	case func(context.Context, T, Metadata) Outcome:
		if f != nil {
			call = func(ctx context.Context, msg *T, md Metadata) Outcome { return f(ctx, *msg, md) }
		}
	case func(context.Context, *T, Metadata) Outcome:
		call = f
	}
	if call == nil {
		panic("runtime: a Handler of a nil handler function")
	}
	return call
}
