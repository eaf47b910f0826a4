package adapter_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/streamgen/streamgen/internal/testsupport/testpb"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/adapter"
)

type quote struct {
	SKU string `json:"sku"`
}

type price struct {
	Cents int `json:"cents"`
}

// replyRecorder is a recorder that carries replies too.
type replyRecorder struct {
	recorder
	replies []sentReply
	// reply is what Reply reports; async holds its done for the test to
	// call.
	reply error
	async bool
	later []func(error)
}

type sentReply struct {
	to  string
	msg runtime.Message
}

func (r *replyRecorder) Reply(_ context.Context, _ *adapter.Delivery, to string, msg runtime.Message, done func(error)) {
	r.mu.Lock()
	r.did = append(r.did, "reply "+to)
	r.replies = append(r.replies, sentReply{to: to, msg: msg})
	err, async := r.reply, r.async
	if async {
		r.later = append(r.later, done)
	}
	r.mu.Unlock()
	if !async {
		done(err)
	}
}

func newReplying(sub *runtime.Subscription, mws ...runtime.Middleware) (*adapter.Consumer, *logCapture, *replyRecorder) {
	logs := newLogCapture()
	tr := &replyRecorder{}
	c := adapter.NewConsumer(sub, runtime.Env{Logger: logs.logger(), Middleware: mws}, adapter.Rules{Kind: runtime.RabbitMQ}, tr)
	return c, logs, tr
}

func quotes(policy runtime.Policy, fn func(context.Context, quote) (price, error)) *runtime.Subscription {
	return &runtime.Subscription{Name: "quotes", Handlers: []runtime.Handler{
		runtime.HandleReply[quote, price]("Quote", "Price", policy, nil, fn),
	}}
}

func request(id, corr, replyTo, sku string, attempt int) *adapter.Delivery {
	return &adapter.Delivery{MessageID: id, Type: "Quote", ContentType: "application/json", Body: fmt.Appendf(nil, `{"sku":%q}`, sku),
		Headers: retryCount(attempt - 1), Properties: runtime.Properties{CorrelationID: corr, ReplyTo: replyTo}}
}

func pricing(_ context.Context, q quote) (price, error) {
	if q.SKU == "bad" {
		return price{}, errors.New("no price for bad")
	}
	return price{Cents: len(q.SKU)}, nil
}

// A handler's reply goes to the request's reply_to with its correlation
// id (the message id when it has none), before the request is acked.
func TestConsumerRepliesBeforeTheAck(t *testing.T) {
	c, _, tr := newReplying(quotes(runtime.Policy{}, pricing))
	v, err := c.Handle(context.Background(), request("m-1", "c-1", "amq.rabbitmq.reply-to.x", "abc", 1))
	if err != nil || v.Kind != adapter.VerdictAck {
		t.Fatalf("verdict %v, %v; want an ack", v.Kind, err)
	}
	if got := tr.actions(); got != "reply amq.rabbitmq.reply-to.x, ack" {
		t.Fatalf("the transport did %q, want the reply, then the ack", got)
	}
	m := tr.replies[0].msg
	if m.CorrelationID != "c-1" || m.Type != "Price" || m.ContentType != "application/json" || string(m.Body) != `{"cents":3}` || m.ID != "" || !m.Timestamp.IsZero() {
		t.Fatalf("reply %+v, want correlation id c-1, type Price, JSON {\"cents\":3}, and no message id nor timestamp", m)
	}
	if _, ok := m.Headers[runtime.HeaderReplyError]; ok {
		t.Fatalf("a reply that succeeded carries %s", runtime.HeaderReplyError)
	}

	_, _ = c.Handle(context.Background(), request("m-2", "", "answers", "abcd", 1))
	if m := tr.replies[1].msg; m.CorrelationID != "m-2" || tr.replies[1].to != "answers" {
		t.Fatalf("reply to %q with correlation id %q, want answers and the request's message id m-2", tr.replies[1].to, m.CorrelationID)
	}
}

// A reply the broker has yet to take holds the request's ack: the ack
// follows its outcome, and a reply that could not be sent hands the
// request back to be handled again.
func TestConsumerAcksOnceTheReplyIsTaken(t *testing.T) {
	c, _, tr := newReplying(quotes(runtime.Policy{}, pricing))
	tr.async = true
	if _, err := c.Handle(context.Background(), request("m-1", "c-1", "r", "a", 1)); err != nil {
		t.Fatal(err)
	}
	if got := tr.actions(); got != "reply r" {
		t.Fatalf("before the reply's outcome the transport did %q, want only the reply", got)
	}
	tr.later[0](nil)
	if got := tr.actions(); got != "reply r, ack" {
		t.Fatalf("after the reply was taken the transport did %q, want the ack", got)
	}
	if _, err := c.Handle(context.Background(), request("m-2", "c-2", "r", "a", 1)); err != nil {
		t.Fatal(err)
	}
	tr.later[1](errors.New("channel closed before the publisher confirm"))
	if got := tr.actions(); got != "reply r, ack, reply r, requeue" {
		t.Fatalf("after a reply failed the transport did %q, want the request requeued", got)
	}
	if err := c.WaitCopies(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// A failure retries without a reply; the last attempt's failure sends
// one error reply with the reason, and the dead-letter queue when the
// request is parked, once the request is parked.
func TestConsumerErrorReplies(t *testing.T) {
	c, _, tr := newReplying(quotes(runtime.Policy{MaxAttempts: 2, DeadLetter: "quotes.dl"}, pricing))
	if v, _ := c.Handle(context.Background(), request("m-1", "c-1", "r", "bad", 1)); v.Kind != adapter.VerdictRetry {
		t.Fatalf("verdict %v, want a retry", v.Kind)
	}
	if len(tr.replies) != 0 {
		t.Fatalf("a retry sent %d replies, want none", len(tr.replies))
	}
	if v, _ := c.Handle(context.Background(), request("m-1", "c-1", "r", "bad", 2)); v.Kind != adapter.VerdictPark {
		t.Fatalf("verdict %v, want a park", v.Kind)
	}
	if got := tr.actions(); got != "send quotes.retry, ack, send quotes.dl, ack, reply r" {
		t.Fatalf("the transport did %q", got)
	}
	m := tr.replies[0].msg
	if m.Headers[runtime.HeaderReplyError] != "failed on attempt 2 of 2: no price for bad" || m.Headers[runtime.HeaderReplyDeadLetter] != "quotes.dl" ||
		len(m.Body) != 0 || m.Type != "" || m.CorrelationID != "c-1" {
		t.Fatalf("error reply %+v, want the reason, the dead-letter queue, correlation id c-1 and no body", m)
	}

	// Dropped (no dead letter): the reason, and no queue.
	c, _, tr = newReplying(quotes(runtime.Policy{}, pricing))
	_, _ = c.Handle(context.Background(), request("m-2", "c-2", "r", "bad", 1))
	m = tr.replies[0].msg
	if !strings.Contains(m.Headers[runtime.HeaderReplyError], "no price for bad") || m.Headers[runtime.HeaderReplyDeadLetter] != "" {
		t.Fatalf("error reply %+v, want the reason and no dead-letter queue", m.Headers)
	}
	// Poison: a body that does not decode is answered too.
	d := request("m-3", "c-3", "r", "x", 1)
	d.Body = []byte("{")
	_, _ = c.Handle(context.Background(), d)
	if m := tr.replies[1].msg; !strings.Contains(m.Headers[runtime.HeaderReplyError], "body does not decode into Quote") {
		t.Fatalf("error reply of a poison request %+v, want the decode error", m.Headers)
	}
}

// Without a reply_to the request is handled and acked, with a warning.
func TestConsumerRequestWithoutReplyTo(t *testing.T) {
	c, logs, tr := newReplying(quotes(runtime.Policy{}, pricing))
	if v, err := c.Handle(context.Background(), request("m-1", "c-1", "", "a", 1)); v.Kind != adapter.VerdictAck || err != nil {
		t.Fatalf("verdict %v, %v; want an ack", v.Kind, err)
	}
	if got := tr.actions(); got != "ack" {
		t.Fatalf("the transport did %q, want the ack alone", got)
	}
	if n := len(logs.find("the request has no reply_to, so no reply could be sent; it is settled as its handler's outcome says")); n != 1 {
		t.Fatalf("%d warnings that no reply could be sent, want 1: %v", n, logs.all())
	}
}

// A middleware that returns an Outcome of its own loses the reply: the
// caller gets an error reply that says so, rather than nothing.
func TestConsumerReplyLostByMiddleware(t *testing.T) {
	own := func(ctx context.Context, v any, md runtime.Metadata, next runtime.Next) runtime.Outcome {
		next(ctx, v, md)
		return runtime.Ack()
	}
	c, _, tr := newReplying(quotes(runtime.Policy{}, pricing), own)
	_, _ = c.Handle(context.Background(), request("m-1", "c-1", "r", "a", 1))
	if m := tr.replies[0].msg; !strings.Contains(m.Headers[runtime.HeaderReplyError], "a middleware returned an Outcome of its own") {
		t.Fatalf("reply %+v, want an error reply saying the middleware lost the reply", m)
	}
	if got := tr.actions(); got != "ack, reply r" {
		t.Fatalf("the transport did %q, want the ack, then the error reply", got)
	}
}

// Only the handlers that reply answer: an event handler of the same
// subscription sends nothing, whatever its message's reply_to.
func TestConsumerAnswersOnlyForHandlersThatReply(t *testing.T) {
	sub := quotes(runtime.Policy{}, pricing)
	sub.Handlers = append(sub.Handlers, okHandler("Job", runtime.Policy{}))
	c, _, tr := newReplying(sub)
	d := delivery(1)
	d.ReplyTo = "r"
	_, _ = c.Handle(context.Background(), d)
	if got := tr.actions(); got != "ack" {
		t.Fatalf("the transport did %q, want the ack alone", got)
	}
}

// last is the last reply r sent.
func (r *replyRecorder) last(t *testing.T) runtime.Message {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.replies) == 0 {
		t.Fatal("no reply was sent")
	}
	return r.replies[len(r.replies)-1].msg
}

// encodedRequest is a request of type Quote with reply_to r, v encoded
// with c, of content type contentType.
func encodedRequest(t *testing.T, id string, c runtime.Codec, contentType string, v any) *adapter.Delivery {
	t.Helper()
	body, err := c.Encode(v)
	if err != nil {
		t.Fatal(err)
	}
	return &adapter.Delivery{MessageID: id, Type: "Quote", ContentType: contentType, Body: body, Properties: runtime.Properties{ReplyTo: "r"}}
}

// A handler answers in the codec it read the request with: a codec=msgpack
// handler answers a msgpack request in msgpack, and a JSON request (its
// App's codec, which it reads too) in JSON; a request without a content
// type, read with the handler's own codec, is answered in it.
func TestConsumerRepliesInTheRequestsCodec(t *testing.T) {
	sub := quotes(runtime.Policy{}, pricing)
	sub.Handlers[0] = sub.Handlers[0].WithCodec(runtime.MsgPack{})
	c, _, tr := newReplying(sub)
	for _, tc := range []struct {
		name, contentType string
		request, reply    runtime.Codec
	}{
		{"msgpack", "application/msgpack", runtime.MsgPack{}, runtime.MsgPack{}},
		{"msgpack by another name", "application/x-msgpack", runtime.MsgPack{}, runtime.MsgPack{}},
		{"JSON", "application/json", runtime.JSON{}, runtime.JSON{}},
		{"no content type", "", runtime.MsgPack{}, runtime.MsgPack{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if v, err := c.Handle(context.Background(), encodedRequest(t, "m-"+tc.name, tc.request, tc.contentType, quote{SKU: "abcd"})); v.Kind != adapter.VerdictAck || err != nil {
				t.Fatalf("verdict %v, %v; want an ack", v.Kind, err)
			}
			m := tr.last(t)
			var p price
			if m.ContentType != tc.reply.ContentType() || m.Type != "Price" || tc.reply.Decode(m.Body, &p) != nil || p != (price{Cents: 4}) {
				t.Fatalf("reply %q of type %s, body %x; want %s of {Cents:4}", m.ContentType, m.Type, m.Body, tc.reply.ContentType())
			}
		})
	}
	// The App's codec, when the handler has none, answers whatever
	// content type it reads.
	c, _, tr = newReplying(quotes(runtime.Policy{}, pricing))
	_, _ = c.Handle(context.Background(), encodedRequest(t, "m-json", runtime.JSON{}, "text/json", quote{SKU: "ab"}))
	if m := tr.last(t); m.ContentType != "application/json" || string(m.Body) != `{"cents":2}` {
		t.Fatalf("reply %q %s, want application/json {\"cents\":2}", m.ContentType, m.Body)
	}
}

// A protocol buffer request is answered in protobuf when its reply is a
// protocol buffer message too, and in its JSON mapping when the request
// came in it; a reply protobuf cannot write (not a protocol buffer
// message) goes out in the App's codec; a reply no codec of the handler
// writes is an error reply that says why each could not.
func TestConsumerRepliesToAProtocolBufferRequest(t *testing.T) {
	item := func(_ context.Context, o *testpb.Order) (*testpb.OrderItem, error) {
		return &testpb.OrderItem{Sku: o.GetCustomer(), Qty: int32(o.GetId())}, nil
	}
	sub := &runtime.Subscription{Name: "orders", Handlers: []runtime.Handler{
		runtime.HandleReply[testpb.Order, testpb.OrderItem]("Quote", "OrderItem", runtime.Policy{}, nil, item),
	}}
	c, _, tr := newReplying(sub)
	order := &testpb.Order{Id: 3, Customer: "ACME"}
	want := &testpb.OrderItem{Sku: "ACME", Qty: 3}
	for _, codec := range []runtime.Codec{runtime.Protobuf{}, runtime.JSON{}} {
		_, _ = c.Handle(context.Background(), encodedRequest(t, "m-1", codec, codec.ContentType(), order))
		m := tr.last(t)
		got := &testpb.OrderItem{}
		if m.ContentType != codec.ContentType() || m.Type != "OrderItem" || codec.Decode(m.Body, got) != nil || !proto.Equal(got, want) {
			t.Fatalf("reply to a %s request: %q %x, want %s of %v", codec.ContentType(), m.ContentType, m.Body, codec.ContentType(), want)
		}
	}

	// A reply that is no protocol buffer message: in the App's codec.
	sub = &runtime.Subscription{Name: "orders", Handlers: []runtime.Handler{
		runtime.HandleReply[testpb.Order, price]("Quote", "Price", runtime.Policy{}, nil, func(_ context.Context, o *testpb.Order) (price, error) {
			return price{Cents: int(o.GetId())}, nil
		}),
	}}
	c, _, tr = newReplying(sub)
	_, _ = c.Handle(context.Background(), encodedRequest(t, "m-2", runtime.Protobuf{}, "application/protobuf", order))
	if m := tr.last(t); m.ContentType != "application/json" || string(m.Body) != `{"cents":3}` || m.Headers[runtime.HeaderReplyError] != "" {
		t.Fatalf("reply %q %s %v, want application/json {\"cents\":3}", m.ContentType, m.Body, m.Headers)
	}

	// No codec writes it: an error reply naming each.
	sub = &runtime.Subscription{Name: "orders", Handlers: []runtime.Handler{
		runtime.HandleReply[testpb.Order, unwritable]("Quote", "Unwritable", runtime.Policy{}, nil, func(context.Context, *testpb.Order) (unwritable, error) {
			return unwritable{C: make(chan int)}, nil
		}),
	}}
	c, _, tr = newReplying(sub)
	v, _ := c.Handle(context.Background(), encodedRequest(t, "m-3", runtime.Protobuf{}, "application/protobuf", order))
	m := tr.last(t)
	reason := m.Headers[runtime.HeaderReplyError]
	if v.Kind != adapter.VerdictAck || len(m.Body) != 0 ||
		!strings.HasPrefix(reason, "the request was handled, but its reply does not encode as application/protobuf (") ||
		!strings.Contains(reason, "is not a protocol buffer message") || !strings.Contains(reason, ") nor as application/json (runtime: encode: json: unsupported type: chan int)") {
		t.Fatalf("verdict %v, reply %+v; want an ack and an error reply naming protobuf's and JSON's errors", v.Kind, m)
	}
}

// unwritable is a reply no codec encodes.
type unwritable struct {
	C chan int `json:"c"`
}
