package runtime

import (
	"context"
	"fmt"
	"sync"

	"github.com/streamgen/streamgen/runtime/internal/messageid"
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

// WithRoutingKey publishes the message with routing key key instead of
// the one the publisher names: the queue of the default exchange, or the
// key given to Exchange.
func WithRoutingKey(key string) PublishOption { return func(m *Message) { m.RoutingKey = key } }

// AllowUnroutable lets a RabbitMQ publish succeed when no queue is bound
// for the message, which the broker then drops. Without it such a publish
// is an error wrapping the adapter's unroutable error, so nothing is lost
// unseen.
func AllowUnroutable() PublishOption { return func(m *Message) { m.AllowUnroutable = true } }

// WithProperties sets the message properties (see Properties): the
// correlation id, reply-to, priority, expiration, timestamp and app id,
// all at once, in place of any set before:
//
//	runtime.Publish(ctx, p, runtime.Queue("jobs"), "Job", job, runtime.WithProperties(runtime.Properties{
//		CorrelationID: req.ID, ReplyTo: "replies", Priority: 5,
//	}))
//
// On RabbitMQ a Priority orders delivery only on a queue declared with
// x-max-priority; elsewhere it is carried for the handler to read.
// ZeroMQ has no expiration: publishing a message with an Expiration
// there is an error.
func WithProperties(p Properties) PublishOption { return func(m *Message) { m.Properties = p } }

// Destination is where Publish sends a message: a RabbitMQ exchange and
// a routing key, or a queue by name (Exchange "").
type Destination struct {
	// Exchange is the exchange; "" is the default exchange, where Key is
	// a queue name.
	Exchange string
	// Key is the routing key.
	Key string
}

// Exchange is the destination of messages published to the RabbitMQ
// exchange name with routingKey, which the exchange matches against its
// bindings.
func Exchange(name, routingKey string) Destination {
	return Destination{Exchange: name, Key: routingKey}
}

// Queue is the destination of messages published to the queue (RabbitMQ)
// or subscription (ZeroMQ) of that name.
func Queue(name string) Destination { return Destination{Key: name} }

func (d Destination) String() string {
	if d.Exchange == "" {
		return fmt.Sprintf("%q", d.Key)
	}
	return fmt.Sprintf("exchange %q with routing key %q", d.Exchange, d.Key)
}

// codecProvider is a Publisher that encodes with a codec of its own (see
// Broker); Publish uses it instead of JSON.
type codecProvider interface {
	Codec() Codec
}

// Publish encodes v and sends it to to, a Queue or an Exchange with a
// routing key, as a message of type messageType with a fresh message id.
// The codec is the publisher's own when it has one (its Codec method),
// else JSON. Generated typed publishers call it.
func Publish(ctx context.Context, p Publisher, to Destination, messageType string, v any, opts ...PublishOption) error {
	return PublishWith(ctx, p, nil, to, messageType, v, opts...)
}

// PublishWith is Publish encoding v with codec, and writing its content
// type, whatever codec the publisher has; a nil codec is the publisher's,
// as Publish encodes. Generated typed publishers call it for a message
// type whose annotation names a codec (codec=msgpack), or that is a
// protocol buffer message (Protobuf).
func PublishWith(ctx context.Context, p Publisher, codec Codec, to Destination, messageType string, v any, opts ...PublishOption) error {
	m, err := newMessage(p, codec, messageType, v, opts)
	if err != nil {
		return fmt.Errorf("runtime: publish %s to %s: %w", messageType, to, err)
	}
	m.Exchange = to.Exchange
	return p.Publish(ctx, to.Key, m)
}

// newMessage encodes v with codec, or when it is nil with p's codec, into
// a message of type messageType with a fresh id, then applies opts.
func newMessage(p Publisher, codec Codec, messageType string, v any, opts []PublishOption) (Message, error) {
	if codec == nil {
		codec = JSON{}
		if cp, ok := p.(codecProvider); ok && cp.Codec() != nil {
			codec = cp.Codec()
		}
	}
	body, err := codec.Encode(v)
	if err != nil {
		return Message{}, err
	}
	m := Message{ID: messageid.New(), Type: messageType, ContentType: codec.ContentType(), Body: body}
	if len(opts) > 0 {
		m = withOptions(m, opts)
	}
	return m, nil
}

// withOptions returns m with opts applied. An option takes a pointer to
// the message, which moves it to the heap: apart from newMessage, that
// happens only to a message published with options.
func withOptions(m Message, opts []PublishOption) Message {
	for _, o := range opts {
		o(&m)
	}
	return m
}

// asyncPublisher is a Publisher with a PublishAsync method (see
// Publisher).
type asyncPublisher interface {
	Publisher
	PublishAsync(ctx context.Context, queue string, msg Message, done func(error))
}

// Confirmation is the outcome of a message PublishAsync sent: nil once the
// broker confirmed it, else why it did not land (the rabbitmq package's
// errors say which: unroutable, refused by the broker, no confirm in
// time, channel closed).
type Confirmation struct {
	mu      sync.Mutex
	settled bool
	err     error
	// done is made by the first Done or Wait that comes before the
	// outcome, and closed with it: an outcome nobody had to wait for
	// costs no channel.
	done chan struct{}
}

// Done is closed once the outcome is known.
func (c *Confirmation) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		if c.settled {
			close(c.done)
		}
	}
	return c.done
}

// Err returns the outcome once Done is closed, and nil before.
func (c *Confirmation) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Wait waits for the outcome and returns it, or ctx's error when ctx ends
// first (the message may still land).
func (c *Confirmation) Wait(ctx context.Context) error {
	c.mu.Lock()
	if c.settled {
		c.mu.Unlock()
		return c.err
	}
	if c.done == nil {
		c.done = make(chan struct{})
	}
	done := c.done
	c.mu.Unlock()
	select {
	case <-done:
		return c.Err()
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *Confirmation) settle(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.err, c.settled = err, true
	if c.done != nil {
		close(c.done)
	}
}

// PublishAsync encodes v and sends it as Publish does, but returns once it
// is sent, with the Confirmation to wait on, so that one goroutine can
// keep many messages awaiting the broker's confirmation:
//
//	confs := make([]*runtime.Confirmation, len(orders))
//	for i := range orders {
//		confs[i] = runtime.PublishAsync(ctx, p, runtime.Queue("orders"), "Order", &orders[i])
//	}
//	for i, c := range confs {
//		if err := c.Wait(ctx); err != nil { ... orders[i] did not land ... }
//	}
//
// The publisher bounds how many await their confirmation (rabbitmq:
// WithPublishWindow): PublishAsync waits while that many do. A publisher
// without a PublishAsync method (see Publisher) publishes synchronously, and the Confirmation
// it returns is done already. Generated typed publishers call it.
func PublishAsync(ctx context.Context, p Publisher, to Destination, messageType string, v any, opts ...PublishOption) *Confirmation {
	return PublishAsyncWith(ctx, p, nil, to, messageType, v, opts...)
}

// PublishAsyncWith is PublishAsync encoding v with codec, as PublishWith
// does.
func PublishAsyncWith(ctx context.Context, p Publisher, codec Codec, to Destination, messageType string, v any, opts ...PublishOption) *Confirmation {
	c := &Confirmation{}
	m, err := newMessage(p, codec, messageType, v, opts)
	if err != nil {
		c.settle(fmt.Errorf("runtime: publish %s to %s: %w", messageType, to, err))
		return c
	}
	m.Exchange = to.Exchange
	if ap, ok := p.(asyncPublisher); ok {
		ap.PublishAsync(ctx, to.Key, m, c.settle)
	} else {
		c.settle(p.Publish(ctx, to.Key, m))
	}
	return c
}

// GeneratedCodeV2 is referenced by every generated file. When the contract
// between generated code and this package changes, the name changes too, so
// a stale file fails to compile with "undefined: runtime.GeneratedCodeV2":
// run go generate again.
const GeneratedCodeV2 = true
