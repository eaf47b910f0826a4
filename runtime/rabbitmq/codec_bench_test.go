package rabbitmq

import (
	"context"
	"fmt"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"
	"google.golang.org/protobuf/proto"

	"github.com/streamgen/streamgen/internal/testsupport/benchpair"
	"github.com/streamgen/streamgen/internal/testsupport/testpb"
	"github.com/streamgen/streamgen/runtime"
)

// protoOrder returns benchpair.NewOrder(size) as the protocol buffer
// message testpb.Order: the same order, smaller on the wire.
func protoOrder(size int) *testpb.Order {
	o := benchpair.NewOrder(size)
	p := &testpb.Order{Id: int64(o.ID), Customer: o.Customer}
	for _, it := range o.Items {
		p.Items = append(p.Items, &testpb.OrderItem{Sku: it.SKU, Qty: int32(it.Qty), Price: it.Price})
	}
	return p
}

// benchConsumeProtobuf is benchConsume for a protocol buffer message: the
// Broker runs the Subscription generated code builds for a handler of
// *testpb.Order (runtime.HandleJSON, which reads application/protobuf
// with runtime.Protobuf), against a raw consumer that decodes the same
// body with proto.Unmarshal into the same type and coalesces its acks.
func benchConsumeProtobuf(b *testing.B, size, prefetch, concurrency int) {
	adm := newAdmin(b)
	n := consumeBatch(size)
	body, err := proto.Marshal(protoOrder(size))
	if err != nil {
		b.Fatal(err)
	}
	msgs := make([]amqp.Publishing, n)
	for i := range msgs {
		msgs[i] = amqp.Publishing{Type: "Order", ContentType: runtime.Protobuf{}.ContentType(), DeliveryMode: amqp.Persistent, MessageId: fmt.Sprintf("bench-%08d", i), Body: body}
	}
	sgQueue, rawQueue := adm.queue("bench-consume-pb"), adm.queue("bench-consume-pb-raw")
	adm.declare(rawQueue, nil)

	sgDone, rawDone := newCounter(n), newCounter(n)
	sub := &runtime.Subscription{
		Name:        sgQueue,
		Broker:      runtime.RabbitMQ,
		Prefetch:    prefetch,
		Concurrency: concurrency,
		Handlers: []runtime.Handler{
			runtime.HandleJSON[testpb.Order]("Order", runtime.Policy{}, nil, func(context.Context, *testpb.Order, runtime.Metadata) error {
				sgDone.done()
				return nil
			}),
		},
	}
	sg := benchBroker(b, sub)
	var raw *rawConsumer
	raw = newRawConsumer(b, dial(b), rawQueue, prefetch, concurrency, func(d *amqp.Delivery) error {
		var o testpb.Order
		if err := proto.Unmarshal(d.Body, &o); err != nil {
			return err
		}
		rawDone.done()
		return raw.acks.ack(d.DeliveryTag)
	})

	benchpair.Run(b, benchpair.Pair{
		Units: n, Unit: "msg", Warmup: 1,
		StreamgenSample: func(b *testing.B) benchpair.Sample {
			return round(b, adm, sgQueue, msgs, sgDone, sg.start, sg.stop)
		},
		BaselineSample: func(b *testing.B) benchpair.Sample {
			return round(b, adm, rawQueue, msgs, rawDone, raw.start, raw.stop)
		},
	})
}
