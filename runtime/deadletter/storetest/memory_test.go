package storetest_test

import (
	"context"
	"testing"

	"github.com/streamgen/streamgen/runtime/deadletter"
	"github.com/streamgen/streamgen/runtime/deadletter/storetest"
)

// The memory store passes the suite.
func TestMemoryStoreConformance(t *testing.T) {
	storetest.Run(t, storetest.Fixture{New: memoryInstance})
}

// memoryInstance is a fresh MemoryStore. Its replays are recorded (Sent):
// a target reads those sent to its queue, or to its exchange, which is
// bound to a queue of that name.
func memoryInstance(testing.TB) storetest.Instance {
	m := deadletter.NewMemoryStore("letters")
	return storetest.Instance{
		Store: m,
		Park: func(_ context.Context, letters ...*deadletter.Letter) error {
			m.Add(letters...)
			return nil
		},
		Targets: []storetest.Target{
			{To: deadletter.Target{}, Queue: "source", Arrived: sentTo(m, "", "source")},
			{To: deadletter.Target{Queue: "other"}, Queue: "other", Arrived: sentTo(m, "", "other")},
			{To: deadletter.Target{Exchange: "ex", RoutingKey: "rk"}, Queue: "bound", Arrived: sentTo(m, "ex", "rk")},
		},
	}
}

// sentTo reads the messages m sent to exchange with key, as arriving at
// the queue they are routed to: key through the default exchange, else
// the queue "bound".
func sentTo(m *deadletter.MemoryStore, exchange, key string) func(context.Context) ([]storetest.Arrival, error) {
	return func(context.Context) ([]storetest.Arrival, error) {
		var out []storetest.Arrival
		for _, s := range m.Sent() {
			if s.Exchange != exchange || s.Key != key {
				continue
			}
			queue := s.Key
			if s.Exchange != "" {
				queue = "bound"
			}
			out = append(out, storetest.Arrival{Queue: queue, Message: s.Message})
		}
		return out, nil
	}
}
