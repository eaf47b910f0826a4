package deadletter

import (
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/internal/headers"
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
	// Headers are the message headers as the broker delivered them. A
	// value is a string, a bool, an integer or float type, a time.Time,
	// []byte, a Decimal, a nested map[string]any or an []any of these
	// (RabbitMQ's table values; a ZeroMQ header is always a string).
	Headers map[string]any
	// Properties are the message's properties.
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
	// delivery limit, an expiry, a full queue): it carries the broker's
	// record and no streamgen explanation.
	ByBroker bool
	// Explained is false for a message without any explanation: it was
	// published into the dead-letter queue by something else.
	Explained bool
}

// Decimal is an AMQP decimal header value: Value × 10^-Scale.
type Decimal struct {
	Scale uint8
	Value int32
}

// Properties are the properties of a message.
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

// NewLetter returns the letter of a parked message, explained from its
// streamgen dead-letter headers (runtime.HeaderDeadLetterReason and the
// constants after it) when it has them. A store whose broker can park a
// message itself explains such a letter with Explain. headers may be nil.
func NewLetter(body []byte, headers map[string]any, p Properties) *Letter {
	if headers == nil {
		headers = map[string]any{}
	}
	l := &Letter{Body: body, Headers: headers, Properties: p}
	if h, ok := streamgenExplanation(headers); ok {
		l.Explain(h, false)
	}
	return l
}

// streamgenExplanation returns the dead-letter headers the runtime wrote
// on a letter, as text; ok is false when it has no reason.
func streamgenExplanation(h map[string]any) (map[string]string, bool) {
	reason, ok := h[runtime.HeaderDeadLetterReason].(string)
	if !ok {
		return nil, false
	}
	out := map[string]string{runtime.HeaderDeadLetterReason: reason}
	for _, k := range []string{runtime.HeaderDeadLetterSource, runtime.HeaderDeadLetterAttempts, runtime.HeaderDeadLetterPoison, runtime.HeaderDeadLetterTime} {
		if s, ok := headers.Text(h[k]); ok {
			out[k] = s
		}
	}
	return out, true
}

// Explain sets l's explanation from dead-letter headers h, as the runtime
// writes them (runtime.HeaderDeadLetterReason and the constants after
// it); byBroker says the broker parked the letter itself, and h was read
// from its own record.
func (l *Letter) Explain(h map[string]string, byBroker bool) {
	l.Explained, l.ByBroker = true, byBroker
	l.Reason = h[runtime.HeaderDeadLetterReason]
	l.Source = h[runtime.HeaderDeadLetterSource]
	l.Attempts, _ = strconv.Atoi(h[runtime.HeaderDeadLetterAttempts])
	l.Poison, _ = strconv.ParseBool(h[runtime.HeaderDeadLetterPoison])
	l.ParkedAt = time.Time{}
	if t, err := time.Parse(time.RFC3339Nano, h[runtime.HeaderDeadLetterTime]); err == nil && !t.IsZero() {
		l.ParkedAt = t
	}
}

// Type is the message type of the letter (its type property).
func (l *Letter) Type() string { return l.Properties.Type }

// MessageID is the message id of the letter.
func (l *Letter) MessageID() string { return l.Properties.MessageID }

// Replays is how often the letter was replayed before (HeaderReplays).
func (l *Letter) Replays() int {
	s, _ := headers.Text(l.Headers[HeaderReplays])
	n, _ := strconv.Atoi(strings.TrimSpace(s))
	return n
}

// Replayed returns the message Replay sends for l, as a letter: a new
// delivery of the original. It keeps the body, the properties (type,
// message id, timestamp, correlation id...) and every user header, trace
// context included. It removes the headers that describe the failed
// deliveries (see runtime's copies: the attempt count, the x-streamgen-*
// explanation, the broker's x-death, x-first-death-*, x-last-death-*
// records and delivery counts), so a subscription handles it again as
// attempt 1, and sets HeaderReplays to one more than l carried. The
// result has no explanation. Every store frames it in its broker's way.
func Replayed(l *Letter) *Letter {
	h := make(map[string]any, len(l.Headers)+1)
	for k, v := range l.Headers {
		if !headers.FromPast(k) && !strings.EqualFold(k, HeaderReplays) {
			h[k] = v
		}
	}
	h[HeaderReplays] = strconv.Itoa(l.Replays() + 1)
	return &Letter{Body: l.Body, Headers: h, Properties: l.Properties}
}

// clone returns a copy of l whose header map is its own.
func (l *Letter) clone() *Letter {
	c := *l
	c.Headers = maps.Clone(l.Headers)
	return &c
}
