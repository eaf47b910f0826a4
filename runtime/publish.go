package runtime

import (
	"context"
	"fmt"
	"maps"
)

// PublishOption adjusts a message before Publish sends it.
type PublishOption func(*Message)

// WithMessageID sets the message id instead of a fresh random one.
func WithMessageID(id string) PublishOption { return func(m *Message) { m.ID = id } }

// WithHeader sets an application header.
func WithHeader(name, value string) PublishOption {
	return func(m *Message) {
		if m.Headers == nil {
			m.Headers = map[string]string{}
		}
		m.Headers[name] = value
	}
}

// WithHeaders sets application headers.
func WithHeaders(h map[string]string) PublishOption {
	return func(m *Message) {
		if m.Headers == nil {
			m.Headers = make(map[string]string, len(h))
		}
		maps.Copy(m.Headers, h)
	}
}

// CodecProvider is implemented by publishers that encode with a codec of
// their own; Publish uses it instead of JSON.
type CodecProvider interface {
	Codec() Codec
}

// Publish encodes v and sends it to queue as a message of type messageType,
// with a fresh message id. Generated typed publishers call it. The codec is
// the publisher's own when it has one (CodecProvider), else JSON.
func Publish(ctx context.Context, p Publisher, queue, messageType string, v any, opts ...PublishOption) error {
	var codec Codec = JSON{}
	if cp, ok := p.(CodecProvider); ok && cp.Codec() != nil {
		codec = cp.Codec()
	}
	body, err := codec.Encode(v)
	if err != nil {
		return fmt.Errorf("runtime: publish %s to %q: %w", messageType, queue, err)
	}
	m := Message{ID: NewMessageID(), Type: messageType, ContentType: codec.ContentType(), Body: body}
	for _, o := range opts {
		o(&m)
	}
	return p.Publish(ctx, queue, m)
}

// GeneratedCodeV1 is referenced by every generated file. When the contract
// between generated code and this package changes, the name changes too, so
// a stale file fails to compile with "undefined: runtime.GeneratedCodeV1":
// run go generate again.
const GeneratedCodeV1 = true
