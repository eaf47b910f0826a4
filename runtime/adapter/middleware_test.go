package adapter_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/adapter"
)

// trace records the steps of middleware and handlers, in order.
type trace struct {
	mu    sync.Mutex
	steps []string
}

func (tr *trace) add(step string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.steps = append(tr.steps, step)
}

func (tr *trace) String() string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return strings.Join(tr.steps, " ")
}

// tracing is a middleware that records its name around next, and the
// outcome next returned.
func tracing(tr *trace, name string) runtime.Middleware {
	return func(ctx context.Context, msg any, md runtime.Metadata, next runtime.Next) runtime.Outcome {
		tr.add(name + ">")
		out := next(ctx, msg, md)
		tr.add("<" + name + "(" + out.Action().String() + ")")
		return out
	}
}

func newWithMiddleware(sub *runtime.Subscription, kind runtime.BrokerKind, app ...runtime.Middleware) (*adapter.Consumer, *logCapture, *recorder) {
	logs := newLogCapture()
	tr := &recorder{}
	c := adapter.NewConsumer(sub, runtime.Env{Logger: logs.logger(), Middleware: app}, adapter.Rules{Kind: kind}, tr)
	return c, logs, tr
}

// The App's middleware is outermost, in the order given, then the
// subscription's, in the order given; the handler is innermost, and its
// outcome travels back out through each.
func TestMiddlewareOrder(t *testing.T) {
	for _, kind := range []runtime.BrokerKind{runtime.RabbitMQ, runtime.ZeroMQ} {
		t.Run(string(kind), func(t *testing.T) {
			var tr trace
			sub := &runtime.Subscription{Name: "jobs",
				Handlers: []runtime.Handler{runtime.Handle("Job", runtime.Policy{}, func(context.Context, *job, runtime.Metadata) runtime.Outcome {
					tr.add("handler")
					return runtime.Ack()
				})},
				Middleware: []runtime.Middleware{tracing(&tr, "sub1"), tracing(&tr, "sub2")},
			}
			c, _, _ := newWithMiddleware(sub, kind, tracing(&tr, "app1"), tracing(&tr, "app2"))
			if v, _ := c.Handle(t.Context(), delivery(1)); v.Kind != adapter.VerdictAck {
				t.Fatalf("verdict %+v, want ack", v)
			}
			want := "app1> app2> sub1> sub2> handler <sub2(ack) <sub1(ack) <app2(ack) <app1(ack)"
			if got := tr.String(); got != want {
				t.Errorf("order\n got %s\nwant %s", got, want)
			}
		})
	}
}

// A middleware sees the context, the decoded message and the Metadata;
// what it passes on is what the handler gets, and the Outcome it returns
// is the one the policy applies.
func TestMiddlewareSeesTheCallAndMayChangeTheOutcome(t *testing.T) {
	type key struct{}
	var seen struct {
		msg any
		md  runtime.Metadata
		ctx any
		out runtime.Outcome
	}
	p := &probe{outcome: returning(runtime.Retry().Because(errBoom))}
	sub := &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{p.handler("Job", runtime.Policy{MaxAttempts: 3})},
		Middleware: []runtime.Middleware{func(ctx context.Context, msg any, md runtime.Metadata, next runtime.Next) runtime.Outcome {
			seen.msg, seen.md, seen.ctx = msg, md, ctx.Value(key{})
			md.Headers = map[string]string{"added": "by middleware"}
			seen.out = next(context.WithValue(ctx, key{}, "inner"), msg, md)
			return runtime.Ack() // the failure is forgiven
		}},
	}
	c, _, tr := newWithMiddleware(sub, runtime.RabbitMQ)
	ctx := context.WithValue(t.Context(), key{}, "caller")
	v, _ := c.Handle(ctx, delivery(2))
	if v.Kind != adapter.VerdictAck || tr.actions() != "ack" {
		t.Errorf("verdict %+v, actions %q: want the middleware's ack, no retry copy", v, tr.actions())
	}
	if j, ok := seen.msg.(*job); !ok || j.ID != 7 {
		t.Errorf("the middleware got message %#v, want *job 7", seen.msg)
	}
	if seen.md.Subscription != "jobs" || seen.md.MessageID != "m-1" || seen.md.MessageType != "Job" || seen.md.Attempt != 2 || seen.md.MaxAttempts != 3 {
		t.Errorf("the middleware got metadata %+v", seen.md)
	}
	if seen.ctx != "caller" {
		t.Errorf("the middleware's context carries %v, want the caller's", seen.ctx)
	}
	if seen.out.Action() != runtime.ActionRetry || !errors.Is(seen.out.Err(), errBoom) {
		t.Errorf("next returned %v, want the handler's failure", seen.out)
	}
	if len(p.calls) != 1 || p.ctxs[0].Value(key{}) != "inner" || p.calls[0].Headers["added"] != "by middleware" {
		t.Errorf("the handler did not get what the middleware passed on: %+v", p.calls)
	}
}

// A middleware that does not call next skips the handler; its Outcome is
// applied.
func TestMiddlewareMaySkipTheHandler(t *testing.T) {
	p := &probe{}
	sub := &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{p.handler("Job", runtime.Policy{DeadLetter: "jobs.dead"})},
		Middleware: []runtime.Middleware{func(context.Context, any, runtime.Metadata, runtime.Next) runtime.Outcome {
			return runtime.DeadLetterNow().Because(errors.New("seen before"))
		}},
	}
	c, _, tr := newWithMiddleware(sub, runtime.RabbitMQ)
	v, _ := c.Handle(t.Context(), delivery(1))
	if len(p.calls) != 0 {
		t.Errorf("the handler was called %d times, want 0", len(p.calls))
	}
	if v.Kind != adapter.VerdictPark || v.Reason != "dead-lettered by the handler: seen before" || tr.actions() != "send jobs.dead, ack" {
		t.Errorf("verdict %+v, actions %q: want parked with the middleware's reason", v, tr.actions())
	}
}

// A panic in a middleware is recovered like a panic in a handler: logged
// with its stack, a failure the policy applies, and seen as next's Outcome
// by the middleware around it. A handler's panic reaches the middleware as
// a failure too.
func TestMiddlewarePanicIsRecovered(t *testing.T) {
	for _, tc := range []struct {
		name        string
		inner       runtime.Middleware
		handlerBoom bool
		logMsg      string
		reason      string
	}{
		{"in a middleware", func(context.Context, any, runtime.Metadata, runtime.Next) runtime.Outcome { panic("mw kaboom") }, false,
			"middleware panicked; treating it as a failure", "middleware panicked: mw kaboom"},
		{"after next", func(ctx context.Context, msg any, md runtime.Metadata, next runtime.Next) runtime.Outcome {
			next(ctx, msg, md)
			panic("late kaboom")
		}, false, "middleware panicked; treating it as a failure", "middleware panicked: late kaboom"},
		{"in the handler", func(ctx context.Context, msg any, md runtime.Metadata, next runtime.Next) runtime.Outcome {
			return next(ctx, msg, md)
		}, true, "handler panicked; treating it as a failure", "handler panicked: handler kaboom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var outer runtime.Outcome
			p := &probe{}
			if tc.handlerBoom {
				p.outcome = func(runtime.Metadata) runtime.Outcome { panic("handler kaboom") }
			}
			sub := &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{p.handler("Job", runtime.Policy{MaxAttempts: 2})},
				Middleware: []runtime.Middleware{tc.inner}}
			c, logs, tr := newWithMiddleware(sub, runtime.RabbitMQ, func(ctx context.Context, msg any, md runtime.Metadata, next runtime.Next) runtime.Outcome {
				outer = next(ctx, msg, md)
				return outer
			})
			v, _ := c.Handle(t.Context(), delivery(1))
			if v.Kind != adapter.VerdictRetry || v.Reason != tc.reason || tr.actions() != "send jobs.retry, ack" {
				t.Errorf("verdict %+v, actions %q: want a retry because %q", v, tr.actions(), tc.reason)
			}
			if outer.Action() != runtime.ActionRetry || outer.Err() == nil || outer.Err().Error() != tc.reason {
				t.Errorf("the outer middleware saw %v, want the failure %q", outer, tc.reason)
			}
			recs := logs.find(tc.logMsg)
			if len(recs) != 1 {
				t.Fatalf("%d %q log lines, want 1: %v", len(recs), tc.logMsg, logs.all())
			}
			if r := recs[0]; r.level != slog.LevelError || r.attrs["subscription"] != "jobs" || r.attrs["message_id"] != "m-1" ||
				!strings.Contains(r.attrs["stack"], "TestMiddlewarePanicIsRecovered") {
				t.Errorf("panic log %v: want error level, subscription, message id and a stack naming the panicking function", r)
			}
		})
	}
}

// Each handler of a subscription gets the middleware, around its own call.
func TestMiddlewareWrapsEveryHandler(t *testing.T) {
	var tr trace
	handler := func(name string) runtime.Handler {
		return runtime.Handle(name, runtime.Policy{}, func(context.Context, *job, runtime.Metadata) runtime.Outcome {
			tr.add(name)
			return runtime.Ack()
		})
	}
	sub := &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{handler("Job"), handler("Invoice")},
		Middleware: []runtime.Middleware{tracing(&tr, "mw")}}
	c, _, _ := newWithMiddleware(sub, runtime.RabbitMQ)
	c.Handle(t.Context(), delivery(1))
	d := delivery(1)
	d.Type = "Invoice"
	c.Handle(t.Context(), d)
	if got, want := tr.String(), "mw> Job <mw(ack) mw> Invoice <mw(ack)"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// Poison never reaches a handler, and so never its middleware.
func TestMiddlewareDoesNotSeePoison(t *testing.T) {
	var tr trace
	sub := &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{})},
		Middleware: []runtime.Middleware{tracing(&tr, "mw")}}
	c, _, _ := newWithMiddleware(sub, runtime.RabbitMQ)
	d := delivery(1)
	d.Body = []byte(`not json`)
	if v, _ := c.Handle(t.Context(), d); !v.Poison {
		t.Fatalf("verdict %+v, want poison", v)
	}
	if tr.String() != "" {
		t.Errorf("middleware ran for poison: %s", tr.String())
	}
}

// nopCodec decodes nothing and allocates nothing.
type nopCodec struct{}

func (nopCodec) ContentType() string          { return "application/x-nop" }
func (nopCodec) Encode(any) ([]byte, error)   { return nil, nil }
func (nopCodec) Decode(_ []byte, _ any) error { return nil }

// handleCases are a Consumer without middleware and one with app and
// subscription middleware, named as BenchmarkHandleAllocation names them.
func handleCases() []struct {
	name     string
	app, sub []runtime.Middleware
} {
	passThrough := func(ctx context.Context, msg any, md runtime.Metadata, next runtime.Next) runtime.Outcome {
		return next(ctx, msg, md)
	}
	return []struct {
		name     string
		app, sub []runtime.Middleware
	}{
		{"middleware=none", nil, nil},
		{"middleware=app+subscription", []runtime.Middleware{passThrough}, []runtime.Middleware{passThrough, passThrough}},
	}
}

// handleConsumer returns a Consumer whose codec decodes nothing and whose
// one handler acks, with app and subscription middleware, and a delivery
// for it. (The message type is empty and the codec decodes nothing, so
// that whatever allocates is the Consumer's.)
func handleConsumer(app, sub []runtime.Middleware) (*adapter.Consumer, *adapter.Delivery) {
	s := &runtime.Subscription{Name: "jobs", Middleware: sub, Handlers: []runtime.Handler{
		runtime.Handle("Job", runtime.Policy{}, func(context.Context, *struct{}, runtime.Metadata) runtime.Outcome { return runtime.Ack() }),
	}}
	c := adapter.NewConsumer(s, runtime.Env{
		Logger:     slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo})),
		Codec:      nopCodec{},
		Middleware: app,
	}, adapter.Rules{Kind: runtime.RabbitMQ}, &nopTransport{})
	return c, &adapter.Delivery{MessageID: "m-1", Type: "Job", Headers: map[string]string{}}
}

// Each delivery runs the handler, through the middleware, and is acked
// (BenchmarkHandleAllocation counts what Handle allocates).
func TestHandleRunsTheHandlerWithOrWithoutMiddleware(t *testing.T) {
	for _, tc := range handleCases() {
		t.Run(tc.name, func(t *testing.T) {
			c, d := handleConsumer(tc.app, tc.sub)
			for range 3 {
				c.Handle(t.Context(), d)
			}
			if got := c.Metrics().Acked.Load(); got != 3 {
				t.Fatalf("acked %d, want 3", got)
			}
		})
	}
}

// BenchmarkHandleAllocation: a delivery costs the Consumer no allocation
// of its own, with or without middleware: the chain is built once, when
// the Consumer is made. make bench checks the allocs/op.
func BenchmarkHandleAllocation(b *testing.B) {
	for _, tc := range handleCases() {
		b.Run(tc.name, func(b *testing.B) {
			c, d := handleConsumer(tc.app, tc.sub)
			ctx := context.Background()
			b.ReportAllocs()
			n := int64(0)
			for b.Loop() {
				c.Handle(ctx, d)
				n++
			}
			if got := c.Metrics().Acked.Load(); got != n {
				b.Fatalf("acked %d, want %d: the handler did not run as measured", got, n)
			}
		})
	}
}

// nopTransport acknowledges and sends nothing, without allocating.
type nopTransport struct{}

func (*nopTransport) Send(_ context.Context, _ *adapter.Delivery, _ *adapter.Copy, done func(error)) {
	done(nil)
}
func (*nopTransport) Ack(context.Context, *adapter.Delivery) error     { return nil }
func (*nopTransport) Reject(context.Context, *adapter.Delivery) error  { return nil }
func (*nopTransport) Requeue(context.Context, *adapter.Delivery) error { return nil }
func (*nopTransport) Release(context.Context, *adapter.Delivery) error { return nil }

// A handler call that outlives Policy.Timeout has its context cancelled
// with a TimeoutError as the cause. A failure it returns late has a reason
// that says so; a late ack, drop or dead-letter counts as what it is, with
// a warning that it was late (TestLateResult).
func TestTimeout(t *testing.T) {
	const timeout = 20 * time.Millisecond
	waitsForCtx := func(ctx context.Context, _ runtime.Metadata) runtime.Outcome {
		<-ctx.Done()
		return runtime.OutcomeOf(ctx.Err())
	}
	for _, tc := range []struct {
		name   string
		call   func(ctx context.Context, md runtime.Metadata) runtime.Outcome
		policy runtime.Policy
		kind   adapter.VerdictKind
		reason string
	}{
		{"a handler that honours its context: retried", waitsForCtx, runtime.Policy{MaxAttempts: 2, Timeout: timeout},
			adapter.VerdictRetry, "handler timed out after 20ms"},
		{"on the last attempt: parked", waitsForCtx, runtime.Policy{Timeout: timeout, DeadLetter: "jobs.dead"},
			adapter.VerdictPark, "failed: handler timed out after 20ms"},
		{"a handler that returns its own error: kept in the reason", func(ctx context.Context, _ runtime.Metadata) runtime.Outcome {
			<-ctx.Done()
			return runtime.OutcomeOf(fmt.Errorf("query stopped at row 3: %w", ctx.Err()))
		}, runtime.Policy{MaxAttempts: 2, Timeout: timeout}, adapter.VerdictRetry, "handler timed out after 20ms: query stopped at row 3: context deadline exceeded"},
		{"a handler that ignores its context and fails late: the timeout is the reason", func(ctx context.Context, _ runtime.Metadata) runtime.Outcome {
			time.Sleep(2 * timeout)
			return runtime.OutcomeOf(errors.New("row locked"))
		}, runtime.Policy{MaxAttempts: 2, Timeout: timeout}, adapter.VerdictRetry, "handler timed out after 20ms: row locked"},
		{"a handler within its time: acked", func(ctx context.Context, _ runtime.Metadata) runtime.Outcome {
			if _, ok := ctx.Deadline(); !ok {
				return runtime.Retry().Because(errors.New("no deadline"))
			}
			return runtime.Ack()
		}, runtime.Policy{MaxAttempts: 2, Timeout: time.Hour}, adapter.VerdictAck, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cause error
			sub := &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{runtime.Handle("Job", tc.policy, func(ctx context.Context, _ *job, md runtime.Metadata) runtime.Outcome {
				out := tc.call(ctx, md)
				cause = context.Cause(ctx)
				return out
			})}}
			c, _, _ := newWithMiddleware(sub, runtime.RabbitMQ)
			v, _ := c.Handle(t.Context(), delivery(1))
			if v.Kind != tc.kind || v.Reason != tc.reason {
				t.Errorf("verdict %v because %q, want %v because %q", v.Kind, v.Reason, tc.kind, tc.reason)
			}
			var te *adapter.TimeoutError
			if tc.kind != adapter.VerdictAck && (!errors.As(cause, &te) || te.After != timeout || !errors.Is(cause, context.DeadlineExceeded)) {
				t.Errorf("the handler's context ended with cause %v, want a TimeoutError after %v", cause, timeout)
			}
		})
	}
}

// A handler that ignores its context and returns after its timeout has
// its result counted as that result: a late ack is an ack (its work is
// not done a second time), a late drop or dead-letter is one, and a late
// retry keeps its delay. Each late result but a failure is logged as a
// warning naming the message, the timeout and how long the call took.
func TestLateResult(t *testing.T) {
	const timeout = 10 * time.Millisecond
	for _, tc := range []struct {
		name   string
		out    runtime.Outcome
		kind   adapter.VerdictKind
		warned bool
		reason string
	}{
		{"ack", runtime.Ack(), adapter.VerdictAck, true, ""},
		{"drop", runtime.DropNow().Because(errors.New("stale")), adapter.VerdictDrop, true, "dropped by the handler: stale"},
		{"dead-letter", runtime.DeadLetterNow().Because(errors.New("bad")), adapter.VerdictPark, true, "dead-lettered by the handler: bad"},
		{"retry after", runtime.Retry().After(time.Minute).Because(errors.New("busy")), adapter.VerdictRetry, false, "handler timed out after 10ms: busy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			sub := &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{runtime.Handle("Job",
				runtime.Policy{MaxAttempts: 3, OutRetry: "jobs", DeadLetter: "jobs.dead", Timeout: timeout},
				func(ctx context.Context, _ *job, _ runtime.Metadata) runtime.Outcome {
					calls++
					time.Sleep(5 * timeout) // ignores ctx
					return tc.out
				})}}
			c, logs, _ := newWithMiddleware(sub, runtime.ZeroMQ)
			t.Cleanup(func() { c.Stop() })
			v, _ := c.Handle(t.Context(), delivery(1))
			if v.Kind != tc.kind || v.Reason != tc.reason || calls != 1 {
				t.Errorf("verdict %v because %q after %d calls, want %v because %q after 1", v.Kind, v.Reason, calls, tc.kind, tc.reason)
			}
			if tc.kind == adapter.VerdictRetry && v.Delay != time.Minute {
				t.Errorf("the late retry waits %v, want the minute it asked for", v.Delay)
			}
			late := logs.find("handler returned after its timeout; its result counts, but the timeout is too short or the handler ignores its context")
			if !tc.warned {
				if len(late) != 0 {
					t.Errorf("a late failure is logged as a late result: %v", late)
				}
				return
			}
			if len(late) != 1 {
				t.Fatalf("%d late-result lines, want 1:\n%v", len(late), logs.all())
			}
			l := late[0]
			took, err := time.ParseDuration(l.attrs["took"])
			if l.level != slog.LevelWarn || l.attrs["message_id"] != "m-1" || l.attrs["timeout"] != "10ms" ||
				l.attrs["outcome"] != tc.out.Action().String() || err != nil || took < 5*timeout {
				t.Errorf("late-result line %v", l)
			}
		})
	}
}

// The timeout bounds the handler only: middleware runs outside it and
// sees the timed-out call as a failure, a TimeoutError.
func TestTimeoutIsSeenByMiddleware(t *testing.T) {
	var seen runtime.Outcome
	sub := &runtime.Subscription{Name: "jobs",
		Handlers: []runtime.Handler{runtime.Handle("Job", runtime.Policy{Timeout: 10 * time.Millisecond}, func(ctx context.Context, _ *job, _ runtime.Metadata) runtime.Outcome {
			<-ctx.Done()
			return runtime.OutcomeOf(ctx.Err())
		})},
		Middleware: []runtime.Middleware{func(ctx context.Context, msg any, md runtime.Metadata, next runtime.Next) runtime.Outcome {
			seen = next(ctx, msg, md)
			if ctx.Err() != nil {
				t.Error("the middleware's context ended with the handler's timeout")
			}
			return seen
		}},
	}
	c, _, _ := newWithMiddleware(sub, runtime.RabbitMQ)
	c.Handle(t.Context(), delivery(1))
	var te *adapter.TimeoutError
	if seen.Action() != runtime.ActionRetry || !errors.As(seen.Err(), &te) {
		t.Errorf("the middleware saw %v, want a failure with a TimeoutError", seen)
	}
}

// When the handlers' own context ends (the shutdown deadline passed)
// before the timeout, the call is not reported as timed out.
func TestTimeoutIsNotTheShutdownDeadline(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	sub := &runtime.Subscription{Name: "jobs",
		Handlers: []runtime.Handler{runtime.Handle("Job", runtime.Policy{MaxAttempts: 2, OutRetry: "jobs", Timeout: time.Hour}, func(hctx context.Context, _ *job, _ runtime.Metadata) runtime.Outcome {
			cancel()
			<-hctx.Done()
			return runtime.OutcomeOf(hctx.Err())
		})}}
	c, _, _ := newWithMiddleware(sub, runtime.ZeroMQ)
	v, _ := c.Handle(ctx, delivery(1))
	if strings.Contains(v.Reason, "timed out") || v.Reason != "context canceled" {
		t.Errorf("verdict %+v, want the handler's own cancellation as the reason", v)
	}
}
