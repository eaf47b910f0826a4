package rabbitmq

import (
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/runtime/deadletter"
)

// letterOf makes a deadletter.Letter of a message delivered from a
// dead-letter queue: its AMQP table values become the letter's neutral
// ones. A letter the runtime parked explains itself (deadletter.NewLetter);
// one the broker dead-lettered itself is explained from its x-death
// record (brokerExplanation).
func letterOf(d amqp.Delivery) *deadletter.Letter {
	l := deadletter.NewLetter(d.Body, neutralTable(d.Headers), deadletter.Properties{
		ContentType: d.ContentType, ContentEncoding: d.ContentEncoding, DeliveryMode: d.DeliveryMode,
		Priority: d.Priority, CorrelationID: d.CorrelationId, ReplyTo: d.ReplyTo, Expiration: d.Expiration,
		MessageID: d.MessageId, Timestamp: d.Timestamp, Type: d.Type, UserID: d.UserId, AppID: d.AppId,
	})
	if !l.Explained {
		if h, ok := brokerExplanation(d.Headers); ok {
			l.Explain(h, true)
		}
	}
	return l
}

// letterPublishing is the AMQP message of l, headers and properties as they
// are: a replay publishes letterPublishing(deadletter.Replayed(l)), an import
// letterPublishing(l).
func letterPublishing(l *deadletter.Letter) amqp.Publishing {
	p := l.Properties
	return amqp.Publishing{
		Headers: amqpTable(l.Headers), ContentType: p.ContentType, ContentEncoding: p.ContentEncoding,
		DeliveryMode: p.DeliveryMode, Priority: p.Priority, CorrelationId: p.CorrelationID,
		ReplyTo: p.ReplyTo, Expiration: p.Expiration, MessageId: p.MessageID, Timestamp: p.Timestamp,
		Type: p.Type, UserId: p.UserID, AppId: p.AppID, Body: l.Body,
	}
}

// neutralTable returns t with its AMQP values as a letter holds them:
// nested tables as map[string]any, decimals as deadletter.Decimal. It
// returns t itself (as a map) when nothing needs to change.
func neutralTable(t amqp.Table) map[string]any {
	for _, v := range t {
		if needsConversion(v) {
			out := make(map[string]any, len(t))
			for k, v := range t {
				out[k] = neutralValue(v)
			}
			return out
		}
	}
	return map[string]any(t)
}

func needsConversion(v any) bool {
	switch v.(type) {
	case amqp.Table, amqp.Decimal, []any:
		return true
	}
	return false
}

func neutralValue(v any) any {
	switch x := v.(type) {
	case amqp.Table:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = neutralValue(e)
		}
		return out
	case amqp.Decimal:
		return deadletter.Decimal{Scale: x.Scale, Value: x.Value}
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = neutralValue(e)
		}
		return out
	}
	return v
}

// amqpTable is the inverse of neutralTable.
func amqpTable(h map[string]any) amqp.Table {
	if len(h) == 0 {
		return nil
	}
	out := make(amqp.Table, len(h))
	for k, v := range h {
		out[k] = amqpValue(v)
	}
	return out
}

func amqpValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(amqp.Table, len(x))
		for k, e := range x {
			out[k] = amqpValue(e)
		}
		return out
	case deadletter.Decimal:
		return amqp.Decimal{Scale: x.Scale, Value: x.Value}
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = amqpValue(e)
		}
		return out
	}
	return v
}
