package observe

import (
	"context"
	"strconv"
	"time"
)

// Observer watches what the runtime does with each delivery, and what the
// brokers do besides, for tracing and metrics beyond the counters of
// App.Stats. Give one to an App with runtime.WithObserver; the package
// runtime/otelstream implements it with OpenTelemetry, runtime/promstream
// with Prometheus. An App without an
// Observer calls none of this and pays nothing for it.
//
// The methods are called concurrently, on the delivery path: they must be
// safe for concurrent use, and quick.
type Observer interface {
	// StartDelivery is called for each delivery a subscription's
	// adapter.Consumer takes, once its attempt number is known and before
	// its body is decoded. It returns the context the rest of the delivery
	// runs in (the middleware and the handler get it, or one made from it)
	// and the DeliveryObservation that learns how the delivery ends. A nil
	// context keeps ctx; a nil DeliveryObservation follows nothing more of
	// the delivery.
	StartDelivery(ctx context.Context, d DeliveryStart) (context.Context, DeliveryObservation)
	// StartConsumer is called when a broker starts a subscription's
	// Consumer; the function it returns is called when the Consumer stops.
	StartConsumer(c ConsumerInfo) (stopped func())
	// BrokerEvent is called with what a broker reports through runtime.Env.Report.
	BrokerEvent(e Event)
}

// DeliveryStart is what an Observer learns of a delivery as it starts.
type DeliveryStart struct {
	// Broker is the broker kind: "rabbitmq", "zeromq", or the harness's.
	Broker       string
	Subscription string
	// MessageID and MessageType are as the message carries them; either
	// may be "".
	MessageID   string
	MessageType string
	// Attempt is the 1-based delivery number, before it is capped to the
	// handler's max_attempts.
	Attempt int
	// RetryCount is the retry count the message carries, 0 when none.
	RetryCount int
	// Headers are the message's text headers, as the handler will see
	// them. The Observer must not change them.
	Headers map[string]string
}

// DeliveryObservation follows one delivery from StartDelivery to its end.
type DeliveryObservation interface {
	// CopyHeaders is called as the Consumer builds a copy of the delivery:
	// a retry copy or a dead letter. Each header given to set travels on
	// the copy, in place of the original's header of that name, with the
	// name and value normalised as the broker carries headers.
	CopyHeaders(set func(name, value string))
	// End is called once, when the Consumer is done with the delivery:
	// once it is settled, or for a ZeroMQ retry copy that waits for its
	// delay in memory, once the copy is scheduled.
	End(s Settlement)
}

// Settlement is how a delivery ended.
type Settlement struct {
	// Verdict is what became of it: "ack", "retry", "park", "reject" or
	// "drop" (adapter.VerdictKind's names).
	Verdict string
	// MessageType is the handler's message type, or the delivery's for
	// poison.
	MessageType string
	// Attempt is the delivery number, MaxAttempts the cap in force.
	Attempt     int
	MaxAttempts int
	// Reason says why it was retried, parked, rejected or dropped.
	Reason string
	// Poison is set when the message never reached a handler.
	Poison bool
	// Queue is where its copy went, Delay how long a retry waits.
	Queue string
	Delay time.Duration
	// Duplicate marks an ack of a message whose *sql.Tx handler was not
	// called: its inbox had recorded the message as handled on an earlier
	// delivery (runtime.Transactor).
	Duplicate bool
	// Handled reports whether a handler was called; HandlerDuration is
	// how long the call took, its middleware included.
	Handled         bool
	HandlerDuration time.Duration
	// Err is nil when the verdict was carried out, else the error that
	// stopped it, saying what was done instead.
	Err error
}

// ConsumerInfo is a subscription's Consumer as an Observer sees it.
type ConsumerInfo struct {
	Broker       string
	Subscription string
	// MessageTypes are the types its handlers take, in the order of the
	// Subscription's handlers. The Observer must not change them.
	MessageTypes []string
	// WaitingCopies returns how many of its retry copies wait for their
	// delay in memory (ZeroMQ); 0 on a broker whose wait queues hold them.
	WaitingCopies func() int
}

// EventKind says what an Event reports.
type EventKind uint8

const (
	// Reconnected: the broker lost its connection and has made a new
	// one; consuming has resumed.
	Reconnected EventKind = iota + 1
	// Confirmed: the broker answered a publish (a message, a retry
	// copy, a dead letter) that waits for its confirmation; Duration is
	// how long it took, Err is set when it refused or never answered.
	Confirmed
)

func (k EventKind) String() string {
	switch k {
	case Reconnected:
		return "reconnected"
	case Confirmed:
		return "confirmed"
	}
	return "EventKind(" + strconv.Itoa(int(k)) + ")"
}

// Event is something a broker adapter reports besides deliveries.
type Event struct {
	Kind   EventKind
	Broker string
	// Duration is how long the reported operation took.
	Duration time.Duration
	// Err is set when the operation failed.
	Err error
}

// BatchObserver is what an Observer may also do: follow each handler call
// of a batch subscription. The Consumer calls StartBatch before the call,
// with the context of each delivery of the batch as StartDelivery
// returned it, and end once the call returns; the handler and its
// middleware run in the context StartBatch returns (nil: ctx). Each
// delivery is still started and ended on its own (StartDelivery).
type BatchObserver interface {
	StartBatch(ctx context.Context, b BatchStart) (context.Context, func())
}

// BatchStart is a batch handler call about to start.
type BatchStart struct {
	// Broker is the broker kind, as in DeliveryStart.
	Broker       string
	Subscription string
	MessageType  string
	// Deliveries are the contexts of the batch's deliveries, in order.
	Deliveries []context.Context
}

// Gauge is a value measured when it is read, such as the number of
// messages an outbox holds: a gauge of a task (runtime.Task) of the App.
type Gauge struct {
	// Name is the metric's name, streamgen_ and the task's words:
	// "streamgen_outbox_backlog". A task reports each name once.
	Name string
	// Help says what it measures, in a sentence.
	Help string
	// Value is its value now.
	Value float64
}

// The gauges of the outbox relay (package runtime/outbox), by name, for
// exporters that describe their metrics before they collect them.
const (
	// GaugeOutboxBacklog is the number of messages the outbox holds:
	// committed and not yet confirmed by the broker.
	GaugeOutboxBacklog = "streamgen_outbox_backlog"
	// GaugeOutboxOldestAge is how long, in seconds, the oldest of them
	// has waited; 0 when there is none.
	GaugeOutboxOldestAge = "streamgen_outbox_oldest_age_seconds"
)

// GaugeObserver is what an Observer may also do: export the gauges of
// the App's tasks (runtime.Task), such as the backlog of an outbox relay.
// The App calls WatchGauges when it starts a task that reports them, with
// the task's name and the function that reads them (quick, safe from any
// goroutine: call it at each export), and the function it returns when
// the task ends.
type GaugeObserver interface {
	WatchGauges(task string, read func() []Gauge) (stopped func())
}
