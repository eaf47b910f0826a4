package streamtest_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// brokerThatFailsToStop starts, and fails its Shutdown.
type brokerThatFailsToStop struct{}

func (brokerThatFailsToStop) Kind() runtime.BrokerKind { return runtime.ZeroMQ }
func (brokerThatFailsToStop) Start(context.Context, runtime.Env, []*runtime.Subscription) error {
	return nil
}
func (brokerThatFailsToStop) Shutdown(context.Context) error { return errors.New("could not close") }

func jobsSubscription(rec *calls) *runtime.Subscription {
	return &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
		runtime.Handle("Job", runtime.Policy{}, func(_ context.Context, _ *job, md runtime.Metadata) runtime.Outcome {
			rec.add(md)
			return runtime.Ack()
		}),
	}}
}

func TestRunAppReturnsOnceTheAppRunsAndStopsItGracefully(t *testing.T) {
	clock := streamtest.NewClock(time.Time{})
	b := streamtest.NewBroker(runtime.ZeroMQ, clock)
	app := runtime.NewApp("run-app", runtime.WithClock(clock))
	var rec calls
	app.Mount(b, jobsSubscription(&rec))
	f := newFakeTB(t)
	var stop func() error
	f.run(func() { stop = streamtest.RunApp(f, app) })
	if stop == nil {
		t.Fatalf("RunApp failed: %s", f.finish())
	}
	select {
	case <-app.Ready():
	default:
		t.Fatal("RunApp returned before the App was ready")
	}
	if err := runtime.Publish(context.Background(), b, runtime.Queue("jobs"), "Job", job{ID: 1}); err != nil {
		t.Fatal(err)
	}
	if err := b.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if rec.len() != 1 {
		t.Fatalf("%d handler calls, want 1: the App runs", rec.len())
	}
	if err := stop(); err != nil {
		t.Fatalf("stop() = %v, want nil", err)
	}
	if err := stop(); err != nil {
		t.Fatalf("a second stop() = %v, want nil", err)
	}
	if got := f.finish(); got != "" {
		t.Errorf("failures %q after a graceful stop", got)
	}
}

func TestRunAppStopsTheAppWhenTheTestEnds(t *testing.T) {
	clock := streamtest.NewClock(time.Time{})
	app := runtime.NewApp("run-app", runtime.WithClock(clock))
	var rec calls
	app.Mount(streamtest.NewBroker(runtime.ZeroMQ, clock), jobsSubscription(&rec))
	f := newFakeTB(t)
	f.run(func() { streamtest.RunApp(f, app) })
	if got := f.finish(); got != "" {
		t.Errorf("failures %q after a graceful stop", got)
	}
	// The package's leak check fails the test run if Run's goroutine
	// outlived the cleanup.
}

func TestRunAppFailsWhenTheAppDoesNotStart(t *testing.T) {
	app := runtime.NewApp("run-app") // nothing mounted: Run fails at once
	f := newFakeTB(t)
	f.run(func() {
		streamtest.RunApp(f, app)
		t.Error("RunApp returned although the App did not start")
	})
	if got := f.finish(); !strings.HasPrefix(got, "streamtest: the app did not start: runtime: no subscriptions are mounted") {
		t.Errorf("failures %q", got)
	}
}

func TestRunAppFailsTheTestWhenTheAppStopsWithAnError(t *testing.T) {
	app := runtime.NewApp("run-app")
	var rec calls
	app.Mount(brokerThatFailsToStop{}, jobsSubscription(&rec))
	f := newFakeTB(t)
	f.run(func() { streamtest.RunApp(f, app) })
	if got := f.finish(); !strings.Contains(got, "streamtest: the app stopped with: ") || !strings.Contains(got, "could not close") {
		t.Errorf("failures %q, want the App's error at the end of the test", got)
	}
}

// brokerThatNeverStarts blocks in Start until the App's context ends.
type brokerThatNeverStarts struct{}

func (brokerThatNeverStarts) Kind() runtime.BrokerKind { return runtime.ZeroMQ }
func (brokerThatNeverStarts) Start(ctx context.Context, _ runtime.Env, _ []*runtime.Subscription) error {
	<-ctx.Done()
	return ctx.Err()
}
func (brokerThatNeverStarts) Shutdown(context.Context) error { return nil }

// RunAppWithin bounds the wait for the App to start by its patience, fails
// the test when it passes, and stops the App.
func TestRunAppWithinFailsWhenTheAppIsNotReadyInTime(t *testing.T) {
	app := runtime.NewApp("run-app")
	var rec calls
	app.Mount(brokerThatNeverStarts{}, jobsSubscription(&rec))
	f := newFakeTB(t)
	f.run(func() {
		streamtest.RunAppWithin(f, app, 50*time.Millisecond)
		t.Error("RunAppWithin returned although the App was not ready")
	})
	if got := f.finish(); got != "streamtest: the app did not start within 50ms" {
		t.Errorf("failures %q, want the start to time out", got)
	}
	// The package's leak check fails the test run if Run's goroutine
	// outlived the failure.
}
