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
	c := sub
	app := runtime.NewApp("twice")
	app.Mount(streamtest.NewBroker(runtime.ZeroMQ, nil), c, c)
	if err := app.Run(t.Context()); err == nil || !strings.Contains(err.Error(), `"jobs" is mounted twice`) {
		t.Errorf("Run: %v, want a duplicate error", err)
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

// What a handler is given, and what Deliveries and Rejected return, are
// copies: changing them changes neither the retry copy that goes on nor
// what the broker reports later.
func TestBrokerKeepsItsOwnCopiesOfDeliveredMessages(t *testing.T) {
	h := streamtest.New(t, runtime.RabbitMQ, streamtest.WithQuietLogs())
	h.App().Mount(h.Broker(), &runtime.Subscription{Name: "jobs", RetryDelays: []time.Duration{time.Second}, Handlers: []runtime.Handler{
		runtime.Handle("Job", runtime.Policy{MaxAttempts: 2}, func(_ context.Context, _ *job, md runtime.Metadata) runtime.Outcome {
			md.Headers["k"] = "changed by the handler"
			md.Raw.(runtime.Message).Body[0] = 'X'
			if md.Attempt == 2 {
				return runtime.DeadLetterNow()
			}
			return runtime.Retry()
		})}})
	h.Start()
	h.Publish("jobs", "Job", job{ID: 1}, runtime.WithMessageID("m"), runtime.WithHeader("k", "v"))
	h.Wait()
	first := h.Deliveries("jobs")
	first[0].Headers["k"] = "changed by the test"
	first[0].Body[0] = 'Y'
	h.Advance(time.Second)
	ds := h.Deliveries("jobs")
	if len(ds) != 2 {
		t.Fatalf("%d deliveries, want 2", len(ds))
	}
	for i, d := range ds {
		if d.Headers["k"] != "v" || string(d.Body) != `{"id":1}` {
			t.Errorf("delivery %d arrived with k=%q, body %s; want the message as published", i+1, d.Headers["k"], d.Body)
		}
	}
	rejected := h.Rejected("jobs")
	if len(rejected) != 1 {
		t.Fatalf("%d rejected, want 1", len(rejected))
	}
	rejected[0].Headers["k"] = "changed by the test"
	rejected[0].Body[0] = 'Y'
	if again := h.Rejected("jobs"); again[0].Headers["k"] != "v" || string(again[0].Body) != `{"id":1}` {
		t.Errorf("rejected message %+v changed with the copy Rejected returned", again[0])
	}
}
