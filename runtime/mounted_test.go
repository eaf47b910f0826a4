package runtime_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/streamgen/streamgen/runtime"
)

// DeadLetterQueues lists each dead-letter queue once per broker kind,
// with the subscriptions that park on it, in mount order.
func TestDeadLetterQueuesOfAnApp(t *testing.T) {
	handler := func(context.Context, *struct{}, runtime.Metadata) runtime.Outcome { return runtime.Ack() }
	sub := func(name string, dls ...string) *runtime.Subscription {
		s := &runtime.Subscription{Name: name}
		for _, dl := range dls {
			s.Handlers = append(s.Handlers, runtime.Handle("T"+dl, runtime.Policy{MaxAttempts: 1, DeadLetter: dl}, handler))
		}
		return s
	}
	rabbit := &fakeBroker{name: "r", kind: runtime.RabbitMQ, events: &events{}}
	zmq := &fakeBroker{name: "z", kind: runtime.ZeroMQ, events: &events{}}
	app := runtime.NewApp("shop")
	app.Mount(rabbit, sub("orders", "orders.parked", "poison.parked", "orders.parked"), sub("refunds", "orders.parked"), sub("audit"))
	app.Mount(zmq, sub("jobs", "orders.parked"))
	want := []runtime.DeadLetterQueue{
		{Name: "orders.parked", Broker: runtime.RabbitMQ, Subscriptions: []string{"orders", "refunds"}},
		{Name: "poison.parked", Broker: runtime.RabbitMQ, Subscriptions: []string{"orders"}},
		{Name: "orders.parked", Broker: runtime.ZeroMQ, Subscriptions: []string{"jobs"}},
	}
	if got := app.DeadLetterQueues(); !reflect.DeepEqual(got, want) {
		t.Fatalf("DeadLetterQueues() = %+v\nwant %+v", got, want)
	}
}
