package zeromq_test

import (
	"context"
	"sync"
	"testing"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/observe"
	"github.com/streamgen/streamgen/runtime/streamtest"
	"github.com/streamgen/streamgen/runtime/zeromq"
)

// reconnects counts the reconnects a broker reports to the App's
// Observer.
type reconnects struct {
	mu sync.Mutex
	n  int
}

func (o *reconnects) StartDelivery(ctx context.Context, _ observe.DeliveryStart) (context.Context, observe.DeliveryObservation) {
	return ctx, nopObservation{}
}
func (o *reconnects) StartConsumer(observe.ConsumerInfo) func() { return func() {} }
func (o *reconnects) BrokerEvent(e observe.Event) {
	if e.Kind == observe.Reconnected && e.Broker == string(runtime.ZeroMQ) {
		o.mu.Lock()
		o.n++
		o.mu.Unlock()
	}
}

func (o *reconnects) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.n
}

type nopObservation struct{}

func (nopObservation) CopyHeaders(func(string, string)) {}
func (nopObservation) End(observe.Settlement)           {}

// A worker that dials a ventilator reaches it again after the ventilator
// restarts, and reports the reconnect (not the first connection) to the
// App's Observer.
func TestDialingWorkerReportsAReconnect(t *testing.T) {
	testkit.NoLeaks(t)
	ventEP := freeEndpoint(t)
	vent := zeromq.New(zeromq.Queue("work", zeromq.Ventilator(ventEP)))
	if err := vent.Listen(); err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	obs := &reconnects{}
	app := runtime.NewApp("worker", runtime.WithObserver(obs))
	worker := zeromq.New(zeromq.Queue("work", zeromq.Dial(ventEP)))
	app.Mount(worker, &runtime.Subscription{Name: "work", Handlers: []runtime.Handler{jobHandler(rec, runtime.Policy{}, nil)}})
	streamtest.RunApp(t, app)
	publishJob(t, vent, "work", Job{ID: 1})
	rec.waitFor(t, "work", 1)
	if n := obs.count(); n != 0 {
		t.Fatalf("%d reconnects reported after the first connection, want 0", n)
	}

	shutdown(t, vent)
	vent = zeromq.New(zeromq.Queue("work", zeromq.Ventilator(ventEP)))
	defer shutdown(t, vent)
	if err := vent.Listen(); err != nil {
		t.Fatal(err)
	}
	publishJob(t, vent, "work", Job{ID: 2})
	rec.waitFor(t, "work", 2)
	testkit.Eventually(t, "the reconnect to be reported", func() bool { return obs.count() == 1 })
}
