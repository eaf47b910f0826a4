package zeromq_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	goruntime "runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/go-zeromq/zmq4/security/null"
	"github.com/streamgen/streamgen/internal/benchpair"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
	"github.com/streamgen/streamgen/runtime/zeromq"
)

// roundTimeout bounds a round of a benchmark.
const roundTimeout = 2 * waitLimit

// orderSubscription is the Subscription generated code builds for a
// zeromq handler of benchpair.Order messages on queue "jobs".
func orderSubscription(p runtime.Policy, h func(ctx context.Context, o *benchpair.Order, md runtime.Metadata) error) *runtime.Subscription {
	return &runtime.Subscription{
		Name:   "jobs",
		Broker: runtime.ZeroMQ,
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

// runBenchApp runs an App with sub on zq until the benchmark ends.
func runBenchApp(b *testing.B, zq *zeromq.Broker, sub *runtime.Subscription) {
	b.Helper()
	app := runtime.NewApp("bench")
	app.Mount(zq, sub)
	streamtest.RunApp(b, app)
}

// zmtpPusher is a ZMTP 3.0 PUSH peer that writes a batch of ready-made
// messages with one write: it costs next to nothing, so that a benchmark
// of the receiving side measures the receiving side.
type zmtpPusher struct {
	conn net.Conn
}

// dialPusher connects to ep and performs the NULL handshake as a PUSH
// socket; the connection is closed after b.
func dialPusher(b *testing.B, ep string) *zmtpPusher {
	b.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(ep, "tcp://"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = conn.Close() })
	if _, err := zmq4.Open(conn, null.Security(), zmq4.Push, nil, false, nil); err != nil {
		b.Fatalf("handshake with %s: %v", ep, err)
	}
	return &zmtpPusher{conn: conn}
}

// encodeMessages returns the wire form of n messages of frames.
func encodeMessages(n int, frames ...[]byte) []byte {
	var one []byte
	for i, f := range frames {
		var flags byte
		if i < len(frames)-1 {
			flags = 0x01 // more
		}
		if len(f) > 255 {
			one = append(one, flags|0x02) // long
			one = binary.BigEndian.AppendUint64(one, uint64(len(f)))
		} else {
			one = append(one, flags, byte(len(f)))
		}
		one = append(one, f...)
	}
	return bytes.Repeat(one, n)
}

// subscribeBatch is how many messages a round of BenchmarkSubscribe moves.
func subscribeBatch(size int) int {
	if size > benchpair.Small {
		return 1000
	}
	return 5000
}

// BenchmarkSubscribe measures receiving over loopback TCP, one handler at a
// time: the Broker's bound queue running a Subscription as generated code
// builds it (read, parse the frames, decode, call the handler) against a
// zmq4 PULL socket in a loop that decodes the same JSON into the same type.
// Both are fed the same three frames by a PUSH peer that writes a round's
// batch at once (zmq4's own PUSH socket costs more CPU than either
// receiver, which would blur the comparison); each round times the first
// to the last message of the batch.
func BenchmarkSubscribe(b *testing.B) {
	for _, size := range []int{benchpair.Small, benchpair.Large} {
		b.Run("payload="+benchpair.SizeName(size), func(b *testing.B) { benchSubscribe(b, size) })
	}
}

func benchSubscribe(b *testing.B, size int) {
	n := subscribeBatch(size)
	batch := encodeMessages(n, []byte("jobs"), []byte("type: Order\ncontent-type: application/json\nmessage-id: m-1"), benchpair.OrderJSON(size))

	sg := benchpair.NewGate(n)
	sgEP := freeEndpoint(b)
	runBenchApp(b, zeromq.New(zeromq.Queue("jobs", zeromq.Bind(sgEP))), orderSubscription(runtime.Policy{},
		func(context.Context, *benchpair.Order, runtime.Metadata) error {
			sg.Begin()
			sg.Done()
			return nil
		}))
	sgPush := dialPusher(b, sgEP)

	raw := benchpair.NewGate(n)
	rawEP := freeEndpoint(b)
	pull := zmq4.NewPull(context.Background())
	if err := pull.Listen(rawEP); err != nil {
		b.Fatal(err)
	}
	looped := make(chan struct{})
	go func() {
		defer close(looped)
		for {
			msg, err := pull.Recv()
			if err != nil {
				return // closed after the benchmark
			}
			if len(msg.Frames) != 3 {
				b.Errorf("baseline: %d frames", len(msg.Frames))
				return
			}
			var o benchpair.Order
			if err := json.Unmarshal(msg.Frames[2], &o); err != nil {
				b.Errorf("baseline: %v", err)
				return
			}
			raw.Begin()
			raw.Done()
		}
	}()
	b.Cleanup(func() {
		_ = pull.Close()
		<-looped
	})
	rawPush := dialPusher(b, rawEP)

	round := func(b *testing.B, push *zmtpPusher, g *benchpair.Gate) time.Duration {
		sent := make(chan error, 1)
		go func() {
			_, err := push.conn.Write(batch)
			sent <- err
		}()
		d, err := g.Round(roundTimeout)
		if err != nil {
			b.Fatal(err)
		}
		if err := <-sent; err != nil {
			b.Fatal(err)
		}
		return d
	}
	benchpair.Run(b, benchpair.Pair{
		Units: n, Unit: "msg", Warmup: 1,
		Streamgen: func(b *testing.B) time.Duration { return round(b, sgPush, sg) },
		Baseline:  func(b *testing.B) time.Duration { return round(b, rawPush, raw) },
	})
}

// BenchmarkWorkerMemory runs a worker over loopback TCP: a service
// publishes 100,000 messages to its bound queue, one in ten fails once and
// comes back through out_retry=self. It reports the live heap (after full
// collections) once a first 100,000 messages of the same mix warmed the
// worker up, and after the next 100,000, and the growth between the two
// (target: under 10%), also per message. The warm-up is as long as the
// measured run because the heap has high-water marks that are not leaks
// (buffers, and the outbox's copies when the queue's own reader falls
// behind: they then wait in goroutines, and the Go runtime keeps the
// descriptor of every goroutine it ever ran at once); a short warm-up
// leaves the measured run more chances to reach a new peak.
func BenchmarkWorkerMemory(b *testing.B) {
	const warmup, total = 100_000, 100_000
	ep := freeEndpoint(b)
	var handled atomic.Int64
	runBenchApp(b, zeromq.New(zeromq.Queue("jobs", zeromq.Bind(ep))), orderSubscription(runtime.Policy{MaxAttempts: 2, OutRetry: runtime.OutRetrySelf},
		func(_ context.Context, o *benchpair.Order, md runtime.Metadata) error {
			if o.ID%10 == 0 && md.Attempt == 1 {
				return errors.New("fails once")
			}
			handled.Add(1)
			return nil
		}))
	sender := zeromq.New(zeromq.Queue("jobs", zeromq.Bind(ep)))
	b.Cleanup(func() { _ = sender.Shutdown(context.Background()) })

	order := benchpair.NewOrder(benchpair.Small)
	body := make(map[int][]byte, 10)
	send := func(b *testing.B, from, to int) {
		ctx, cancel := context.WithTimeout(context.Background(), roundTimeout)
		defer cancel()
		for i := from; i < to; i++ {
			// Ten bodies, ids 0 to 9: the one with id 0 fails once.
			if body[i%10] == nil {
				order.ID = i % 10
				body[i%10], _ = json.Marshal(order)
			}
			msg := runtime.Message{ID: strconv.Itoa(i), Type: "Order", ContentType: "application/json", Body: body[i%10]}
			if err := sender.Publish(ctx, "jobs", msg); err != nil {
				b.Fatal(err)
			}
		}
		deadline := time.Now().Add(roundTimeout)
		for handled.Load() < int64(to) {
			if time.Now().After(deadline) {
				b.Fatalf("%d of %d messages handled", handled.Load(), to)
			}
			time.Sleep(time.Millisecond)
		}
	}
	// liveHeap is the heap in use after a full collection: the smallest
	// of a few readings a moment apart, so that a buffer of a message
	// still in flight is not counted.
	liveHeap := func() uint64 {
		least := uint64(math.MaxUint64)
		for range 5 {
			time.Sleep(20 * time.Millisecond)
			goruntime.GC()
			debug.FreeOSMemory() // a second, full collection, and scavenge
			var ms goruntime.MemStats
			goruntime.ReadMemStats(&ms)
			least = min(least, ms.HeapAlloc)
		}
		return least
	}

	send(b, 0, warmup)
	warm := liveHeap()
	sent := warmup
	for b.Loop() {
		send(b, sent, sent+total)
		sent += total
	}
	end := liveHeap()
	b.ReportMetric(float64(warm), "heap-warm-B")
	b.ReportMetric(float64(end), "heap-end-B")
	b.ReportMetric(100*(float64(end)-float64(warm))/float64(warm), "growth-%")
	b.ReportMetric((float64(end)-float64(warm))/float64(sent-warmup), "growth-B/msg")
	b.Logf("%d messages after a warm-up of %d: live heap %s, then %s", sent-warmup, warmup, mib(warm), mib(end))
}

func mib(n uint64) string { return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20)) }

// BenchmarkVentilator measures a ventilator handing jobs to two dialing
// workers, each job to one.
func BenchmarkVentilator(b *testing.B) {
	ep := freeEndpoint(b)
	vent := zeromq.New(zeromq.Queue("work", zeromq.Ventilator(ep)))
	if err := vent.Listen(); err != nil {
		b.Fatal(err)
	}
	var handled atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	var dones []chan error
	for range 2 {
		app := runtime.NewApp("worker")
		app.Mount(zeromq.New(zeromq.Queue("work", zeromq.Dial(ep))), &runtime.Subscription{Name: "work", Handlers: []runtime.Handler{
			runtime.Handle("job", runtime.Policy{}, func(context.Context, *Job, runtime.Metadata) runtime.Outcome {
				handled.Add(1)
				return runtime.Ack()
			}),
		}})
		done := make(chan error, 1)
		go func() { done <- app.Run(ctx) }()
		<-app.Ready()
		dones = append(dones, done)
	}
	for vent.Connections("work") < 2 {
		time.Sleep(time.Millisecond)
	}
	msg := runtime.Message{ID: "m", Type: "job", Body: []byte(`{"id":1}`)}
	b.ResetTimer()
	for range b.N {
		if err := vent.Publish(ctx, "work", msg); err != nil {
			b.Fatal(err)
		}
	}
	for handled.Load() < int64(b.N) {
		time.Sleep(50 * time.Microsecond)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msg/s")
	cancel()
	for _, d := range dones {
		if err := <-d; err != nil {
			b.Fatal(err)
		}
	}
	if err := vent.Shutdown(context.Background()); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkParseHeaders reads header frames of a few headers to
// MaxHeaders; the cost per header stays flat (a name given twice was once
// found by comparing each name with every earlier one).
func BenchmarkParseHeaders(b *testing.B) {
	for _, n := range []int{4, 16, 64, zeromq.MaxHeaders} {
		var frame strings.Builder
		for i := range n {
			fmt.Fprintf(&frame, "x-header-%d: value %d\n", i, i)
		}
		b.Run(fmt.Sprint("headers=", n), func(b *testing.B) {
			raw := []byte(frame.String())
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				if _, err := zeromq.ParseHeaders(raw); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/header")
		})
	}
}
