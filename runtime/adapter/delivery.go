package adapter

import (
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/observe"
)

// Delivery is one received message, as a broker adapter read it off the
// wire. The adapter fills in what the broker told it; the Consumer decides
// everything else.
type Delivery struct {
	// MessageID is the message id, or "" when the sender set none.
	MessageID string
	// Type is the message type name on the wire; it selects the handler.
	Type string
	// ContentType is the content type the sender declared, or "".
	ContentType string
	// Headers are the application headers that have a text form. The
	// retry count header must be among them whenever the message carries
	// one, readable or not, so that the Consumer can judge it.
	Headers map[string]string
	// Body is the payload.
	Body []byte
	// Redelivered reports a broker redelivery (RabbitMQ).
	Redelivered bool
	// Properties are the message properties the sender set, zero when it
	// set none; handlers see them in runtime.Metadata.
	runtime.Properties
	// RetryCycles is how many retry cycles the broker itself recorded for
	// the message (RabbitMQ: the x-death counts of the subscription's wait
	// queues, see Consumer.IsWaitQueue), 0 where the broker records none.
	RetryCycles int
	// BrokerRetries is how many times the subscription's queue took the
	// message back to retry it after its delay (Consumer.UseBrokerRetry;
	// RabbitMQ 4.3: x-acquired-count less x-delivery-count), 0 where the
	// queue does not retry by itself.
	BrokerRetries int
	// Returned is how many earlier deliveries of the message ended without
	// its being settled: its worker crashed or lost its connection, or
	// handed it back (RabbitMQ quorum queues: x-delivery-count). 0 where
	// the broker does not count them. On a quorum subscription's queue,
	// the Consumer takes a message it counts as one that came back after
	// its worker died (see Consumer.Handle).
	Returned int
	// Suspect reports that the adapter took the delivery from the
	// subscription's suspect queue (runtime.Subscription.SuspectQueue),
	// where the Consumer sends the messages that came back after their
	// worker died, so that each is handled alone.
	Suspect bool
	// Raw is the adapter's own delivery value (*amqp091.Delivery for
	// RabbitMQ). Handlers see it as runtime.Metadata.Raw, and the adapter
	// builds copies from it.
	Raw any
	// Source is the adapter's own state of the delivery, which handlers
	// never see: for example the message as it arrived, when Raw is a copy
	// the handler may change. The Consumer never reads it.
	Source any

	// attempt is the delivery number the Consumer computed.
	attempt int
	// batched is set when the leader of the delivery's batch carried it
	// out: its verdict and the error it was settled with.
	batched *batchResult
	// reply is what its handler replied (runtime.Outcome.Reply), for the
	// Consumer to send.
	reply any
	// obs follows the delivery for the App's Observer until it ends; nil
	// without an Observer (so that a Delivery stays as small), and once
	// told.
	obs *observation
}

// observation is what the Consumer keeps of a delivery for the App's
// Observer.
type observation struct {
	observe.DeliveryObservation
	// handled and took say whether and how long a handler ran.
	handled bool
	took    time.Duration
}

// Attempt returns the 1-based delivery number the Consumer computed for d,
// or 0 before d was handled and for a message that could not be read.
func (d *Delivery) Attempt() int { return d.attempt }
