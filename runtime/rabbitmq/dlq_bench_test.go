package rabbitmq_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/brokerurl"
	"github.com/streamgen/streamgen/internal/testsupport/benchpair"
	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime/deadletter"
	"github.com/streamgen/streamgen/runtime/rabbitmq"
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

// stallAt is the letter at which BenchmarkDLQList's heap readings stall
// the reading: past the first consumers, whose prefetch grows (see
// Queue), and short of the end of the smaller queue.
const stallAt = 20_000

// readAhead lists queue with its reading stalled at the stallAt-th
// letter until the broker delivers no more (the queue's ready count holds
// still for a quarter of a second): what the client then holds is all it
// may hold read ahead. It returns the live heap then (after full
// collections) and the number of letters delivered beyond the stall.
func readAhead(b *testing.B, conn *amqp.Connection, queue string, n int) (heap uint64, ahead int) {
	b.Helper()
	ch, err := conn.Channel()
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = ch.Close() }()
	ready := func() int {
		info, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
		if err != nil {
			b.Fatal(err)
		}
		return info.Messages
	}
	var g deadletter.Grouper
	read := 0
	err = rabbitmq.NewDeadLetterQueue(conn, queue).Scan(context.Background(), func(l *deadletter.Letter) error {
		g.Add(l)
		if read++; read != stallAt {
			return nil
		}
		last, still := ready(), 0
		for still < 5 {
			time.Sleep(50 * time.Millisecond)
			now := ready()
			if now == last {
				still++
			} else {
				last, still = now, 0
			}
		}
		heap = benchpair.LiveHeap()
		ahead = n - stallAt - last
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	if read != n || ahead <= 0 {
		b.Fatalf("ls of %s read %d letters, want %d; %d read ahead at the stall", queue, read, n, ahead)
	}
	return heap, ahead
}

// BenchmarkDLQList measures streamgen dlq ls (Groups) over a classic
// dead-letter queue of 100,000 letters, in letters per second, against a
// raw amqp091-go loop that reads them all with one consumer without a
// prefetch limit and hands them back with one basic.nack.
//
// It also shows that the client's memory does not grow with the queue:
// the live heap (after full collections) with the reading of a queue of
// 50,000 letters and of one of 100,000 stalled at the 20,000th letter
// until the broker delivers no more, so that the client holds all it may
// read ahead (amqp091-go buffers deliveries without limit: a reading
// without a prefetch limit would hold the rest of the queue, 30,000 and
// 80,000 letters). Both hold one consumer's prefetch (see Queue; about
// 1 KiB a letter), the same in both; the growth is the row's figure,
// and the letters read ahead are reported as ahead-50k and ahead-100k.
// The live heap of a listing that keeps up with the broker is no measure:
// it is the few deliveries in flight at the moment of a collection, 0 to
// 3 MiB at any point of a listing of 10,000 or 100,000 letters.
func BenchmarkDLQList(b *testing.B) {
	url := brokerurl.RabbitMQ()
	conn := testkit.DialRabbitMQ(b, url)
	ctx := context.Background()
	half := benchQueue(b, conn, "ls-half")
	fill(b, conn, half, benchLetters/2)
	q := benchQueue(b, conn, "ls")
	fill(b, conn, q, benchLetters)
	heapHalf, aheadHalf := readAhead(b, conn, half, benchLetters/2)
	heapFull, aheadFull := readAhead(b, conn, q, benchLetters)
	list := func(b *testing.B, name string, want int) {
		groups, err := rabbitmq.NewDeadLetterQueue(conn, name).Groups(ctx)
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
	benchpair.Run(b, benchpair.Pair{
		Units:  benchLetters,
		Unit:   "msg",
		Warmup: 1,
		Streamgen: func(b *testing.B) time.Duration {
			start := time.Now()
			list(b, q, benchLetters)
			return time.Since(start)
		},
		Baseline: func(b *testing.B) time.Duration {
			start := time.Now()
			rawList(b, conn, q, benchLetters)
			return time.Since(start)
		},
	})
	b.ReportMetric(float64(heapHalf), "heap-warm-B")
	b.ReportMetric(float64(heapFull), "heap-end-B")
	b.ReportMetric(100*(float64(heapFull)-float64(heapHalf))/float64(heapHalf), "growth-%")
	b.ReportMetric(float64(aheadHalf), "ahead-50k")
	b.ReportMetric(float64(aheadFull), "ahead-100k")
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

// BenchmarkDLQReplay measures streamgen dlq replay of 100,000 letters against
// a raw amqp091-go loop that moves them the same way: it consumes them,
// publishes each with a window of confirms in flight and acks each letter
// once its publish is confirmed. The letters go back and forth between two
// queues, each round moving them from one to the other.
func BenchmarkDLQReplay(b *testing.B) {
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
				rep, err := rabbitmq.NewDeadLetterQueue(conn, from).Replay(ctx, deadletter.Selection{}, deadletter.ReplayOptions{To: deadletter.Target{Queue: to}})
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

// BenchmarkDLQReplayFew measures a replay of 10 letters picked by message id
// (spread over the queue) among 100,000 against an ls of the same queue,
// each timed until the queue holds all it handed back again (its ready
// count, polled): RabbitMQ requeues a nack's letters after the operation
// returned, and that work, one requeue per consumer the reading used (see
// Queue), is the replay's cost too. The ratio is the replay's time over
// the listing's; each round puts the 10 letters back untimed.
func BenchmarkDLQReplayFew(b *testing.B) {
	const few = 10
	url := brokerurl.RabbitMQ()
	conn := testkit.DialRabbitMQ(b, url)
	ctx := context.Background()
	q := benchQueue(b, conn, "replay-few")
	target := benchQueue(b, conn, "replay-few-target")
	fill(b, conn, q, benchLetters)
	ch, err := conn.Channel()
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = ch.Close() }()
	// settled waits until queue holds want letters ready.
	settled := func(b *testing.B, queue string, want int) {
		for {
			info, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
			if err != nil {
				b.Fatal(err)
			}
			if info.Messages == want {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	var ids []string
	var at []int
	for i := range few {
		at = append(at, i*benchLetters/few+benchLetters/(2*few))
		ids = append(ids, fmt.Sprintf("m-%06d", at[i]))
	}
	benchpair.Run(b, benchpair.Pair{
		Units:     1,
		Unit:      "op",
		Warmup:    1,
		TimeRatio: true,
		Streamgen: func(b *testing.B) time.Duration {
			start := time.Now()
			rep, err := rabbitmq.NewDeadLetterQueue(conn, q).Replay(ctx, deadletter.Selection{IDs: ids}, deadletter.ReplayOptions{To: deadletter.Target{Queue: target}})
			if err != nil || rep.Done != few || rep.Scanned != benchLetters {
				b.Fatalf("replay of %d letters: %v %+v", few, err, rep)
			}
			returned := time.Since(start)
			settled(b, q, benchLetters-few)
			took := time.Since(start)
			b.Logf("replay of %d among %d: returned after %v, queue settled after %v", few, benchLetters, returned.Round(time.Millisecond), took.Round(time.Millisecond))
			// Park them again, as fill parked them.
			if _, err := ch.QueuePurge(target, false); err != nil {
				b.Fatal(err)
			}
			for i, id := range ids {
				if err := ch.Publish("", q, false, false, parked(id, at[i])); err != nil {
					b.Fatal(err)
				}
			}
			settled(b, q, benchLetters)
			return took
		},
		Baseline: func(b *testing.B) time.Duration {
			start := time.Now()
			groups, err := rabbitmq.NewDeadLetterQueue(conn, q).Groups(ctx)
			if err != nil || len(groups) != 1 || groups[0].Count != benchLetters {
				b.Fatalf("ls: %v %+v", err, groups)
			}
			settled(b, q, benchLetters)
			return time.Since(start)
		},
	})
}
