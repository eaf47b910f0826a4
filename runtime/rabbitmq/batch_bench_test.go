package rabbitmq

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/testsupport/benchpair"
	"github.com/streamgen/streamgen/internal/testsupport/benchpair/benchorder"
	"github.com/streamgen/streamgen/runtime"
)

// The batch benchmarks move batchMessages persistent messages into a
// handler whose call costs batchCallCost whatever the number of messages
// it gets: a stand-in for a bulk insert.
const (
	batchMessages = 20000
	batchCallCost = 2 * time.Millisecond
	batchSize     = 100
	batchPrefetch = 2 * batchSize
	batchWait     = 50 * time.Millisecond
)

// batchSubscription is the Subscription generated code builds for
// //stream:subscriber "q" batch_size=100 batch_wait=50ms prefetch=200 on a
// func(ctx, []*benchpair.Order) error.
func batchSubscription(queue string, done func()) *runtime.Subscription {
	return &runtime.Subscription{
		Name:      queue,
		Broker:    runtime.RabbitMQ,
		Prefetch:  batchPrefetch,
		BatchSize: batchSize,
		BatchWait: batchWait,
		Handlers: []runtime.Handler{
			runtime.HandleBatch[benchpair.Order]("Order", runtime.Policy{}, benchorder.Decode,
				func(_ context.Context, orders []*benchpair.Order) error {
					time.Sleep(batchCallCost)
					for range orders {
						done()
					}
					return nil
				}),
		},
	}
}

// BenchmarkBatch measures a batch handler (batch_size=100, prefetch 200)
// whose call costs 2 ms, over 20,000 persistent messages a round:
//
//   - baseline=raw: against a raw amqp091-go consumer that batches by
//     hand: prefetch 200, one goroutine gathering up to 100 deliveries (or
//     what came within 50 ms), one call, one multiple-ack per batch;
//   - baseline=single: against the same handler taking one message a
//     call (concurrency 1), through the Broker as well.
func BenchmarkBatch(b *testing.B) {
	b.Run("baseline=raw", benchBatchVsRaw)
	b.Run("baseline=single", benchBatchVsSingle)
}

func benchBatchVsRaw(b *testing.B) {
	adm := newAdmin(b)
	msgs := orderMessages(batchMessages, benchpair.OrderJSON(benchpair.Small))
	sgQueue, rawQueue := adm.queue("bench-batch"), adm.queue("bench-batch-raw")
	adm.declare(rawQueue, nil)
	sgDone, rawDone := newCounter(batchMessages), newCounter(batchMessages)
	sg := benchBroker(b, batchSubscription(sgQueue, sgDone.done))
	raw := newRawBatcher(b, dial(b), rawQueue, rawDone.done)
	benchpair.Run(b, benchpair.Pair{
		Units: batchMessages, Unit: "msg", Warmup: 1,
		StreamgenSample: func(b *testing.B) benchpair.Sample {
			return round(b, adm, sgQueue, msgs, sgDone, sg.start, sg.stop)
		},
		BaselineSample: func(b *testing.B) benchpair.Sample {
			return round(b, adm, rawQueue, msgs, rawDone, raw.start, raw.stop)
		},
	})
}

func benchBatchVsSingle(b *testing.B) {
	adm := newAdmin(b)
	msgs := orderMessages(batchMessages, benchpair.OrderJSON(benchpair.Small))
	sgQueue, oneQueue := adm.queue("bench-batch"), adm.queue("bench-batch-single")
	adm.declare(oneQueue, nil)
	sgDone, oneDone := newCounter(batchMessages), newCounter(batchMessages)
	sg := benchBroker(b, batchSubscription(sgQueue, sgDone.done))
	one := benchBroker(b, orderSubscription(oneQueue, batchPrefetch, runtime.Policy{}, nil,
		func(context.Context, *benchpair.Order, runtime.Metadata) error {
			time.Sleep(batchCallCost)
			oneDone.done()
			return nil
		}))
	benchpair.Run(b, benchpair.Pair{
		Units: batchMessages, Unit: "msg",
		StreamgenSample: func(b *testing.B) benchpair.Sample {
			return round(b, adm, sgQueue, msgs, sgDone, sg.start, sg.stop)
		},
		BaselineSample: func(b *testing.B) benchpair.Sample {
			return round(b, adm, oneQueue, msgs, oneDone, one.start, one.stop)
		},
	})
}

// rawBatcher is the batch consumer a careful amqp091-go user writes: one
// goroutine gathers up to batchSize deliveries, or what came within
// batchWait of the first, decodes them, makes the one call, and acks
// them all with one multiple-ack.
type rawBatcher struct {
	b       *testing.B
	ch      *amqp.Channel
	queue   string
	done    func()
	stopped chan struct{}
}

func newRawBatcher(b *testing.B, conn *amqp.Connection, queue string, done func()) *rawBatcher {
	b.Helper()
	ch, err := conn.Channel()
	if err != nil {
		b.Fatal(err)
	}
	if err := ch.Qos(batchPrefetch, 0, false); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ch.Close() })
	return &rawBatcher{b: b, ch: ch, queue: queue, done: done}
}

func (r *rawBatcher) start() {
	deliveries, err := r.ch.Consume(r.queue, "raw", false, false, false, false, nil)
	if err != nil {
		r.b.Fatal(err)
	}
	r.stopped = make(chan struct{})
	go func() {
		defer close(r.stopped)
		orders := make([]benchpair.Order, 0, batchSize)
		for {
			d, ok := <-deliveries
			if !ok {
				return
			}
			orders = orders[:0]
			last := d.DeliveryTag
			orders = r.add(orders, &d)
			timer := time.NewTimer(batchWait)
		gather:
			for len(orders) < batchSize {
				select {
				case d, ok := <-deliveries:
					if !ok {
						break gather
					}
					last = d.DeliveryTag
					orders = r.add(orders, &d)
				case <-timer.C:
					break gather
				}
			}
			timer.Stop()
			time.Sleep(batchCallCost)
			for range orders {
				r.done()
			}
			if err := r.ch.Ack(last, true); err != nil {
				r.b.Errorf("baseline: %v", err)
				return
			}
		}
	}()
}

func (r *rawBatcher) add(orders []benchpair.Order, d *amqp.Delivery) []benchpair.Order {
	var o benchpair.Order
	if err := json.Unmarshal(d.Body, &o); err != nil {
		r.b.Errorf("baseline: %v", err)
	}
	return append(orders, o)
}

func (r *rawBatcher) stop() {
	if err := r.ch.Cancel("raw", false); err != nil {
		r.b.Fatal(err)
	}
	<-r.stopped
}
