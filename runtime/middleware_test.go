package runtime_test

import (
	"context"
	"slices"
	"testing"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/observe"
)

// WithMiddleware hands the App's middleware to every broker in Env, in
// order; WithObserver hands the Observer. A nil middleware is an error of
// Run.
func TestAppHandsMiddlewareAndObserverToBrokers(t *testing.T) {
	var calls []string
	mw := func(name string) runtime.Middleware {
		return func(ctx context.Context, msg any, md runtime.Metadata, next runtime.Next) runtime.Outcome {
			calls = append(calls, name)
			return next(ctx, msg, md)
		}
	}
	obs := &nopObserver{}
	a := &fakeBroker{name: "a", kind: runtime.RabbitMQ, events: &events{}}
	app := runtime.NewApp("billing", runtime.WithMiddleware(mw("1"), mw("2")), runtime.WithMiddleware(mw("3")), runtime.WithObserver(obs))
	app.Mount(a, sub("jobs"))
	ctx, cancel := context.WithCancel(context.Background())
	done := run(ctx, app)
	waitReady(t, app, done)
	cancel()
	if err := result(t, done); err != nil {
		t.Fatal(err)
	}
	if len(a.env.Middleware) != 3 || a.env.Observer != obs || !a.env.Observing() {
		t.Fatalf("env has %d middleware and observer %v, want 3 and the App's", len(a.env.Middleware), a.env.Observer)
	}
	for _, m := range a.env.Middleware {
		m(context.Background(), nil, runtime.Metadata{}, func(context.Context, any, runtime.Metadata) runtime.Outcome { return runtime.Ack() })
	}
	if !slices.Equal(calls, []string{"1", "2", "3"}) {
		t.Errorf("middleware order %v, want 1 2 3", calls)
	}
	a.env.Report(observe.Event{Kind: observe.Reconnected, Broker: string(runtime.RabbitMQ)})
	if len(obs.events) != 1 || obs.events[0].Kind != observe.Reconnected {
		t.Errorf("the observer got %v, want the reported event", obs.events)
	}

	bad := runtime.NewApp("billing", runtime.WithMiddleware(nil))
	bad.Mount(&fakeBroker{name: "b", kind: runtime.RabbitMQ, events: &events{}}, sub("jobs"))
	if err := bad.Run(context.Background()); err == nil || err.Error() != "runtime: WithMiddleware was given a nil middleware" {
		t.Errorf("Run with a nil middleware: %v", err)
	}
}

// An Env without an Observer reports to nobody.
func TestEnvReportWithoutObserver(t *testing.T) {
	var env runtime.Env
	if env.Observing() {
		t.Fatal("a zero Env observes")
	}
	env.Report(observe.Event{Kind: observe.Confirmed}) // must not panic
	if got := observe.Confirmed.String() + " " + observe.Reconnected.String() + " " + observe.EventKind(9).String(); got != "confirmed reconnected EventKind(9)" {
		t.Errorf("names: %q", got)
	}
}

type nopObserver struct{ events []observe.Event }

func (o *nopObserver) StartDelivery(ctx context.Context, _ observe.DeliveryStart) (context.Context, observe.DeliveryObservation) {
	return ctx, nopObservation{}
}
func (o *nopObserver) StartConsumer(observe.ConsumerInfo) func() { return func() {} }
func (o *nopObserver) BrokerEvent(e observe.Event)               { o.events = append(o.events, e) }

type nopObservation struct{}

func (nopObservation) CopyHeaders(func(string, string)) {}
func (nopObservation) End(observe.Settlement)           {}
