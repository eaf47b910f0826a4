package demo

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

type note struct {
	Text string `json:"text"`
}

// A prefixed broker consumes, retries and parks under the prefixed names,
// and the runtime counts under them too.
func TestPrefixedRenamesEveryQueue(t *testing.T) {
	clock := streamtest.NewClock(time.Time{})
	inner := streamtest.NewBroker(runtime.ZeroMQ, clock)
	b := Prefix(inner, "t1.")
	var seen []runtime.Metadata
	app := runtime.NewApp("prefix-test", runtime.WithClock(clock))
	app.Mount(b, &runtime.Subscription{Name: "notes", Handlers: []runtime.Handler{
		runtime.Handle("Note", runtime.Policy{MaxAttempts: 2, OutRetry: "notes.later", DeadLetter: "notes.dead"},
			func(_ context.Context, n *note, md runtime.Metadata) runtime.Outcome {
				seen = append(seen, md)
				return runtime.OutcomeOf(errors.New("no"))
			}),
	}}, &runtime.Subscription{Name: "notes.later", Handlers: []runtime.Handler{
		runtime.Handle("Note", runtime.Policy{}, func(_ context.Context, n *note, md runtime.Metadata) runtime.Outcome {
			seen = append(seen, md)
			return runtime.Ack()
		}),
	}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx) }()
	<-app.Ready()
	if err := runtime.Publish(ctx, b, runtime.Queue("notes"), "Note", note{"hi"}, runtime.WithMessageID("n-1")); err != nil {
		t.Fatal(err)
	}
	if err := runtime.Publish(ctx, b, runtime.Queue("notes"), "Note", []int{1}, runtime.WithMessageID("n-2")); err != nil { // does not decode
		t.Fatal(err)
	}
	if err := inner.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	if len(seen) != 2 || seen[0].Subscription != "t1.notes" || seen[1].Subscription != "t1.notes.later" || seen[1].Headers[runtime.RetryCountHeader] != "1" {
		t.Fatalf("handler calls %+v, want t1.notes then its retry copy on t1.notes.later", seen)
	}
	if got := inner.Queue("t1.notes.dead"); len(got) != 1 || got[0].ID != "n-2" {
		t.Fatalf("t1.notes.dead holds %+v, want the undecodable n-2", got)
	}
	if d := inner.Deliveries("t1.notes"); len(d) != 2 {
		t.Fatalf("%d deliveries on t1.notes, want 2", len(d))
	}
	// The App made counters for the names it knows; only the prefixed ones
	// count anything.
	if err := Check(app.Stats(), map[string]runtime.SubscriptionStats{
		"t1.notes":       {Delivered: 2, Retried: 1, Parked: 1},
		"t1.notes.later": {Delivered: 1, Acked: 1},
	}); err != nil {
		t.Errorf("counters: %v", err)
	}
	subs := b.Subscriptions()
	if len(subs) != 2 || subs[0].Name != "t1.notes" || subs[0].Handlers[0].Policy.DeadLetter != "t1.notes.dead" {
		t.Errorf("Subscriptions() = %+v", subs)
	}
	if b.Kind() != runtime.ZeroMQ || b.Codec() == nil {
		t.Errorf("Kind() = %v, Codec() = %v; want the inner broker's", b.Kind(), b.Codec())
	}
}

// A prefixed broker binds the queue to the prefixed exchange and publishes
// through it, with the routing key as it is: the unprefixed exchange is
// never used.
func TestPrefixedRenamesExchanges(t *testing.T) {
	clock := streamtest.NewClock(time.Time{})
	inner := streamtest.NewBroker(runtime.RabbitMQ, clock)
	b := Prefix(inner, "t2.")
	var seen []runtime.Metadata
	app := runtime.NewApp("prefix-test", runtime.WithClock(clock))
	app.Mount(b, &runtime.Subscription{Name: "notes", Exchange: "events", Bindings: []string{"note.#"}, Handlers: []runtime.Handler{
		runtime.Handle("Note", runtime.Policy{}, func(_ context.Context, n *note, md runtime.Metadata) runtime.Outcome {
			seen = append(seen, md)
			return runtime.Ack()
		}),
	}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx) }()
	<-app.Ready()
	if err := runtime.Publish(ctx, b, runtime.Exchange("events", "note.new"), "Note", note{"hi"}, runtime.WithMessageID("n-1")); err != nil {
		t.Fatal(err)
	}
	if err := inner.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	// The inner broker knows only the prefixed exchange.
	if err := runtime.Publish(ctx, inner, runtime.Exchange("events", "note.new"), "Note", note{"lost"}); err == nil {
		t.Error("the unprefixed exchange took a message: the queue was bound to it")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || seen[0].Subscription != "t2.notes" || seen[0].MessageID != "n-1" {
		t.Fatalf("handler calls %+v, want n-1 on t2.notes", seen)
	}
	if got := b.Exchanges(); !slices.Equal(got, []string{"t2.events"}) {
		t.Errorf("Exchanges() = %v, want [t2.events]", got)
	}
}
