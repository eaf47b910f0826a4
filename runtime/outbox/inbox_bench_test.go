package outbox_test

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/testsupport/benchpair"
	"github.com/streamgen/streamgen/internal/testsupport/dbtest"
	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/outbox"
	"github.com/streamgen/streamgen/runtime/rabbitmq"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// inboxBenchMessages is how many messages a round of BenchmarkInbox moves.
const inboxBenchMessages = 500

// BenchmarkInbox measures a handler that takes a *sql.Tx (its transaction
// begun by the runtime, the message recorded in the inbox, committed by
// the runtime) against the same handler that begins and commits a
// transaction of its own without the inbox: each writes one row, on
// PostgreSQL, consuming persistent messages from RabbitMQ through the
// same App and Broker. A round fills the queue while nothing consumes
// it, then runs an App until every message is handled, timed from the
// first handler call to the last.
//
// Both sides use one database, opened with package outboxpgx (db=outboxpgx:
// the inbox's record goes with the transaction's BEGIN) or as pgx's
// database/sql driver opens it (db=pgx: the record is a round trip of its
// own; make bench runs the outboxpgx rows).
func BenchmarkInbox(b *testing.B) {
	for _, driver := range []string{"outboxpgx", "pgx"} {
		b.Run("db="+driver, func(b *testing.B) {
			for _, concurrency := range []int{1, 4} {
				b.Run("concurrency="+strconv.Itoa(concurrency), func(b *testing.B) { benchInbox(b, driver, concurrency) })
			}
		})
	}
}

func benchInbox(b *testing.B, driver string, concurrency int) {
	ctx := context.Background()
	db := openDB(b, driver, dbtest.PostgresDatabase(b))
	ob, err := outbox.Open(ctx, db)
	if err != nil {
		b.Fatal(err)
	}
	execSQL(b, db, "CREATE TABLE effects (message_id TEXT NOT NULL, attempt INTEGER NOT NULL)")
	conn := testkit.DialRabbitMQ(b, testkit.RabbitMQURL())
	const insert = "INSERT INTO effects (message_id, attempt) VALUES ($1, $2)"
	sgQueue, baseQueue := testkit.UniqueName("streamgen-bench.inbox"), testkit.UniqueName("streamgen-bench.inbox-own-tx")
	for _, q := range []string{sgQueue, baseQueue} {
		declareQueue(b, conn, q)
	}
	round := 0
	side := func(queue string, opts func(*rabbitmq.Broker) []runtime.Option, h runtime.Handler) func(*testing.B) time.Duration {
		return func(b *testing.B) time.Duration {
			round++
			publishOrders(b, conn, queue, fmt.Sprintf("r%d", round), inboxBenchMessages)
			c := &benchCounter{n: inboxBenchMessages, end: make(chan struct{})}
			broker := rabbitmq.New(testkit.RabbitMQURL(), rabbitmq.WithConnectionName("streamgen-bench-inbox"))
			app := runtime.NewApp("bench", append(opts(broker), runtime.WithMiddleware(c.middleware))...)
			app.Mount(broker, &runtime.Subscription{Name: queue, Broker: runtime.RabbitMQ, Prefetch: 50, Concurrency: concurrency,
				Handlers: []runtime.Handler{h}})
			stop := streamtest.RunApp(b, app)
			select {
			case <-c.end:
			case <-time.After(5 * time.Minute):
				b.Fatalf("%d of %d messages handled in 5 minutes", c.count.Load(), c.n)
			}
			if err := stop(); err != nil {
				b.Fatal(err)
			}
			return time.Duration(c.last.Load() - c.first.Load())
		}
	}
	benchpair.Run(b, benchpair.Pair{
		Units: inboxBenchMessages, Unit: "msg", Warmup: 1,
		Streamgen: side(sgQueue, func(br *rabbitmq.Broker) []runtime.Option { return []runtime.Option{ob.Option(br)} },
			runtime.HandleJSON[order]("Order", runtime.Policy{}, nil, func(ctx context.Context, tx *sql.Tx, o *order, md runtime.Metadata) error {
				_, err := tx.ExecContext(ctx, insert, md.MessageID, md.Attempt)
				return err
			})),
		Baseline: side(baseQueue, func(*rabbitmq.Broker) []runtime.Option { return nil },
			runtime.HandleJSON[order]("Order", runtime.Policy{}, nil, func(ctx context.Context, o *order, md runtime.Metadata) error {
				tx, err := db.BeginTx(ctx, nil)
				if err != nil {
					return err
				}
				defer func() { _ = tx.Rollback() }()
				if _, err := tx.ExecContext(ctx, insert, md.MessageID, md.Attempt); err != nil {
					return err
				}
				return tx.Commit()
			})),
	})
}

// benchCounter times a round: from the first handler call it sees to the
// return of the n-th that succeeded, its transaction committed.
type benchCounter struct {
	n           int64
	count       atomic.Int64
	first, last atomic.Int64 // UnixNano
	end         chan struct{}
}

// middleware wraps each call of a round.
func (c *benchCounter) middleware(ctx context.Context, msg any, md runtime.Metadata, next runtime.Next) runtime.Outcome {
	c.first.CompareAndSwap(0, time.Now().UnixNano())
	out := next(ctx, msg, md)
	if out.Action() == runtime.ActionAck && c.count.Add(1) == c.n {
		c.last.Store(time.Now().UnixNano())
		close(c.end)
	}
	return out
}

// declareQueue declares queue as the App declares a classic subscription
// queue, deleted when b ends.
func declareQueue(b *testing.B, conn *amqp.Connection, queue string) {
	b.Helper()
	ch, err := conn.Channel()
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = ch.Close() }()
	if _, err := ch.QueueDeclare(queue, true, false, false, false, nil); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if ch, err := conn.Channel(); err == nil {
			_, _ = ch.QueueDelete(queue, false, false, false)
			_, _ = ch.QueueDelete(queue+".suspect", false, false, false)
			_ = ch.Close()
		}
	})
}

// publishOrders publishes n persistent Order messages to queue, with ids
// of prefix's own, and waits for their confirms.
func publishOrders(b *testing.B, conn *amqp.Connection, queue, prefix string, n int) {
	b.Helper()
	ch, err := conn.Channel()
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = ch.Close() }()
	if err := ch.Confirm(false); err != nil {
		b.Fatal(err)
	}
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, n))
	for i := range n {
		err := ch.PublishWithContext(context.Background(), "", queue, true, false, amqp.Publishing{
			Type: "Order", ContentType: "application/json", DeliveryMode: amqp.Persistent,
			MessageId: fmt.Sprintf("%s-%06d", prefix, i), Body: []byte(`{"id":` + strconv.Itoa(i) + `}`),
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	for range n {
		if c := <-confirms; !c.Ack {
			b.Fatalf("the broker refused message %d", c.DeliveryTag)
		}
	}
}
