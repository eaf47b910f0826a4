package deadletter

import (
	"strconv"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/rabbitmq"
)

// HeaderReplays counts how often a letter was replayed. Replay sets it on
// the new delivery, one more than the letter carried, and a subscription
// that parks the message again keeps it, so that a message replayed again
// and again is visible.
const HeaderReplays = runtime.HeaderReplays

// Letter is one message found in a dead-letter store: the message as it
// was parked, and the explanation read from its headers.
type Letter struct {
	// Body is the message body, byte for byte.
	Body []byte
	// Headers are the message headers as the broker delivered them, with
	// AMQP table values (string, bool, the integer and float types,
	// time.Time, []byte, amqp.Decimal, nested tables and arrays).
	Headers map[string]any
	// Properties are the message's AMQP properties.
	Properties Properties

	// Reason says why the message was parked: the handler's error, or the
	// broker's words for a letter it dead-lettered itself.
	Reason string
	// Source is the subscription (the queue) the message was parked from.
	Source string
	// Attempts is how many times the message was handled, 0 when unknown.
	Attempts int
	// Poison is true for a message that could not be decoded.
	Poison bool
	// ParkedAt is when it was parked; zero when unknown.
	ParkedAt time.Time
	// ByBroker is true for a letter the broker dead-lettered itself (its
	// delivery limit, an expiry, a full queue): it carries an x-death
	// record and no streamgen explanation.
	ByBroker bool
	// Explained is false for a message without any explanation: it was
	// published into the dead-letter queue by something else.
	Explained bool
}

// Properties are the AMQP properties of a message.
type Properties struct {
	ContentType     string    `json:"content_type,omitempty"`
	ContentEncoding string    `json:"content_encoding,omitempty"`
	DeliveryMode    uint8     `json:"delivery_mode,omitempty"`
	Priority        uint8     `json:"priority,omitempty"`
	CorrelationID   string    `json:"correlation_id,omitempty"`
	ReplyTo         string    `json:"reply_to,omitempty"`
	Expiration      string    `json:"expiration,omitempty"`
	MessageID       string    `json:"message_id,omitempty"`
	Timestamp       time.Time `json:"timestamp,omitzero"`
	Type            string    `json:"type,omitempty"`
	UserID          string    `json:"user_id,omitempty"`
	AppID           string    `json:"app_id,omitempty"`
}

// Type is the message type of the letter (its AMQP type property).
func (l *Letter) Type() string { return l.Properties.Type }

// MessageID is the message id of the letter.
func (l *Letter) MessageID() string { return l.Properties.MessageID }

// Replays is how often the letter was replayed before (HeaderReplays).
func (l *Letter) Replays() int {
	n, _ := strconv.Atoi(strings.TrimSpace(headerString(l.Headers[HeaderReplays])))
	return n
}

// FromDelivery makes a Letter of a message delivered from a RabbitMQ
// dead-letter queue, explained with rabbitmq.DeadLetterHeaders, which also
// reads the x-death record of a letter the broker dead-lettered itself.
func FromDelivery(d amqp.Delivery) *Letter {
	l := &Letter{
		Body:    d.Body,
		Headers: map[string]any(d.Headers),
		Properties: Properties{
			ContentType: d.ContentType, ContentEncoding: d.ContentEncoding, DeliveryMode: d.DeliveryMode,
			Priority: d.Priority, CorrelationID: d.CorrelationId, ReplyTo: d.ReplyTo, Expiration: d.Expiration,
			MessageID: d.MessageId, Timestamp: d.Timestamp, Type: d.Type, UserID: d.UserId, AppID: d.AppId,
		},
	}
	if l.Headers == nil {
		l.Headers = map[string]any{}
	}
	l.explain()
	return l
}

// explain fills the explanation from the headers.
func (l *Letter) explain() {
	h, ok := rabbitmq.DeadLetterHeaders(amqp.Table(l.Headers))
	l.Explained = ok
	if !ok {
		return
	}
	_, ours := l.Headers[runtime.HeaderDeadLetterReason].(string)
	l.ByBroker = !ours
	l.Reason = h[runtime.HeaderDeadLetterReason]
	l.Source = h[runtime.HeaderDeadLetterSource]
	l.Attempts, _ = strconv.Atoi(h[runtime.HeaderDeadLetterAttempts])
	l.Poison, _ = strconv.ParseBool(h[runtime.HeaderDeadLetterPoison])
	if t, err := time.Parse(time.RFC3339Nano, h[runtime.HeaderDeadLetterTime]); err == nil && !t.IsZero() {
		l.ParkedAt = t
	}
}

// headerString is a header value as text, "" for one that has none.
func headerString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []byte:
		return string(x)
	case int8, int16, int32, int64, int, uint8, uint16, uint32, uint64:
		return strconvAny(x)
	}
	return ""
}

func strconvAny(v any) string {
	switch x := v.(type) {
	case int8:
		return strconv.FormatInt(int64(x), 10)
	case int16:
		return strconv.FormatInt(int64(x), 10)
	case int32:
		return strconv.FormatInt(int64(x), 10)
	case int64:
		return strconv.FormatInt(x, 10)
	case int:
		return strconv.Itoa(x)
	case uint8:
		return strconv.FormatUint(uint64(x), 10)
	case uint16:
		return strconv.FormatUint(uint64(x), 10)
	case uint32:
		return strconv.FormatUint(uint64(x), 10)
	case uint64:
		return strconv.FormatUint(x, 10)
	}
	return ""
}

// Replayed returns the message Replay publishes for l: a new delivery of
// the original. It keeps the body, the properties (type, message id,
// timestamp, correlation id...) and every user header, trace context
// included. It removes what belongs to the failed delivery: the attempt
// count (runtime.RetryCountHeader), every x-streamgen-* dead-letter
// header, the broker's x-death, x-first-death-* and x-last-death-*
// records and its delivery counts (x-delivery-count, x-acquired-count), so
// a subscription handles it again as attempt 1. It sets HeaderReplays to
// one more than l carried.
func Replayed(l *Letter) amqp.Publishing {
	headers := amqp.Table{}
	for k, v := range l.Headers {
		if resetOnReplay(k) {
			continue
		}
		headers[k] = v
	}
	headers[HeaderReplays] = strconv.Itoa(l.Replays() + 1)
	p := l.Properties
	return amqp.Publishing{
		Headers: headers, ContentType: p.ContentType, ContentEncoding: p.ContentEncoding,
		DeliveryMode: p.DeliveryMode, Priority: p.Priority, CorrelationId: p.CorrelationID,
		ReplyTo: p.ReplyTo, Expiration: p.Expiration, MessageId: p.MessageID, Timestamp: p.Timestamp,
		Type: p.Type, UserId: p.UserID, AppId: p.AppID, Body: l.Body,
	}
}

// restored returns l as it was parked, headers and all: what Import puts
// back into a dead-letter queue.
func restored(l *Letter) amqp.Publishing {
	p := Replayed(l)
	p.Headers = amqp.Table(l.Headers)
	return p
}

// resetOnReplay reports whether header k describes the failed delivery
// rather than the message, and so is dropped by Replayed.
func resetOnReplay(k string) bool {
	switch {
	case k == runtime.RetryCountHeader, k == "x-death", k == "x-delivery-count", k == "x-acquired-count":
		return true
	case strings.HasPrefix(k, "x-streamgen-"), strings.HasPrefix(k, "x-first-death-"), strings.HasPrefix(k, "x-last-death-"):
		return true
	}
	return false
}
