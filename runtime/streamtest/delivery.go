package streamtest

import (
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/adapter"
	"github.com/streamgen/streamgen/runtime/internal/retrycount"
)

// Delivery is one message a subscription received, and what became of it.
// Broker.Deliveries returns them in the order they were settled.
type Delivery struct {
	// Subscription is the subscription that received the message.
	Subscription string
	// Queue is the queue the message came from: the subscription's, or
	// (RabbitMQ, classic queues) its suspect queue, where a message that
	// came back after a crash is set aside to run alone.
	Queue string
	// Redelivered reports a message handed back to the broker before
	// (RabbitMQ; see Broker.Redeliver).
	Redelivered bool
	// Attempt is the 1-based delivery number: 1 + the retry count header.
	Attempt int
	// MessageType, MessageID and ContentType are the message's, as sent.
	MessageType string
	MessageID   string
	ContentType string
	// Headers and Body are the message's as they arrived.
	Headers map[string]string
	Body    []byte
	// Verdict is what the runtime decided, with the delay and queue the
	// emulated broker applied (RabbitMQ: the wait queue and its TTL).
	Verdict Verdict
	// Err is the error the verdict could not be carried out with, or nil.
	Err error
	// Time is the fake clock's time when the message was settled.
	Time time.Time

	// countHeader is the retry count header the broker was configured
	// with (RetryCountHeader), or "" for the default.
	countHeader string
}

// RetryCount returns the retry count header the message arrived with (0
// when absent or not a number): the header the broker was configured with
// (RetryCountHeader), runtime.RetryCountHeader by default.
func (d Delivery) RetryCount() int {
	name := d.countHeader
	if name == "" {
		name = runtime.RetryCountHeader
	}
	n, err := retrycount.Parse(d.Headers[name])
	if err != nil {
		return 0
	}
	return n
}

// Verdict is what the runtime decided for a delivery, as Delivery.Verdict
// records it.
type Verdict = adapter.Verdict

// VerdictKind is what became of a delivery.
type VerdictKind = adapter.VerdictKind

// What became of a delivery (see Delivery.Verdict).
const (
	VerdictAck    = adapter.VerdictAck
	VerdictRetry  = adapter.VerdictRetry
	VerdictPark   = adapter.VerdictPark
	VerdictReject = adapter.VerdictReject
	VerdictDrop   = adapter.VerdictDrop
	// VerdictIsolate: a message that came back after a crash was set
	// aside on the subscription's suspect queue (RabbitMQ, classic
	// queues), to run alone.
	VerdictIsolate = adapter.VerdictIsolate
)
