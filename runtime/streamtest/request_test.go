package streamtest_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/internal/testsupport/testpb"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

type quoteRequest struct {
	SKU string `json:"sku"`
}

type price struct {
	SKU   string `json:"sku"`
	Cents int    `json:"cents"`
}

var errNoPrice = errors.New("no price for this sku")

// quote prices every sku but "none".
func quote(_ context.Context, q quoteRequest) (price, error) {
	if q.SKU == "none" {
		return price{}, fmt.Errorf("%w: %s", errNoPrice, q.SKU)
	}
	return price{SKU: q.SKU, Cents: 100 * len(q.SKU)}, nil
}

// requestQuote is what streamgen writes for quote: the typed client.
func requestQuote(ctx context.Context, r runtime.Requester, q quoteRequest, opts ...runtime.PublishOption) (price, error) {
	return runtime.Request[price](ctx, r, runtime.Queue("quotes"), "QuoteRequest", &q, opts...)
}

func quotes(policy runtime.Policy, fn func(context.Context, quoteRequest) (price, error)) *runtime.Subscription {
	return &runtime.Subscription{Name: "quotes", Handlers: []runtime.Handler{
		runtime.HandleReply[quoteRequest, price]("QuoteRequest", "Price", policy, nil, fn),
	}}
}

// The harness answers a request in process: the caller gets the handler's
// reply, and the request is acknowledged.
func TestHarnessAnswersARequest(t *testing.T) {
	h := streamtest.New(t, runtime.RabbitMQ, streamtest.WithQuietLogs())
	h.App().Mount(h.Broker(), quotes(runtime.Policy{}, quote))
	h.Start()
	got, err := requestQuote(t.Context(), h.Broker(), quoteRequest{SKU: "A-12"})
	if err != nil {
		t.Fatal(err)
	}
	if want := (price{SKU: "A-12", Cents: 400}); got != want {
		t.Fatalf("reply %+v, want %+v", got, want)
	}
	h.Wait()
	ds := h.Deliveries("quotes")
	if len(ds) != 1 || ds[0].Verdict.Kind != streamtest.VerdictAck || ds[0].Err != nil {
		t.Fatalf("deliveries %+v, want one acknowledged", ds)
	}
}

// A handler's error reaches the caller as a RemoteError carrying the
// reason, not as a timeout; a request retried and then parked gets one
// error reply, which names the dead-letter queue.
func TestHarnessHandlerErrorReachesTheCaller(t *testing.T) {
	t.Run("no retries", func(t *testing.T) {
		h := streamtest.New(t, runtime.RabbitMQ, streamtest.WithQuietLogs())
		h.App().Mount(h.Broker(), quotes(runtime.Policy{}, quote))
		h.Start()
		_, err := requestQuote(t.Context(), h.Broker(), quoteRequest{SKU: "none"})
		re, ok := errors.AsType[*runtime.RemoteError](err)
		if !ok {
			t.Fatalf("error %v, want a *runtime.RemoteError", err)
		}
		if !strings.Contains(re.Reason, "no price for this sku: none") || re.DeadLetter != "" || errors.Is(err, runtime.ErrParked) {
			t.Fatalf("remote error %+v (parked: %v), want the handler's reason, not parked", re, errors.Is(err, runtime.ErrParked))
		}
		if re.MessageType != "QuoteRequest" || re.Queue != "quotes" {
			t.Fatalf("remote error names %s on %q, want QuoteRequest on quotes", re.MessageType, re.Queue)
		}
	})
	t.Run("retried then parked", func(t *testing.T) {
		h := streamtest.New(t, runtime.RabbitMQ, streamtest.WithQuietLogs())
		var calls atomic.Int32
		h.App().Mount(h.Broker(), quotes(runtime.Policy{MaxAttempts: 3, DeadLetter: "quotes.dl"}, func(ctx context.Context, q quoteRequest) (price, error) {
			calls.Add(1)
			return quote(ctx, q)
		}))
		h.Start()
		type result struct {
			p   price
			err error
		}
		res := make(chan result, 1)
		go func() {
			p, err := requestQuote(t.Context(), h.Broker(), quoteRequest{SKU: "none"})
			res <- result{p, err}
		}()
		testkit.Eventually(t, "the first attempt", func() bool { return calls.Load() == 1 })
		h.Wait()
		h.Advance(time.Minute) // the retries' wait queue
		h.Advance(time.Minute)
		r := <-res
		if !errors.Is(r.err, runtime.ErrParked) {
			t.Fatalf("error %v, want one that is runtime.ErrParked", r.err)
		}
		re, _ := errors.AsType[*runtime.RemoteError](r.err)
		if re.DeadLetter != "quotes.dl" || !strings.Contains(re.Reason, "failed on attempt 3 of 3: no price for this sku: none") {
			t.Fatalf("remote error %+v, want parked on quotes.dl after attempt 3", re)
		}
		if n := calls.Load(); n != 3 {
			t.Fatalf("the handler ran %d times, want 3", n)
		}
		if dl := h.Queue("quotes.dl"); len(dl) != 1 {
			t.Fatalf("quotes.dl holds %d messages, want the request", len(dl))
		}
		if late := h.Queue(streamtest.ReplyAddress); len(late) != 0 {
			t.Fatalf("%d replies came with no request waiting, want none: one error reply, after the last attempt", len(late))
		}
	})
}

// A request without a reply_to (published, not requested) is handled and
// acknowledged, with a warning that no reply could be sent.
func TestHarnessRequestWithoutReplyTo(t *testing.T) {
	h := streamtest.New(t, runtime.RabbitMQ, streamtest.WithQuietLogs())
	h.App().Mount(h.Broker(), quotes(runtime.Policy{}, quote))
	h.Start()
	h.Publish("quotes", "QuoteRequest", quoteRequest{SKU: "B"}, runtime.WithMessageID("no-reply-to"))
	h.Wait()
	ds := h.Deliveries("quotes")
	if len(ds) != 1 || ds[0].Verdict.Kind != streamtest.VerdictAck || ds[0].Err != nil {
		t.Fatalf("deliveries %+v, want one acknowledged", ds)
	}
	found := false
	for _, r := range h.Logs().Find(slog.LevelWarn, "the request has no reply_to, so no reply could be sent; it is settled as its handler's outcome says") {
		found = found || r.Attr("message_id") == "no-reply-to"
	}
	if !found {
		t.Fatalf("no warning that no reply could be sent; warnings: %v", warnings(h.Logs()))
	}
}

// A reply_to that names a queue gets the reply there, with the request's
// correlation id, or its message id when it has none.
func TestHarnessReplyToAQueue(t *testing.T) {
	h := streamtest.New(t, runtime.RabbitMQ, streamtest.WithQuietLogs())
	h.App().Mount(h.Broker(), quotes(runtime.Policy{}, quote))
	h.Start()
	h.Publish("quotes", "QuoteRequest", quoteRequest{SKU: "C"}, runtime.WithMessageID("m-1"), runtime.WithProperties(runtime.Properties{ReplyTo: "answers", CorrelationID: "c-1"}))
	h.Publish("quotes", "QuoteRequest", quoteRequest{SKU: "DD"}, runtime.WithMessageID("m-2"), runtime.WithProperties(runtime.Properties{ReplyTo: "answers"}))
	h.Wait()
	got := h.Queue("answers")
	if len(got) != 2 {
		t.Fatalf("answers holds %d messages, want 2", len(got))
	}
	for i, want := range []struct {
		corr, body string
	}{{"c-1", `{"sku":"C","cents":100}`}, {"m-2", `{"sku":"DD","cents":200}`}} {
		m := got[i]
		if m.CorrelationID != want.corr || string(m.Body) != want.body || m.Type != "Price" || m.ContentType != "application/json" {
			t.Errorf("reply %d: correlation id %q, type %q, content type %q, body %s; want %q, Price, application/json, %s", i, m.CorrelationID, m.Type, m.ContentType, m.Body, want.corr, want.body)
		}
	}
}

// A caller whose deadline passes gets an error wrapping it; the reply
// that comes later waits in ReplyAddress's queue, taken by no request.
func TestHarnessRequestDeadline(t *testing.T) {
	h := streamtest.New(t, runtime.RabbitMQ, streamtest.WithQuietLogs())
	release := make(chan struct{})
	h.App().Mount(h.Broker(), quotes(runtime.Policy{}, func(ctx context.Context, q quoteRequest) (price, error) {
		<-release
		return quote(ctx, q)
	}))
	h.Start()
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err := requestQuote(ctx, h.Broker(), quoteRequest{SKU: "late"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want one wrapping context.DeadlineExceeded", err)
	}
	close(release)
	h.Wait()
	if late := h.Queue(streamtest.ReplyAddress); len(late) != 1 || !strings.Contains(string(late[0].Body), `"late"`) {
		t.Fatalf("late replies %+v, want the one reply", late)
	}
}

// Request/reply needs RabbitMQ: the App refuses a handler that replies on
// a ZeroMQ broker.
func TestHarnessRefusesRepliesOnZeroMQ(t *testing.T) {
	h := streamtest.New(t, runtime.ZeroMQ, streamtest.WithQuietLogs())
	h.App().Mount(h.Broker(), quotes(runtime.Policy{}, quote))
	err := h.App().Run(t.Context())
	if err == nil || !strings.Contains(err.Error(), "request/reply needs RabbitMQ") {
		t.Fatalf("Run = %v, want the error that request/reply needs RabbitMQ", err)
	}
}

// A handler answers in the codec its caller wrote: a codec=msgpack (or
// cbor) handler answers a request its typed client sends in its codec
// (RequestWith) in that codec, and a JSON request (Request, the harness's
// codec) in JSON; each caller reads its reply.
func TestHarnessRepliesInTheCallersCodec(t *testing.T) {
	for _, codec := range []runtime.Codec{runtime.MsgPack{}, runtime.CBOR{}} {
		t.Run(codec.ContentType(), func(t *testing.T) {
			h := streamtest.New(t, runtime.RabbitMQ, streamtest.WithQuietLogs())
			sub := quotes(runtime.Policy{}, quote)
			sub.Handlers[0] = sub.Handlers[0].WithCodec(codec)
			h.App().Mount(h.Broker(), sub)
			h.Start()
			r := &replyRecorder{Requester: h.Broker()}
			want := price{SKU: "A-12", Cents: 400}
			got, err := runtime.RequestWith[price](t.Context(), r, codec, runtime.Queue("quotes"), "QuoteRequest", quoteRequest{SKU: "A-12"}, runtime.WithMessageID("in-codec"))
			if err != nil || got != want {
				t.Fatalf("RequestWith(%s) = %+v, %v; want %+v", codec.ContentType(), got, err, want)
			}
			got, err = requestQuote(t.Context(), r, quoteRequest{SKU: "A-12"}, runtime.WithMessageID("in-json"))
			if err != nil || got != want {
				t.Fatalf("Request (JSON) = %+v, %v; want %+v", got, err, want)
			}
			if len(r.replies) != 2 || r.replies[0].ContentType != codec.ContentType() || r.replies[1].ContentType != "application/json" {
				t.Fatalf("replies %+v, want one in %s, then one in JSON", r.replies, codec.ContentType())
			}
			h.Wait()
			// What went over the wire: the request and its reply in one codec.
			for _, d := range h.Deliveries("quotes") {
				wantType := codec.ContentType()
				if d.MessageID == "in-json" {
					wantType = "application/json"
				}
				if d.ContentType != wantType || d.Verdict.Kind != streamtest.VerdictAck {
					t.Errorf("request %s: content type %q, verdict %v; want %s, acked", d.MessageID, d.ContentType, d.Verdict.Kind, wantType)
				}
			}
			if n := len(h.Deliveries("quotes")); n != 2 {
				t.Fatalf("%d deliveries, want 2", n)
			}
		})
	}
}

// A handler of a protocol buffer request answers in protobuf with a
// protocol buffer reply, and in the App's codec with a reply protobuf
// cannot write; the caller, which wrote protobuf, reads either.
func TestHarnessRepliesToAProtocolBufferRequest(t *testing.T) {
	h := streamtest.New(t, runtime.RabbitMQ, streamtest.WithQuietLogs())
	h.App().Mount(h.Broker(), &runtime.Subscription{Name: "orders", Handlers: []runtime.Handler{
		runtime.HandleReply[testpb.Order, testpb.OrderItem]("Order", "OrderItem", runtime.Policy{}, nil, func(_ context.Context, o *testpb.Order) (*testpb.OrderItem, error) {
			return &testpb.OrderItem{Sku: o.GetCustomer(), Qty: int32(o.GetId())}, nil
		}),
	}}, &runtime.Subscription{Name: "totals", Handlers: []runtime.Handler{
		runtime.HandleReply[testpb.Order, price]("Order", "Price", runtime.Policy{}, nil, func(_ context.Context, o *testpb.Order) (price, error) {
			return price{SKU: o.GetCustomer(), Cents: int(o.GetId())}, nil
		}),
	}})
	h.Start()
	r := &replyRecorder{Requester: h.Broker()}
	order := &testpb.Order{Id: 3, Customer: "ACME"}
	item, err := runtime.RequestWith[*testpb.OrderItem](t.Context(), r, runtime.Protobuf{}, runtime.Queue("orders"), "Order", order)
	if want := (&testpb.OrderItem{Sku: "ACME", Qty: 3}); err != nil || !proto.Equal(item, want) {
		t.Fatalf("the protobuf request got %v, %v; want %v", item, err, want)
	}
	total, err := runtime.RequestWith[price](t.Context(), r, runtime.Protobuf{}, runtime.Queue("totals"), "Order", order)
	if want := (price{SKU: "ACME", Cents: 3}); err != nil || total != want {
		t.Fatalf("the protobuf request for a JSON reply got %+v, %v; want %+v", total, err, want)
	}
	if len(r.replies) != 2 || r.replies[0].ContentType != "application/protobuf" || r.replies[1].ContentType != "application/json" {
		t.Fatalf("replies %+v, want one in protobuf, then one in JSON", r.replies)
	}
}

// replyRecorder is a Requester that keeps the replies it got.
type replyRecorder struct {
	runtime.Requester
	replies []runtime.Message
}

func (r *replyRecorder) Request(ctx context.Context, queue string, msg runtime.Message) (runtime.Message, error) {
	reply, err := r.Requester.Request(ctx, queue, msg)
	r.replies = append(r.replies, reply)
	return reply, err
}
