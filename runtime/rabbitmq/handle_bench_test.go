package rabbitmq

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/testsupport/benchpair"
	"github.com/streamgen/streamgen/runtime"
)

// nopAcknowledger acknowledges without a broker.
type nopAcknowledger struct{}

func (nopAcknowledger) Ack(uint64, bool) error        { return nil }
func (nopAcknowledger) Nack(uint64, bool, bool) error { return nil }
func (nopAcknowledger) Reject(uint64, bool) error     { return nil }

// BenchmarkHandleDelivery measures what the Broker does with one delivery
// in process, without the broker: attempt, decode, handler, verdict, ack,
// settle. BenchmarkHandleDeliveryRaw is a consume loop's decode and ack.
func BenchmarkHandleDelivery(b *testing.B) {
	br := New(brokerURL())
	br.handlerCtx = context.Background()
	s := orderSubscription("q", 1, runtime.Policy{}, nil, func(context.Context, *benchpair.Order, runtime.Metadata) error { return nil })
	r := newRunner(br, s, runtime.Env{})
	c := &sessionConsumer{acks: newAcker(nopAcknowledger{}, r.prefetch, slog.New(slog.DiscardHandler))}
	d := amqp.Delivery{Acknowledger: nopAcknowledger{}, Type: "Order", ContentType: "application/json", MessageId: "m", Body: benchpair.OrderJSON(benchpair.Small)}
	b.ReportAllocs()
	for b.Loop() {
		d.DeliveryTag++
		r.handle(c, &d)
	}
	c.acks.close()
}

func BenchmarkHandleDeliveryRaw(b *testing.B) {
	d := amqp.Delivery{Acknowledger: nopAcknowledger{}, Type: "Order", ContentType: "application/json", MessageId: "m", Body: benchpair.OrderJSON(benchpair.Small)}
	b.ReportAllocs()
	for b.Loop() {
		var o benchpair.Order
		if err := json.Unmarshal(d.Body, &o); err != nil {
			b.Fatal(err)
		}
		if err := d.Ack(false); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPumpDelivery measures a delivery's way from the consumer's
// channel through a pump to the handler and the ack, in process; the raw
// side is a consume loop on the same kind of channel.
func BenchmarkPumpDelivery(b *testing.B) {
	d := amqp.Delivery{Acknowledger: nopAcknowledger{}, Type: "Order", ContentType: "application/json", MessageId: "m", Body: benchpair.OrderJSON(benchpair.Small)}
	b.Run("streamgen", func(b *testing.B) {
		br := New(brokerURL())
		br.handlerCtx = context.Background()
		s := orderSubscription("q", 1, runtime.Policy{}, nil, func(context.Context, *benchpair.Order, runtime.Metadata) error { return nil })
		r := newRunner(br, s, runtime.Env{})
		deliveries := make(chan amqp.Delivery)
		c := &sessionConsumer{deliveries: deliveries, acks: newAcker(nopAcknowledger{}, r.prefetch, slog.New(slog.DiscardHandler))}
		r.startPumps(&session{lost: make(chan struct{})}, c)
		b.ReportAllocs()
		for b.Loop() {
			d.DeliveryTag++
			deliveries <- d
		}
		close(deliveries)
		r.waitPumps()
		c.acks.close()
	})
	b.Run("raw", func(b *testing.B) {
		deliveries := make(chan amqp.Delivery)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for d := range deliveries {
				var o benchpair.Order
				if err := json.Unmarshal(d.Body, &o); err != nil {
					panic(err)
				}
				if err := d.Ack(false); err != nil {
					panic(err)
				}
			}
		}()
		b.ReportAllocs()
		for b.Loop() {
			deliveries <- d
		}
		close(deliveries)
		<-done
	})
}
