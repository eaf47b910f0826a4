package adapter

import (
	"context"
	"fmt"
	"log/slog"
	goruntime "runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/internal/retrycount"
)

// call calls handler i, h, with v through its middleware, and times the
// call for the Observer.
func (c *Consumer) call(ctx context.Context, d *Delivery, i int, h *runtime.Handler, v any, md runtime.Metadata) runtime.Outcome {
	if d.obs == nil {
		return c.invoke(ctx, i, h, v, md)
	}
	start := time.Now()
	out := c.invoke(ctx, i, h, v, md)
	d.obs.handled, d.obs.took = true, time.Since(start)
	return out
}

func (c *Consumer) invoke(ctx context.Context, i int, h *runtime.Handler, v any, md runtime.Metadata) runtime.Outcome {
	if c.chains != nil {
		return c.chains[i](ctx, v, md)
	}
	return c.callHandler(ctx, h, v, md)
}

// callHandler calls h, within its timeout, and makes a panic a failure.
func (c *Consumer) callHandler(ctx context.Context, h *runtime.Handler, v any, md runtime.Metadata) (out runtime.Outcome) {
	defer c.recoverPanic(&out, "handler", md)
	if h.Policy.Timeout <= 0 {
		return h.Call(ctx, v, md)
	}
	return c.callWithin(ctx, h, v, md)
}

// callWithin calls h with a context that ends after h's timeout. A call
// that returns once its timeout has passed is late, and its result counts
// all the same: the work it did is not done a second time. A late failure
// has a TimeoutError as its reason (keeping the delay it asked for); a
// late ack, drop or dead-letter is logged as a warning. The timeout runs
// on the wall clock, not the App's: the handler's own I/O honours the
// context's deadline in real time.
func (c *Consumer) callWithin(ctx context.Context, h *runtime.Handler, v any, md runtime.Metadata) runtime.Outcome {
	timeout := h.Policy.Timeout
	cause := &TimeoutError{After: timeout}
	start := time.Now()
	tctx, cancel := context.WithTimeoutCause(ctx, timeout, cause)
	defer cancel()
	out := h.Call(tctx, v, md)
	if ctx.Err() != nil || context.Cause(tctx) != error(cause) {
		return out // in time, or the handlers' own context ended
	}
	if out.Action() == runtime.ActionRetry {
		return runtime.Retry().After(out.Delay()).Because(&TimeoutError{After: timeout, Err: out.Err()})
	}
	c.log.Warn("handler returned after its timeout; its result counts, but the timeout is too short or the handler ignores its context",
		append(callAttrs(md), "timeout", timeout, "took", time.Since(start).Round(time.Millisecond), "outcome", out.Action().String())...)
	return out
}

// chain returns h's call wrapped in mws, the first outermost. Each layer
// makes a panic of its own a failure, which the layer around it sees as
// the Outcome of next.
func (c *Consumer) chain(h *runtime.Handler, mws []runtime.Middleware) runtime.Next {
	next := runtime.Next(func(ctx context.Context, v any, md runtime.Metadata) runtime.Outcome {
		return c.callHandler(ctx, h, v, md)
	})
	for i := len(mws) - 1; i >= 0; i-- {
		mw, inner := mws[i], next
		next = func(ctx context.Context, v any, md runtime.Metadata) (out runtime.Outcome) {
			defer c.recoverPanic(&out, "middleware", md)
			return mw(ctx, v, md, inner)
		}
	}
	return next
}

// middlewareOf returns the middleware of sub's calls: env's, then sub's,
// without nil ones (runtime.App.Run reports those).
func middlewareOf(env runtime.Env, sub *runtime.Subscription) []runtime.Middleware {
	var mws []runtime.Middleware
	for _, m := range slices.Concat(env.Middleware, sub.Middleware) {
		if m != nil {
			mws = append(mws, m)
		}
	}
	return mws
}

// recoverPanic, deferred by a call of what ("handler", "middleware"),
// makes its panic a failure Outcome, and logs it with the first frames of
// its stack, and the whole stack at debug.
func (c *Consumer) recoverPanic(out *runtime.Outcome, what string, md runtime.Metadata) {
	r := recover()
	if r == nil {
		return
	}
	c.log.Error(what+" panicked; treating it as a failure",
		append(callAttrs(md), "panic", fmt.Sprint(r), "stack", panicStack(panicFrames))...)
	if c.log.Enabled(context.Background(), slog.LevelDebug) {
		c.log.Debug(what+" panic stack", append(callAttrs(md), "stack", string(debug.Stack()))...)
	}
	*out = runtime.Retry().Because(fmt.Errorf("%s panicked: %v", what, r))
}

// callAttrs returns the log attributes that name what a handler call
// was given, from its Metadata: the message's id, type and attempt; for a
// batch call, the type, and the id and attempt of each message
// (message_ids, attempts), in the batch's order, so that each message of
// a batch can be found by its id.
func callAttrs(md runtime.Metadata) []any {
	if len(md.Batch) == 0 {
		return []any{"message_id", md.MessageID, "message_type", md.MessageType, "attempt", md.Attempt}
	}
	ids := make([]string, len(md.Batch))
	attempts := make([]int, len(md.Batch))
	for i, m := range md.Batch {
		ids[i], attempts[i] = m.MessageID, m.Attempt
	}
	return []any{"message_ids", ids, "message_type", md.MessageType, "attempts", attempts}
}

// crashes returns how many times d came back unsettled (its worker
// crashed or lost its connection while holding it, or handed it back),
// this delivery included when it is such a return:
//
//   - on the suspect queue, the count its copy carries (HeaderCrashes),
//     and one more when it is redelivered: a suspect is the one delivery
//     its worker holds of the suspect queue, and runs alone, so the
//     worker died while it ran;
//   - on the subscription's queue, one when it came back: redelivered on
//     a classic queue, which counts nothing; counted by the broker on a
//     quorum queue (Delivery.Returned, x-delivery-count), which tells a
//     message released at shutdown (RabbitMQ 4.3 does not count that)
//     from one that came back after a crash. It counts one however often
//     the broker counted it: it runs no handler on that queue, and each
//     time it came back it may merely have been held.
//
// On the subscription's queue a count of 1 cannot tell the message that
// crashed its worker from the others the worker held: each is set aside
// to run alone, so that from then on only its own crashes count.
func (c *Consumer) crashes(d *Delivery) int {
	n := 0
	switch {
	case d.Suspect:
		n, _ = retrycount.Parse(d.Headers[c.rules.headerName(HeaderCrashes)]) // unreadable: 0, and the copy sets it anew
		if d.Redelivered {
			n++
		}
	case c.quorum && d.Returned > 0, !c.quorum && d.Redelivered:
		n = 1
	}
	return min(max(n, 0), retrycount.Max)
}

// isolate is the verdict for d, which came back unsettled n times and
// has not reached the crash limit: a copy goes to the suspect queue, with
// n, to be handled alone. Its handler does not run now.
func (c *Consumer) isolate(d *Delivery, h *runtime.Handler, n int) Verdict {
	return Verdict{
		Kind:        VerdictIsolate,
		Queue:       c.suspectQueue,
		Reason:      fmt.Sprintf("came back unsettled %s (its worker crashed or lost its connection while holding it, or could not send its copy), of %d allowed: it is handled alone from %s", times(n), c.crashLimit, c.suspectQueue),
		Attempt:     d.attempt,
		MaxAttempts: h.Policy.Attempts(),
		MessageType: h.MessageType,
	}
}

// crashed is the verdict for d, which came back unsettled n times, as
// often as the crash limit allows: the message is parked (or dropped,
// with no dead-letter queue) without its handler running again. It ran
// alone each time but the first, so its own runs killed the worker.
func (c *Consumer) crashed(d *Delivery, h *runtime.Handler, n int) Verdict {
	v := Verdict{
		Reason:      fmt.Sprintf("crashed the worker (or lost its connection, or could not send its copy) %s while being handled: parked without running it again", times(n)),
		Attempt:     d.attempt,
		MaxAttempts: h.Policy.Attempts(),
		MessageType: h.MessageType,
	}
	if h.Policy.DeadLetter == "" {
		v.Kind = VerdictDrop
		v.Reason = strings.Replace(v.Reason, "parked", "dropped (no dead_letter)", 1)
		return v
	}
	return c.park(v, h.Policy.DeadLetter)
}

// times writes n times.
func times(n int) string {
	if n == 1 {
		return "once"
	}
	return fmt.Sprintf("%d times", n)
}

// panicStack, called by a deferred function that recovered a panic,
// returns the first n frames of the stack from where the panic was raised
// (the runtime's own frames left out), one "function\n\tfile:line" each
// as in a goroutine dump, and a last line saying how many were left out.
func panicStack(n int) string {
	pcs := make([]uintptr, 64)
	pcs = pcs[:goruntime.Callers(2, pcs)] // from the deferred function's caller
	frames := goruntime.CallersFrames(pcs)
	var b strings.Builder
	shown, left, raised := 0, 0, false
	for {
		f, more := frames.Next()
		switch {
		case !raised:
			raised = f.Function == "runtime.gopanic"
		case shown == 0 && strings.HasPrefix(f.Function, "runtime."):
			// panicmem, sigpanic, ...: how the runtime raised it
		case shown < n:
			if shown > 0 {
				b.WriteByte('\n')
			}
			fmt.Fprintf(&b, "%s\n\t%s:%d", f.Function, f.File, f.Line)
			shown++
		default:
			left++
		}
		if !more {
			break
		}
	}
	if left > 0 {
		fmt.Fprintf(&b, "\n... %d more frames (logged at debug level)", left)
	}
	return b.String()
}
