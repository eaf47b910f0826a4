package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

type quoteRequest struct {
	N   int    `json:"n"`
	SKU string `json:"sku"`
}

type quoteReply struct {
	N     int    `json:"n"`
	SKU   string `json:"sku"`
	Cents int    `json:"cents"`
}

// quoteHandler answers request n with n and 3n cents, and fails when
// fails(n), naming n.
func quoteHandler(fails func(n int) bool) func(context.Context, quoteRequest) (quoteReply, error) {
	return func(_ context.Context, q quoteRequest) (quoteReply, error) {
		if fails(q.N) {
			return quoteReply{}, fmt.Errorf("no price for request %d", q.N)
		}
		return quoteReply{N: q.N, SKU: q.SKU, Cents: 3 * q.N}, nil
	}
}

func quoteSubscription(queue string, policy runtime.Policy, fn func(context.Context, quoteRequest) (quoteReply, error)) *runtime.Subscription {
	return sub(queue, 50*time.Millisecond, runtime.HandleReply[quoteRequest, quoteReply]("QuoteRequest", "Price", policy, nil, fn))
}

// requestQuote is the typed client streamgen writes for the handler.
func requestQuote(ctx context.Context, r runtime.Requester, queue string, q quoteRequest) (quoteReply, error) {
	return runtime.Request[quoteReply](ctx, r, runtime.Queue(queue), "QuoteRequest", &q)
}

// newTestRequester returns a Requester on the test broker, logging to
// logs, closed after the test.
func newTestRequester(t testing.TB, logs *streamtest.LogRecorder) *Requester {
	r := NewRequester(brokerURL(), WithConnectionName("streamgen-test-requester-"+randomHex(4)), WithLogger(logs.Logger()))
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// quietApp runs subs on a Broker of their own with the App's logs kept
// in a recorder that shows errors only: the tests make failures on
// purpose.
func quietApp(t *testing.T, subs ...*runtime.Subscription) *streamtest.LogRecorder {
	t.Helper()
	logs := streamtest.NewLogRecorder(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelError}))
	ra := runtime.NewApp("streamgen-test", runtime.WithLogger(logs.Logger()), runtime.WithShutdownTimeout(20*time.Second))
	ra.Mount(newTestBroker(), subs...)
	streamtest.RunApp(t, ra)
	return logs
}

// 10,000 requests from 64 callers at once on one Requester, 1% of them
// failing in their handler: every call gets its own reply, or its own
// error with its reason; none gets another's.
func TestRequestReplyManyInFlight(t *testing.T) {
	adm := newAdmin(t)
	q := adm.queue("quotes")
	const total, callers = 10_000, 64
	fails := func(n int) bool { return n%100 == 7 }
	s := quoteSubscription(q, runtime.Policy{}, quoteHandler(fails))
	s.Concurrency = 16
	quietApp(t, s)
	r := newTestRequester(t, streamtest.NewLogRecorder(nil))

	var next, replies, failures atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for range callers {
		wg.Go(func() {
			for {
				n := int(next.Add(1))
				if n > total {
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), patience)
				sku := fmt.Sprintf("sku-%d", n)
				got, err := requestQuote(ctx, r, q, quoteRequest{N: n, SKU: sku})
				cancel()
				switch {
				case fails(n):
					re, ok := errors.AsType[*runtime.RemoteError](err)
					if !ok || !strings.HasSuffix(re.Reason, fmt.Sprintf(": no price for request %d", n)) {
						errs <- fmt.Errorf("request %d: error %v, want its own handler's error", n, err)
						return
					}
					failures.Add(1)
				case err != nil:
					errs <- fmt.Errorf("request %d: %w", n, err)
					return
				case got != quoteReply{N: n, SKU: sku, Cents: 3 * n}:
					errs <- fmt.Errorf("request %d got reply %+v, another request's", n, got)
					return
				default:
					replies.Add(1)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if replies.Load() != total-total/100 || failures.Load() != total/100 {
		t.Fatalf("%d replies and %d errors, want %d and %d", replies.Load(), failures.Load(), total-total/100, total/100)
	}
	testkit.Eventually(t, "the requests to be acknowledged", func() bool { return adm.ready(q) == 0 && adm.unacked(q) == 0 })
}

// A caller's deadline ends its wait with an error wrapping ctx's; the
// reply that comes later is dropped with a log line.
func TestRequestDeadline(t *testing.T) {
	adm := newAdmin(t)
	q := adm.queue("quotes")
	release := make(chan struct{})
	var handled atomic.Int32
	quietApp(t, quoteSubscription(q, runtime.Policy{}, func(ctx context.Context, req quoteRequest) (quoteReply, error) {
		<-release
		defer handled.Add(1)
		return quoteHandler(func(int) bool { return false })(ctx, req)
	}))
	logs := streamtest.NewLogRecorder(nil)
	r := newTestRequester(t, logs)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := requestQuote(ctx, r, q, quoteRequest{N: 1})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want one wrapping context.DeadlineExceeded", err)
	}
	if waited := time.Since(start); waited > patience/2 {
		t.Fatalf("the call returned after %v, past its deadline", waited)
	}
	close(release)
	testkit.Eventually(t, "the late reply to be dropped with a log line", func() bool {
		return len(logs.Find(slog.LevelInfo, "rabbitmq: a reply came with no request waiting for it (its caller's deadline passed); dropped")) == 1
	})
	// The Requester goes on.
	ctx2, cancel2 := context.WithTimeout(context.Background(), patience)
	defer cancel2()
	if got, err := requestQuote(ctx2, r, q, quoteRequest{N: 2}); err != nil || got.N != 2 {
		t.Fatalf("the next request got %+v, %v", got, err)
	}
}

// A request retried and then parked gets one error reply, naming the
// dead-letter queue: errors.Is ErrParked.
func TestRequestRetriedThenParked(t *testing.T) {
	adm := newAdmin(t)
	q := adm.queue("quotes")
	var calls atomic.Int32
	quietApp(t, quoteSubscription(q, runtime.Policy{MaxAttempts: 3, DeadLetter: q + ".dl"}, func(ctx context.Context, req quoteRequest) (quoteReply, error) {
		calls.Add(1)
		return quoteHandler(func(int) bool { return true })(ctx, req)
	}))
	logs := streamtest.NewLogRecorder(nil)
	r := newTestRequester(t, logs)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	_, err := requestQuote(ctx, r, q, quoteRequest{N: 5})
	if !errors.Is(err, runtime.ErrParked) {
		t.Fatalf("error %v, want one that is runtime.ErrParked", err)
	}
	re, _ := errors.AsType[*runtime.RemoteError](err)
	if re.DeadLetter != q+".dl" || re.Reason != "failed on attempt 3 of 3: no price for request 5" {
		t.Fatalf("remote error %+v, want parked on %s.dl with the last attempt's reason", re, q)
	}
	if n := calls.Load(); n != 3 {
		t.Fatalf("the handler ran %d times, want 3", n)
	}
	testkit.Eventually(t, "the dead letter", func() bool { return adm.ready(q+".dl") == 1 })
	d, _ := adm.get(q + ".dl")
	if d.ReplyTo == "" || d.CorrelationId == "" {
		t.Fatalf("the dead letter lost its reply_to %q or correlation id %q: a replay could not answer", d.ReplyTo, d.CorrelationId)
	}
	time.Sleep(200 * time.Millisecond) // a second reply would come by now
	if late := logs.Find(slog.LevelInfo, "rabbitmq: a reply came with no request waiting for it (its caller's deadline passed); dropped"); len(late) != 0 {
		t.Fatalf("%d more replies came, want one error reply alone", len(late))
	}
}

// A request without a reply_to is handled and acknowledged, and the
// worker logs that no reply could be sent.
func TestRequestWithoutReplyTo(t *testing.T) {
	adm := newAdmin(t)
	q := adm.queue("quotes")
	var handled atomic.Int32
	logs := quietApp(t, quoteSubscription(q, runtime.Policy{}, func(ctx context.Context, req quoteRequest) (quoteReply, error) {
		defer handled.Add(1)
		return quoteHandler(func(int) bool { return false })(ctx, req)
	}))
	adm.publish(q, amqp.Publishing{MessageId: "no-reply-to", Type: "QuoteRequest", ContentType: "application/json", Body: []byte(`{"n":1}`)})
	testkit.Eventually(t, "the request to be handled and acknowledged", func() bool {
		return handled.Load() == 1 && adm.ready(q) == 0 && adm.unacked(q) == 0
	})
	testkit.Eventually(t, "the warning", func() bool {
		for _, r := range logs.Find(slog.LevelWarn, "the request has no reply_to, so no reply could be sent; it is settled as its handler's outcome says") {
			if r.Attr("message_id") == "no-reply-to" {
				return true
			}
		}
		return false
	})
}

// A request to a queue that does not exist fails at once, saying so.
func TestRequestUnroutable(t *testing.T) {
	r := newTestRequester(t, streamtest.NewLogRecorder(nil))
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	queue := "streamgen-test.nobody." + randomHex(4)
	_, err := requestQuote(ctx, r, queue, quoteRequest{N: 1})
	if !errors.Is(err, ErrUnroutable) || !strings.Contains(err.Error(), fmt.Sprintf("there is no queue %q", queue)) {
		t.Fatalf("error %v, want ErrUnroutable naming the queue", err)
	}
}

// A Broker sends requests too, over a connection of its own that
// Shutdown closes; a lost connection fails the calls waiting with
// ErrReplyLost, and the next request connects again.
func TestBrokerRequestsAndReconnects(t *testing.T) {
	adm := newAdmin(t)
	q := adm.queue("quotes")
	var block atomic.Bool
	release := make(chan struct{})
	quietApp(t, quoteSubscription(q, runtime.Policy{}, func(ctx context.Context, req quoteRequest) (quoteReply, error) {
		if block.Load() {
			<-release
		}
		return quoteHandler(func(int) bool { return false })(ctx, req)
	}))
	b := newTestBroker()
	defer func() {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if got, err := requestQuote(ctx, b, q, quoteRequest{N: 1, SKU: "a"}); err != nil || got.Cents != 3 {
		t.Fatalf("Broker request: %+v, %v", got, err)
	}

	block.Store(true)
	res := make(chan error, 1)
	go func() {
		_, err := requestQuote(ctx, b, q, quoteRequest{N: 2})
		res <- err
	}()
	testkit.Eventually(t, "the request to be waiting", func() bool { return adm.unacked(q) == 1 })
	b.req.sess.Load().conn.abort()
	if err := <-res; !errors.Is(err, ErrReplyLost) {
		t.Fatalf("error %v, want ErrReplyLost", err)
	}
	block.Store(false)
	close(release)
	if got, err := requestQuote(ctx, b, q, quoteRequest{N: 3}); err != nil || got.N != 3 {
		t.Fatalf("the request after the loss: %+v, %v", got, err)
	}
}

// A caller in another language (pika) reads a reply and an error reply
// off the wire as the README says: the body, and the reason in
// x-streamgen-error.
func TestRequestFromPika(t *testing.T) {
	adm := newAdmin(t)
	q := adm.queue("quotes")
	quietApp(t, quoteSubscription(q, runtime.Policy{}, quoteHandler(func(n int) bool { return n == 2 })))
	out, err := exec.Command(pikaPython(t), "-c", `
import sys, uuid
import pika

connection = pika.BlockingConnection(pika.URLParameters(sys.argv[1]))
channel = connection.channel()
replies = []
channel.basic_consume("amq.rabbitmq.reply-to", lambda ch, method, props, body: replies.append((props, body)), auto_ack=True)
for n in (1, 2):
    channel.basic_publish("", sys.argv[2], b'{"n": %d, "sku": "A-1"}' % n, pika.BasicProperties(
        type="QuoteRequest", content_type="application/json", reply_to="amq.rabbitmq.reply-to", correlation_id=str(uuid.uuid4())))
    while len(replies) < n:
        connection.process_data_events(time_limit=1)
    props, body = replies[-1]
    error = (props.headers or {}).get("x-streamgen-error")
    print("failed: " + error if error else body.decode())
`, brokerURL(), q).CombinedOutput()
	if err != nil {
		t.Fatalf("pika: %v\n%s", err, out)
	}
	want := `{"n":1,"sku":"A-1","cents":3}` + "\n" + "failed: failed, and nothing brings it back (no max_attempts, no dead_letter): no price for request 2\n"
	if string(out) != want {
		t.Fatalf("pika printed\n%s\nwant\n%s", out, want)
	}
}

// The replies' channel that closed is opened again for the next reply.
func TestRepliesChannelReopens(t *testing.T) {
	adm := newAdmin(t)
	q := adm.queue("quotes")
	b := newTestBroker()
	runApp(t, b, quoteSubscription(q, runtime.Policy{}, quoteHandler(func(int) bool { return false })))
	r := newTestRequester(t, streamtest.NewLogRecorder(nil))
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	for n := range 3 {
		if got, err := requestQuote(ctx, r, q, quoteRequest{N: n}); err != nil || got.N != n {
			t.Fatalf("request %d: %+v, %v", n, got, err)
		}
		b.pub.mu.Lock()
		ch := b.pub.replies
		b.pub.mu.Unlock()
		if ch == nil {
			t.Fatal("no replies' channel after a reply")
		}
		_ = ch.Close()
	}
}
