package promstream_test

import (
	"context"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/observe"
	"github.com/streamgen/streamgen/runtime/promstream"
)

// BenchmarkDelivery is what the Collector adds to one handled, acked
// delivery: its start and its end.
func BenchmarkDelivery(b *testing.B) {
	c := promstream.New()
	defer c.StartConsumer(observe.ConsumerInfo{Broker: string(runtime.RabbitMQ), Subscription: "jobs", MessageTypes: []string{"Job"}})()
	start := observe.DeliveryStart{Broker: string(runtime.RabbitMQ), Subscription: "jobs", MessageType: "Job", Attempt: 1}
	end := observe.Settlement{Verdict: "ack", MessageType: "Job", Handled: true, HandlerDuration: time.Millisecond}
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_, d := c.StartDelivery(ctx, start)
			d.End(end)
		}
	})
}
