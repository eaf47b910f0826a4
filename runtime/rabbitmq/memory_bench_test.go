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

	"github.com/streamgen/streamgen/internal/testsupport/benchpair"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// memoryWindow is how many confirms BenchmarkWorkerMemory's publisher
// keeps outstanding.
const memoryWindow = 256

// memoryPrefetch is the prefetch of BenchmarkWorkerMemory's worker.
const memoryPrefetch = 250

// memoryRetryDelay is the TTL of BenchmarkWorkerMemory's wait queue.
const memoryRetryDelay = 50 * time.Millisecond

// BenchmarkWorkerMemory runs a worker as generated code builds it (an App,
// one Subscription of Order messages, max_attempts=2, retry_delay=50ms,
// prefetch 250, one handler call at a time) while a raw amqp091-go channel in
// confirm mode publishes 100,000 persistent messages to its queue, up to
// 256 confirms outstanding; one in ten fails once and comes back through
// the wait queue: its retry copy is published, confirmed, and the
// original settled, and the copy handled again after the TTL. It reports
// the live heap (after full collections) once a first 100,000 messages of
// the same mix warmed the worker up, and after the next 100,000, and the
// growth between the two (target: under 10%), also per message. Each
// phase ends when every message of it is through its handler, first
// attempts and retries. The heap is the process's: the publishing
// channel's is in it too, and bounded by its window. The warm-up is as
// long as the measured run, as in the ZeroMQ benchmark of the same name,
// so that high-water marks that are not leaks (buffers, the goroutines the
// runtime ran at once at the busiest moment) are reached before the first
// reading. (At the default prefetch, 20, the consumer falls behind the
// publisher, and a run takes over twice as long.)
func BenchmarkWorkerMemory(b *testing.B) {
	const warmup, total = 100_000, 100_000
	adm := newAdmin(b)
	queue := adm.queue("bench-memory")

	var gate handledGate
	var failed, retried atomic.Int64
	br := New(brokerURL(), WithConnectionName("streamgen-bench-"+randomHex(4)))
	app := runtime.NewApp("streamgen-bench")
	sub := orderSubscription(queue, memoryPrefetch, runtime.Policy{MaxAttempts: 2}, []time.Duration{memoryRetryDelay},
		func(_ context.Context, o *benchpair.Order, md runtime.Metadata) error {
			if o.ID%10 == 0 && md.Attempt == 1 {
				failed.Add(1)
				return errFailed
			}
			if md.Attempt > 1 {
				retried.Add(1)
			}
			gate.done()
			return nil
		})
	app.Mount(br, sub)
	streamtest.RunApp(b, app)
	pub := newRawPublisher(b, queue)

	order := benchpair.NewOrder(benchpair.Small)
	var bodies [10][]byte
	for id := range bodies {
		// Ten bodies, ids 0 to 9: the one with id 0 fails once.
		order.ID = id
		body, err := json.Marshal(order)
		if err != nil {
			b.Fatal(err)
		}
		bodies[id] = body
	}
	send := func(b *testing.B, from, to int) {
		ctx, cancel := context.WithTimeout(context.Background(), roundTimeout)
		defer cancel()
		ring := make([]*amqp.DeferredConfirmation, memoryWindow)
		for i := from; i < to; i++ {
			if dc := ring[i%memoryWindow]; dc != nil {
				if err := confirmed(ctx, dc); err != nil {
					b.Fatal(err)
				}
			}
			dc, err := pub.ch.PublishWithDeferredConfirmWithContext(ctx, "", queue, true, false, amqp.Publishing{
				ContentType:  "application/json",
				DeliveryMode: amqp.Persistent,
				MessageId:    strconv.Itoa(i),
				Type:         "Order",
				Body:         bodies[i%10],
			})
			if err != nil {
				b.Fatal(err)
			}
			ring[i%memoryWindow] = dc
		}
		for _, dc := range ring {
			if dc != nil {
				if err := confirmed(ctx, dc); err != nil {
					b.Fatal(err)
				}
			}
		}
		if err := gate.wait(to, roundTimeout); err != nil {
			b.Fatal(err)
		}
	}
	start := time.Now()
	send(b, 0, warmup)
	warm := benchpair.LiveHeap()
	sent := warmup
	for b.Loop() {
		send(b, sent, sent+total)
		sent += total
	}
	end := benchpair.LiveHeap()
	if want := int64(sent / 10); failed.Load() != want || retried.Load() != want {
		b.Fatalf("%d first attempts failed and %d retries handled of %d messages, want %d each", failed.Load(), retried.Load(), sent, want)
	}
	benchpair.ReportHeapGrowth(b, warm, end, sent-warmup)
	b.Logf("%d messages after a warm-up of %d, %d retried, in %v: live heap %s, then %s",
		sent-warmup, warmup, retried.Load(), time.Since(start).Round(time.Millisecond), benchpair.MiB(warm), benchpair.MiB(end))
}

// handledGate lets a benchmark wait, without polling, until a number of
// messages are through a handler (done), however many handler calls run
// at once.
type handledGate struct {
	mu      sync.Mutex
	n       int
	target  int
	reached chan struct{}
}

// done counts a message through.
func (g *handledGate) done() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n++
	if g.reached != nil && g.n >= g.target {
		close(g.reached)
		g.reached = nil
	}
}

// wait returns once target messages are through, or an error after
// timeout.
func (g *handledGate) wait(target int, timeout time.Duration) error {
	g.mu.Lock()
	if g.n >= target {
		g.mu.Unlock()
		return nil
	}
	reached := make(chan struct{})
	g.target, g.reached = target, reached
	g.mu.Unlock()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-reached:
		return nil
	case <-t.C:
		g.mu.Lock()
		defer g.mu.Unlock()
		g.reached = nil
		return fmt.Errorf("%d of %d messages handled within %v", g.n, target, timeout)
	}
}
