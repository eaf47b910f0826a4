package runtime

import (
	"context"
	"fmt"
)

// ReplyFunc is the set of shapes of a handler that answers requests:
// it takes the request as HandlerFunc's shapes do (by value or by
// pointer, with or without the Metadata) and returns its reply, by value
// or by pointer, with an error:
//
//	func(context.Context, T) (R, error)
//	func(context.Context, *T) (R, error)
//	func(context.Context, T, Metadata) (R, error)
//	func(context.Context, *T, Metadata) (R, error)
//	func(context.Context, T) (*R, error)
//	func(context.Context, *T) (*R, error)
//	func(context.Context, T, Metadata) (*R, error)
//	func(context.Context, *T, Metadata) (*R, error)
//
// A nil error acknowledges the request once its reply is sent (a nil *R
// replies R's zero value); an error
// is mapped by OutcomeOf, as any handler's (RetryAfter, DeadLetter and
// Drop work), and the caller gets an error reply once no attempt is left
// (see HandleReply).
type ReplyFunc[T, R any] interface {
	func(context.Context, T) (R, error) |
		func(context.Context, *T) (R, error) |
		func(context.Context, T, Metadata) (R, error) |
		func(context.Context, *T, Metadata) (R, error) |
		func(context.Context, T) (*R, error) |
		func(context.Context, *T) (*R, error) |
		func(context.Context, T, Metadata) (*R, error) |
		func(context.Context, *T, Metadata) (*R, error)
}

// HandleReply makes the Handler of requests of type messageType, decoded
// into a T as HandleJSON decodes (with decodeJSON first; a protocol buffer
// message in protobuf too) and passed to fn,
// a handler of any ReplyFunc shape, whose replies are messages of type
// replyType. Generated code calls it for a handler that returns a value
// and an error.
//
// The Consumer sends the reply to the request's reply_to (RabbitMQ: the
// caller's direct reply-to), with the request's correlation id (its
// message id when it has none), and then acknowledges the request. The
// reply is written in the codec the request was read with (the caller's,
// which Request reads back; see Handler.Codecs), with its content type;
// when that codec cannot encode it (Protobuf, and a reply that is not a
// protocol buffer message), in the handler's own codec, else the App's;
// when none can, the caller gets an error reply that says why. A request whose handler fails is retried as
// the policy says, without a reply; once it is parked, dropped or
// rejected, the caller gets one error reply that carries the reason: an
// empty body and the header HeaderReplyError, and HeaderReplyDeadLetter
// naming the dead-letter queue when the request was parked there. A
// request without a reply_to is handled all the same; the Consumer logs
// that no reply could be sent. Request/reply needs RabbitMQ: Validate
// refuses such a handler on ZeroMQ.
func HandleReply[T, R any, F ReplyFunc[T, R]](messageType, replyType string, policy Policy, decodeJSON func(body []byte, v *T) bool, fn F) Handler {
	return Handler{
		Codec:       codecOf[T](),
		MessageType: messageType,
		Policy:      policy,
		decode:      decoderOf(decodeJSON),
		fn:          replyCall[T]{replyType: replyType, fn: replyCallOf[T, R](fn)},
	}
}

// replyCall is the function of a handler that replies: its call returns
// an Ack carrying the reply (Outcome.Reply), or the outcome of its error.
type replyCall[T any] struct {
	replyType string
	fn        func(ctx context.Context, msg *T, md Metadata) Outcome
}

func (r replyCall[T]) call(ctx context.Context, v any, md Metadata) Outcome {
	return r.fn(ctx, v.(*T), md)
}

func (r replyCall[T]) replies() string { return r.replyType }

// replier is the handlerFunc of a handler that replies.
type replier interface {
	// replies returns the message type of its replies.
	replies() string
}

// Replies reports whether h answers requests (it was made by
// HandleReply), and the message type of its replies, for the broker
// adapters' Consumer.
func (h *Handler) Replies() (replyType string, ok bool) {
	r, ok := h.fn.(replier)
	if !ok {
		return "", false
	}
	return r.replies(), true
}

// replied is the Ack of a handler that returned reply.
func replied(reply any) Outcome { return Outcome{action: ActionAck, reply: reply} }

// replyCallOf turns a handler of any ReplyFunc shape into the one shape a
// replyCall calls. It panics on a nil function.
func replyCallOf[T, R any, F ReplyFunc[T, R]](fn F) func(ctx context.Context, msg *T, md Metadata) Outcome {
	var call func(ctx context.Context, msg *T, md Metadata) Outcome
	switch f := any(fn).(type) {
	case func(context.Context, T) (R, error):
		if f != nil {
			call = func(ctx context.Context, msg *T, _ Metadata) Outcome { return valueReply(f(ctx, *msg)) }
		}
	case func(context.Context, *T) (R, error):
		if f != nil {
			call = func(ctx context.Context, msg *T, _ Metadata) Outcome { return valueReply(f(ctx, msg)) }
		}
	case func(context.Context, T, Metadata) (R, error):
		if f != nil {
			call = func(ctx context.Context, msg *T, md Metadata) Outcome { return valueReply(f(ctx, *msg, md)) }
		}
	case func(context.Context, *T, Metadata) (R, error):
		if f != nil {
			call = func(ctx context.Context, msg *T, md Metadata) Outcome { return valueReply(f(ctx, msg, md)) }
		}
	case func(context.Context, T) (*R, error):
		if f != nil {
			call = func(ctx context.Context, msg *T, _ Metadata) Outcome { return pointerReply(f(ctx, *msg)) }
		}
	case func(context.Context, *T) (*R, error):
		if f != nil {
			call = func(ctx context.Context, msg *T, _ Metadata) Outcome { return pointerReply(f(ctx, msg)) }
		}
	case func(context.Context, T, Metadata) (*R, error):
		if f != nil {
			call = func(ctx context.Context, msg *T, md Metadata) Outcome { return pointerReply(f(ctx, *msg, md)) }
		}
	case func(context.Context, *T, Metadata) (*R, error):
		if f != nil {
			call = func(ctx context.Context, msg *T, md Metadata) Outcome { return pointerReply(f(ctx, msg, md)) }
		}
	}
	if call == nil {
		panic("runtime: a Handler of a nil handler function")
	}
	return call
}

// valueReply is the outcome of a handler that returned r and err.
func valueReply[R any](r R, err error) Outcome {
	if err != nil {
		return OutcomeOf(err)
	}
	return replied(&r)
}

// pointerReply is the outcome of a handler that returned r and err. A nil
// r with a nil error replies R's zero value.
func pointerReply[R any](r *R, err error) Outcome {
	if err != nil {
		return OutcomeOf(err)
	}
	if r == nil {
		r = new(R)
	}
	return replied(r)
}

// validateReplies refuses the handlers that reply on a ZeroMQ
// subscription: request/reply rides on RabbitMQ's reply_to and direct
// reply-to, which ZeroMQ has no counterpart of.
func (s *Subscription) validateReplies(add func(int, string, string, ...any)) {
	for i := range s.Handlers {
		if rt, ok := s.Handlers[i].Replies(); ok {
			add(i, "broker", "the handler for %q returns a reply%s, and request/reply needs RabbitMQ (its reply_to and direct reply-to; ZeroMQ has no way back to the caller): mount the subscription on rabbitmq (broker=rabbitmq), or return only an error and publish the answer as a message of its own", s.Handlers[i].MessageType, replyName(rt))
		}
	}
}

// replyName writes " of type X" for a reply's message type X, or nothing.
func replyName(replyType string) string {
	if replyType == "" {
		return ""
	}
	return fmt.Sprintf(" of type %s", replyType)
}
