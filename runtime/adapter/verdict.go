package adapter

import (
	"fmt"
	"time"
)

// VerdictKind is what must happen to a delivery once processed.
type VerdictKind uint8

const (
	// VerdictAck: acknowledge; the message is done.
	VerdictAck VerdictKind = iota
	// VerdictRetry: send a copy with the retry count + 1 (RabbitMQ: to a
	// wait queue; ZeroMQ: to the out_retry destination after the delay),
	// then acknowledge; or, on a queue that retries by itself
	// (Verdict.ByBroker), hand the message back for the queue to deliver
	// again after its delay.
	VerdictRetry
	// VerdictPark: send a copy to the dead-letter queue Verdict.Queue, then
	// acknowledge.
	VerdictPark
	// VerdictReject: hand the message back to the broker without requeue
	// (RabbitMQ: nack, so a broker-level dead-letter exchange gets it;
	// ZeroMQ: dropped).
	VerdictReject
	// VerdictDrop: acknowledge and forget, with a warning.
	VerdictDrop
	// VerdictRelease: hand the message back to be delivered again, at
	// shutdown, before any handler took it (Consumer.Release).
	VerdictRelease
	// VerdictIsolate: the message came back after its worker died (or
	// shutdown began before it ran alone): send a copy with its count of
	// crashes to the subscription's suspect queue (Verdict.Queue), where
	// it is handled alone, then acknowledge. No handler runs now.
	VerdictIsolate
)

func (k VerdictKind) String() string {
	switch k {
	case VerdictAck:
		return "ack"
	case VerdictRetry:
		return "retry"
	case VerdictPark:
		return "park"
	case VerdictReject:
		return "reject"
	case VerdictDrop:
		return "drop"
	case VerdictRelease:
		return "release"
	case VerdictIsolate:
		return "isolate"
	}
	return fmt.Sprintf("VerdictKind(%d)", uint8(k))
}

// Verdict is the decision the Consumer took for one delivery, with what it
// applied to carry it out.
type Verdict struct {
	Kind VerdictKind
	// Delay is the delay applied to a retry: the wait queue's TTL on
	// RabbitMQ, the time the copy waits in memory on ZeroMQ.
	Delay time.Duration
	// Queue is where the copy went: the wait queue (RabbitMQ retry), the
	// out_retry destination (ZeroMQ retry), the dead-letter queue (park)
	// or the suspect queue (isolate).
	Queue string
	// ByBroker marks a retry the subscription's queue waits out itself
	// (Consumer.UseBrokerRetry): no copy was sent, Queue is "", and Delay
	// is the queue's.
	ByBroker bool
	// Reason says why the message was retried, parked, rejected or dropped:
	// the handler's error text or the poison cause.
	Reason string
	// Poison is set when the message never reached a handler.
	Poison bool
	// Attempt is the delivery number, MaxAttempts the cap in force.
	Attempt     int
	MaxAttempts int
	// MessageType is the handler's type, or the delivery's for poison.
	MessageType string
	// Duplicate marks an ack of a message its *sql.Tx handler's inbox had
	// recorded as handled on an earlier delivery: the handler was not
	// called (runtime.Outcome.Duplicate).
	Duplicate bool
}
