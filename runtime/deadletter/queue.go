package deadletter

import (
	"context"
	"errors"
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/runtime/rabbitmq"
)

// Queue is a RabbitMQ dead-letter queue.
//
// Every operation reads the letters present when it starts, one at a time
// with basic.get and without acknowledging them, so memory stays flat
// whatever the queue holds. What it leaves in the queue it hands back at
// the end with one basic.nack of all outstanding deliveries, with
// requeue. That keeps the queue as it was:
//   - Classic queues, and quorum queues on RabbitMQ 4.x, put a requeued
//     message back at its old position. A quorum queue on RabbitMQ 3.x puts
//     it at the back, so an operation always reads every letter present
//     before it hands them back: they go back in their order (only a
//     letter parked during the operation ends up before them).
//   - A quorum queue counts a basic.nack toward its delivery limit on
//     RabbitMQ 3.x, not on 4.3 (where only basic.reject and a closed
//     channel count). streamgen declares its quorum dead-letter queues
//     without a delivery limit on both (x-delivery-limit -1 on 4.x), so
//     reading never dead-letters or drops a letter.
//
// Several operations may run on one queue at once, from this process or
// others: a letter another one holds is not seen by the second, and
// nothing is lost. A letter leaves the queue only by Replay (after the
// broker confirmed its new delivery) or Purge.
type Queue struct {
	conn  *amqp.Connection
	name  string
	owned bool
}

// Dial connects to the broker at url and returns its dead-letter queue
// name. Close closes the connection.
func Dial(url, name string) (*Queue, error) {
	cfg := amqp.Config{Properties: amqp.NewConnectionProperties()}
	cfg.Properties.SetClientConnectionName("streamgen dlq " + name)
	conn, err := amqp.DialConfig(url, cfg)
	if err != nil {
		return nil, fmt.Errorf("deadletter: cannot connect to RabbitMQ at %s for queue %s: %w", rabbitmq.RedactURL(url), name, err)
	}
	return &Queue{conn: conn, name: name, owned: true}, nil
}

// NewQueue returns the dead-letter queue name on a connection the caller
// owns and closes.
func NewQueue(conn *amqp.Connection, name string) *Queue {
	return &Queue{conn: conn, name: name}
}

// Name is the queue's name.
func (q *Queue) Name() string { return q.name }

// Close closes the connection Dial opened; it does nothing for a Queue
// made by NewQueue.
func (q *Queue) Close() error {
	if !q.owned {
		return nil
	}
	return q.conn.Close()
}

// Len returns the number of letters ready in the queue, as a passive
// declare reports it (those another reader holds are not counted; a
// quorum queue on RabbitMQ 3.x may report a count a moment old).
func (q *Queue) Len(ctx context.Context) (int, error) {
	ch, err := q.conn.Channel()
	if err != nil {
		return 0, q.wrap("open a channel", err)
	}
	defer func() { _ = ch.Close() }()
	info, err := ch.QueueDeclarePassive(q.name, true, false, false, false, nil)
	if err != nil {
		return 0, q.wrap("inspect the queue", err)
	}
	return info.Messages, nil
}

// Scan calls fn with each letter present in the queue when Scan starts,
// oldest first, and leaves the queue as it was. A Letter is fn's to keep.
// An error from fn stops the calls and is returned; the queue is left as
// it was all the same.
func (q *Queue) Scan(ctx context.Context, fn func(*Letter) error) error {
	var stopped error
	err := q.visit(ctx, func(l *Letter, _ uint64, _ *amqp.Channel) error {
		if stopped != nil {
			return nil
		}
		stopped = fn(l)
		return nil
	}, nil)
	return firstErr(err, stopped)
}

// Groups scans the queue and returns its groups (Grouper.Groups).
func (q *Queue) Groups(ctx context.Context) ([]Group, error) {
	var g Grouper
	if err := q.Scan(ctx, func(l *Letter) error { g.Add(l); return nil }); err != nil {
		return nil, err
	}
	return g.Groups(), nil
}

// Select calls fn with each letter sel picks, up to its limit, and leaves
// the queue as it was.
func (q *Queue) Select(ctx context.Context, sel Selection, fn func(*Letter) error) error {
	n := 0
	return q.Scan(ctx, func(l *Letter) error {
		if !sel.Matches(l) || sel.Limit > 0 && n >= sel.Limit {
			return nil
		}
		n++
		return fn(l)
	})
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// visit reads every letter present at its start, calling fn with each
// and the channel it was read on (fn may ack the letter's tag there); then
// it calls finish, if not nil, with what stopped the reading, and at the
// end it hands back every letter not acked.
func (q *Queue) visit(ctx context.Context, fn func(l *Letter, tag uint64, ch *amqp.Channel) error, finish func(error) error) (err error) {
	ch, err := q.conn.Channel()
	if err != nil {
		return q.wrap("open a channel", err)
	}
	defer func() {
		// A quorum queue requeued letters acked just before the channel
		// closed (seen on RabbitMQ 3.10 and 4.3: the acks had not reached
		// it yet), so letters replayed or purged came back. A synchronous
		// basic.get first makes sure they did (a letter it returns is
		// handed back with the rest).
		_, _, _ = ch.Get(q.name, false)
		// Closing a channel with letters outstanding would requeue them
		// too, but a quorum queue counts that toward its delivery limit:
		// hand them back with a nack first.
		if nerr := ch.Nack(0, true, true); nerr != nil && err == nil {
			err = q.wrap("hand the letters back", nerr)
		}
		_ = ch.Close()
	}()
	if _, err := ch.QueueDeclarePassive(q.name, true, false, false, false, nil); err != nil {
		return q.wrap("inspect the queue", err)
	}
	err = q.read(ctx, ch, fn)
	if finish != nil {
		err = finish(err)
	}
	return err
}

// read reads the letters present in the queue on ch, calling fn with
// each. How many are present, n, is what the broker answers to the first
// basic.get (the count it gives with a message is the queue's own, while a
// passive declare of a quorum queue on RabbitMQ 3.x may report a stale
// one, 0 just after letters were handed back). n bounds the reading, so
// that letters parked meanwhile do not keep it going; it stops sooner when
// another reader holds the rest.
func (q *Queue) read(ctx context.Context, ch *amqp.Channel, fn func(l *Letter, tag uint64, ch *amqp.Channel) error) error {
	for i, n := 0, 1; i < n; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		d, ok, err := ch.Get(q.name, false)
		if err != nil {
			return q.wrap("read a letter", err)
		}
		if !ok {
			return nil // empty, or another reader holds the rest
		}
		if i == 0 {
			n = int(d.MessageCount) + 1
		}
		if err := fn(FromDelivery(d), d.DeliveryTag, ch); err != nil {
			return err
		}
	}
	return nil
}

// wrap names the queue in an error, with the fix for the common cases.
func (q *Queue) wrap(doing string, err error) error {
	var aerr *amqp.Error
	if errors.As(err, &aerr) && aerr.Code == amqp.NotFound {
		return fmt.Errorf("deadletter: queue %s does not exist: check the name (a subscription's dead-letter queue is the DeadLetter of its policy): %w", q.name, err)
	}
	if errors.As(err, &aerr) && aerr.Code == amqp.AccessRefused {
		return fmt.Errorf("deadletter: queue %s: access refused: use a user with read, write and configure permission on it: %w", q.name, err)
	}
	return fmt.Errorf("deadletter: queue %s: cannot %s: %w", q.name, doing, err)
}
