package demo

import (
	"errors"
	"fmt"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/runtime/rabbitmq"
)

// QueuedMessage is a message read from a queue.
type QueuedMessage struct {
	MessageID string
	Type      string
	// Headers are the message's headers, as text.
	Headers map[string]string
	Body    []byte
}

// maxPeek bounds how many messages Peek reads.
const maxPeek = 1000

// Peek returns the messages in queue (at most a thousand) without taking
// them: it reads them with basic.get and hands them all back to the broker,
// which keeps them in their order.
func Peek(url, queue string) ([]QueuedMessage, error) {
	conn, ch, err := open(url)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	var out []QueuedMessage
	var last uint64
	for len(out) < maxPeek {
		d, ok, err := ch.Get(queue, false)
		if err != nil {
			return nil, fmt.Errorf("demo: read %s: %w", queue, err)
		}
		if !ok {
			break
		}
		last = d.DeliveryTag
		out = append(out, QueuedMessage{MessageID: d.MessageId, Type: d.Type, Headers: textHeaders(d.Headers), Body: d.Body})
	}
	if last != 0 {
		if err := ch.Nack(last, true, true); err != nil {
			return nil, fmt.Errorf("demo: hand the messages of %s back: %w", queue, err)
		}
	}
	return out, nil
}

// Purge empties the queues that exist and skips the others. It returns how
// many messages it removed.
func Purge(url string, queues []string) (int, error) {
	conn, ch, err := open(url)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	total := 0
	for _, q := range queues {
		if _, err := ch.QueueDeclarePassive(q, true, false, false, false, nil); err != nil {
			var aerr *amqp.Error
			if !errors.As(err, &aerr) || aerr.Code != amqp.NotFound {
				return total, fmt.Errorf("demo: look for %s: %w", q, err)
			}
			// The broker closed the channel to say the queue is not there.
			if ch, err = conn.Channel(); err != nil {
				return total, fmt.Errorf("demo: open a channel: %w", err)
			}
			continue
		}
		n, err := ch.QueuePurge(q, false)
		if err != nil {
			return total, fmt.Errorf("demo: purge %s: %w", q, err)
		}
		total += n
	}
	return total, nil
}

// Delete deletes the queues, those that exist and those that do not.
func Delete(url string, queues []string) error {
	conn, ch, err := open(url)
	if err != nil {
		return err
	}
	defer conn.Close()
	for _, q := range queues {
		if _, err := ch.QueueDelete(q, false, false, false); err != nil {
			return fmt.Errorf("demo: delete %s: %w", q, err)
		}
	}
	return nil
}

// DeleteExchanges deletes the exchanges, whether or not queues are still
// bound to them; one that does not exist is no error.
func DeleteExchanges(url string, exchanges []string) error {
	conn, ch, err := open(url)
	if err != nil {
		return err
	}
	defer conn.Close()
	for _, x := range exchanges {
		if err := ch.ExchangeDelete(x, false, false); err != nil {
			return fmt.Errorf("demo: delete exchange %s: %w", x, err)
		}
	}
	return nil
}

// open connects to url and opens a channel.
func open(url string) (*amqp.Connection, *amqp.Channel, error) {
	props := amqp.NewConnectionProperties()
	props.SetClientConnectionName("streamgen demo")
	conn, err := amqp.DialConfig(url, amqp.Config{Dial: amqp.DefaultDial(10 * time.Second), Properties: props})
	if err != nil {
		return nil, nil, fmt.Errorf("demo: RabbitMQ at %s: %w", rabbitmq.RedactURL(url), err)
	}
	ch, err := conn.Channel()
	if err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("demo: open a channel: %w", err)
	}
	return conn, ch, nil
}

// textHeaders writes AMQP header values as text. It keeps what the
// rabbitmq adapter's own conversion, which it does not export, leaves out:
// a demo shows every header.
func textHeaders(t amqp.Table) map[string]string {
	out := make(map[string]string, len(t))
	for k, v := range t {
		switch v := v.(type) {
		case string:
			out[k] = v
		case []byte:
			out[k] = string(v)
		default:
			out[k] = fmt.Sprint(v)
		}
	}
	return out
}
