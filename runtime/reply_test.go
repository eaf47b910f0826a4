package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/streamgen/streamgen/internal/testsupport/testpb"
	"github.com/streamgen/streamgen/runtime"
)

type ask struct {
	N int `json:"n"`
}

type answer struct {
	Double int `json:"double"`
}

// Each ReplyFunc shape is called with the request (and the Metadata when
// it takes it), and its reply comes back in the Ack's Outcome.Reply, as a
// pointer to the value.
func TestHandleReplyShapes(t *testing.T) {
	md := runtime.Metadata{MessageID: "m-1"}
	double := func(a ask) answer { return answer{Double: 2 * a.N} }
	sawMD := func(got runtime.Metadata) error {
		if got.MessageID != "m-1" {
			return fmt.Errorf("metadata %+v", got)
		}
		return nil
	}
	for _, tc := range []struct {
		name string
		h    runtime.Handler
	}{
		{"value, value", runtime.HandleReply[ask, answer]("Ask", "Answer", runtime.Policy{}, nil,
			func(_ context.Context, a ask) (answer, error) { return double(a), nil })},
		{"pointer, value", runtime.HandleReply[ask, answer]("Ask", "Answer", runtime.Policy{}, nil,
			func(_ context.Context, a *ask) (answer, error) { return double(*a), nil })},
		{"value with metadata, value", runtime.HandleReply[ask, answer]("Ask", "Answer", runtime.Policy{}, nil,
			func(_ context.Context, a ask, md runtime.Metadata) (answer, error) { return double(a), sawMD(md) })},
		{"pointer with metadata, value", runtime.HandleReply[ask, answer]("Ask", "Answer", runtime.Policy{}, nil,
			func(_ context.Context, a *ask, md runtime.Metadata) (answer, error) { return double(*a), sawMD(md) })},
		{"value, pointer", runtime.HandleReply[ask, answer]("Ask", "Answer", runtime.Policy{}, nil,
			func(_ context.Context, a ask) (*answer, error) { r := double(a); return &r, nil })},
		{"pointer, pointer", runtime.HandleReply[ask, answer]("Ask", "Answer", runtime.Policy{}, nil,
			func(_ context.Context, a *ask) (*answer, error) { r := double(*a); return &r, nil })},
		{"value with metadata, pointer", runtime.HandleReply[ask, answer]("Ask", "Answer", runtime.Policy{}, nil,
			func(_ context.Context, a ask, md runtime.Metadata) (*answer, error) {
				r := double(a)
				return &r, sawMD(md)
			})},
		{"pointer with metadata, pointer", runtime.HandleReply[ask, answer]("Ask", "Answer", runtime.Policy{}, nil,
			func(_ context.Context, a *ask, md runtime.Metadata) (*answer, error) {
				r := double(*a)
				return &r, sawMD(md)
			})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if rt, ok := tc.h.Replies(); !ok || rt != "Answer" {
				t.Fatalf("Replies() = %q, %v; want Answer, true", rt, ok)
			}
			v, err := tc.h.Decode(runtime.JSON{}, []byte(`{"n":21}`))
			if err != nil {
				t.Fatal(err)
			}
			out := tc.h.Call(context.Background(), v, md)
			if out.Action() != runtime.ActionAck || out.Err() != nil {
				t.Fatalf("outcome %v, want an ack", out)
			}
			if r, ok := out.Reply().(*answer); !ok || *r != (answer{Double: 42}) {
				t.Fatalf("reply %#v, want &answer{42}", out.Reply())
			}
		})
	}
}

// An error is the outcome OutcomeOf makes of it, with no reply; a nil
// pointer with no error replies the zero value.
func TestHandleReplyErrorsAndNil(t *testing.T) {
	errGone := errors.New("gone")
	h := runtime.HandleReply[ask, answer]("Ask", "Answer", runtime.Policy{}, nil, func(_ context.Context, a ask) (*answer, error) {
		switch a.N {
		case 1:
			return nil, errGone
		case 2:
			return &answer{Double: 9}, runtime.DeadLetter(errGone)
		}
		return nil, nil
	})
	call := func(n int) runtime.Outcome {
		v, err := h.Decode(runtime.JSON{}, fmt.Appendf(nil, `{"n":%d}`, n))
		if err != nil {
			t.Fatal(err)
		}
		return h.Call(context.Background(), v, runtime.Metadata{})
	}
	if out := call(1); out.Action() != runtime.ActionRetry || !errors.Is(out.Err(), errGone) || out.Reply() != nil {
		t.Fatalf("outcome %v with reply %v, want a retry because of errGone and no reply", out, out.Reply())
	}
	if out := call(2); out.Action() != runtime.ActionDeadLetter || out.Reply() != nil {
		t.Fatalf("outcome %v with reply %v, want a dead-letter and no reply", out, out.Reply())
	}
	if out := call(3); out.Action() != runtime.ActionAck || *out.Reply().(*answer) != (answer{}) {
		t.Fatalf("outcome %v with reply %#v, want an ack replying the zero answer", out, out.Reply())
	}
	plain := handle()
	if _, ok := plain.Replies(); ok {
		t.Fatal("a Handle handler says it replies")
	}
}

// A handler that replies is refused on ZeroMQ, naming the reply, and
// accepted on RabbitMQ.
func TestValidateRefusesRepliesOnZeroMQ(t *testing.T) {
	sub := &runtime.Subscription{Name: "asks", Handlers: []runtime.Handler{
		runtime.HandleReply[ask, answer]("Ask", "Answer", runtime.Policy{}, nil, func(context.Context, ask) (answer, error) { return answer{}, nil }),
	}}
	if err := sub.Validate(runtime.RabbitMQ); err != nil {
		t.Fatalf("on rabbitmq: %v", err)
	}
	err := sub.Validate(runtime.ZeroMQ)
	ve, ok := errors.AsType[*runtime.ValidationError](err)
	if !ok || ve.Handler != 0 || ve.Key != "broker" || !strings.Contains(ve.Msg, `the handler for "Ask" returns a reply of type Answer, and request/reply needs RabbitMQ`) {
		t.Fatalf("on zeromq: %v, want the error that request/reply needs RabbitMQ at the handler's broker key", err)
	}
}

// fakeRequester answers each request with reply, recording the request.
type fakeRequester struct {
	got   runtime.Message
	queue string
	reply func(req runtime.Message) (runtime.Message, error)
	codec runtime.Codec
}

func (f *fakeRequester) Request(_ context.Context, queue string, msg runtime.Message) (runtime.Message, error) {
	f.got, f.queue = msg, queue
	return f.reply(msg)
}

type codecRequester struct{ *fakeRequester }

func (c codecRequester) Codec() runtime.Codec { return c.codec }

// Request builds the request (type, content type, body, fresh ids, a
// correlation id) and decodes the reply; an error reply is a
// *RemoteError, ErrParked when it names a dead-letter queue.
func TestRequest(t *testing.T) {
	ctx := context.Background()
	f := &fakeRequester{reply: func(req runtime.Message) (runtime.Message, error) {
		return runtime.Message{Type: "Answer", ContentType: "application/json", Body: []byte(`{"double":4}`), Properties: runtime.Properties{CorrelationID: req.CorrelationID}}, nil
	}}
	got, err := runtime.Request[answer](ctx, f, runtime.Queue("asks"), "Ask", ask{N: 2}, runtime.WithHeader("k", "v"))
	if err != nil || got != (answer{Double: 4}) {
		t.Fatalf("Request = %+v, %v; want the decoded reply", got, err)
	}
	if f.queue != "asks" || f.got.Type != "Ask" || f.got.ContentType != "application/json" || string(f.got.Body) != `{"n":2}` ||
		f.got.ID == "" || f.got.CorrelationID != f.got.ID || f.got.Headers["k"] != "v" {
		t.Fatalf("request %+v to %q, want Ask in JSON to asks, with a fresh id as its correlation id and the header", f.got, f.queue)
	}
	first := f.got.CorrelationID
	_, _ = runtime.Request[answer](ctx, f, runtime.Queue("asks"), "Ask", ask{N: 2})
	if f.got.CorrelationID == first {
		t.Fatal("two requests share a correlation id")
	}
	_, _ = runtime.Request[answer](ctx, f, runtime.Queue("asks"), "Ask", ask{N: 2}, runtime.WithProperties(runtime.Properties{CorrelationID: "mine"}))
	if f.got.CorrelationID != "mine" {
		t.Fatalf("correlation id %q, want the one WithProperties set", f.got.CorrelationID)
	}

	// The requester's codec encodes the request and decodes the reply.
	c := codecRequester{&fakeRequester{codec: upperCodec{}, reply: func(runtime.Message) (runtime.Message, error) {
		return runtime.Message{Body: []byte(`{"n":1,"s":"shout"}`)}, nil
	}}}
	it, err := runtime.Request[item](ctx, c, runtime.Queue("items"), "Item", item{S: "x"})
	if err != nil || it.S != "SHOUT" {
		t.Fatalf("Request = %+v, %v; want the reply decoded with the requester's codec", it, err)
	}

	errorReply := func(h map[string]string) *fakeRequester {
		return &fakeRequester{reply: func(runtime.Message) (runtime.Message, error) { return runtime.Message{Headers: h}, nil }}
	}
	_, err = runtime.Request[answer](ctx, errorReply(map[string]string{runtime.HeaderReplyError: "failed: no"}), runtime.Queue("asks"), "Ask", ask{})
	re, ok := errors.AsType[*runtime.RemoteError](err)
	if !ok || re.Reason != "failed: no" || re.MessageType != "Ask" || re.Queue != "asks" || errors.Is(err, runtime.ErrParked) {
		t.Fatalf("error %v, want a RemoteError with the reason, not parked", err)
	}
	if want := `runtime: request Ask to "asks" failed: failed: no`; err.Error() != want {
		t.Fatalf("error text %q, want %q", err, want)
	}
	_, err = runtime.Request[answer](ctx, errorReply(map[string]string{runtime.HeaderReplyError: "failed on attempt 3 of 3: no", runtime.HeaderReplyDeadLetter: "asks.dl"}), runtime.Queue("asks"), "Ask", ask{})
	if !errors.Is(err, runtime.ErrParked) || !strings.Contains(err.Error(), `was parked on "asks.dl": failed on attempt 3 of 3: no`) {
		t.Fatalf("error %v, want ErrParked naming asks.dl", err)
	}

	// What the requester returns is wrapped; a reply that does not decode
	// says so.
	errLost := errors.New("connection lost")
	_, err = runtime.Request[answer](ctx, &fakeRequester{reply: func(runtime.Message) (runtime.Message, error) { return runtime.Message{}, errLost }}, runtime.Queue("asks"), "Ask", ask{})
	if !errors.Is(err, errLost) || !strings.HasPrefix(err.Error(), `runtime: request Ask to "asks": `) {
		t.Fatalf("error %v, want the requester's, wrapped", err)
	}
	_, err = runtime.Request[answer](ctx, &fakeRequester{reply: func(runtime.Message) (runtime.Message, error) {
		return runtime.Message{Type: "Answer", ContentType: "text/plain", Body: []byte("four")}, nil
	}}, runtime.Queue("asks"), "Ask", ask{})
	if err == nil || !strings.Contains(err.Error(), `the reply (type "Answer") has content type "text/plain", which none of application/json, application/protobuf, application/msgpack or application/cbor reads`) {
		t.Fatalf("error %v, want the error naming the content type no codec reads", err)
	}
	_, err = runtime.Request[answer](ctx, &fakeRequester{reply: func(runtime.Message) (runtime.Message, error) {
		return runtime.Message{Type: "Answer", ContentType: "application/json", Body: []byte("four")}, nil
	}}, runtime.Queue("asks"), "Ask", ask{})
	if err == nil || !strings.Contains(err.Error(), `the reply (type "Answer", content type "application/json") does not decode with application/json`) {
		t.Fatalf("error %v, want the decode error naming the content type", err)
	}
}

// RequestWith encodes the request with its codec, whatever the
// requester's, and each reply is read by its content type: the request's
// codec reads its own and a reply without one, and this package's codecs
// read theirs (a handler whose codec cannot write its reply answers in
// its App's).
func TestRequestWithReadsTheReplyByItsContentType(t *testing.T) {
	ctx := context.Background()
	want := answer{Double: 4}
	encoded := func(c runtime.Codec, contentType string) func(runtime.Message) (runtime.Message, error) {
		return func(runtime.Message) (runtime.Message, error) {
			body, err := c.Encode(want)
			return runtime.Message{Type: "Answer", ContentType: contentType, Body: body}, err
		}
	}
	for _, tc := range []struct {
		name        string
		codec       runtime.Codec
		replyCodec  runtime.Codec
		contentType string
	}{
		{"msgpack request, msgpack reply", runtime.MsgPack{}, runtime.MsgPack{}, "application/msgpack"},
		{"msgpack request, reply without a content type", runtime.MsgPack{}, runtime.MsgPack{}, ""},
		{"msgpack request, JSON reply", runtime.MsgPack{}, runtime.JSON{}, "application/json"},
		{"cbor request, cbor reply", runtime.CBOR{}, runtime.CBOR{}, "application/cbor"},
		{"cbor request, msgpack reply by another name", runtime.CBOR{}, runtime.MsgPack{}, "application/x-msgpack"},
		{"JSON request, cbor reply", runtime.JSON{}, runtime.CBOR{}, "application/cbor"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The requester's codec is JSON: RequestWith's wins.
			f := codecRequester{&fakeRequester{codec: runtime.JSON{}, reply: encoded(tc.replyCodec, tc.contentType)}}
			got, err := runtime.RequestWith[answer](ctx, f, tc.codec, runtime.Queue("asks"), "Ask", ask{N: 2})
			if err != nil || got != want {
				t.Fatalf("RequestWith = %+v, %v; want %+v", got, err, want)
			}
			var sent ask
			if f.got.ContentType != tc.codec.ContentType() || tc.codec.Decode(f.got.Body, &sent) != nil || sent != (ask{N: 2}) {
				t.Fatalf("the request went as %q %x, want %s of {N:2}", f.got.ContentType, f.got.Body, tc.codec.ContentType())
			}
		})
	}
	// A nil codec is the requester's, as Request encodes.
	f := codecRequester{&fakeRequester{codec: runtime.CBOR{}, reply: encoded(runtime.CBOR{}, "application/cbor")}}
	if got, err := runtime.RequestWith[answer](ctx, f, nil, runtime.Queue("asks"), "Ask", ask{N: 2}); err != nil || got != want || f.got.ContentType != "application/cbor" {
		t.Fatalf("RequestWith(nil codec) = %+v, %v, sent as %q; want the requester's codec", got, err, f.got.ContentType)
	}
	// A reply in a codec that does not match its content type does not
	// decode, and says with which codec it was read.
	f = codecRequester{&fakeRequester{reply: encoded(runtime.JSON{}, "application/msgpack")}}
	_, err := runtime.RequestWith[answer](ctx, f, runtime.CBOR{}, runtime.Queue("asks"), "Ask", ask{N: 2})
	if err == nil || !strings.Contains(err.Error(), `content type "application/msgpack") does not decode with application/msgpack`) {
		t.Fatalf("error %v, want the msgpack decode error", err)
	}
}

// A reply that is a pointer to a protocol buffer message is decoded into
// a new message, in protobuf and in its JSON mapping.
func TestRequestOfAProtocolBufferReply(t *testing.T) {
	ctx := context.Background()
	want := &testpb.OrderItem{Sku: "A-1", Qty: 3, Price: 2.5}
	for _, c := range []runtime.Codec{runtime.Protobuf{}, runtime.JSON{}} {
		t.Run(c.ContentType(), func(t *testing.T) {
			f := &fakeRequester{reply: func(runtime.Message) (runtime.Message, error) {
				body, err := c.Encode(want)
				return runtime.Message{Type: "OrderItem", ContentType: c.ContentType(), Body: body}, err
			}}
			got, err := runtime.RequestWith[*testpb.OrderItem](ctx, f, runtime.Protobuf{}, runtime.Queue("orders"), "Order", &testpb.Order{Id: 7})
			if err != nil || !proto.Equal(got, want) {
				t.Fatalf("RequestWith = %v, %v; want %v", got, err, want)
			}
			var sent testpb.Order
			if f.got.ContentType != "application/protobuf" || proto.Unmarshal(f.got.Body, &sent) != nil || sent.GetId() != 7 {
				t.Fatalf("the request went as %q, want protobuf of order 7", f.got.ContentType)
			}
		})
	}
}

// RequestJSON reads a JSON reply with the decoder it is given (the one
// streamgen generates for the reply type) when it decodes the reply, and
// with encoding/json, into a new value, when it leaves the reply to it; a
// reply in another codec, an error reply and a requester of another codec
// never reach the decoder.
func TestRequestJSONDecodesTheReplyWithTheGeneratedDecoder(t *testing.T) {
	ctx := context.Background()
	jsonReply := func(contentType, body string) *fakeRequester {
		return &fakeRequester{reply: func(runtime.Message) (runtime.Message, error) {
			return runtime.Message{Type: "Answer", ContentType: contentType, Body: []byte(body)}, nil
		}}
	}
	// decoder is a generated decoder's stand-in: it takes bodies of the
	// form {"double":N} alone, and marks what it decodes (Double+1000),
	// so that a test sees which decoder read a reply; it writes into its
	// value before it gives up on a body, as a decoder may.
	var calls int
	decoder := func(body []byte, v *answer) bool {
		calls++
		v.Double = -1
		var n int
		if _, err := fmt.Sscanf(string(body), `{"double":%d}`, &n); err != nil {
			return false
		}
		v.Double = n + 1000
		return true
	}
	for _, tc := range []struct {
		name        string
		f           runtime.Requester
		want        answer
		decoderRuns int
	}{
		{"JSON reply", jsonReply("application/json", `{"double":4}`), answer{Double: 1004}, 1},
		{"reply without a content type", jsonReply("", `{"double":4}`), answer{Double: 1004}, 1},
		{"a reply the decoder leaves to encoding/json", jsonReply("application/json", `{ "double" : 4 }`), answer{Double: 4}, 1},
		{"msgpack reply", &fakeRequester{reply: func(runtime.Message) (runtime.Message, error) {
			body, err := runtime.MsgPack{}.Encode(answer{Double: 4})
			return runtime.Message{ContentType: "application/msgpack", Body: body}, err
		}}, answer{Double: 4}, 0},
		{"a requester of another codec", codecRequester{&fakeRequester{codec: runtime.CBOR{}, reply: func(runtime.Message) (runtime.Message, error) {
			body, err := runtime.CBOR{}.Encode(answer{Double: 4})
			return runtime.Message{Body: body}, err
		}}}, answer{Double: 4}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls = 0
			got, err := runtime.RequestJSON(ctx, tc.f, runtime.Queue("asks"), "Ask", ask{N: 2}, decoder)
			if err != nil || got != tc.want || calls != tc.decoderRuns {
				t.Fatalf("RequestJSON = %+v, %v, the decoder ran %d times; want %+v, %d", got, err, calls, tc.want, tc.decoderRuns)
			}
		})
	}
	// An error reply is a RemoteError, the decoder unused; a nil decoder
	// is Request.
	calls = 0
	f := &fakeRequester{reply: func(runtime.Message) (runtime.Message, error) {
		return runtime.Message{Headers: map[string]string{runtime.HeaderReplyError: "failed: no"}}, nil
	}}
	if _, err := runtime.RequestJSON(ctx, f, runtime.Queue("asks"), "Ask", ask{}, decoder); !errors.As(err, new(*runtime.RemoteError)) || calls != 0 {
		t.Fatalf("error %v after %d decoder runs, want a RemoteError and none", err, calls)
	}
	if got, err := runtime.RequestJSON[answer](ctx, jsonReply("application/json", `{"double":4}`), runtime.Queue("asks"), "Ask", ask{}, nil); err != nil || got.Double != 4 {
		t.Fatalf("RequestJSON without a decoder = %+v, %v; want encoding/json's", got, err)
	}
	// A reply that does not decode is encoding/json's error.
	_, err := runtime.RequestJSON(ctx, jsonReply("application/json", `four`), runtime.Queue("asks"), "Ask", ask{}, decoder)
	if err == nil || !strings.Contains(err.Error(), `does not decode with application/json: runtime: decode: invalid character 'o' in literal false`) {
		t.Fatalf("error %v, want encoding/json's", err)
	}
}
