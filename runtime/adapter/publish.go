package adapter

import (
	"fmt"
	"slices"
	"strings"

	"github.com/streamgen/streamgen/runtime"
)

// The header names ZeroMQ, which has no message properties, carries a
// message's own fields in: package runtime/zeromq frames them under these
// names (its Header constants are these), and an application header may
// not take one of them.
const (
	FieldHeaderType          = "type"
	FieldHeaderContentType   = "content-type"
	FieldHeaderMessageID     = "message-id"
	FieldHeaderCorrelationID = "correlation-id"
	FieldHeaderReplyTo       = "reply-to"
	FieldHeaderPriority      = "priority"
	FieldHeaderTimestamp     = "timestamp"
	FieldHeaderAppID         = "app-id"
)

var zeroMQFieldHeaders = [...]string{FieldHeaderType, FieldHeaderContentType, FieldHeaderMessageID, FieldHeaderCorrelationID,
	FieldHeaderReplyTo, FieldHeaderPriority, FieldHeaderTimestamp, FieldHeaderAppID}

// IsZeroMQFieldHeader reports whether name, in any case, is a header
// ZeroMQ carries a message's own fields in.
func IsZeroMQFieldHeader(name string) bool {
	return slices.Contains(zeroMQFieldHeaders[:], strings.ToLower(name))
}

// CheckMessage checks an outgoing message against what a broker of kind
// can carry, as each Publisher does before it sends: ZeroMQ has no
// exchanges, routing keys or expiration, and carries the message's own
// fields in headers that its Headers may not set. The error says what to
// change; it names neither the broker nor the queue, which the Publisher
// adds.
func CheckMessage(kind runtime.BrokerKind, msg runtime.Message) error {
	if kind != runtime.ZeroMQ {
		return nil
	}
	if msg.Exchange != "" || msg.RoutingKey != "" {
		return fmt.Errorf("exchanges and routing keys are for rabbitmq (exchange %q, routing key %q): publish to a subscription by name", msg.Exchange, msg.RoutingKey)
	}
	if msg.Expiration != 0 {
		return fmt.Errorf("expiration is for rabbitmq: ZeroMQ keeps no message waiting in a broker to expire it; publish without a runtime.Properties.Expiration")
	}
	for name := range msg.Headers {
		if IsZeroMQFieldHeader(name) {
			return fmt.Errorf("header %q is set from the message's own field; remove it from Headers", name)
		}
	}
	return nil
}
