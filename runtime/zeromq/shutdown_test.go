package zeromq_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/clock"
	"github.com/streamgen/streamgen/runtime/streamtest"
	"github.com/streamgen/streamgen/runtime/zeromq"
)

// TestShutdownLetsTheInFlightHandlerFinish: a handler that is running when
// the app stops finishes with a live context and its message is settled;
// the queue stops receiving first.
func TestShutdownLetsTheInFlightHandlerFinish(t *testing.T) {
	testkit.NoLeaks(t)
	ep := freeEndpoint(t)
	started := make(chan struct{})
	release := make(chan struct{})
	ctxErr := make(chan error, 1)
	app := runtime.NewApp("shutdown")
	zq := zeromq.New(zeromq.Queue("jobs", zeromq.Bind(ep)))
	app.Mount(zq, &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
		runtime.Handle("job", runtime.Policy{}, func(ctx context.Context, _ *Job, _ runtime.Metadata) runtime.Outcome {
			close(started)
			<-release
			ctxErr <- ctx.Err()
			return runtime.Ack()
		}),
	}})
	stop := streamtest.RunApp(t, app)
	publishJob(t, zq, "jobs", Job{ID: 1})
	<-started

	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	// Receiving stops before the handler is done: the endpoint refuses
	// connections.
	testkit.Eventually(t, "the queue stops receiving", func() bool {
		c, err := net.Dial("tcp", strings.TrimPrefix(ep, "tcp://"))
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	select {
	case err := <-stopped:
		t.Fatalf("Run returned (%v) while a handler was in flight", err)
	default:
	}
	close(release)
	if err := <-stopped; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := <-ctxErr; err != nil {
		t.Fatalf("the in-flight handler's context ended: %v", err)
	}
	if s := app.Stats()[0]; s.Acked != 1 {
		t.Fatalf("metrics = %+v, want the in-flight message acked", s)
	}
}

// TestShutdownCountsTheDelayedCopiesItLoses: copies waiting for their delay
// are lost at shutdown; one line counts them, and each is reported with its
// message id.
func TestShutdownCountsTheDelayedCopiesItLoses(t *testing.T) {
	testkit.NoLeaks(t)
	clock := newClock()
	logs := streamtest.NewLogRecorder(nil)
	rec := newRecorder()
	app := runtime.NewApp("shutdown", runtime.WithClock(clock), runtime.WithLogger(logs.Logger()))
	zq := zeromq.New(zeromq.Queue("jobs", zeromq.Bind(freeEndpoint(t))))
	app.Mount(zq, &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
		jobHandler(rec, runtime.Policy{MaxAttempts: 3, OutRetry: "jobs"}, func(*Job, runtime.Metadata) error {
			return runtime.RetryAfter(time.Hour, errors.New("later"))
		}),
	}})
	stop := streamtest.RunApp(t, app)
	for _, id := range []string{"a", "b", "c"} {
		publishJob(t, zq, "jobs", Job{ID: 1}, runtime.WithMessageID(id))
	}
	testkit.Eventually(t, "three copies waiting", func() bool { return clock.Pending() == 3 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	lines := logs.Containing("lost")
	var summary []streamtest.LogRecord
	for _, l := range lines {
		if l.Attrs["lost"] != "" {
			summary = append(summary, l)
		}
	}
	if len(summary) != 1 || summary[0].Attrs["lost"] != "3" || summary[0].Level.String() != "WARN" {
		t.Fatalf("want one line counting 3 lost copies; logs:\n%s", logs)
	}
	perMessage := map[string]bool{}
	for _, l := range logs.Containing("could not retry the message") {
		if l.Attrs["subscription"] == "jobs" && strings.Contains(l.Attrs["err"], "lost") {
			perMessage[l.Attrs["message_id"]] = true
		}
	}
	if len(perMessage) != 3 || !perMessage["a"] || !perMessage["b"] || !perMessage["c"] {
		t.Fatalf("lost copies reported for %v, want a, b, c; logs:\n%s", perMessage, logs)
	}
	if clock.Pending() != 0 {
		t.Fatalf("timers still pending: %v", clock.PendingDelays())
	}
	if n := len(rec.All()); n != 3 {
		t.Fatalf("%d deliveries, want 3", n)
	}
}

// TestShutdownDeadlineCancelsHandlers: when Shutdown's context ends first,
// the handlers' context is cancelled and Shutdown says so.
func TestShutdownDeadlineCancelsHandlers(t *testing.T) {
	testkit.NoLeaks(t)
	started := make(chan struct{})
	cancelled := make(chan error, 1)
	release := make(chan struct{})
	finished := make(chan struct{})
	zq := zeromq.New(zeromq.Queue("jobs", zeromq.Bind(freeEndpoint(t))))
	sub := &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
		runtime.Handle("job", runtime.Policy{}, func(ctx context.Context, _ *Job, _ runtime.Metadata) runtime.Outcome {
			close(started)
			<-ctx.Done()
			cancelled <- ctx.Err()
			// Still running when Shutdown looks: a handler that
			// returned at once when cancelled could be done by then.
			<-release
			close(finished)
			return runtime.Retry().Because(ctx.Err())
		}),
	}}
	env := runtime.Env{Logger: streamtest.NewLogRecorder(nil).Logger(), Clock: clock.System{}}
	c := sub
	if err := zq.Start(context.Background(), env, []*runtime.Subscription{c}); err != nil {
		t.Fatal(err)
	}
	publishJob(t, zq, "jobs", Job{ID: 1})
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the deadline has passed already
	err := zq.Shutdown(ctx)
	close(release)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "in-flight handlers did not finish") {
		t.Fatalf("Shutdown = %v", err)
	}
	if err := <-cancelled; !errors.Is(err, context.Canceled) {
		t.Fatalf("the handler's context ended with %v, want context.Canceled", err)
	}
	<-finished
}

// TestPublishAfterShutdownFails: a shut down broker refuses to publish.
func TestPublishAfterShutdownFails(t *testing.T) {
	testkit.NoLeaks(t)
	zq := zeromq.New(zeromq.Queue("jobs", zeromq.Bind(freeEndpoint(t))))
	shutdown(t, zq)
	err := zq.Publish(context.Background(), "jobs", runtime.Message{Type: "job", Body: []byte("{}")})
	if err == nil || !strings.Contains(err.Error(), "shut down") {
		t.Fatalf("Publish after Shutdown = %v", err)
	}
}

// TestASubscriptionMountedTwiceIsRefusedBeforeAnythingIsBound: the App
// refuses it, and the Broker binds nothing.
func TestASubscriptionMountedTwiceIsRefusedBeforeAnythingIsBound(t *testing.T) {
	testkit.NoLeaks(t)
	zq := zeromq.New(zeromq.Queue("jobs", zeromq.Bind("tcp://127.0.0.1:0")))
	c := &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{jobHandler(newRecorder(), runtime.Policy{}, nil)}}
	app := runtime.NewApp("twice")
	app.Mount(zq, c, c)
	err := app.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), `subscription "jobs" is mounted twice`) {
		t.Fatalf("Run = %v, want the duplicate refused", err)
	}
	if a := zq.Addr("jobs"); a != "" {
		t.Errorf("jobs is bound at %s after a refused start", a)
	}
	shutdown(t, zq)
}

// TestShutdownAfterARefusedStart: a Broker whose Start refused its
// subscriptions still shuts down cleanly (a main that defers Shutdown).
func TestShutdownAfterARefusedStart(t *testing.T) {
	testkit.NoLeaks(t)
	zq := zeromq.New(zeromq.Queue("jobs", zeromq.Bind("tcp://127.0.0.1:0")))
	c := &runtime.Subscription{Name: "orders", Handlers: []runtime.Handler{jobHandler(newRecorder(), runtime.Policy{}, nil)}}
	if err := zq.Start(context.Background(), runtime.Env{}, []*runtime.Subscription{c}); err == nil || !strings.Contains(err.Error(), `subscription "orders" has no endpoint`) {
		t.Fatalf("Start = %v, want the missing endpoint refused", err)
	}
	shutdown(t, zq)
	if err := zq.Publish(context.Background(), "jobs", runtime.Message{Type: "job", Body: []byte("{}")}); err == nil || !strings.Contains(err.Error(), "shut down") {
		t.Errorf("Publish after Shutdown = %v, want it refused", err)
	}
}

// TestPublishedMessagesReachALibzmqReaderAfterShutdown: Publish returns
// once a message is written, so what it accepted reaches a libzmq PULL
// even when Shutdown follows at once.
func TestPublishedMessagesReachALibzmqReaderAfterShutdown(t *testing.T) {
	testkit.NoLeaks(t)
	requirePyzmq(t)
	const jobs = 2500
	ep := freeEndpoint(t)
	lines, wait := startPeer(t, map[string]any{
		"bind":         map[string]string{"jobs": ep},
		"expect_total": jobs,
		"idle_exit":    3,
		"summary":      true,
	})
	zq := zeromq.New(zeromq.Queue("jobs", zeromq.Bind(ep)))
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	for i := range jobs {
		if err := zq.Publish(ctx, "jobs", runtime.Message{ID: fmt.Sprint(i), Type: "job", Body: []byte(`{"id":1}`)}); err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
	}
	err := zq.Shutdown(ctx)
	counts := peerCounts(t, lines)
	wait()
	if err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if counts["jobs"] != jobs {
		t.Fatalf("the reader read %d of the %d jobs Publish accepted", counts["jobs"], jobs)
	}
}

// failZero fails the job with id 0 and acks the others.
func failZero(j *Job, _ runtime.Metadata) error {
	if j.ID == 0 {
		return errors.New("job 0 fails")
	}
	return nil
}

// TestIdleServiceStopsWithoutWaiting: a service with every kind of socket
// connected and nothing in flight (a bound queue with a sender, a dialing
// worker, a ventilator with a worker, the outbox of a dead-letter queue
// that took its copy) stops without waiting for its shutdown deadline of an
// hour, or for its clock, which never moves. The time it took is logged.
func TestIdleServiceStopsWithoutWaiting(t *testing.T) {
	testkit.NoLeaks(t)
	jobsEP, deadEP, ventEP := freeEndpoint(t), freeEndpoint(t), freeEndpoint(t)
	rec := newRecorder()
	app := runtime.NewApp("idle", runtime.WithClock(newClock()), runtime.WithShutdownTimeout(time.Hour))
	zq := zeromq.New(
		zeromq.Queue("jobs", zeromq.Bind(jobsEP)),
		zeromq.Queue("jobs.dead", zeromq.Bind(deadEP)),
		zeromq.Queue("work", zeromq.Ventilator(ventEP)),
	)
	app.Mount(zq, &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
		jobHandler(rec, runtime.Policy{DeadLetter: "jobs.dead"}, failZero),
	}})
	dead := rawPull(t, deadEP)
	stop := streamtest.RunAppWithin(t, app, waitLimit)

	worker := runtime.NewApp("worker")
	worker.Mount(zeromq.New(zeromq.Queue("work", zeromq.Dial(ventEP))),
		&runtime.Subscription{Name: "work", Handlers: []runtime.Handler{jobHandler(rec, runtime.Policy{}, nil)}})
	stopWorker := streamtest.RunAppWithin(t, worker, waitLimit)

	sender := rawPush(t, jobsEP)
	send(t, sender, "jobs", "type: job", `{"id":0}`) // parked
	dead()
	publishJob(t, zq, "work", Job{ID: 1})
	rec.waitFor(t, "work", 1)
	testkit.Eventually(t, "the dead letter settled", func() bool { return app.Stats()[0].Parked == 1 })

	for _, s := range []struct {
		name string
		stop func() error
	}{{"the service", stop}, {"the worker", stopWorker}} {
		start := time.Now()
		if err := s.stop(); err != nil {
			t.Fatalf("%s stopped with %v", s.name, err)
		}
		t.Logf("%s stopped in %v", s.name, time.Since(start))
	}
}
