package rabbitmq

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
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

// The request/reply benchmark compares a round trip through streamgen (a
// generated client's runtime.Request on a Requester, to a handler of
// runtime.HandleReply in an App on a Broker) with the same through raw
// amqp091-go: a client of one channel consuming amq.rabbitmq.reply-to
// with a map from correlation id to the call waiting, and a server that
// decodes the request, publishes the reply to its reply_to and acks the
// request (coalesced, rawAcker). The raw server publishes its replies on
// a connection of its own, as streamgen's does and as RabbitMQ advises
// for a program that both consumes and publishes: the broker throttles a
// connection that publishes (flow control, a memory or disk alarm) by no
// longer reading from it, and the acks of a consumer on that connection
// would wait behind its replies. Both sides decode and encode the same
// JSON with encoding/json, and have as many handler goroutines and the
// same prefetch. A round is rrRequests(callers) requests from callers
// goroutines at once, each waiting for its reply before the next; it
// measures the round's time (throughput) and each round trip (p50, p99).

// rrQuote and rrPrice are the benchmark's request and reply.
type (
	rrQuote = benchpair.Quote
	rrPrice = benchpair.Price
)

func rrAnswer(q rrQuote) rrPrice { return benchpair.PriceOf(q) }

// rrRequests is how many requests a round sends: at 1 caller, enough
// that a round's 99th percentile is the 20th slowest round trip, not
// one of a handful.
func rrRequests(callers int) int {
	if callers == 1 {
		return 2000
	}
	return 4000
}

// rrServerWorkers is how many handler goroutines each server has.
func rrServerWorkers(callers int) int { return min(callers, 8) }

// BenchmarkRequestReply measures request/reply round trips with 1 and 64
// callers at once: the median and 99th percentile of a round trip (a
// ratio of 1 or more: no slower than raw) and the throughput.
func BenchmarkRequestReply(b *testing.B) {
	for _, c := range []struct {
		callers int
		decode  func([]byte, *rrQuote) bool // the server's JSON decoder
		name    string
		only    string // the one measure of the row, or all
	}{
		{callers: 1, decode: benchorder.DecodeQuote},
		{callers: 64, decode: benchorder.DecodeQuote},
		{callers: 64, name: "/decoder=encoding_json", only: "throughput"},
	} {
		callers := c.callers
		b.Run(fmt.Sprintf("concurrency=%d%s", callers, c.name), func(b *testing.B) {
			sg, raw := rrStreamgen(b, callers, c.decode), rrRaw(b, callers)
			n := rrRequests(callers)
			for _, m := range []struct {
				name string
				pick func(rrResult) time.Duration
				unit int
			}{
				{"p50", func(r rrResult) time.Duration { return r.p50 }, 1},
				{"p99", func(r rrResult) time.Duration { return r.p99 }, 1},
				{"throughput", func(r rrResult) time.Duration { return r.total }, n},
			} {
				if c.only != "" && m.name != c.only {
					continue
				}
				b.Run("measure="+m.name, func(b *testing.B) {
					p := benchpair.Pair{Units: m.unit, Unit: "op", Warmup: 1}
					if m.unit == 1 {
						p.Streamgen = func(b *testing.B) time.Duration { return m.pick(rrRound(b, callers, n, sg)) }
						p.Baseline = func(b *testing.B) time.Duration { return m.pick(rrRound(b, callers, n, raw)) }
					} else {
						// Both servers and clients run in this process: a
						// round's CPU time is its side's, client and server.
						p.Unit = "msg"
						p.StreamgenSample = func(b *testing.B) benchpair.Sample { return rrSample(b, callers, n, sg) }
						p.BaselineSample = func(b *testing.B) benchpair.Sample { return rrSample(b, callers, n, raw) }
					}
					benchpair.Run(b, p)
				})
			}
		})
	}
}

// rrSample runs a round and returns its time and this process's CPU
// time over it.
func rrSample(b *testing.B, callers, n int, call func(ctx context.Context, i int) (rrPrice, error)) benchpair.Sample {
	cpu := benchpair.CPUTime()
	r := rrRound(b, callers, n, call)
	return benchpair.Sample{Time: r.total, CPU: benchpair.CPUTime() - cpu}
}

// rrResult is what a round measured.
type rrResult struct {
	total, p50, p99 time.Duration
}

// rrRound sends n requests from callers goroutines through call (request
// i of the round), checking each reply, and returns the round's time and
// the percentiles of its round trips.
func rrRound(b *testing.B, callers, n int, call func(ctx context.Context, i int) (rrPrice, error)) rrResult {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), roundTimeout)
	defer cancel()
	took := make([]time.Duration, n)
	var next atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	begin := time.Now()
	for range callers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n || failed.Load() != nil {
					return
				}
				start := time.Now()
				got, err := call(ctx, i)
				took[i] = time.Since(start)
				if want := rrAnswer(rrQuote{SKU: "sku-" + strconv.Itoa(i), Quantity: i}); err == nil && got != want {
					err = fmt.Errorf("request %d got %+v, want %+v", i, got, want)
				}
				if err != nil {
					failed.CompareAndSwap(nil, err)
					return
				}
			}
		})
	}
	wg.Wait()
	total := time.Since(begin)
	if err := failed.Load(); err != nil {
		b.Fatal(err)
	}
	slices.Sort(took)
	return rrResult{total: total, p50: took[n/2], p99: took[n*99/100]}
}

// rrStreamgen starts streamgen's server, whose handler decodes requests
// with decode (nil: encoding/json), and client, and returns the call of a
// request.
func rrStreamgen(b *testing.B, callers int, decode func([]byte, *rrQuote) bool) func(ctx context.Context, i int) (rrPrice, error) {
	b.Helper()
	return rrStreamgenClient(b, rrStreamgenServer(b, callers, decode))
}

// rrStreamgenServer starts streamgen's server and returns its queue.
func rrStreamgenServer(b *testing.B, callers int, decode func([]byte, *rrQuote) bool) string {
	b.Helper()
	adm := newAdmin(b)
	q := adm.queue("reqreply-streamgen", ".retry")
	workers := rrServerWorkers(callers)
	sub := &runtime.Subscription{
		Name:        q,
		Broker:      runtime.RabbitMQ,
		Prefetch:    2 * max(callers, 8),
		Concurrency: workers,
		Handlers: []runtime.Handler{
			runtime.HandleReply[rrQuote, rrPrice]("Quote", "Price", runtime.Policy{}, decode,
				func(_ context.Context, q rrQuote) (rrPrice, error) { return rrAnswer(q), nil }),
		},
	}
	a := runtime.NewApp("streamgen-bench")
	a.Mount(New(brokerURL(), WithConnectionName("streamgen-bench-"+randomHex(4))), sub)
	streamtest.RunApp(b, a)
	return q
}

// rrStreamgenClient starts streamgen's client of queue q and returns the
// call of a request.
func rrStreamgenClient(b *testing.B, q string) func(ctx context.Context, i int) (rrPrice, error) {
	b.Helper()
	r := NewRequester(brokerURL(), WithConnectionName("streamgen-bench-requester-"+randomHex(4)))
	b.Cleanup(func() { _ = r.Close() })
	return func(ctx context.Context, i int) (rrPrice, error) {
		return runtime.Request[rrPrice](ctx, r, runtime.Queue(q), "Quote", &rrQuote{SKU: "sku-" + strconv.Itoa(i), Quantity: i})
	}
}

// rrRaw starts the raw server and client and returns the call of a
// request.
func rrRaw(b *testing.B, callers int) func(ctx context.Context, i int) (rrPrice, error) {
	b.Helper()
	return rrRawClient(b, rrRawServer(b, callers))
}

// rrRawServer starts the raw server and returns its queue.
func rrRawServer(b *testing.B, callers int) string {
	b.Helper()
	adm := newAdmin(b)
	q := adm.queue("reqreply-raw", ".retry")
	adm.declare(q, nil)

	// The server: decode, publish the reply to reply_to on a connection
	// of its own, ack (coalesced).
	serverConn := dial(b)
	pubCh, err := dial(b).Channel()
	if err != nil {
		b.Fatal(err)
	}
	server := newRawConsumer(b, serverConn, q, 2*max(callers, 8), rrServerWorkers(callers), func(d *amqp.Delivery) error {
		var req rrQuote
		if err := json.Unmarshal(d.Body, &req); err != nil {
			return err
		}
		body, err := json.Marshal(rrAnswer(req))
		if err != nil {
			return err
		}
		if err := pubCh.PublishWithContext(context.Background(), "", d.ReplyTo, false, false, amqp.Publishing{
			Type: "Price", ContentType: "application/json", CorrelationId: d.CorrelationId, Body: body,
		}); err != nil {
			return err
		}
		return nil
	})
	// rawConsumer's handle does not ack: wrap it so that it acks through
	// the consumer's coalescing acker once the reply is published.
	handle := server.handle
	server.handle = func(d *amqp.Delivery) error {
		if err := handle(d); err != nil {
			return err
		}
		return server.acks.ack(d.DeliveryTag)
	}
	server.start()
	b.Cleanup(server.stop)
	return q
}

// rrRawClient starts the raw client of queue q, of one channel, direct
// reply-to and a map of waiting calls, and returns the call of a request.
func rrRawClient(b *testing.B, q string) func(ctx context.Context, i int) (rrPrice, error) {
	b.Helper()
	clientConn := dial(b)
	ch, err := clientConn.Channel()
	if err != nil {
		b.Fatal(err)
	}
	replies, err := ch.Consume(DirectReplyTo, "", true, false, false, false, nil)
	if err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	waiting := map[string]chan amqp.Delivery{}
	go func() {
		for d := range replies {
			mu.Lock()
			w := waiting[d.CorrelationId]
			delete(waiting, d.CorrelationId)
			mu.Unlock()
			if w != nil {
				w <- d
			}
		}
	}()
	var seq atomic.Uint64
	return func(ctx context.Context, i int) (rrPrice, error) {
		body, err := json.Marshal(rrQuote{SKU: "sku-" + strconv.Itoa(i), Quantity: i})
		if err != nil {
			return rrPrice{}, err
		}
		corr := strconv.FormatUint(seq.Add(1), 10)
		w := make(chan amqp.Delivery, 1)
		mu.Lock()
		waiting[corr] = w
		mu.Unlock()
		if err := ch.PublishWithContext(ctx, "", q, false, false, amqp.Publishing{
			Type: "Quote", ContentType: "application/json", CorrelationId: corr, ReplyTo: DirectReplyTo, Body: body,
		}); err != nil {
			return rrPrice{}, err
		}
		select {
		case d := <-w:
			var p rrPrice
			return p, json.Unmarshal(d.Body, &p)
		case <-ctx.Done():
			mu.Lock()
			delete(waiting, corr)
			mu.Unlock()
			return rrPrice{}, ctx.Err()
		}
	}
}
