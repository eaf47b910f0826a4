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
// generated client's runtime.RequestJSON on a Requester, to a handler of
// runtime.HandleReply in an App on a Broker) with the same through raw
// amqp091-go: a client of one channel consuming amq.rabbitmq.reply-to
// with a map from correlation id to the call waiting, and a server that
// decodes the request, publishes the reply to its reply_to and acks the
// request (coalesced, rawAcker). The raw server publishes its replies on
// a connection of its own, as streamgen's does and as RabbitMQ advises
// for a program that both consumes and publishes: the broker throttles a
// connection that publishes (flow control, a memory or disk alarm) by no
// longer reading from it, and the acks of a consumer on that connection
// would wait behind its replies. Both sides encode the same JSON with
// encoding/json; streamgen decodes requests and replies with the decoders
// it generates for them, as generated code does (raw, and streamgen in
// the row decoder=encoding_json, with encoding/json); both have as many
// handler goroutines and the same prefetch. A round is rrRequests(callers) requests of each side
// from callers goroutines at once, each waiting for its reply before the
// next, the sides taking turns in short blocks (rrBlock); it measures
// each side's time (throughput) and each round trip (p50, p99).

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

// rrBlock is how many requests each side sends in its turn of a round:
// the sides take turns in blocks this short (about 25 ms at 1 caller,
// 80 ms at 64), so that a load that comes and goes on the shared machine
// within a round falls on both sides alike; rounds of one side after the
// other, each a second or more at 1 caller, differed by up to 15% in
// either direction from it alone.
func rrBlock(callers int) int {
	if callers == 1 {
		return 50
	}
	return 1000
}

// BenchmarkRequestReply measures request/reply round trips with 1 and 64
// callers at once: the median and 99th percentile of a round trip (a
// ratio of 1 or more: no slower than raw) and the throughput.
func BenchmarkRequestReply(b *testing.B) {
	for _, c := range []struct {
		callers int
		decoded bool // with the generated JSON decoders, or encoding/json's
		name    string
		only    string // the one measure of the row, or all
	}{
		{callers: 1, decoded: true},
		{callers: 64, decoded: true},
		{callers: 64, name: "/decoder=encoding_json", only: "throughput"},
	} {
		callers := c.callers
		b.Run(fmt.Sprintf("concurrency=%d%s", callers, c.name), func(b *testing.B) {
			sides := [2]rrCall{rrStreamgen(b, callers, c.decoded), rrRaw(b, callers)}
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
					round := 0
					both := func(b *testing.B) (sg, raw rrResult) {
						r := rrRound(b, callers, n, round, sides)
						round++
						return r[0], r[1]
					}
					if m.unit == 1 {
						p.Interleaved = func(b *testing.B) (time.Duration, time.Duration) {
							sg, raw := both(b)
							return m.pick(sg), m.pick(raw)
						}
					} else {
						// Both servers and clients run in this process: a
						// side's CPU time is its client's and its server's.
						p.Unit = "msg"
						p.InterleavedSample = func(b *testing.B) (benchpair.Sample, benchpair.Sample) {
							sg, raw := both(b)
							return benchpair.Sample{Time: sg.total, CPU: sg.cpu}, benchpair.Sample{Time: raw.total, CPU: raw.cpu}
						}
					}
					benchpair.Run(b, p)
				})
			}
		})
	}
}

// rrCall sends request i of a round and returns its reply.
type rrCall func(ctx context.Context, i int) (rrPrice, error)

// rrResult is what a round measured of one side: the time its requests
// took and this process's CPU time meanwhile, blocks summed, and the
// percentiles of its round trips.
type rrResult struct {
	total, cpu, p50, p99 time.Duration
}

// rrRound sends n requests through each of sides (streamgen's, then the
// baseline), callers at once, the sides taking turns in blocks of
// rrBlock(callers) requests, and returns what it measured of each. The
// side that leads a pair of turns alternates (ABBA), and so does the one
// that leads the round.
func rrRound(b *testing.B, callers, n, round int, sides [2]rrCall) [2]rrResult {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), roundTimeout)
	defer cancel()
	var took [2][]time.Duration
	var res [2]rrResult
	for side := range sides {
		took[side] = make([]time.Duration, n)
	}
	block := rrBlock(callers)
	for j, from := 0, 0; from < n; j, from = j+1, from+block {
		count := min(block, n-from)
		for k := range 2 {
			side := (j + round + k) % 2
			s := benchpair.Measure(func() { rrRequestBlock(ctx, b, callers, from, took[side][from:from+count], sides[side]) })
			res[side].total += s.Time
			res[side].cpu += s.CPU
		}
	}
	for side := range sides {
		slices.Sort(took[side])
		res[side].p50, res[side].p99 = took[side][n/2], took[side][n*99/100]
	}
	return res
}

// rrRequestBlock sends requests from to from+len(took)-1 through call
// from callers goroutines, each waiting for its reply before it sends the
// next, checks each reply and puts each round trip's time in took.
func rrRequestBlock(ctx context.Context, b *testing.B, callers, from int, took []time.Duration, call rrCall) {
	b.Helper()
	var next atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	for range min(callers, len(took)) {
		wg.Go(func() {
			for {
				k := int(next.Add(1)) - 1
				if k >= len(took) || failed.Load() != nil {
					return
				}
				i := from + k
				start := time.Now()
				got, err := call(ctx, i)
				took[k] = time.Since(start)
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
	if err := failed.Load(); err != nil {
		b.Fatal(err)
	}
}

// rrStreamgen starts streamgen's server and client and returns the call
// of a request. decoded, they decode requests and replies as generated
// code does, with the JSON decoders streamgen writes for Quote and Price;
// else with encoding/json.
func rrStreamgen(b *testing.B, callers int, decoded bool) rrCall {
	b.Helper()
	if !decoded {
		return rrStreamgenClient(b, rrStreamgenServer(b, callers, nil), nil)
	}
	return rrStreamgenClient(b, rrStreamgenServer(b, callers, benchorder.DecodeQuote), benchorder.DecodePrice)
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
// call of a request, as the typed client benchorder.RequestQuote makes it
// (which sends to a queue of its own): with runtime.RequestJSON, which
// reads the reply with decode (nil: encoding/json).
func rrStreamgenClient(b *testing.B, q string, decode func([]byte, *rrPrice) bool) rrCall {
	b.Helper()
	r := NewRequester(brokerURL(), WithConnectionName("streamgen-bench-requester-"+randomHex(4)))
	b.Cleanup(func() { _ = r.Close() })
	return func(ctx context.Context, i int) (rrPrice, error) {
		return runtime.RequestJSON(ctx, r, runtime.Queue(q), "Quote", &rrQuote{SKU: "sku-" + strconv.Itoa(i), Quantity: i}, decode)
	}
}

// rrRaw starts the raw server and client and returns the call of a
// request.
func rrRaw(b *testing.B, callers int) rrCall {
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
func rrRawClient(b *testing.B, q string) rrCall {
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
