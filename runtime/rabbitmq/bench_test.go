package rabbitmq

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/testsupport/benchpair"
	"github.com/streamgen/streamgen/internal/testsupport/benchpair/benchorder"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// The benchmarks of this file compare the Broker with the best correct
// code a careful user writes on amqp091-go alone, doing the same work on
// the same broker: a consumer that coalesces its acknowledgements, a retry
// loop that pipelines its copies' confirms, a publisher that keeps a window
// of confirms outstanding. Each runs rounds of both sides alternately
// (internal/testsupport/benchpair), so that the ratio is measured under the same load;
// -benchtime=Nx sets the number of rounds. Each side reports its wall
// time and this process's CPU time per message. Like the tests, they need
// the broker and fail without it.
//
// A consume round fills the queue while nothing consumes it, then starts
// the clock, and only then the consumer (basic.consume): the broker's
// deliveries into the client's prefetch buffer are timed too. The round
// ends when the last message is through its handler.

// consumeBatch is how many messages a round of a consume benchmark moves.
func consumeBatch(size int) int {
	if size > benchpair.Small {
		return 400
	}
	return 2000
}

// orderHandler is a handler as a user writes it; the generated adapter
// calls it through runtime.OutcomeOf.
type orderHandler func(ctx context.Context, o *benchpair.Order, md runtime.Metadata) error

// orderSubscription is the Subscription generated code builds for a
// rabbitmq handler of benchpair.Order messages, with the JSON decoder
// streamgen generates for Order (package benchorder).
func orderSubscription(queue string, prefetch int, p runtime.Policy, retryDelays []time.Duration, h orderHandler) *runtime.Subscription {
	return &runtime.Subscription{
		Name:        queue,
		Broker:      runtime.RabbitMQ,
		RetryDelays: retryDelays,
		Prefetch:    prefetch,
		Handlers: []runtime.Handler{
			runtime.HandleJSON[benchpair.Order](
				"Order",
				p,
				benchorder.Decode,
				func(ctx context.Context, msg *benchpair.Order, md runtime.Metadata) runtime.Outcome {
					return runtime.OutcomeOf(h(ctx, msg, md))
				},
			),
		},
	}
}

// orderMessages returns n persistent messages carrying body, as a
// generated publisher sends them.
func orderMessages(n int, body []byte) []amqp.Publishing {
	msgs := make([]amqp.Publishing, n)
	for i := range msgs {
		msgs[i] = amqp.Publishing{Type: "Order", ContentType: "application/json", DeliveryMode: amqp.Persistent, MessageId: fmt.Sprintf("bench-%08d", i), Body: body}
	}
	return msgs
}

// roundTimeout bounds a round of a benchmark; a round that takes longer
// fails it.
const roundTimeout = 3 * patience

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

// counter ends a round once its batch of messages is through.
type counter struct {
	batch int64
	count atomic.Int64
	end   chan time.Time
}

func newCounter(batch int) *counter {
	return &counter{batch: int64(batch), end: make(chan time.Time, 1)}
}

// done counts a message through; the batch-th ends the round.
func (c *counter) done() {
	if c.count.Add(1) == c.batch {
		c.end <- time.Now()
	}
}

// round fills queue with msgs while nothing consumes it, then starts the
// clock and the consumer (start), and returns the time and CPU time until
// the round's last message was through; stop stops the consumer again,
// untimed.
func round(b *testing.B, adm *admin, queue string, msgs []amqp.Publishing, c *counter, start, stop func()) benchpair.Sample {
	b.Helper()
	adm.publish(queue, msgs...)
	c.count.Store(0)
	t := time.NewTimer(roundTimeout)
	defer t.Stop()
	cpu := benchpair.CPUTime()
	begin := time.Now()
	start()
	var s benchpair.Sample
	select {
	case end := <-c.end:
		s = benchpair.Sample{Time: end.Sub(begin), CPU: benchpair.CPUTime() - cpu}
	case <-t.C:
		b.Fatalf("%d of %d messages handled within %v", c.count.Load(), c.batch, roundTimeout)
	}
	stop()
	return s
}

// benchBroker runs sub in an App on a Broker of its own until the
// benchmark ends, and returns the Broker with its consumer stopped: a
// round starts it (see consumerSwitch).
func benchBroker(b *testing.B, sub *runtime.Subscription) consumerSwitch {
	b.Helper()
	br := New(brokerURL(), WithConnectionName("streamgen-bench-"+randomHex(4)))
	a := runtime.NewApp("streamgen-bench")
	a.Mount(br, sub)
	streamtest.RunApp(b, a)
	sw := consumerSwitch{b: b, br: br}
	sw.stop()
	return sw
}

// consumerSwitch stops and starts the consumers of a running Broker's only
// subscription (of its queue, and of its suspect queue) on their channels,
// so that a round's queue can fill while nothing consumes it. The
// deliveries run through the Broker's own pumps, handler slots and
// settling, as they do when the Broker consumes by itself.
type consumerSwitch struct {
	b  *testing.B
	br *Broker
}

func (s consumerSwitch) consumers() (*session, []*sessionConsumer) {
	s.br.mu.Lock()
	defer s.br.mu.Unlock()
	return s.br.sess, s.br.sess.consumers
}

// stop cancels the consumers and waits until their handlers are done.
func (s consumerSwitch) stop() {
	_, cs := s.consumers()
	for _, c := range cs {
		if err := c.ch.Cancel(c.tag, false); err != nil {
			s.b.Fatal(err)
		}
	}
	cs[0].runner.waitPumps()
}

// start consumes again, with the Broker's pumps.
func (s consumerSwitch) start() {
	sess, cs := s.consumers()
	for _, c := range cs {
		deliveries, err := c.ch.Consume(c.queue, c.tag, false, false, false, false, nil)
		if err != nil {
			s.b.Fatal(err)
		}
		c.deliveries = deliveries
		c.runner.startPumps(sess, c)
	}
}

// rawAcker is the acknowledger a careful amqp091-go consumer writes: it
// acks with multiple=true up to the highest contiguous settled delivery
// tag, every prefetch/4 acks and 1ms after the last. Only acks; the
// baselines never nack.
type rawAcker struct {
	ch    *amqp.Channel
	every int

	mu      sync.Mutex
	contig  uint64          // every tag up to here is acked here
	sent    uint64          // the broker has the acks up to here
	ahead   map[uint64]bool // acked tags beyond a gap
	timer   *time.Timer
	armed   bool
	touched bool
}

func newRawAcker(ch *amqp.Channel, prefetch int) *rawAcker {
	a := &rawAcker{ch: ch, every: max(prefetch/4, 1), ahead: map[uint64]bool{}}
	a.timer = time.AfterFunc(time.Hour, a.tick)
	a.timer.Stop()
	return a
}

func (a *rawAcker) ack(tag uint64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if tag != a.contig+1 {
		a.ahead[tag] = true
	} else {
		a.contig = tag
		for a.ahead[a.contig+1] {
			delete(a.ahead, a.contig+1)
			a.contig++
		}
	}
	a.touched = true
	if a.contig-a.sent >= uint64(a.every) {
		return a.flush()
	}
	if !a.armed {
		a.armed = true
		a.timer.Reset(time.Millisecond)
	}
	return nil
}

func (a *rawAcker) flush() error {
	if a.contig == a.sent {
		return nil
	}
	a.sent = a.contig
	return a.ch.Ack(a.contig, true)
}

// tick flushes once no ack came for a millisecond.
func (a *rawAcker) tick() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.touched {
		a.touched = false
		a.timer.Reset(time.Millisecond)
		return
	}
	a.armed = false
	_ = a.flush()
	if len(a.ahead) > 0 || a.contig != a.sent {
		a.armed = true
		a.timer.Reset(time.Millisecond)
	}
}

// rawConsumer consumes queue on a channel of its own with manual acks
// through a rawAcker, running handle in concurrency goroutines, during
// rounds.
type rawConsumer struct {
	b           *testing.B
	ch          *amqp.Channel
	acks        *rawAcker
	queue       string
	concurrency int
	handle      func(d *amqp.Delivery) error
	running     sync.WaitGroup
}

func newRawConsumer(b *testing.B, conn *amqp.Connection, queue string, prefetch, concurrency int, handle func(d *amqp.Delivery) error) *rawConsumer {
	b.Helper()
	ch, err := conn.Channel()
	if err != nil {
		b.Fatal(err)
	}
	if err := ch.Qos(prefetch, 0, false); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ch.Close() })
	return &rawConsumer{b: b, ch: ch, acks: newRawAcker(ch, prefetch), queue: queue, concurrency: concurrency, handle: handle}
}

func (c *rawConsumer) start() {
	deliveries, err := c.ch.Consume(c.queue, "raw", false, false, false, false, nil)
	if err != nil {
		c.b.Fatal(err)
	}
	for range c.concurrency {
		c.running.Go(func() {
			for d := range deliveries {
				if err := c.handle(&d); err != nil {
					c.b.Errorf("baseline: %v", err)
				}
			}
		})
	}
}

func (c *rawConsumer) stop() {
	if err := c.ch.Cancel("raw", false); err != nil {
		c.b.Fatal(err)
	}
	c.running.Wait()
}

// BenchmarkConsume measures consuming persistent messages with manual
// acks: the Broker running a Subscription as generated code builds it
// (deliver, decode, call the handler, ack), with concurrency handler slots,
// against a raw consumer with as many goroutines that decodes the same
// JSON into the same type and coalesces its acks (rawAcker); and the same
// for an order in protobuf.
func BenchmarkConsume(b *testing.B) {
	for _, prefetch := range []int{50, 250} {
		for _, concurrency := range []int{1, 4} {
			b.Run(fmt.Sprintf("payload=%s/prefetch=%d/concurrency=%d", benchpair.SizeName(benchpair.Small), prefetch, concurrency), func(b *testing.B) {
				benchConsume(b, benchpair.Small, prefetch, concurrency)
			})
		}
	}
	b.Run(fmt.Sprintf("payload=%s/prefetch=50/concurrency=1", benchpair.SizeName(benchpair.Large)), func(b *testing.B) {
		benchConsume(b, benchpair.Large, 50, 1)
	})
	// The same decoding on both sides: what streamgen adds to the raw
	// client, without the generated decoder's head start.
	b.Run(fmt.Sprintf("payload=%s/prefetch=50/concurrency=1/decoder=encoding_json", benchpair.SizeName(benchpair.Small)), func(b *testing.B) {
		benchConsume(b, benchpair.Small, 50, 1, withoutGeneratedDecoder)
	})
	// The same order in protobuf (smaller on the wire), both sides
	// decoding it with proto.Unmarshal (codec_bench_test.go).
	b.Run(fmt.Sprintf("payload=%s/prefetch=50/concurrency=1/codec=protobuf", benchpair.SizeName(benchpair.Small)), func(b *testing.B) {
		benchConsumeProtobuf(b, benchpair.Small, 50, 1)
	})
}

// withoutGeneratedDecoder makes sub's handler decode with encoding/json,
// as runtime.Handle does for a type without a generated decoder.
func withoutGeneratedDecoder(sub *runtime.Subscription, done func()) {
	sub.Handlers[0] = runtime.Handle[benchpair.Order]("Order", sub.Handlers[0].Policy,
		func(context.Context, *benchpair.Order, runtime.Metadata) runtime.Outcome {
			done()
			return runtime.OutcomeOf(nil)
		})
}

func benchConsume(b *testing.B, size, prefetch, concurrency int, change ...func(sub *runtime.Subscription, done func())) {
	adm := newAdmin(b)
	n := consumeBatch(size)
	msgs := orderMessages(n, benchpair.OrderJSON(size))
	sgQueue, rawQueue := adm.queue("bench-consume"), adm.queue("bench-consume-raw")
	adm.declare(rawQueue, nil)

	sgDone, rawDone := newCounter(n), newCounter(n)
	sub := orderSubscription(sgQueue, prefetch, runtime.Policy{}, nil,
		func(context.Context, *benchpair.Order, runtime.Metadata) error {
			sgDone.done()
			return nil
		})
	sub.Concurrency = concurrency
	for _, c := range change {
		c(sub, sgDone.done)
	}
	sg := benchBroker(b, sub)
	var raw *rawConsumer
	raw = newRawConsumer(b, dial(b), rawQueue, prefetch, concurrency, func(d *amqp.Delivery) error {
		var o benchpair.Order
		if err := json.Unmarshal(d.Body, &o); err != nil {
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

// retryBatch is how many messages a round of BenchmarkRetry moves.
const retryBatch = 1000

// retryTTL is the wait queue TTL of BenchmarkRetry.
const retryTTL = 50 * time.Millisecond

// BenchmarkRetry measures messages through fail-once-then-succeed: the
// first delivery fails, a retry copy is published to the wait queue
// (persistent, mandatory, confirmed) and the original acked once the copy
// is confirmed; the broker moves the copy back after the TTL, and the
// second delivery succeeds. The Broker, with max_attempts=2 and
// retry_delay=50ms, against a raw loop that pipelines the same: it
// publishes the copy on a publishing connection of its own and takes the
// next delivery at once, acks each original when its copy's confirm
// arrives, and coalesces its acks. Prefetch 50; the figure is per message,
// both deliveries included.
func BenchmarkRetry(b *testing.B) {
	for _, concurrency := range []int{1, 4} {
		b.Run(fmt.Sprintf("prefetch=50/concurrency=%d", concurrency), func(b *testing.B) {
			benchRetry(b, 50, concurrency)
		})
	}
}

func benchRetry(b *testing.B, prefetch, concurrency int) {
	adm := newAdmin(b)
	n := retryBatch
	msgs := orderMessages(n, benchpair.OrderJSON(benchpair.Small))
	sgQueue, rawQueue := adm.queue("bench-retry"), adm.queue("bench-retry-raw")
	adm.declare(rawQueue, nil)
	rawWait := rawQueue + ".retry"
	adm.declare(rawWait, amqp.Table{
		"x-message-ttl":             retryTTL.Milliseconds(),
		"x-dead-letter-exchange":    "",
		"x-dead-letter-routing-key": rawQueue,
	})

	sgDone, rawDone := newCounter(n), newCounter(n)
	sub := orderSubscription(sgQueue, prefetch, runtime.Policy{MaxAttempts: 2}, []time.Duration{retryTTL},
		func(_ context.Context, _ *benchpair.Order, md runtime.Metadata) error {
			if md.Attempt == 1 {
				return errFailed
			}
			sgDone.done()
			return nil
		})
	sub.Concurrency = concurrency
	sg := benchBroker(b, sub)

	raw := newRawRetry(b, rawWait)
	var consumer *rawConsumer
	consumer = newRawConsumer(b, dial(b), rawQueue, prefetch, concurrency, func(d *amqp.Delivery) error {
		var o benchpair.Order
		if err := json.Unmarshal(d.Body, &o); err != nil {
			return err
		}
		if _, retried := d.Headers[runtime.RetryCountHeader]; retried {
			rawDone.done()
			return consumer.acks.ack(d.DeliveryTag)
		}
		return raw.copy(d, consumer.acks)
	})

	benchpair.Run(b, benchpair.Pair{
		Units: n, Unit: "msg", Warmup: 1,
		StreamgenSample: func(b *testing.B) benchpair.Sample {
			return round(b, adm, sgQueue, msgs, sgDone, sg.start, sg.stop)
		},
		BaselineSample: func(b *testing.B) benchpair.Sample {
			return round(b, adm, rawQueue, msgs, rawDone, consumer.start, consumer.stop)
		},
	})
}

// rawRetry publishes the baseline's retry copies with deferred confirms:
// one goroutine reads the confirms and acks each original once its copy
// is confirmed, through the consumer's coalescing acker.
type rawRetry struct {
	b     *testing.B
	ch    *amqp.Channel
	queue string
	ctx   context.Context

	send    sync.Mutex // held across sequence number and publish
	mu      sync.Mutex
	pending map[uint64]awaitedCopy
}

// awaitedCopy is a copy awaiting its confirm: the original's tag and acker.
type awaitedCopy struct {
	tag  uint64
	acks *rawAcker
}

func newRawRetry(b *testing.B, queue string) *rawRetry {
	b.Helper()
	ch, err := dial(b).Channel()
	if err != nil {
		b.Fatal(err)
	}
	if err := ch.Confirm(false); err != nil {
		b.Fatal(err)
	}
	r := &rawRetry{b: b, ch: ch, queue: queue, ctx: context.Background(), pending: map[uint64]awaitedCopy{}}
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, 1024))
	returns := ch.NotifyReturn(make(chan amqp.Return, 16))
	var drains sync.WaitGroup
	drains.Go(func() {
		for c := range confirms {
			r.mu.Lock()
			p := r.pending[c.DeliveryTag]
			delete(r.pending, c.DeliveryTag)
			r.mu.Unlock()
			if !c.Ack {
				b.Errorf("baseline: copy %d nacked", c.DeliveryTag)
				continue
			}
			if err := p.acks.ack(p.tag); err != nil {
				b.Errorf("baseline: ack: %v", err)
			}
		}
	})
	drains.Go(func() {
		for ret := range returns {
			b.Errorf("baseline: copy %s returned: %s", ret.MessageId, ret.ReplyText)
		}
	})
	b.Cleanup(func() {
		_ = ch.Close()
		drains.Wait()
	})
	return r
}

// copy publishes the retry copy of d and returns at once.
func (r *rawRetry) copy(d *amqp.Delivery, acks *rawAcker) error {
	r.send.Lock()
	defer r.send.Unlock()
	seq := r.ch.GetNextPublishSeqNo()
	r.mu.Lock()
	r.pending[seq] = awaitedCopy{tag: d.DeliveryTag, acks: acks}
	r.mu.Unlock()
	return r.ch.PublishWithContext(r.ctx, "", r.queue, true, false, amqp.Publishing{
		Headers:      amqp.Table{runtime.RetryCountHeader: "1"},
		ContentType:  d.ContentType,
		DeliveryMode: amqp.Persistent,
		MessageId:    d.MessageId,
		Type:         d.Type,
		Body:         d.Body,
	})
}

// publishBatch is how many messages a round of a publish benchmark sends.
func publishBatch(outstanding int) int {
	if outstanding == 1 {
		return 500
	}
	return 4000
}

// rawPublisher is a channel in confirm mode that publishes as generated
// typed publishers do: encode, a fresh random message id of 128 bits in
// hexadecimal, mandatory, persistent. Returns fail the benchmark.
type rawPublisher struct {
	ch    *amqp.Channel
	queue string
}

func newRawPublisher(b *testing.B, queue string) *rawPublisher {
	b.Helper()
	ch, err := dial(b).Channel()
	if err != nil {
		b.Fatal(err)
	}
	if err := ch.Confirm(false); err != nil {
		b.Fatal(err)
	}
	returns := ch.NotifyReturn(make(chan amqp.Return, 16))
	var drain sync.WaitGroup
	drain.Go(func() {
		for ret := range returns {
			b.Errorf("baseline: message %s returned: %s", ret.MessageId, ret.ReplyText)
		}
	})
	b.Cleanup(func() {
		_ = ch.Close()
		drain.Wait()
	})
	return &rawPublisher{ch: ch, queue: queue}
}

func (p *rawPublisher) publish(ctx context.Context, order *benchpair.Order) (*amqp.DeferredConfirmation, error) {
	body, err := json.Marshal(order)
	if err != nil {
		return nil, err
	}
	var id [16]byte
	_, _ = rand.Read(id[:])
	return p.ch.PublishWithDeferredConfirmWithContext(ctx, "", p.queue, true, false, amqp.Publishing{
		ContentType:  "application/json",
		DeliveryMode: amqp.Persistent,
		MessageId:    hex.EncodeToString(id[:]),
		Timestamp:    time.Now(),
		Type:         "Order",
		Body:         body,
	})
}

func confirmed(ctx context.Context, dc *amqp.DeferredConfirmation) error {
	if ok, err := dc.WaitContext(ctx); err != nil || !ok {
		return fmt.Errorf("baseline: not confirmed (ack %v): %v", ok, err)
	}
	return nil
}

// window publishes n messages from one goroutine, keeping up to size
// confirms outstanding, and waits for the last.
func (p *rawPublisher) window(ctx context.Context, order *benchpair.Order, n, size int) error {
	ring := make([]*amqp.DeferredConfirmation, size)
	for i := range n {
		if dc := ring[i%size]; dc != nil {
			if err := confirmed(ctx, dc); err != nil {
				return err
			}
		}
		dc, err := p.publish(ctx, order)
		if err != nil {
			return err
		}
		ring[i%size] = dc
	}
	for _, dc := range ring {
		if dc != nil {
			if err := confirmed(ctx, dc); err != nil {
				return err
			}
		}
	}
	return nil
}

// publishRound times send and purges queue afterwards.
func publishRound(b *testing.B, adm *admin, queue string, send func() error) benchpair.Sample {
	b.Helper()
	defer adm.purge(queue)
	var err error
	s := benchpair.Measure(func() { err = send() })
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkPublish measures confirmed publishing of 256-byte JSON
// messages, persistent and mandatory, one at a time: runtime.Publish
// through the Broker (what generated typed publishers call: encode,
// publish, wait for the confirm) against amqp091-go's deferred confirm,
// waited for at once.
func BenchmarkPublish(b *testing.B) {
	adm := newAdmin(b)
	sgQueue, rawQueue := adm.queue("bench-publish"), adm.queue("bench-publish-raw")
	adm.declare(sgQueue, nil)
	adm.declare(rawQueue, nil)
	order := benchpair.NewOrder(benchpair.Small)
	ctx := context.Background()
	br := New(brokerURL(), WithConnectionName("streamgen-bench-"+randomHex(4)))
	b.Cleanup(func() { _ = br.Close() })
	if err := runtime.Publish(ctx, br, runtime.Queue(sgQueue), "Order", &order); err != nil { // connect
		b.Fatal(err)
	}
	raw := newRawPublisher(b, rawQueue)
	n := publishBatch(1)
	benchpair.Run(b, benchpair.Pair{
		Units: n, Unit: "msg",
		StreamgenSample: func(b *testing.B) benchpair.Sample {
			return publishRound(b, adm, sgQueue, func() error {
				for range n {
					if err := runtime.Publish(ctx, br, runtime.Queue(sgQueue), "Order", &order); err != nil {
						return err
					}
				}
				return nil
			})
		},
		BaselineSample: func(b *testing.B) benchpair.Sample {
			return publishRound(b, adm, rawQueue, func() error {
				for range n {
					dc, err := raw.publish(ctx, &order)
					if err != nil {
						return err
					}
					if err := confirmed(ctx, dc); err != nil {
						return err
					}
				}
				return nil
			})
		},
	})
}

// BenchmarkPublishWindow measures publishing from one goroutine with up to
// 256 confirms outstanding: runtime.PublishAsync through the Broker (its
// publish window is 256 by default), waiting for every confirmation at
// the end of the round, against a raw window of 256 deferred confirms
// (rawPublisher.window).
func BenchmarkPublishWindow(b *testing.B) {
	const window = 256
	adm := newAdmin(b)
	sgQueue, rawQueue := adm.queue("bench-publish"), adm.queue("bench-publish-raw")
	adm.declare(sgQueue, nil)
	adm.declare(rawQueue, nil)
	order := benchpair.NewOrder(benchpair.Small)
	ctx := context.Background()
	br := New(brokerURL(), WithConnectionName("streamgen-bench-"+randomHex(4)), WithPublishWindow(window))
	b.Cleanup(func() { _ = br.Close() })
	if err := runtime.Publish(ctx, br, runtime.Queue(sgQueue), "Order", &order); err != nil { // connect
		b.Fatal(err)
	}
	raw := newRawPublisher(b, rawQueue)
	n := publishBatch(window)
	confs := make([]*runtime.Confirmation, n)
	benchpair.Run(b, benchpair.Pair{
		Units: n, Unit: "msg",
		StreamgenSample: func(b *testing.B) benchpair.Sample {
			return publishRound(b, adm, sgQueue, func() error {
				for i := range confs {
					confs[i] = runtime.PublishAsync(ctx, br, runtime.Queue(sgQueue), "Order", &order)
				}
				for _, c := range confs {
					if err := c.Wait(ctx); err != nil {
						return err
					}
				}
				return nil
			})
		},
		BaselineSample: func(b *testing.B) benchpair.Sample {
			return publishRound(b, adm, rawQueue, func() error { return raw.window(ctx, &order, n, window) })
		},
	})
}
