package streamtest_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

func TestBrokerServesOneRun(t *testing.T) {
	b := streamtest.NewBroker(runtime.RabbitMQ, nil)
	if b.Kind() != runtime.RabbitMQ || b.Clock() == nil {
		t.Fatalf("Kind() = %q, Clock() = %v", b.Kind(), b.Clock())
	}
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown before Start: %v", err)
	}
	if err := b.Start(t.Context(), runtime.Env{}, nil); err != nil {
		t.Fatal(err)
	}
	err := b.Start(t.Context(), runtime.Env{}, nil)
	if err == nil || !strings.Contains(err.Error(), "Start called twice") {
		t.Errorf("second Start: %v, want an error", err)
	}
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := b.Shutdown(context.Background()); err != nil {
		t.Errorf("second Shutdown: %v", err)
	}
}

func TestBrokerRefusesTheSameSubscriptionTwice(t *testing.T) {
	sub := &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
		runtime.Handle("Job", runtime.Policy{}, func(context.Context, *job, runtime.Metadata) runtime.Outcome { return runtime.Ack() })}}
	c := runtime.NewConsumer(sub, runtime.ZeroMQ, runtime.Env{})
	err := streamtest.NewBroker(runtime.ZeroMQ, nil).Start(t.Context(), runtime.Env{}, []*runtime.Consumer{c, c})
	if err == nil || !strings.Contains(err.Error(), `"jobs" is mounted twice`) {
		t.Errorf("Start: %v, want a duplicate error", err)
	}
}

func TestBrokerPublishErrors(t *testing.T) {
	b := streamtest.NewBroker(runtime.ZeroMQ, nil)
	if err := b.Publish(t.Context(), "", runtime.Message{}); err == nil || !strings.Contains(err.Error(), "queue name is empty") {
		t.Errorf("Publish to \"\": %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := b.Publish(ctx, "jobs", runtime.Message{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Publish with a cancelled context: %v, want context.Canceled", err)
	}
	if n := len(b.Queue("jobs")); n != 0 {
		t.Errorf("a failed publish left %d messages", n)
	}
}

// Publish keeps its own copy: changing the message afterwards changes
// nothing, and neither does changing what Queue returned.
func TestBrokerCopiesMessages(t *testing.T) {
	b := streamtest.NewBroker(runtime.ZeroMQ, nil)
	m := runtime.Message{ID: "a", Headers: map[string]string{"k": "v"}, Body: []byte("body")}
	if err := b.Publish(t.Context(), "q", m); err != nil {
		t.Fatal(err)
	}
	m.Headers["k"] = "changed"
	m.Body[0] = 'B'
	got := b.Queue("q")
	got[0].Headers["k"] = "changed again"
	got = b.Queue("q")
	if got[0].Headers["k"] != "v" || string(got[0].Body) != "body" {
		t.Errorf("queued message %+v changed with its publisher's copy", got[0])
	}
}
