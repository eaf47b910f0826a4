package rabbitmq_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/brokerurl"
	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime/deadletter"
	"github.com/streamgen/streamgen/runtime/deadletter/storetest"
	"github.com/streamgen/streamgen/runtime/rabbitmq"
)

// A RabbitMQ dead-letter queue, classic or quorum, passes the store
// conformance suite: its letters are published into it as a subscription
// parks them, and its replays go to a source queue, another queue, and
// an exchange bound to a third.
func TestDeadLetterQueueConformance(t *testing.T) {
	testkit.NoLeaks(t)
	for _, quorum := range []bool{false, true} {
		name := map[bool]string{false: "Classic", true: "Quorum"}[quorum]
		t.Run(name, func(t *testing.T) {
			storetest.Run(t, storetest.Fixture{New: func(t testing.TB) storetest.Instance { return queueInstance(t, quorum) }})
		})
	}
}

// queueInstance declares a fresh dead-letter queue (a quorum queue as
// streamgen declares one: without a delivery limit) and the targets, all
// deleted after t, and dials the store.
func queueInstance(t testing.TB, quorum bool) storetest.Instance {
	url := brokerurl.RabbitMQ()
	conn := testkit.DialRabbitMQ(t, url)
	admin := func(f func(ch *amqp.Channel) error) error {
		ch, err := conn.Channel()
		if err != nil {
			return err
		}
		defer func() { _ = ch.Close() }()
		return f(ch)
	}
	var args amqp.Table
	if quorum {
		args = amqp.Table{"x-queue-type": "quorum"}
		if v, _ := conn.Properties["version"].(string); v >= "4" {
			args["x-delivery-limit"] = int64(-1)
		}
	}
	dlq := testkit.UniqueName("streamgen-test.storetest.dlq")
	source, other, bound := testkit.UniqueName("streamgen-test.storetest.source"),
		testkit.UniqueName("streamgen-test.storetest.other"), testkit.UniqueName("streamgen-test.storetest.bound")
	exchange := testkit.UniqueName("streamgen-test.storetest.exchange")
	t.Cleanup(func() {
		_ = admin(func(ch *amqp.Channel) error {
			for _, q := range []string{dlq, source, other, bound} {
				_, _ = ch.QueueDelete(q, false, false, false)
			}
			return ch.ExchangeDelete(exchange, false, false)
		})
	})
	if err := admin(func(ch *amqp.Channel) error {
		if _, err := ch.QueueDeclare(dlq, true, false, false, false, args); err != nil {
			return err
		}
		for _, q := range []string{source, other, bound} {
			if _, err := ch.QueueDeclare(q, true, false, false, false, nil); err != nil {
				return err
			}
		}
		if err := ch.ExchangeDeclare(exchange, "direct", true, false, false, false, nil); err != nil {
			return err
		}
		return ch.QueueBind(bound, "replayed", exchange, false, nil)
	}); err != nil {
		t.Fatalf("declare the queues of the test: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Patience)
	defer cancel()
	q, err := rabbitmq.DialDeadLetterQueue(ctx, url, dlq)
	if err != nil {
		t.Fatal(err)
	}
	return storetest.Instance{
		Store: q,
		Park: func(ctx context.Context, letters ...*deadletter.Letter) error {
			return admin(func(ch *amqp.Channel) error { return publishLetters(ctx, ch, dlq, letters) })
		},
		Targets: []storetest.Target{
			{To: deadletter.Target{}, Queue: source, Arrived: reader(admin, source)},
			{To: deadletter.Target{Queue: other}, Queue: other, Arrived: reader(admin, other)},
			{To: deadletter.Target{Exchange: exchange, RoutingKey: "replayed"}, Queue: bound, Arrived: reader(admin, bound)},
		},
	}
}

// publishLetters publishes each letter into queue as a subscription parks
// a message, with its body, headers and properties, and waits for the
// broker's confirms.
func publishLetters(ctx context.Context, ch *amqp.Channel, queue string, letters []*deadletter.Letter) error {
	if err := ch.Confirm(false); err != nil {
		return err
	}
	returns := ch.NotifyReturn(make(chan amqp.Return, len(letters)))
	for _, l := range letters {
		p := l.Properties
		dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", queue, true, false, amqp.Publishing{
			Headers: amqpTable(l.Headers), ContentType: p.ContentType, ContentEncoding: p.ContentEncoding,
			DeliveryMode: p.DeliveryMode, Priority: p.Priority, CorrelationId: p.CorrelationID, ReplyTo: p.ReplyTo,
			Expiration: p.Expiration, MessageId: p.MessageID, Timestamp: p.Timestamp, Type: p.Type, UserId: p.UserID,
			AppId: p.AppID, Body: l.Body,
		})
		if err != nil {
			return err
		}
		if ok, err := dc.WaitContext(ctx); !ok || err != nil {
			return fmt.Errorf("letter %s not confirmed: %v", l.MessageID(), err)
		}
	}
	select {
	case r := <-returns:
		return fmt.Errorf("letter %s returned: %s", r.MessageId, r.ReplyText)
	default:
		return nil
	}
}

// reader reads the messages that arrive at queue, taking them out of it,
// and returns all it read so far each time it is called.
func reader(admin func(func(*amqp.Channel) error) error, queue string) func(context.Context) ([]storetest.Arrival, error) {
	var mu sync.Mutex
	var got []storetest.Arrival
	return func(context.Context) ([]storetest.Arrival, error) {
		mu.Lock()
		defer mu.Unlock()
		err := admin(func(ch *amqp.Channel) error {
			for {
				d, ok, err := ch.Get(queue, true)
				if err != nil || !ok {
					return err
				}
				got = append(got, storetest.Arrival{Queue: queue, Message: &deadletter.Letter{
					Body: d.Body, Headers: neutral(d.Headers), Properties: deadletter.Properties{
						ContentType: d.ContentType, ContentEncoding: d.ContentEncoding, DeliveryMode: d.DeliveryMode,
						Priority: d.Priority, CorrelationID: d.CorrelationId, ReplyTo: d.ReplyTo, Expiration: d.Expiration,
						MessageID: d.MessageId, Timestamp: d.Timestamp, Type: d.Type, UserID: d.UserId, AppID: d.AppId,
					},
				}})
			}
		})
		if err != nil {
			return nil, errors.Join(fmt.Errorf("read %s", queue), err)
		}
		return slices.Clone(got), nil
	}
}

// amqpTable is a letter's headers as AMQP table values.
func amqpTable(h map[string]any) amqp.Table {
	if h == nil {
		return nil
	}
	return convert(h, true).(amqp.Table)
}

// neutral is an AMQP table as a letter's headers.
func neutral(t amqp.Table) map[string]any {
	if t == nil {
		return map[string]any{}
	}
	return convert(t, false).(map[string]any)
}

// convert turns tables and decimals of a letter into AMQP's (toAMQP) or
// back, at any depth.
func convert(v any, toAMQP bool) any {
	table := func(m map[string]any) any {
		out := make(map[string]any, len(m))
		for k, e := range m {
			out[k] = convert(e, toAMQP)
		}
		if toAMQP {
			return amqp.Table(out)
		}
		return out
	}
	switch x := v.(type) {
	case map[string]any:
		return table(x)
	case amqp.Table:
		return table(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = convert(e, toAMQP)
		}
		return out
	case deadletter.Decimal:
		return amqp.Decimal{Scale: x.Scale, Value: x.Value}
	case amqp.Decimal:
		return deadletter.Decimal{Scale: x.Scale, Value: x.Value}
	}
	return v
}
