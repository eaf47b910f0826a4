package demo

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// brokerThatCannotStart fails every Start, as a broker that cannot be
// reached does.
type brokerThatCannotStart struct{ err error }

func (b brokerThatCannotStart) Kind() runtime.BrokerKind { return runtime.ZeroMQ }
func (b brokerThatCannotStart) Start(context.Context, runtime.Env, []*runtime.Subscription) error {
	return b.err
}
func (b brokerThatCannotStart) Shutdown(context.Context) error { return nil }

func noteSubscription(handled chan<- string) *runtime.Subscription {
	return &runtime.Subscription{Name: "notes", Handlers: []runtime.Handler{
		runtime.Handle("Note", runtime.Policy{}, func(_ context.Context, n *note, _ runtime.Metadata) runtime.Outcome {
			handled <- n.Text
			return runtime.Ack()
		}),
	}}
}

func TestStartReturnsAReadyServiceThatStopStops(t *testing.T) {
	clock := streamtest.NewClock(time.Time{})
	b := streamtest.NewBroker(runtime.ZeroMQ, clock)
	app := runtime.NewApp("service-test", runtime.WithClock(clock))
	handled := make(chan string, 1)
	app.Mount(b, noteSubscription(handled))

	svc, err := Start(context.Background(), app)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-app.Ready():
	default:
		t.Fatal("Start returned before the App was ready")
	}
	if err := runtime.Publish(context.Background(), b, runtime.Queue("notes"), "Note", note{"hi"}); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-handled:
		if got != "hi" {
			t.Fatalf("handled %q, want hi", got)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the running service did not handle the note")
	}
	if err := svc.Stop(); err != nil {
		t.Fatalf("Stop = %v after a graceful stop, want nil", err)
	}
	if err := svc.Stop(); err != nil {
		t.Fatalf("a second Stop = %v, want nil again", err)
	}
	// TestMain's leak check fails the package if Run's goroutine outlived
	// Stop.
}

func TestStartEndsWithTheServiceWhenTheParentContextEnds(t *testing.T) {
	clock := streamtest.NewClock(time.Time{})
	app := runtime.NewApp("service-test", runtime.WithClock(clock))
	app.Mount(streamtest.NewBroker(runtime.ZeroMQ, clock), noteSubscription(make(chan string, 1)))
	ctx, cancel := context.WithCancel(context.Background())
	svc, err := Start(ctx, app)
	if err != nil {
		t.Fatal(err)
	}
	cancel() // Ctrl-C
	stopped := make(chan error, 1)
	go func() { stopped <- svc.Stop() }()
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatalf("Stop = %v after the demo was interrupted, want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the service did not stop when its parent context ended")
	}
}

func TestStartReturnsTheErrorOfAServiceThatCannotStart(t *testing.T) {
	unreachable := errors.New("nothing answers at that address")
	app := runtime.NewApp("service-test")
	app.Mount(brokerThatCannotStart{unreachable}, noteSubscription(make(chan string, 1)))
	svc, err := Start(context.Background(), app)
	if svc != nil || !errors.Is(err, unreachable) {
		t.Fatalf("Start = %v, %v; want no service and the broker's error", svc, err)
	}
}
