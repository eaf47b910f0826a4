package runtime

import (
	"context"
	"log/slog"

	"github.com/streamgen/streamgen/runtime/clock"
	"github.com/streamgen/streamgen/runtime/internal/counters"
	"github.com/streamgen/streamgen/runtime/observe"
)

// BrokerKind names the message broker a subscription is written for. Its
// retry and dead-letter semantics follow from it.
type BrokerKind string

// The brokers streamgen speaks to.
const (
	// AnyBroker marks a subscription that did not name a broker: it runs on
	// whichever broker it is mounted on.
	AnyBroker BrokerKind = ""
	RabbitMQ  BrokerKind = "rabbitmq"
	ZeroMQ    BrokerKind = "zeromq"
)

// Broker is a transport that subscriptions are mounted on. The packages
// runtime/rabbitmq, runtime/zeromq and runtime/streamtest implement it; an
// App drives it:
//
//   - Start connects, declares what the subscriptions need and starts
//     consuming. subs are the ones mounted on it, as the App checked them
//     (Subscription.Validate for the broker's Kind, each name once, in
//     one place: Run); Start runs each through an adapter.Consumer
//     (package runtime/adapter), which decides what becomes of every
//     delivery. A returned error is a startup error: the App stops the
//     brokers it already started and returns it.
//   - Shutdown stops consuming, lets in-flight handlers finish and settle
//     their deliveries, then closes. It returns when done or when ctx ends.
//
// A Broker serves one App run: Start is called at most once.
//
// The App asks a Broker for more when it has these methods (each a
// contract of its own, which a broker meets by having the method):
//
//   - Ready() (ready bool, reason string) says whether it consumes, and
//     when it does not, why, in a sentence for a person (runtime/rabbitmq
//     is not ready while it reconnects). Readiness asks it; a broker
//     without it is ready while the App runs.
//   - Warnings() []string reports, each in a sentence for a person, what
//     an operator should know while it stays ready (runtime/rabbitmq: the
//     copies a blocked publishing connection holds). Readiness asks it
//     while the App runs.
//   - Codec() Codec, on a Publisher, is the codec it encodes with;
//     Publish uses it instead of JSON.
type Broker interface {
	Kind() BrokerKind
	Start(ctx context.Context, env Env, subs []*Subscription) error
	Shutdown(ctx context.Context) error
}

// Publisher sends a message to a named queue (RabbitMQ) or subscription
// (ZeroMQ). Every Broker in this module is also a Publisher; generated typed
// publishers call it.
//
// A Publisher that keeps many messages awaiting the broker's confirmation
// at once, up to a window of its own (runtime/rabbitmq's Broker), has the
// method
//
//	PublishAsync(ctx context.Context, queue string, msg Message, done func(error))
//
// which sends msg to queue and returns without waiting for the
// confirmation. done gets, once, the outcome Publish would have returned:
// from another goroutine when the broker answers, or before PublishAsync
// returns when msg could not be sent. While the window is full, it first
// waits for a confirmation to free a place, or for ctx to end. done must
// not block. The function PublishAsync sends through it.
type Publisher interface {
	Publish(ctx context.Context, queue string, msg Message) error
}

// Message is an outgoing message, ready for a broker.
type Message struct {
	// ID is the message id. Generated publishers set a fresh one.
	ID string
	// Type is the message type name on the wire; it selects the handler.
	Type string
	// ContentType is the codec's content type, "application/json" by default.
	ContentType string
	// Headers are application headers, carried as they are.
	Headers map[string]string
	// Body is the encoded payload.
	Body []byte
	// Exchange (RabbitMQ) is the exchange the message is published
	// through; "" is the default exchange, which routes by queue name.
	// Publish sets it from the Destination.
	Exchange string
	// RoutingKey, when set, is the routing key instead of the queue name
	// the Publisher was given (WithRoutingKey sets it).
	RoutingKey string
	// AllowUnroutable (RabbitMQ) publishes the message without the
	// mandatory flag: when no queue is bound for it, the broker drops it
	// and the publish succeeds. By default such a message is an error.
	AllowUnroutable bool

	// Properties are the message properties: carried as AMQP properties
	// on RabbitMQ and as headers on ZeroMQ (see docs/handlers.md); handlers see
	// them in Metadata.
	Properties
}

// Env is what an App hands to each Broker it starts, for the Consumers the
// broker makes (adapter.NewConsumer) and for its own logging.
type Env struct {
	// App is the application name given to NewApp.
	App string
	// Logger is the App's logger; brokers log through it.
	Logger *slog.Logger
	// Codec encodes and decodes bodies.
	Codec Codec
	// Clock is the time source for every delay the runtime waits out itself.
	Clock clock.Clock
	// Metrics counts what happens to deliveries (App.Stats reads them);
	// nil gives each Consumer counters of its own.
	Metrics *counters.Set
	// Middleware wraps every handler call, outside each subscription's own
	// (WithMiddleware).
	Middleware []Middleware
	// Observer watches deliveries and what the broker reports (Report);
	// nil when the App has none (WithObserver).
	Observer observe.Observer

	fail func(error)
}

// Complete returns e with each field it leaves unset given its default,
// the App's own: a logger that discards everything, JSON, the system
// clock and counters of its own; no middleware and no Observer. This is
// the one place these defaults are set: NewApp starts from them, the Env
// an App hands its brokers is complete, and a broker or Consumer made
// without an App (a test) completes what it is given.
func (e Env) Complete() Env {
	if e.Logger == nil {
		e.Logger = slog.New(slog.DiscardHandler)
	}
	if e.Codec == nil {
		e.Codec = JSON{}
	}
	if e.Clock == nil {
		e.Clock = clock.System{}
	}
	if e.Metrics == nil {
		e.Metrics = counters.NewSet()
	}
	return e
}

// Fail reports an error a running broker cannot recover from. The App stops
// every broker and Run returns the error. It is safe to call more than once;
// only the first error is kept.
func (e Env) Fail(err error) {
	if e.fail != nil && err != nil {
		e.fail(err)
	}
}
