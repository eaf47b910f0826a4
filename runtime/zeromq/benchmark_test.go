package zeromq_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/go-zeromq/zmq4/security/null"
	"github.com/streamgen/streamgen/internal/testsupport/benchpair"
	"github.com/streamgen/streamgen/internal/testsupport/benchpair/benchorder"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
	"github.com/streamgen/streamgen/runtime/zeromq"
)

// roundTimeout bounds a round of a benchmark.
const roundTimeout = 2 * waitLimit

// orderSubscription is the Subscription generated code builds for a
// zeromq handler of benchpair.Order messages on queue "jobs", with the
// JSON decoder streamgen generates for Order (package benchorder).
func orderSubscription(p runtime.Policy, h func(ctx context.Context, o *benchpair.Order, md runtime.Metadata) error) *runtime.Subscription {
	return &runtime.Subscription{
		Name:   "jobs",
		Broker: runtime.ZeroMQ,
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
// builds it (read, parse the frames, decode, call the handler) against two
// baselines that decode the same JSON from the same frames: a zmq4 PULL
// socket in a loop that decodes into the same type (baseline=zmq4), and a
// pyzmq (libzmq) PULL socket in a Python loop that does the same with
// json.loads (baseline=pyzmq, testdata/pull_bench.py). All are fed the same
// three frames by a PUSH peer that writes a round's batch at once (zmq4's
// own PUSH socket costs more CPU than either receiver, which would blur the
// comparison); each round times the first to the last message of the batch.
// Client CPU is this process's for the Go sides (the PUSH peer's write
// included) and the Python process's, libzmq's threads included, for
// pyzmq.
func BenchmarkSubscribe(b *testing.B) {
	for _, size := range []int{benchpair.Small, benchpair.Large} {
		b.Run("payload="+benchpair.SizeName(size), func(b *testing.B) {
			b.Run("baseline=zmq4", func(b *testing.B) { benchSubscribe(b, size, zmq4Baseline) })
			b.Run("baseline=pyzmq", func(b *testing.B) { benchSubscribe(b, size, pyzmqBaseline) })
		})
	}
}

// subscribeBaseline starts a baseline receiver of rounds of n messages
// and returns its round: it feeds it batch and returns what the round
// measured.
type subscribeBaseline func(b *testing.B, n int, batch []byte) func(*testing.B) benchpair.Sample

// zmq4Baseline is a zmq4 PULL socket in a loop.
func zmq4Baseline(b *testing.B, n int, batch []byte) func(*testing.B) benchpair.Sample {
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
	push := dialPusher(b, rawEP)
	return func(b *testing.B) benchpair.Sample { return gatedRound(b, push, raw, batch) }
}

// pyzmqBaseline is testdata/pull_bench.py: a pyzmq PULL socket in a loop.
func pyzmqBaseline(b *testing.B, n int, batch []byte) func(*testing.B) benchpair.Sample {
	if out, err := exec.Command(python, "-c", "import zmq").CombinedOutput(); err != nil {
		b.Fatalf("the pyzmq baseline needs libzmq for Python (%s with python3-zmq): %v\n%s\ninstall it with: apt-get install -y python3-zmq", python, err, out)
	}
	ep := freeEndpoint(b)
	cmd := exec.Command(python, "testdata/pull_bench.py", ep, strconv.Itoa(n))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = stdin.Close()
		if err := cmd.Wait(); err != nil {
			b.Errorf("pull_bench.py: %v\n%s", err, stderr.String())
		}
	})
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() || lines.Text() != "ready" {
		b.Fatalf("pull_bench.py did not start: %q %v\n%s", lines.Text(), lines.Err(), stderr.String())
	}
	push := dialPusher(b, ep)
	return func(b *testing.B) benchpair.Sample {
		sent := make(chan error, 1)
		start := time.Now()
		go func() {
			_, err := push.conn.Write(batch)
			sent <- err
		}()
		if _, err := io.WriteString(stdin, "go\n"); err != nil {
			b.Fatal(err)
		}
		if !lines.Scan() {
			b.Fatalf("pull_bench.py stopped: %v\n%s", lines.Err(), stderr.String())
		}
		d := time.Since(start)
		cpu, err := strconv.ParseInt(lines.Text(), 10, 64)
		if err != nil {
			b.Fatalf("pull_bench.py: %v", err)
		}
		if err := <-sent; err != nil {
			b.Fatal(err)
		}
		return benchpair.Sample{Time: d, CPU: time.Duration(cpu)}
	}
}

// gatedRound writes batch with push and returns the round g times, and the
// CPU time this process spent on it.
func gatedRound(b *testing.B, push *zmtpPusher, g *benchpair.Gate, batch []byte) benchpair.Sample {
	sent := make(chan error, 1)
	var d time.Duration
	s := benchpair.Measure(func() {
		go func() {
			_, err := push.conn.Write(batch)
			sent <- err
		}()
		var err error
		if d, err = g.Round(roundTimeout); err != nil {
			b.Fatal(err)
		}
		if err := <-sent; err != nil {
			b.Fatal(err)
		}
	})
	s.Time = d
	return s
}

func benchSubscribe(b *testing.B, size int, baseline subscribeBaseline) {
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
	base := baseline(b, n, batch)
	benchpair.Run(b, benchpair.Pair{
		Units: n, Unit: "msg", Warmup: 1,
		StreamgenSample: func(b *testing.B) benchpair.Sample { return gatedRound(b, sgPush, sg, batch) },
		BaselineSample:  base,
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
	runBenchApp(b, zeromq.New(zeromq.Queue("jobs", zeromq.Bind(ep))), orderSubscription(runtime.Policy{MaxAttempts: 2, OutRetry: "jobs"},
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
	send(b, 0, warmup)
	warm := benchpair.LiveHeap()
	sent := warmup
	for b.Loop() {
		send(b, sent, sent+total)
		sent += total
	}
	end := benchpair.LiveHeap()
	benchpair.ReportHeapGrowth(b, warm, end, sent-warmup)
	b.Logf("%d messages after a warm-up of %d: live heap %s, then %s", sent-warmup, warmup, benchpair.MiB(warm), benchpair.MiB(end))
}

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
