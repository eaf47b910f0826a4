package deadletter_test

import (
	"context"
	"fmt"
	goruntime "runtime"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/brokerurl"
	"github.com/streamgen/streamgen/internal/testsupport/benchpair"
	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime/deadletter"
)

// benchLetters is how many letters the dead-letter benchmarks work on.
const benchLetters = 100_000

// benchQueue declares a durable classic queue with a name unique to the
// benchmark, deleted after it.
func benchQueue(b *testing.B, conn *amqp.Connection, label string) string {
	b.Helper()
	name := testkit.UniqueName("streamgen-bench.dlq." + label)
	ch, err := conn.Channel()
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = ch.Close() }()
	if _, err := ch.QueueDeclare(name, true, false, false, false, nil); err != nil {
		b.Fatalf("declare %s: %v", name, err)
	}
	b.Cleanup(func() {
		if ch, err := conn.Channel(); err == nil {
			_, _ = ch.QueueDelete(name, false, false, false)
			_ = ch.Close()
		}
	})
	return name
}

// fill parks n letters in queue, as the runtime parks them, pipelining
// the confirms.
func fill(b *testing.B, conn *amqp.Connection, queue string, n int) {
	b.Helper()
	ch, err := conn.Channel()
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = ch.Close() }()
	if err := ch.Confirm(false); err != nil {
		b.Fatal(err)
	}
	var window []*amqp.DeferredConfirmation
	wait := func() {
		if ok, err := window[0].WaitContext(context.Background()); !ok || err != nil {
			b.Fatalf("fill %s: a letter was not confirmed: %v", queue, err)
		}
		window = window[1:]
	}
	for i := range n {
		dc, err := ch.PublishWithDeferredConfirm("", queue, false, false, parked(fmt.Sprintf("m-%06d", i), i))
		if err != nil {
			b.Fatalf("fill %s: %v", queue, err)
		}
		window = append(window, dc)
		if len(window) >= 1000 {
			wait()
		}
	}
	for len(window) > 0 {
		wait()
	}
}

// peakHeap returns the most live heap the collections found while f ran
// (runtime/metrics /gc/heap/live:bytes, sampled every few milliseconds).
func peakHeap(f func()) uint64 {
	goruntime.GC()
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	f()
	close(stop)
	<-done
	return peak.Load()
}

// BenchmarkList measures streamgen dlq ls (Groups) over a classic
// dead-letter queue of 100,000 letters, in letters per second, against a
// raw amqp091-go loop that reads them all with one consumer without a
// prefetch limit and hands them back with one basic.nack; and the most
// live heap during a listing of 50,000 letters and of 100,000 (flat: about
// the same whatever the queue holds, once it holds more than one
// consumer's prefetch, about 15,000 of these letters).
func BenchmarkList(b *testing.B) {
	url := brokerurl.RabbitMQ()
	conn := testkit.DialRabbitMQ(b, url)
	ctx := context.Background()
	half := benchQueue(b, conn, "ls-half")
	fill(b, conn, half, benchLetters/2)
	q := benchQueue(b, conn, "ls")
	fill(b, conn, q, benchLetters)
	list := func(b *testing.B, name string, want int) {
		groups, err := deadletter.NewQueue(conn, name).Groups(ctx)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for _, g := range groups {
			n += g.Count
		}
		if n != want {
			b.Fatalf("ls of %s counted %d letters, want %d", name, n, want)
		}
	}
	peakHalf := peakHeap(func() { list(b, half, benchLetters/2) })
	var peakLarge uint64
	benchpair.Run(b, benchpair.Pair{
		Units:  benchLetters,
		Unit:   "msg",
		Warmup: 1,
		Streamgen: func(b *testing.B) time.Duration {
			start := time.Now()
			peakLarge = max(peakLarge, peakHeap(func() { list(b, q, benchLetters) }))
			return time.Since(start)
		},
		Baseline: func(b *testing.B) time.Duration {
			start := time.Now()
			rawList(b, conn, q, benchLetters)
			return time.Since(start)
		},
	})
	b.ReportMetric(float64(peakHalf), "heap-warm-B")
	b.ReportMetric(float64(peakLarge), "heap-end-B")
	b.ReportMetric(100*(float64(peakLarge)-float64(peakHalf))/float64(peakHalf), "growth-%")
}

// rawList reads the n messages of queue with one consumer without a
// prefetch limit and hands them back with one basic.nack.
func rawList(b *testing.B, conn *amqp.Connection, queue string, n int) {
	ch, err := conn.Channel()
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = ch.Close() }()
	deliveries, err := ch.Consume(queue, "raw-list", false, false, false, false, nil)
	if err != nil {
		b.Fatal(err)
	}
	for range n {
		if _, ok := <-deliveries; !ok {
			b.Fatal("raw list: the deliveries stopped")
		}
	}
	if err := ch.Cancel("raw-list", false); err != nil {
		b.Fatal(err)
	}
	for range deliveries {
	}
	if err := ch.Nack(0, true, true); err != nil {
		b.Fatal(err)
	}
	// As Queue does: a synchronous call, so that the nack was taken
	// before the channel closes.
	_, _, _ = ch.Get(queue, false)
	_ = ch.Nack(0, true, true)
}

// BenchmarkReplay measures streamgen dlq replay of 100,000 letters against
// a raw amqp091-go loop that moves them the same way: it consumes them,
// publishes each with a window of confirms in flight and acks each letter
// once its publish is confirmed. The letters go back and forth between two
// queues, each round moving them from one to the other.
func BenchmarkReplay(b *testing.B) {
	url := brokerurl.RabbitMQ()
	conn := testkit.DialRabbitMQ(b, url)
	ctx := context.Background()
	queues := [2]string{benchQueue(b, conn, "replay-a"), benchQueue(b, conn, "replay-b")}
	fill(b, conn, queues[0], benchLetters)
	at := 0 // the queue holding the letters
	move := func(b *testing.B, f func(from, to string) int) time.Duration {
		start := time.Now()
		if n := f(queues[at], queues[1-at]); n != benchLetters {
			b.Fatalf("moved %d letters, want %d", n, benchLetters)
		}
		took := time.Since(start)
		at = 1 - at
		return took
	}
	benchpair.Run(b, benchpair.Pair{
		Units:  benchLetters,
		Unit:   "msg",
		Warmup: 1,
		Streamgen: func(b *testing.B) time.Duration {
			return move(b, func(from, to string) int {
				rep, err := deadletter.NewQueue(conn, from).Replay(ctx, deadletter.Selection{}, deadletter.ReplayOptions{To: deadletter.Target{Queue: to}})
				if err != nil || rep.Failed > 0 {
					b.Fatalf("replay: %v %+v", err, rep)
				}
				return rep.Done
			})
		},
		Baseline: func(b *testing.B) time.Duration {
			return move(b, func(from, to string) int { return rawMove(b, conn, from, to, benchLetters) })
		},
	})
}

// rawMove moves n messages from one queue to another with amqp091-go: a
// consumer with a prefetch of twice the window, publishes with up to
// window confirms in flight, each message acked once its publish is
// confirmed.
func rawMove(b *testing.B, conn *amqp.Connection, from, to string, n int) int {
	const window = 256
	read, err := conn.Channel()
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = read.Close() }()
	pub, err := conn.Channel()
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = pub.Close() }()
	if err := pub.Confirm(false); err != nil {
		b.Fatal(err)
	}
	if err := read.Qos(2*window, 0, false); err != nil {
		b.Fatal(err)
	}
	deliveries, err := read.Consume(from, "", false, false, false, false, nil)
	if err != nil {
		b.Fatal(err)
	}
	type inflight struct {
		tag uint64
		dc  *amqp.DeferredConfirmation
	}
	var pending []inflight
	moved := 0
	settle := func() {
		p := pending[0]
		pending = pending[1:]
		if ok, err := p.dc.WaitContext(context.Background()); !ok || err != nil {
			b.Fatalf("raw move: not confirmed: %v", err)
		}
		if err := read.Ack(p.tag, false); err != nil {
			b.Fatal(err)
		}
		moved++
	}
	for range n {
		d := <-deliveries
		dc, err := pub.PublishWithDeferredConfirm("", to, true, false, amqp.Publishing{
			Headers: d.Headers, ContentType: d.ContentType, DeliveryMode: d.DeliveryMode,
			MessageId: d.MessageId, Type: d.Type, Timestamp: d.Timestamp, Body: d.Body,
		})
		if err != nil {
			b.Fatal(err)
		}
		pending = append(pending, inflight{d.DeliveryTag, dc})
		if len(pending) >= window {
			settle()
		}
	}
	for len(pending) > 0 {
		settle()
	}
	return moved
}
