package rabbitmq

import (
	"fmt"
	"math"
	"strconv"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/adapter"
	"github.com/streamgen/streamgen/runtime/internal/headers"
	"github.com/streamgen/streamgen/runtime/internal/messageid"
)

// delivery is what the Consumer c sees of d: its text headers (the retry
// count header always, even when it has no text form, so that the Consumer
// judges it), and the retry cycles the broker recorded in x-death.
func delivery(d *amqp.Delivery, c *adapter.Consumer) *adapter.Delivery {
	out := &adapter.Delivery{}
	fillDelivery(out, d, c)
	return out
}

// fillDelivery fills out with what delivery returns for d.
func fillDelivery(out *adapter.Delivery, d *amqp.Delivery, c *adapter.Consumer) {
	headers := textHeaders(d.Headers)
	name := c.RetryCountHeader()
	if v, ok := d.Headers[name]; ok {
		if _, isText := headers[name]; !isText {
			headers[name] = fmt.Sprintf("%v (an AMQP %T)", v, v)
		}
	}
	*out = adapter.Delivery{
		MessageID:   d.MessageId,
		Type:        d.Type,
		ContentType: d.ContentType,
		Headers:     headers,
		Body:        d.Body,
		Redelivered: d.Redelivered,
		RetryCycles: retryCycles(d.Headers, c.IsWaitQueue),
		Returned:    returned(d),
		Raw:         d,
		Properties: runtime.Properties{
			CorrelationID: d.CorrelationId,
			ReplyTo:       d.ReplyTo,
			Priority:      d.Priority,
			Expiration:    expirationOf(d.Expiration),
			Timestamp:     d.Timestamp,
			AppID:         d.AppId,
		},
	}
	if c.BrokerRetry() > 0 {
		out.BrokerRetries = brokerRetries(d, out.Returned)
	}
}

// expirationOf reads the expiration property, a TTL in milliseconds as
// decimal text; anything else is no expiration. Most messages have none:
// that is no parse, whose error would cost an allocation per delivery.
func expirationOf(s string) time.Duration {
	if s == "" {
		return 0
	}
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil || ms <= 0 || ms > math.MaxInt64/int64(time.Millisecond) {
		return 0
	}
	return time.Duration(ms) * time.Millisecond
}

// expirationText writes a TTL as the expiration property: whole
// milliseconds, at least 1 (0 would discard the message at once unless a
// consumer is waiting); "" for none.
func expirationText(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return strconv.FormatInt(max(1, d.Milliseconds()), 10)
}

// copyOf is the copy cp of the delivery d to publish: the same body, the
// properties cp.Properties gives, persistent, and the headers cp keeps and
// sets. The user-id property is kept only when it is user's, the user the
// copy is published as: RabbitMQ refuses a user-id that is not the
// connection's.
func copyOf(d *adapter.Delivery, cp *adapter.Copy, user string) amqp.Publishing {
	in := raw(d)
	headers := make(amqp.Table, len(in.Headers)+len(cp.Set))
	for k, v := range in.Headers {
		if cp.Keep(k) {
			headers[k] = v
		}
	}
	for _, h := range cp.Set {
		headers[h.Name] = h.Value
	}
	props := cp.Properties(d.Properties)
	p := amqp.Publishing{
		Headers:         headers,
		ContentType:     in.ContentType,
		ContentEncoding: in.ContentEncoding,
		DeliveryMode:    amqp.Persistent,
		Priority:        props.Priority,
		CorrelationId:   props.CorrelationID,
		ReplyTo:         props.ReplyTo,
		Expiration:      expirationText(props.Expiration),
		MessageId:       cp.MessageID,
		Timestamp:       props.Timestamp,
		Type:            in.Type,
		AppId:           props.AppID,
		Body:            in.Body,
	}
	if in.UserId == user {
		p.UserId = in.UserId
	}
	return p
}

// publishingOf turns an outgoing runtime message into an AMQP publishing:
// persistent, with its type, content type, message id, headers and
// properties; its timestamp is now unless the message has its own.
func publishingOf(m runtime.Message, now time.Time) amqp.Publishing {
	var headers amqp.Table
	if len(m.Headers) > 0 {
		headers = make(amqp.Table, len(m.Headers))
		for k, v := range m.Headers {
			headers[k] = v
		}
	}
	id := m.ID
	if id == "" {
		id = messageid.New()
	}
	if !m.Timestamp.IsZero() {
		now = m.Timestamp
	}
	return amqp.Publishing{
		Headers:       headers,
		ContentType:   m.ContentType,
		DeliveryMode:  amqp.Persistent,
		MessageId:     id,
		Timestamp:     now,
		Type:          m.Type,
		Body:          m.Body,
		CorrelationId: m.CorrelationID,
		ReplyTo:       m.ReplyTo,
		Priority:      m.Priority,
		Expiration:    expirationText(m.Expiration),
		AppId:         m.AppID,
	}
}

// textHeaders returns the headers that have a text form.
func textHeaders(t amqp.Table) map[string]string {
	out := make(map[string]string, len(t))
	for k, v := range t {
		if s, ok := headers.Text(v); ok {
			out[k] = s
		}
	}
	return out
}
