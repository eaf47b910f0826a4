package runtime

import (
	"context"
	"errors"
)

// Next calls what a Middleware wraps: the middleware after it, and in the
// end the handler. msg is the decoded message, a *T for a handler of
// message type T.
type Next func(ctx context.Context, msg any, md Metadata) Outcome

// Middleware wraps each handler call of the subscriptions it is given to.
// It sees the context, the decoded message and the Metadata, calls next
// (or not: returning without calling next skips the handler), and returns
// the Outcome the runtime then applies, next's or one of its own:
//
//	func logSlow(ctx context.Context, msg any, md runtime.Metadata, next runtime.Next) runtime.Outcome {
//		start := time.Now()
//		out := next(ctx, msg, md)
//		if time.Since(start) > time.Second {
//			slog.WarnContext(ctx, "slow handler", "message_id", md.MessageID, "outcome", out)
//		}
//		return out
//	}
//
// Give middleware to the whole App with WithMiddleware, and to one
// subscription in Subscription.Middleware. The App's run outermost, in the
// order given, then the subscription's, in the order given; the handler is
// innermost. With WithMiddleware(a, b) and Subscription.Middleware [c], a
// call runs a → b → c → handler, and the Outcome travels back c → b → a.
//
// A middleware may pass on another context (one with a value, a deadline)
// or Metadata; the message it passes on must be the one it got, or
// another of the same type (*T). It calls next at most once. A panic in a
// middleware is recovered as a panic in a handler is: it is logged with
// its stack, and the call fails with the reason "middleware panicked: …";
// the middleware around it sees that failure as next's Outcome. A
// handler's panic and timeout (Policy.Timeout) reach the middleware as a
// failure Outcome too.
//
// Middleware runs the same on every broker and in the in-memory harness,
// in the adapter.Consumer that calls the handler. A subscription without
// middleware calls its handler directly, at no extra cost.
type Middleware func(ctx context.Context, msg any, md Metadata, next Next) Outcome

// WithMiddleware adds middleware that wraps every handler call of the App,
// outside the subscriptions' own (see Middleware for the order). It may be
// given more than once; the middleware adds up, in order. A nil middleware
// is reported by Run.
func WithMiddleware(mw ...Middleware) Option {
	return func(a *App) {
		for _, m := range mw {
			if m == nil {
				a.errs = append(a.errs, errors.New("runtime: WithMiddleware was given a nil middleware"))
				continue
			}
			a.middleware = append(a.middleware, m)
		}
	}
}
