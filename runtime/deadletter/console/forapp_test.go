package console_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/deadletter"
	"github.com/streamgen/streamgen/runtime/deadletter/console"
	"github.com/streamgen/streamgen/runtime/rabbitmq"
)

type idleBroker struct{ kind runtime.BrokerKind }

func (b idleBroker) Kind() runtime.BrokerKind { return b.kind }
func (idleBroker) Start(context.Context, runtime.Env, []*runtime.Subscription) error {
	return nil
}
func (idleBroker) Shutdown(context.Context) error { return nil }

func appWithDeadLetters() *runtime.App {
	handler := func(context.Context, *struct{}, runtime.Metadata) runtime.Outcome { return runtime.Ack() }
	policy := func(dl string) runtime.Policy { return runtime.Policy{MaxAttempts: 1, DeadLetter: dl} }
	app := runtime.NewApp("shop")
	app.Mount(idleBroker{runtime.RabbitMQ},
		&runtime.Subscription{Name: "orders", Handlers: []runtime.Handler{runtime.Handle("Card", policy("orders.parked"), handler)}},
		&runtime.Subscription{Name: "refunds", Handlers: []runtime.Handler{runtime.Handle("Refund", policy("orders.parked"), handler)}})
	app.Mount(idleBroker{runtime.ZeroMQ},
		&runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{runtime.Handle("Job", policy("jobs.dead"), handler)}})
	return app
}

// ForApp opens a store for each of the App's dead-letter queues, on
// either broker, and shows the subscriptions that park on it.
func TestForAppShowsEveryDeadLetterQueueOfTheApp(t *testing.T) {
	var opened []runtime.DeadLetterQueue
	open := func(_ context.Context, q runtime.DeadLetterQueue) (deadletter.Store, error) {
		opened = append(opened, q)
		if q.Name == "orders.parked" {
			return newMemStore(q.Name, letter("m1", "Card", "orders", "card declined", t0, `{}`)), nil
		}
		return newMemStore(q.Name), nil
	}
	c, err := console.ForApp(context.Background(), appWithDeadLetters(), open, console.Options{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	if len(opened) != 2 || opened[0].Broker != runtime.RabbitMQ || opened[1].Name != "jobs.dead" || opened[1].Broker != runtime.ZeroMQ {
		t.Fatalf("opened %+v", opened)
	}
	_ = c.Close()
	c2, err := console.ForApp(context.Background(), appWithDeadLetters(), open, console.Options{Token: token, Fresh: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	site := serveConsole(t, c2)
	site.signIn()
	a := site.get("/")
	for _, want := range []string{"orders.parked", "Parked by orders, refunds.", "jobs.dead", "Parked by jobs.", "card declined"} {
		if !strings.Contains(a.body, want) {
			t.Errorf("the overview lacks %q", want)
		}
	}
}

func TestForAppFailsWithoutDeadLetterQueuesOrWhenOneCannotBeOpened(t *testing.T) {
	if _, err := console.ForApp(context.Background(), runtime.NewApp("empty"), nil, console.Options{}); err == nil || !strings.Contains(err.Error(), "has no dead-letter queue") {
		t.Fatalf("an App without dead-letter queues: %v", err)
	}
	var stores []*memStore
	open := func(_ context.Context, q runtime.DeadLetterQueue) (deadletter.Store, error) {
		if q.Broker == runtime.ZeroMQ {
			return nil, errors.New("no keeper here")
		}
		s := newMemStore(q.Name)
		stores = append(stores, s)
		return s, nil
	}
	_, err := console.ForApp(context.Background(), appWithDeadLetters(), open, console.Options{})
	if err == nil || !strings.Contains(err.Error(), "open dead-letter queue jobs.dead: no keeper here") {
		t.Fatalf("a store that cannot be opened: %v", err)
	}
	if len(stores) != 1 || !stores[0].closed {
		t.Fatal("the stores opened before are not closed")
	}
	// DialRabbitMQ opens RabbitMQ queues only.
	_, err = console.ForApp(context.Background(), appWithDeadLetters(), rabbitmq.DeadLetterOpener("amqp://guest:guest@127.0.0.1:1/"), console.Options{})
	if err == nil || strings.Contains(err.Error(), "guest:guest") {
		t.Fatalf("DialRabbitMQ of a broker that does not answer: %v", err)
	}
}
