package rabbitmq

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/benchpair"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// The benchmarks of this file compare the Broker with amqp091-go alone,
// doing the same work on the same broker. Each runs rounds of both sides
// alternately (internal/benchpair), so that the ratio is measured under the
// same load; -benchtime=Nx sets the number of rounds. Like the tests, they
// need the broker and fail without it.

// consumeBatch is how many messages a round of a consume benchmark moves.
func consumeBatch(size int) int {
	if size > benchpair.Small {
		return 400
	}
	return 1000
}

// orderHandler is a handler as a user writes it; the generated adapter
// calls it through runtime.OutcomeOf.
type orderHandler func(ctx context.Context, o *benchpair.Order, md runtime.Metadata) error

// orderSubscription is the Subscription generated code builds for a
// rabbitmq handler of benchpair.Order messages.
func orderSubscription(queue string, prefetch int, p runtime.Policy, retryDelays []time.Duration, h orderHandler) *runtime.Subscription {
	return &runtime.Subscription{
		Name:        queue,
		Broker:      runtime.RabbitMQ,
		RetryDelays: retryDelays,
		Prefetch:    prefetch,
		Handlers: []runtime.Handler{
			runtime.Handle[benchpair.Order](
				"Order",
				p,
				func(ctx context.Context, msg *benchpair.Order, md runtime.Metadata) runtime.Outcome {
					return runtime.OutcomeOf(h(ctx, msg, md))
				},
			),
		},
	}
}

// orderMessages returns n transient messages carrying body, as a
// generated publisher sends them.
func orderMessages(n int, body []byte) []amqp.Publishing {
	msgs := make([]amqp.Publishing, n)
	for i := range msgs {
		msgs[i] = amqp.Publishing{Type: "Order", ContentType: "application/json", MessageId: fmt.Sprintf("bench-%08d", i), Body: body}
	}
	return msgs
}

// roundTimeout bounds a round of a benchmark; a round that takes longer
// fails it.
const roundTimeout = 3 * patience

// runBenchApp runs an App with sub on a new Broker until the benchmark
// ends.
func runBenchApp(b *testing.B, sub *runtime.Subscription) {
	b.Helper()
	a := runtime.NewApp("streamgen-bench")
	a.Mount(New(brokerURL(), WithConnectionName("streamgen-bench-"+randomHex(4))), sub)
	streamtest.RunApp(b, a)
}

// round fills queue with msgs and runs one round of g.
func round(b *testing.B, adm *admin, queue string, msgs []amqp.Publishing, g *benchpair.Gate) time.Duration {
	b.Helper()
	adm.publish(queue, msgs...)
	d, err := g.Round(roundTimeout)
	if err != nil {
		b.Fatal(err)
	}
	return d
}

// dial opens a connection of the baseline's own and closes it after b.
func dial(b *testing.B) *amqp.Connection {
	b.Helper()
	conn, err := amqp.Dial(brokerURL())
	if err != nil {
		b.Fatalf("RabbitMQ is not reachable: start it with `rabbitmq-server -detached`: %v", err)
	}
	b.Cleanup(func() { _ = conn.Close() })
	return conn
}

// rawLoop consumes queue on a channel of conn with the given prefetch and
// manual acks, calling handle for each delivery in one goroutine, until the
// benchmark ends. Deliveries are passed by value, as a plain consume loop
// keeps them: on the stack.
func rawLoop(b *testing.B, conn *amqp.Connection, queue string, prefetch int, handle func(d amqp.Delivery) error) {
	b.Helper()
	ch, err := conn.Channel()
	if err != nil {
		b.Fatal(err)
	}
	if err := ch.Qos(prefetch, 0, false); err != nil {
		b.Fatal(err)
	}
	deliveries, err := ch.Consume(queue, "", false, false, false, false, nil)
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for d := range deliveries {
			if err := handle(d); err != nil {
				b.Errorf("baseline: %v", err)
				_ = ch.Close()
			}
		}
	}()
	b.Cleanup(func() {
		_ = ch.Close()
		<-done
	})
}

// BenchmarkConsume measures consuming with manual acks, one handler at a
// time: the Broker running a Subscription as generated code builds it
// (deliver, decode, call the handler, ack) against an amqp091-go consume
// loop that decodes the same JSON into the same type and acks. Each round
// fills the queue first, and times the first to the last handled message.
func BenchmarkConsume(b *testing.B) {
	for _, size := range []int{benchpair.Small, benchpair.Large} {
		for _, prefetch := range []int{1, 50, 250} {
			b.Run(fmt.Sprintf("payload=%s/prefetch=%d", benchpair.SizeName(size), prefetch), func(b *testing.B) {
				benchConsume(b, size, prefetch)
			})
		}
	}
}

func benchConsume(b *testing.B, size, prefetch int) {
	adm := newAdmin(b)
	n := consumeBatch(size)
	msgs := orderMessages(n, benchpair.OrderJSON(size))
	sgQueue, rawQueue := adm.queue("bench-consume"), adm.queue("bench-consume-raw")
	adm.declare(sgQueue, nil)
	adm.declare(rawQueue, nil)

	sg := benchpair.NewGate(n)
	runBenchApp(b, orderSubscription(sgQueue, prefetch, runtime.Policy{}, nil,
		func(context.Context, *benchpair.Order, runtime.Metadata) error {
			sg.Begin()
			sg.Done()
			return nil
		}))
	raw := benchpair.NewGate(n)
	rawLoop(b, dial(b), rawQueue, prefetch, func(d amqp.Delivery) error {
		var o benchpair.Order
		if err := json.Unmarshal(d.Body, &o); err != nil {
			return err
		}
		raw.Begin()
		raw.Done()
		return d.Ack(false)
	})

	benchpair.Run(b, benchpair.Pair{
		Units: n, Unit: "msg", Warmup: 1,
		Streamgen: func(b *testing.B) time.Duration { return round(b, adm, sgQueue, msgs, sg) },
		Baseline:  func(b *testing.B) time.Duration { return round(b, adm, rawQueue, msgs, raw) },
	})
}

// publishBatch is how many messages a round of BenchmarkPublish sends.
func publishBatch(outstanding int) int {
	if outstanding == 1 {
		return 500
	}
	return 4000
}

// BenchmarkPublish measures confirmed publishing of 256-byte JSON
// messages, persistent and mandatory, from outstanding goroutines at once:
// runtime.Publish through the Broker (what generated typed publishers
// call: encode, publish, wait for the confirm) against amqp091-go's
// PublishWithDeferredConfirmWithContext on one channel in confirm mode,
// each goroutine encoding the same value and waiting for its confirm. So
// both sides keep the same number of confirms outstanding.
func BenchmarkPublish(b *testing.B) {
	for _, outstanding := range []int{1, 64} {
		b.Run(fmt.Sprintf("outstanding=%d", outstanding), func(b *testing.B) {
			benchPublish(b, outstanding)
		})
	}
}

func benchPublish(b *testing.B, outstanding int) {
	adm := newAdmin(b)
	sgQueue, rawQueue := adm.queue("bench-publish"), adm.queue("bench-publish-raw")
	adm.declare(sgQueue, nil)
	adm.declare(rawQueue, nil)
	order := benchpair.NewOrder(benchpair.Small)
	ctx := context.Background()

	br := New(brokerURL(), WithConnectionName("streamgen-bench-"+randomHex(4)))
	b.Cleanup(func() { _ = br.Close() })
	if err := runtime.Publish(ctx, br, sgQueue, "Order", &order); err != nil { // connect
		b.Fatal(err)
	}
	ch, err := dial(b).Channel()
	if err != nil {
		b.Fatal(err)
	}
	if err := ch.Confirm(false); err != nil {
		b.Fatal(err)
	}
	var ids atomic.Int64

	n := publishBatch(outstanding)
	// concurrently runs send n times, from outstanding goroutines.
	concurrently := func(b *testing.B, send func() error) time.Duration {
		var wg sync.WaitGroup
		errs := make(chan error, outstanding)
		start := time.Now()
		for g := range outstanding {
			wg.Go(func() {
				for i := g; i < n; i += outstanding {
					if err := send(); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		d := time.Since(start)
		close(errs)
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
		return d
	}
	benchpair.Run(b, benchpair.Pair{
		Units: n, Unit: "msg",
		Streamgen: func(b *testing.B) time.Duration {
			defer adm.purge(sgQueue)
			return concurrently(b, func() error {
				return runtime.Publish(ctx, br, sgQueue, "Order", &order)
			})
		},
		Baseline: func(b *testing.B) time.Duration {
			defer adm.purge(rawQueue)
			return concurrently(b, func() error {
				body, err := json.Marshal(&order)
				if err != nil {
					return err
				}
				dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", rawQueue, true, false, amqp.Publishing{
					ContentType:  "application/json",
					DeliveryMode: amqp.Persistent,
					MessageId:    strconv.FormatInt(ids.Add(1), 16),
					Timestamp:    time.Now(),
					Type:         "Order",
					Body:         body,
				})
				if err != nil {
					return err
				}
				if ok, err := dc.WaitContext(ctx); err != nil || !ok {
					return fmt.Errorf("baseline: not confirmed (ack %v): %v", ok, err)
				}
				return nil
			})
		},
	})
}

// retryBatch is how many messages a round of BenchmarkRetry moves.
const retryBatch = 500

// retryTTL is the wait queue TTL of BenchmarkRetry.
const retryTTL = 20 * time.Millisecond

// BenchmarkRetry measures messages through fail-once-then-succeed: the
// first delivery fails, a retry copy is published to the wait queue
// (persistent, confirmed) and the original acked; the broker moves the copy
// back after the TTL, and the second delivery succeeds. The Broker, with
// max_attempts=2 and retry_delay=20ms, against an amqp091-go loop that does
// the same: confirmed publish of the copy to a wait queue with the same
// TTL on a publishing connection of its own, then ack. Both use prefetch
// 50 and one handler at a time; the figure is per message, both deliveries
// included.
func BenchmarkRetry(b *testing.B) {
	const prefetch = 50
	adm := newAdmin(b)
	n := retryBatch
	msgs := orderMessages(n, benchpair.OrderJSON(benchpair.Small))
	sgQueue, rawQueue := adm.queue("bench-retry"), adm.queue("bench-retry-raw")
	adm.declare(sgQueue, nil)
	adm.declare(rawQueue, nil)
	rawWait := rawQueue + ".retry"
	adm.declare(rawWait, amqp.Table{
		"x-message-ttl":             retryTTL.Milliseconds(),
		"x-dead-letter-exchange":    "",
		"x-dead-letter-routing-key": rawQueue,
	})

	sg := benchpair.NewGate(n)
	runBenchApp(b, orderSubscription(sgQueue, prefetch, runtime.Policy{MaxAttempts: 2}, []time.Duration{retryTTL},
		func(_ context.Context, _ *benchpair.Order, md runtime.Metadata) error {
			sg.Begin()
			if md.Attempt == 1 {
				return errFailed
			}
			sg.Done()
			return nil
		}))

	pub, err := dial(b).Channel()
	if err != nil {
		b.Fatal(err)
	}
	if err := pub.Confirm(false); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	raw := benchpair.NewGate(n)
	rawLoop(b, dial(b), rawQueue, prefetch, func(d amqp.Delivery) error {
		var o benchpair.Order
		if err := json.Unmarshal(d.Body, &o); err != nil {
			return err
		}
		raw.Begin()
		if _, retried := d.Headers[runtime.RetryCountHeader]; retried {
			raw.Done()
			return d.Ack(false)
		}
		dc, err := pub.PublishWithDeferredConfirmWithContext(ctx, "", rawWait, true, false, amqp.Publishing{
			Headers:      amqp.Table{runtime.RetryCountHeader: "1"},
			ContentType:  d.ContentType,
			DeliveryMode: amqp.Persistent,
			MessageId:    d.MessageId,
			Type:         d.Type,
			Body:         d.Body,
		})
		if err != nil {
			return err
		}
		if ok, err := dc.WaitContext(ctx); err != nil || !ok {
			return fmt.Errorf("copy not confirmed (ack %v): %v", ok, err)
		}
		return d.Ack(false)
	})

	benchpair.Run(b, benchpair.Pair{
		Units: n, Unit: "msg", Warmup: 1,
		Streamgen: func(b *testing.B) time.Duration { return round(b, adm, sgQueue, msgs, sg) },
		Baseline:  func(b *testing.B) time.Duration { return round(b, adm, rawQueue, msgs, raw) },
	})
}
