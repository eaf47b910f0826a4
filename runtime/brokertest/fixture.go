package brokertest

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/clock"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// fixture is one case's world: a broker from the transport, an App running
// on it, the App's captured logs.
type fixture struct {
	t    testing.TB
	tr   Transport
	inst Instance
	spy  *shutdownSpy
	app  *runtime.App
	logs *streamtest.LogRecorder

	// stopApp stops the App started by start and returns what Run
	// returned; nil before start.
	stopApp func() error
}

// newFixture asks the transport for a broker serving queues and makes an
// App for it. Once started, the App stops in t's cleanup, before the
// transport's own cleanup runs.
func newFixture(t testing.TB, tr Transport, queues ...string) *fixture {
	t.Helper()
	return newFixtureWith(t, tr, nil, queues...)
}

// newFixtureWith is newFixture with more options for the App.
func newFixtureWith(t testing.TB, tr Transport, opts []runtime.Option, queues ...string) *fixture {
	t.Helper()
	inst := tr.New(t, slices.Clone(queues))
	if inst.Broker == nil {
		t.Fatal("brokertest: Transport.New returned no Broker")
	}
	if inst.Broker.Kind() != tr.Kind {
		t.Fatalf("brokertest: Transport.New returned a %s broker for a %s transport", inst.Broker.Kind(), tr.Kind)
	}
	clk := inst.Clock
	if clk == nil {
		clk = clock.System{}
	}
	logs := streamtest.NewLogRecorder(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo}))
	f := &fixture{
		t: t, tr: tr, inst: inst, logs: logs,
		spy: &shutdownSpy{Broker: inst.Broker, called: make(chan struct{})},
		app: runtime.NewApp("brokertest", append([]runtime.Option{
			runtime.WithLogger(logs.Logger()),
			runtime.WithClock(clk),
			runtime.WithShutdownTimeout(tr.Timeout),
		}, opts...)...),
	}
	return f
}

// subscription writes a subscription for the transport's kind: on RabbitMQ
// a retrying subscription gets the wait queue TTL RetryDelay; on ZeroMQ
// the retry copies of each retrying handler go back into the
// subscription's own queue.
func (f *fixture) subscription(name string, handlers ...runtime.Handler) *runtime.Subscription {
	s := &runtime.Subscription{Name: name, Broker: f.tr.Kind, Handlers: handlers}
	if f.tr.Kind == runtime.RabbitMQ && s.Retries() {
		s.RetryDelays = []time.Duration{f.tr.RetryDelay}
	}
	if f.tr.Kind == runtime.ZeroMQ {
		for i := range s.Handlers {
			if p := &s.Handlers[i].Policy; p.Attempts() > 1 && p.OutRetry == "" {
				p.OutRetry = name
			}
		}
	}
	return s
}

// policy writes a policy of maxAttempts attempts parking on deadLetter
// (subscription sets where ZeroMQ retry copies go).
func (f *fixture) policy(maxAttempts int, deadLetter string) runtime.Policy {
	return runtime.Policy{MaxAttempts: maxAttempts, DeadLetter: deadLetter}
}

// retryLater is the failure every retrying handler of the suite returns.
func (f *fixture) retryLater(err error) runtime.Outcome {
	return runtime.OutcomeOf(runtime.RetryAfter(f.tr.RetryDelay, err))
}

// start mounts subs and runs the App until it is ready; the test's
// cleanup stops it and requires a clean stop. Each wait is bounded by twice
// the transport's Timeout, which is also the App's shutdown timeout.
func (f *fixture) start(subs ...*runtime.Subscription) {
	f.t.Helper()
	f.app.Mount(f.spy, subs...)
	f.stopApp = streamtest.RunAppWithin(f.t, f.app, 2*f.tr.Timeout)
}

// stop stops the App and requires a clean stop. After it, what the
// handlers saw is final.
func (f *fixture) stop() {
	f.t.Helper()
	if err := f.stopApp(); err != nil {
		f.t.Fatalf("the app did not stop cleanly: %v", err)
	}
}

// publish encodes v and publishes it as runtime.Publish (what generated
// publishers call) does.
func (f *fixture) publish(queue, messageType string, v any, opts ...runtime.PublishOption) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), f.tr.Timeout)
	defer cancel()
	if err := runtime.Publish(ctx, f.inst.Broker, runtime.Queue(queue), messageType, v, opts...); err != nil {
		f.t.Fatalf("publish to %s: %v", queue, err)
	}
}

// publishRaw publishes msg as it is.
func (f *fixture) publishRaw(queue string, msg runtime.Message) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), f.tr.Timeout)
	defer cancel()
	if err := f.inst.Broker.Publish(ctx, queue, msg); err != nil {
		f.t.Fatalf("publish to %s: %v", queue, err)
	}
}

// eventually waits until cond holds, letting time pass for the broker
// between checks (retry delays need it).
func (f *fixture) eventually(what string, cond func() bool) {
	f.t.Helper()
	f.poll(what, cond, true)
}

// waitFor waits until cond holds without moving a fake clock: for states a
// handler is deliberately held in.
func (f *fixture) waitFor(what string, cond func() bool) {
	f.t.Helper()
	f.poll(what, cond, false)
}

func (f *fixture) poll(what string, cond func() bool, passTime bool) {
	f.t.Helper()
	deadline := time.Now().Add(f.tr.Timeout)
	for !cond() {
		if time.Now().After(deadline) {
			f.t.Fatalf("gave up after %v waiting for %s", f.tr.Timeout, what)
		}
		if passTime && f.inst.Pass != nil {
			f.inst.Pass(f.t, f.tr.RetryDelay)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// stats returns the App's counters for subscription.
func (f *fixture) stats(subscription string) runtime.SubscriptionStats {
	for _, s := range f.app.Stats() {
		if s.Subscription == subscription {
			return s
		}
	}
	return runtime.SubscriptionStats{Subscription: subscription}
}

// shutdownSpy is the broker as the App sees it: it reports when the App
// asks it to shut down.
type shutdownSpy struct {
	Broker
	once   sync.Once
	called chan struct{}
}

func (s *shutdownSpy) Shutdown(ctx context.Context) error {
	s.once.Do(func() { close(s.called) })
	return s.Broker.Shutdown(ctx)
}

// handlerCalls records what a handler was called with.
type handlerCalls[T any] struct {
	mu    sync.Mutex
	mds   []runtime.Metadata
	msgs  []T
	ctxOK []bool // whether the handler's context was live when it returned
}

func (h *handlerCalls[T]) add(ctx context.Context, msg *T, md runtime.Metadata) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.mds = append(h.mds, md)
	h.msgs = append(h.msgs, *msg)
	h.ctxOK = append(h.ctxOK, ctx.Err() == nil)
}

func (h *handlerCalls[T]) len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.mds)
}

func (h *handlerCalls[T]) metadata() []runtime.Metadata {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.mds)
}

func (h *handlerCalls[T]) messages() []T {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.msgs)
}

func (h *handlerCalls[T]) liveContexts() []bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.ctxOK)
}

// attempts returns the attempt numbers the handler saw, in call order.
func attemptsOf(mds []runtime.Metadata) []int {
	out := make([]int, len(mds))
	for i, md := range mds {
		out[i] = md.Attempt
	}
	return out
}

// reader is a subscription on queue whose handler acknowledges every Job
// and records it in got: what the suite reads a dead-letter queue with.
func (f *fixture) reader(queue string, got *handlerCalls[Job]) *runtime.Subscription {
	return f.subscription(queue, runtime.Handle("Job", f.policy(0, ""), func(ctx context.Context, j *Job, md runtime.Metadata) runtime.Outcome {
		got.add(ctx, j, md)
		return runtime.Ack()
	}))
}
