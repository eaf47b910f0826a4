package runtime

import (
	"context"
	"database/sql"
)

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
// Each of these may also take a *sql.Tx right after the context, as in
// func(ctx context.Context, tx *sql.Tx, msg T) error: that handler runs
// inside a transaction of the App's database (see Transactor), which
// records the message's id in the same transaction, so that a message
// redelivered after its transaction committed is acknowledged without
// calling the handler again. Its success commits the transaction; any
// other outcome, a panic or a failed commit rolls it back.
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
		func(context.Context, *T, Metadata) Outcome |
		func(context.Context, *sql.Tx, T) error |
		func(context.Context, *sql.Tx, *T) error |
		func(context.Context, *sql.Tx, T, Metadata) error |
		func(context.Context, *sql.Tx, *T, Metadata) error |
		func(context.Context, *sql.Tx, T) Outcome |
		func(context.Context, *sql.Tx, *T) Outcome |
		func(context.Context, *sql.Tx, T, Metadata) Outcome |
		func(context.Context, *sql.Tx, *T, Metadata) Outcome
}

// handlerFuncOf returns the function of a Handler of messageType for fn,
// a handler of any HandlerFunc shape: a singleCall, or a txCall for a
// handler that takes a *sql.Tx. It panics on a nil function.
func handlerFuncOf[T any, F HandlerFunc[T]](messageType string, fn F) handlerFunc {
	if call := txCallOf[T](fn); call != nil {
		return txCall[T]{messageType: messageType, fn: call}
	}
	return singleCall[T](callOf[T](fn))
}

// txCallOf turns a handler that takes a *sql.Tx into the one shape a
// txCall calls; it returns nil for a handler of another shape, and panics
// on a nil function.
func txCallOf[T any](fn any) func(ctx context.Context, tx *sql.Tx, msg *T, md Metadata) Outcome {
	var call func(ctx context.Context, tx *sql.Tx, msg *T, md Metadata) Outcome
	isTx := true
	switch f := fn.(type) {
	case func(context.Context, *sql.Tx, T) error:
		if f != nil {
			call = func(ctx context.Context, tx *sql.Tx, msg *T, _ Metadata) Outcome { return OutcomeOf(f(ctx, tx, *msg)) }
		}
	case func(context.Context, *sql.Tx, *T) error:
		if f != nil {
			call = func(ctx context.Context, tx *sql.Tx, msg *T, _ Metadata) Outcome { return OutcomeOf(f(ctx, tx, msg)) }
		}
	case func(context.Context, *sql.Tx, T, Metadata) error:
		if f != nil {
			call = func(ctx context.Context, tx *sql.Tx, msg *T, md Metadata) Outcome {
				return OutcomeOf(f(ctx, tx, *msg, md))
			}
		}
	case func(context.Context, *sql.Tx, *T, Metadata) error:
		if f != nil {
			call = func(ctx context.Context, tx *sql.Tx, msg *T, md Metadata) Outcome {
				return OutcomeOf(f(ctx, tx, msg, md))
			}
		}
	case func(context.Context, *sql.Tx, T) Outcome:
		if f != nil {
			call = func(ctx context.Context, tx *sql.Tx, msg *T, _ Metadata) Outcome { return f(ctx, tx, *msg) }
		}
	case func(context.Context, *sql.Tx, *T) Outcome:
		if f != nil {
			call = func(ctx context.Context, tx *sql.Tx, msg *T, _ Metadata) Outcome { return f(ctx, tx, msg) }
		}
	case func(context.Context, *sql.Tx, T, Metadata) Outcome:
		if f != nil {
			call = func(ctx context.Context, tx *sql.Tx, msg *T, md Metadata) Outcome { return f(ctx, tx, *msg, md) }
		}
	case func(context.Context, *sql.Tx, *T, Metadata) Outcome:
		call = f
	default:
		isTx = false
	}
	if isTx && call == nil {
		panic("runtime: a Handler of a nil handler function")
	}
	return call
}

// callOf turns a handler of any HandlerFunc shape that takes no *sql.Tx
// into the one shape the Consumer calls. It panics on a nil function.
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
