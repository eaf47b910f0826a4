package runtime

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/streamgen/streamgen/runtime/internal/messageid"
)

// The headers of an error reply: the reply to a request whose handler
// failed for good (HandleReply). It has an empty body and no type; a
// caller in another language reads the reason from HeaderReplyError.
const (
	// HeaderReplyError carries why the request failed: the reason the
	// runtime logged and, for a parked request, wrote in the dead letter's
	// HeaderDeadLetterReason ("failed on attempt 3 of 3: no price for
	// XYZ"), cut to MaxReasonBytes.
	HeaderReplyError = "x-streamgen-error"
	// HeaderReplyDeadLetter names the dead-letter queue the request was
	// parked on; absent when it was dropped or rejected instead.
	HeaderReplyDeadLetter = "x-streamgen-error-dead-letter"
)

// Requester sends a request and waits for its reply: runtime/rabbitmq's
// Requester over direct reply-to, and runtime/streamtest's Broker in
// process. Request, which generated typed clients call, builds the
// request; the Requester only carries it.
//
// Request sends msg to queue (through msg.Exchange when it names one,
// with msg.RoutingKey when set), with its own reply address as the
// message's ReplyTo, and returns the message that came back with msg's
// CorrelationID, as it arrived. It returns an error wrapping ctx's when
// ctx ends first: a reply that comes later is dropped, with a log line.
//
// A Requester may have a Codec() Codec method, as a Publisher may:
// Request encodes with it instead of JSON (RequestWith with another), and
// reads a reply without a content type with it.
type Requester interface {
	Request(ctx context.Context, queue string, msg Message) (Message, error)
}

// ErrParked is what a RemoteError of a request parked on a dead-letter
// queue is (errors.Is).
var ErrParked = errors.New("runtime: the request was parked on a dead-letter queue")

// RemoteError is the error Request returns when the request's handler
// failed for good: its retries, if any, ran out, or it asked to drop or
// dead-letter the request, or the request could not be read. Reason is
// why, in the words the handler's worker logged. errors.Is(err,
// ErrParked) holds when the request was parked (DeadLetter names the
// queue).
type RemoteError struct {
	// MessageType is the request's message type, and Queue where it was
	// sent.
	MessageType string
	Queue       string
	// Reason is the HeaderReplyError of the error reply.
	Reason string
	// DeadLetter is the dead-letter queue the request was parked on, ""
	// when it was not parked.
	DeadLetter string
}

func (e *RemoteError) Error() string {
	if e.DeadLetter != "" {
		return fmt.Sprintf("runtime: request %s to %q was parked on %q: %s", e.MessageType, e.Queue, e.DeadLetter, e.Reason)
	}
	return fmt.Sprintf("runtime: request %s to %q failed: %s", e.MessageType, e.Queue, e.Reason)
}

// Is reports whether target is ErrParked and the request was parked.
func (e *RemoteError) Is(target error) bool { return target == ErrParked && e.DeadLetter != "" }

// Request encodes v, sends it to to (a Queue, or an Exchange with a
// routing key) as a request of type messageType through r, and returns
// the reply decoded into an R. Generated typed clients
// (RequestQuote(ctx, client, req)) call it. The request is encoded with
// r's own codec when it has one (its Codec method), else JSON; the reply
// is read by its content type (see ReadReply): a handler answers in the
// codec it read the request with (see HandleReply).
//
// The request gets a fresh message id, which is its correlation id too
// unless WithProperties sets one (which must then be unique among the
// requests r has in flight); the Requester sets the ReplyTo. opts apply
// as they do to Publish.
//
// It returns a *RemoteError when the handler failed for good (errors.Is
// ErrParked when the request was parked), an error wrapping ctx's error
// (context.DeadlineExceeded, say) when no reply came before ctx ended,
// and the Requester's error when the request could not be sent.
func Request[R any](ctx context.Context, r Requester, to Destination, messageType string, v any, opts ...PublishOption) (R, error) {
	return RequestWith[R](ctx, r, requesterCodec(r), to, messageType, v, opts...)
}

// RequestWith is Request encoding v with codec, and writing its content
// type, whatever codec r has; a nil codec is r's, as Request encodes.
// Generated typed clients call it for a handler whose annotation names a
// codec (codec=msgpack), or whose request is a protocol buffer message
// (Protobuf), as its typed publisher calls PublishWith. The handler
// replies in codec when codec can write the reply (see HandleReply), and
// the reply is read by its content type whatever it is (see ReadReply).
func RequestWith[R any](ctx context.Context, r Requester, codec Codec, to Destination, messageType string, v any, opts ...PublishOption) (R, error) {
	return request[R](ctx, r, codec, to, messageType, v, nil, opts)
}

// RequestJSON is Request for generated code: decodeJSON, when not nil,
// is the JSON decoder streamgen wrote for the reply type R, and a reply
// read with JSON is first decoded with it, as HandleJSON decodes a
// request. It either fills the reply exactly as encoding/json would or
// reports false, and then the reply is decoded as Request decodes it, into
// a new R: so the result, and any error, is always encoding/json's.
func RequestJSON[R any](ctx context.Context, r Requester, to Destination, messageType string, v any, decodeJSON func(body []byte, reply *R) bool, opts ...PublishOption) (R, error) {
	return request(ctx, r, nil, to, messageType, v, decodeJSON, opts)
}

// request is RequestWith, reading a JSON reply with decodeJSON first when
// it is not nil (RequestJSON).
func request[R any](ctx context.Context, r Requester, codec Codec, to Destination, messageType string, v any, decodeJSON func([]byte, *R) bool, opts []PublishOption) (R, error) {
	var zero R
	if codec == nil {
		codec = requesterCodec(r)
	}
	body, err := codec.Encode(v)
	if err != nil {
		return zero, fmt.Errorf("runtime: request %s to %s: %w", messageType, to, err)
	}
	m := Message{ID: messageid.New(), Type: messageType, ContentType: codec.ContentType(), Body: body}
	if len(opts) > 0 {
		m = withOptions(m, opts)
	}
	m.Exchange = to.Exchange
	if m.CorrelationID == "" {
		m.CorrelationID = m.ID
	}
	reply, err := r.Request(ctx, to.Key, m)
	if err != nil {
		return zero, fmt.Errorf("runtime: request %s to %s: %w", messageType, to, err)
	}
	var out R
	if err := readReply(codec, reply, &out, decodeJSON); err != nil {
		if re, ok := errors.AsType[*RemoteError](err); ok {
			re.MessageType, re.Queue = messageType, to.Key
			return zero, re
		}
		return zero, fmt.Errorf("runtime: request %s to %s: %w", messageType, to, err)
	}
	return out, nil
}

// replyTarget returns what the reply to a request is decoded into, for
// an R that out points to: out, unless R is a pointer to a protocol
// buffer message (*orderpb.Order), which the codecs read as a
// proto.Message: then a new message, which *out is set to.
func replyTarget[R any](out *R) any {
	m, ok := any(*out).(proto.Message)
	if !ok {
		return out
	}
	m = m.ProtoReflect().Type().New().Interface()
	r, ok := m.(R)
	if !ok {
		return out // its type makes messages of another Go type: let the codec say so
	}
	*out = r
	return m
}

// ReadReply reads reply, the answer to a request that was encoded with
// codec: an error reply is a *RemoteError (whose MessageType and Queue
// the caller fills in), and any other reply is decoded into the value v
// points to with the codec its content type names: codec when it reads
// that content type, or the reply has none; else the codec of this
// package that reads it (JSON, Protobuf, MsgPack or CBOR), as a handler
// whose codec cannot write its reply answers in another (see
// HandleReply). A content type none of them reads is an error that names
// it.
func ReadReply(codec Codec, reply Message, v any) error {
	c, err := replyCodec(codec, reply)
	if err != nil {
		return err
	}
	return decodeReply(c, reply, v)
}

// readReply is ReadReply into out, with decodeJSON first when it is not
// nil and the reply is read with JSON (see RequestJSON).
func readReply[R any](codec Codec, reply Message, out *R, decodeJSON func([]byte, *R) bool) error {
	c, err := replyCodec(codec, reply)
	if err != nil {
		return err
	}
	if _, isJSON := c.(JSON); isJSON && decodeJSON != nil {
		var v R
		if decodeJSON(reply.Body, &v) {
			*out = v
			return nil
		}
	}
	return decodeReply(c, reply, replyTarget(out))
}

// replyCodec returns the codec that reads reply (see ReadReply), or the
// *RemoteError of an error reply.
func replyCodec(codec Codec, reply Message) (Codec, error) {
	if reason, ok := reply.Headers[HeaderReplyError]; ok {
		return nil, &RemoteError{Reason: reason, DeadLetter: reply.Headers[HeaderReplyDeadLetter]}
	}
	if reply.ContentType == "" || reply.ContentType == codec.ContentType() {
		return codec, nil // the usual case: the reply is in the request's codec
	}
	rs := readersAfter(codec)
	c := rs.of(reply.ContentType)
	if c == nil {
		return nil, fmt.Errorf("the reply (type %q) has content type %q, which none of %s reads", reply.Type, reply.ContentType, ContentTypes(rs.list()))
	}
	return c, nil
}

// decodeReply decodes reply into the value v points to with c.
func decodeReply(c Codec, reply Message, v any) error {
	if err := c.Decode(reply.Body, v); err != nil {
		return fmt.Errorf("the reply (type %q, content type %q) does not decode with %s: %w", reply.Type, reply.ContentType, c.ContentType(), err)
	}
	return nil
}

// requesterCodec is the codec Request encodes with: r's own when it has
// one, else JSON.
func requesterCodec(r Requester) Codec {
	if cp, ok := r.(codecProvider); ok {
		if c := cp.Codec(); c != nil {
			return c
		}
	}
	return JSON{}
}
