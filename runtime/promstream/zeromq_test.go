package promstream_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/promstream"
	"github.com/streamgen/streamgen/runtime/streamtest"
	"github.com/streamgen/streamgen/runtime/zeromq"
)

// freeEndpoint returns a tcp endpoint on loopback with a port nobody uses.
func freeEndpoint(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return "tcp://" + ln.Addr().String()
}

// shutdown closes a broker used only to publish.
func shutdown(t testing.TB, b runtime.Broker) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := b.Shutdown(ctx); err != nil {
		t.Errorf("shutdown: %v", err)
	}
}

// On ZeroMQ, a worker that dials a ventilator counts its reconnect once
// the ventilator restarts, and not its first connection.
func TestZeroMQReconnect(t *testing.T) {
	testkit.NoLeaks(t)
	ep := freeEndpoint(t)
	vent := zeromq.New(zeromq.Queue("work", zeromq.Ventilator(ep)))
	if err := vent.Listen(); err != nil {
		t.Fatal(err)
	}
	c, reg := newRegistered(t)
	app := runtime.NewApp("promstream-test", runtime.WithObserver(c))
	worker := zeromq.New(zeromq.Queue("work", zeromq.Dial(ep)))
	app.Mount(worker, &runtime.Subscription{Name: "work", Broker: runtime.ZeroMQ, Handlers: []runtime.Handler{
		runtime.Handle("Job", runtime.Policy{}, func(context.Context, *job, runtime.Metadata) runtime.Outcome { return runtime.Ack() }),
	}})
	stop := streamtest.RunApp(t, app)

	acked := func() float64 {
		return value(t, reg, promstream.MetricSettled, map[string]string{"broker": "zeromq", "subscription": "work", "message_type": "Job", "outcome": "acked"})
	}
	reconnects := map[string]string{"broker": "zeromq"}
	publish := func(id int) {
		t.Helper()
		if err := runtime.Publish(t.Context(), vent, runtime.Queue("work"), "Job", job{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	publish(1)
	testkit.Eventually(t, "the first job acked", func() bool { return acked() == 1 })
	if n := value(t, reg, promstream.MetricReconnects, reconnects); n != 0 {
		t.Fatalf("%v reconnects counted after the first connection, want 0", n)
	}

	shutdown(t, vent)
	vent = zeromq.New(zeromq.Queue("work", zeromq.Ventilator(ep)))
	t.Cleanup(func() { shutdown(t, vent) })
	if err := vent.Listen(); err != nil {
		t.Fatal(err)
	}
	publish(2)
	testkit.Eventually(t, "the second job acked through the new ventilator", func() bool { return acked() == 2 })
	testkit.Eventually(t, "the reconnect counted", func() bool { return value(t, reg, promstream.MetricReconnects, reconnects) == 1 })
	if err := stop(); err != nil {
		t.Fatalf("the App did not stop cleanly: %v", err)
	}
}

// On ZeroMQ, a retry copy waiting for its delay in memory is gauged while
// it waits, and no longer once it was delivered.
func TestZeroMQCopiesWaiting(t *testing.T) {
	testkit.NoLeaks(t)
	zb := zeromq.New(zeromq.Queue("jobs", zeromq.Bind(freeEndpoint(t))), zeromq.Queue("jobs.dead", zeromq.Bind(freeEndpoint(t))))
	c, reg := newRegistered(t)
	app := runtime.NewApp("promstream-test", runtime.WithObserver(c))
	// A delay long enough for a loaded machine to see the copy wait.
	jobs, _ := jobsSubscription(runtime.ZeroMQ, "jobs", 2*time.Second)
	app.Mount(zb, jobs)
	stop := streamtest.RunApp(t, app)

	waiting := map[string]string{"broker": "zeromq", "subscription": "jobs"}
	if err := runtime.Publish(t.Context(), zb, runtime.Queue("jobs"), "Job", job{ID: 2}); err != nil { // fails once, then is handled
		t.Fatal(err)
	}
	testkit.Eventually(t, "the retry copy gauged while it waits", func() bool { return value(t, reg, promstream.MetricCopiesWaiting, waiting) == 1 })
	testkit.Eventually(t, "job 2 acked on its second attempt", func() bool {
		return value(t, reg, promstream.MetricSettled, map[string]string{"broker": "zeromq", "subscription": "jobs", "message_type": "Job", "outcome": "acked"}) == 1
	})
	if n := value(t, reg, promstream.MetricCopiesWaiting, waiting); n != 0 {
		t.Errorf("%v copies waiting once the copy was handled, want 0", n)
	}
	if err := stop(); err != nil {
		t.Fatalf("the App did not stop cleanly: %v", err)
	}
}
