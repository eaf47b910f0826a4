package rabbitmq

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/runtime"
)

// BenchmarkPublish measures a confirmed publish through the Broker
// (runtime.Publish: encode, publish, wait for the confirm).
func BenchmarkPublish(b *testing.B) {
	adm := newAdmin(b)
	q := adm.queue("bench-publish")
	adm.declare(q, nil)
	br := newTestBroker()
	b.Cleanup(func() { _ = br.Close() })
	ctx := context.Background()
	for b.Loop() {
		if err := runtime.Publish(ctx, br, q, "Job", job{ID: 1}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPublishRaw is the same with amqp091-go alone: one channel in
// confirm mode, publish, wait for the confirm. Compare it with
// BenchmarkPublish.
func BenchmarkPublishRaw(b *testing.B) {
	adm := newAdmin(b)
	q := adm.queue("bench-raw")
	adm.declare(q, nil)
	ch, err := adm.conn.Channel()
	if err != nil {
		b.Fatal(err)
	}
	defer ch.Close()
	if err := ch.Confirm(false); err != nil {
		b.Fatal(err)
	}
	body := []byte(`{"id":1}`)
	for b.Loop() {
		dc, err := ch.PublishWithDeferredConfirm("", q, true, false, amqp.Publishing{Type: "Job", DeliveryMode: amqp.Persistent, Body: body})
		if err != nil || !dc.Wait() {
			b.Fatalf("publish: %v", err)
		}
	}
}

// BenchmarkConsume measures handled messages through an App: deliver,
// decode, call the handler, ack. The queue is filled before the clock
// starts.
func BenchmarkConsume(b *testing.B) {
	adm := newAdmin(b)
	q := adm.queue("bench-consume")
	adm.declare(q, nil)
	msgs := make([]amqp.Publishing, b.N)
	for i := range msgs {
		msgs[i] = amqp.Publishing{Type: "Job", ContentType: "application/json", Body: []byte(`{"id":1}`)}
	}
	adm.publish(q, msgs...)
	var handled atomic.Int64
	done := make(chan struct{})
	s := sub(q, 0, runtime.Handle("Job", runtime.Policy{}, func(context.Context, *job, runtime.Metadata) runtime.Outcome {
		if handled.Add(1) == int64(b.N) {
			close(done)
		}
		return runtime.Ack()
	}))
	s.Concurrency, s.Prefetch = 8, 64
	b.ResetTimer()
	a := runApp(b, newTestBroker(), s)
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		b.Fatal("not every message was handled")
	}
	b.StopTimer()
	_ = a.stop()
}

// BenchmarkConsumeRaw is the same with amqp091-go alone: consume with the
// same prefetch, ack each delivery. Compare it with BenchmarkConsume.
func BenchmarkConsumeRaw(b *testing.B) {
	adm := newAdmin(b)
	q := adm.queue("bench-consume-raw")
	adm.declare(q, nil)
	msgs := make([]amqp.Publishing, b.N)
	for i := range msgs {
		msgs[i] = amqp.Publishing{Type: "Job", ContentType: "application/json", Body: []byte(`{"id":1}`)}
	}
	adm.publish(q, msgs...)
	ch, err := adm.conn.Channel()
	if err != nil {
		b.Fatal(err)
	}
	defer ch.Close()
	if err := ch.Qos(64, 0, false); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	deliveries, err := ch.Consume(q, "", false, false, false, false, nil)
	if err != nil {
		b.Fatal(err)
	}
	for range b.N {
		d := <-deliveries
		if err := d.Ack(false); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
}
