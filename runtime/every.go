package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// EveryMessageType is the MessageType of a handler of every message type
// (HandleEvery): it stands for the types no other handler of its
// subscription takes, and for a message that names no type.
const EveryMessageType = "*"

// Delivery is a message as it was delivered, its body not decoded: what
// a handler of every message type takes (HandleEvery), such as an audit
// that records each message of its queue whatever its type:
//
//	//stream:subscriber "audit.orders" broker=rabbitmq exchange=orders binding=order.#
//	func Audit(ctx context.Context, m runtime.Delivery) error {
//		slog.InfoContext(ctx, "audited", "type", m.MessageType, "id", m.MessageID, "bytes", len(m.Body))
//		return nil
//	}
type Delivery struct {
	// Body is the body as it arrived. It belongs to the delivery: copy it
	// to keep it after the handler returned.
	Body []byte
	// ContentType is the content type the sender declared, "" when it
	// declared none.
	ContentType string
	// Metadata is the message's and this delivery's: its type on the wire
	// (MessageType, "" when it has none), its id, headers and properties,
	// the attempt and the cap of the handler's policy.
	Metadata

	// app is the App's codec, which Decode reads besides this package's;
	// nil for JSON.
	app Codec
}

// NewDelivery returns the Delivery of a message with body, of content
// type contentType, as the handler of every message type is called with
// it: md is its Metadata, app the App's codec (Env.Codec), which Decode
// reads besides this package's. The broker adapters' Consumer (package
// runtime/adapter) calls it.
func NewDelivery(body []byte, contentType string, md Metadata, app Codec) *Delivery {
	return &Delivery{Body: body, ContentType: contentType, Metadata: md, app: app}
}

// Decode decodes the body into v, as a handler of its type would: with
// the codec its content type names, the App's (WithCodec) or one of this
// package's (JSON, Protobuf, MsgPack, CBOR); without a content type, with
// the App's, JSON by default. It fails when no codec reads the content
// type, or the body does not decode.
func (d *Delivery) Decode(v any) error {
	rs := readersAfter(d.app)
	c := rs.of(d.ContentType)
	if c == nil {
		return fmt.Errorf("runtime: decode: content type %q is none of %s", d.ContentType, ContentTypes(rs.list()))
	}
	return c.Decode(d.Body, v)
}

// CodecFor returns the codec among codecs that reads bodies of
// contentType: the first, when contentType is ""; else the first that
// reads it (its own ContentType, parameters and case aside, or one its
// Reads method accepts); nil when none does.
func CodecFor(codecs []Codec, contentType string) Codec {
	if len(codecs) == 0 {
		return nil
	}
	if contentType == "" {
		return codecs[0]
	}
	for _, c := range codecs {
		if contentType == c.ContentType() {
			return c // the usual case, without parsing
		}
	}
	for _, c := range codecs {
		if sameContentType(contentType, c.ContentType()) {
			return c
		}
		if r, ok := c.(interface{ Reads(contentType string) bool }); ok && r.Reads(contentType) {
			return c
		}
	}
	return nil
}

// ContentTypes writes the content types of codecs for a person:
// "application/json", "application/protobuf or application/json".
func ContentTypes(codecs []Codec) string {
	names := make([]string, len(codecs))
	for i, c := range codecs {
		names[i] = c.ContentType()
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// everyCall is the function of a handler of every message type: it takes
// the *Delivery the Consumer makes of each message (NewDelivery) and calls
// the handler's own function (a singleCall, or a txCall for one that
// takes a *sql.Tx).
type everyCall struct{ inner handlerFunc }

func (f everyCall) call(ctx context.Context, v any, md Metadata) Outcome {
	m, ok := v.(*Delivery)
	if !ok {
		return Retry().Because(fmt.Errorf("runtime: the handler of every message type was given a %T, not a *runtime.Delivery", v))
	}
	return f.inner.call(ctx, m, md)
}

// everyTxCall is an everyCall whose handler takes a *sql.Tx: the App
// binds its Transactor as for any other such handler.
type everyTxCall struct{ everyCall }

func (f everyTxCall) bind(tr Transactor) handlerFunc {
	return everyTxCall{everyCall{f.inner.(transactional).bind(tr)}}
}

// everyOf is the function of a handler of every message type around
// inner.
func everyOf(inner handlerFunc) handlerFunc {
	if _, ok := inner.(transactional); ok {
		return everyTxCall{everyCall{inner}}
	}
	return everyCall{inner}
}

// errEveryDecodes is what Decode returns for a handler of every message
// type, which takes the body as it is (NewDelivery).
var errEveryDecodes = errors.New("runtime: the handler of every message type takes the body undecoded: make its *Delivery with NewDelivery")

// HandleEvery makes the Handler of every message type of its
// subscription: each message no other handler of the subscription takes,
// of whatever type or none, is passed to fn as a Delivery, its body not
// decoded, with the retries and dead letters of policy as for any other
// handler. fn is any HandlerFunc shape of Delivery, such as
// func(context.Context, runtime.Delivery) error. Generated code calls it
// for a handler that takes a runtime.Delivery. Its MessageType is
// EveryMessageType; a subscription has at most one.
func HandleEvery[F HandlerFunc[Delivery]](policy Policy, fn F) Handler {
	return Handler{
		MessageType: EveryMessageType,
		Policy:      policy,
		decode:      func(Codec, []byte) (any, error) { return nil, errEveryDecodes },
		fn:          everyOf(handlerFuncOf[Delivery](EveryMessageType, fn)),
	}
}

// Every reports whether h is the handler of every message type
// (HandleEvery): the Consumer hands it each message no other handler
// takes as a *Delivery (NewDelivery), and reads no body for it.
func (h *Handler) Every() bool {
	switch h.fn.(type) {
	case everyCall, everyTxCall:
		return true
	}
	return false
}

// validateEvery checks that a handler of EveryMessageType was made by
// HandleEvery.
func (s *Subscription) validateEvery(add func(int, string, string, ...any)) {
	// Two of them are two handlers of EveryMessageType, which Validate
	// reports as any type handled twice.
	for i := range s.Handlers {
		if h := &s.Handlers[i]; h.MessageType == EveryMessageType && !h.Every() {
			add(i, "type", "message type %q stands for every message type: make its handler with runtime.HandleEvery, which takes a runtime.Delivery, or give it another type", EveryMessageType)
		}
	}
}
