package rabbitmq

import (
	"strconv"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/runtime"
)

// toDelivery is what the runtime's Consumer sees of d.
func toDelivery(d *amqp.Delivery, attempt int) *runtime.Delivery {
	return &runtime.Delivery{
		MessageID:   d.MessageId,
		Type:        d.Type,
		ContentType: d.ContentType,
		Headers:     textHeaders(d.Headers),
		Body:        d.Body,
		Attempt:     attempt,
		Redelivered: d.Redelivered,
		Raw:         d,
	}
}

// brokerBookkeeping reports whether header is one the broker writes about a
// message's past in a queue. Copies leave these behind: RabbitMQ 4 ignores
// a republished x-death, and on 3.x a republished one can trip the
// dead-letter cycle check and drop the copy.
func brokerBookkeeping(header string) bool {
	return header == "x-death" ||
		strings.HasPrefix(header, "x-first-death-") ||
		strings.HasPrefix(header, "x-last-death-") ||
		header == "x-delivery-count" // quorum queues' own redelivery count
}

// copyOf returns a copy of d to publish again: the same body and
// properties, persistent, without the broker's bookkeeping headers nor the
// original expiration. Its headers have room for extra more. A message
// without a message id gets one, so a basic.return can be matched to it.
// The user-id property is kept only when it is user's, the user the copy is
// published as: RabbitMQ refuses a user-id that is not the connection's.
func copyOf(d *amqp.Delivery, user string, extra int) amqp.Publishing {
	headers := make(amqp.Table, len(d.Headers)+extra)
	for k, v := range d.Headers {
		if !brokerBookkeeping(k) {
			headers[k] = v
		}
	}
	p := amqp.Publishing{
		Headers:         headers,
		ContentType:     d.ContentType,
		ContentEncoding: d.ContentEncoding,
		DeliveryMode:    amqp.Persistent,
		Priority:        d.Priority,
		CorrelationId:   d.CorrelationId,
		ReplyTo:         d.ReplyTo,
		MessageId:       d.MessageId,
		Timestamp:       d.Timestamp,
		Type:            d.Type,
		AppId:           d.AppId,
		Body:            d.Body,
	}
	if d.UserId == user {
		p.UserId = d.UserId
	}
	if p.MessageId == "" {
		p.MessageId = runtime.NewMessageID()
	}
	return p
}

// retryCopy is the copy of d that waits out a retry: it carries attempt as
// the retry count, for d was the attempt-th delivery.
func retryCopy(d *amqp.Delivery, user string, attempt int) amqp.Publishing {
	p := copyOf(d, user, 1)
	p.Headers[runtime.RetryCountHeader] = strconv.Itoa(attempt)
	return p
}

// deadLetterCopy is the copy of d parked on a dead-letter queue, with the
// headers that explain why. It carries no retry count: consumers of the
// dead-letter queue count their own attempts afresh (the attempts made
// before are in runtime.HeaderDeadLetterAttempts).
func deadLetterCopy(d *amqp.Delivery, user, subscription string, v runtime.Verdict, now time.Time) amqp.Publishing {
	explain := runtime.DeadLetterHeaders(subscription, v, now)
	p := copyOf(d, user, len(explain))
	for k, v := range explain {
		p.Headers[k] = v
	}
	delete(p.Headers, runtime.RetryCountHeader)
	return p
}

// publishingOf turns an outgoing runtime message into an AMQP publishing:
// persistent, with its type, content type, message id and headers.
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
		id = runtime.NewMessageID()
	}
	return amqp.Publishing{
		Headers:      headers,
		ContentType:  m.ContentType,
		DeliveryMode: amqp.Persistent,
		MessageId:    id,
		Timestamp:    now,
		Type:         m.Type,
		Body:         m.Body,
	}
}

// headerText renders a header value as text for runtime.Delivery.Headers.
// Tables and arrays (x-death) have no text form; they stay in the raw
// delivery.
func headerText(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case []byte:
		return string(x), true
	case bool:
		return strconv.FormatBool(x), true
	case int8:
		return strconv.FormatInt(int64(x), 10), true
	case int16:
		return strconv.FormatInt(int64(x), 10), true
	case int32:
		return strconv.FormatInt(int64(x), 10), true
	case int64:
		return strconv.FormatInt(x, 10), true
	case int:
		return strconv.Itoa(x), true
	case uint8:
		return strconv.FormatUint(uint64(x), 10), true
	case uint16:
		return strconv.FormatUint(uint64(x), 10), true
	case uint32:
		return strconv.FormatUint(uint64(x), 10), true
	case float32:
		return strconv.FormatFloat(float64(x), 'g', -1, 32), true
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), true
	case time.Time:
		return x.UTC().Format(time.RFC3339), true
	}
	return "", false
}

// textHeaders returns the headers that have a text form.
func textHeaders(t amqp.Table) map[string]string {
	out := make(map[string]string, len(t))
	for k, v := range t {
		if s, ok := headerText(v); ok {
			out[k] = s
		}
	}
	return out
}
