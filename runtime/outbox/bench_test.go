package outbox_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/testsupport/benchpair"
	"github.com/streamgen/streamgen/internal/testsupport/dbtest"
	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/outbox"
	"github.com/streamgen/streamgen/runtime/rabbitmq"
)

// benchRows is how many messages a round of BenchmarkOutboxRelay moves.
const benchRows = 10000

// BenchmarkOutboxRelay measures the relay on PostgreSQL: a round fills
// the outbox table with benchRows messages to one queue (left out of the
// time), then publishes them all to RabbitMQ and empties the table.
// The baseline is a raw loop on the same table: it reads the rows in
// batches of 1,000 and publishes each with amqp091-go on a confirm
// channel, up to 256 confirms in flight; baseline=delete-each deletes
// each row once its confirm came (a statement, and a commit, a row),
// baseline=delete-batch deletes a batch's rows in one statement once all
// their confirms came, as the relay does.
func BenchmarkOutboxRelay(b *testing.B) {
	for _, each := range []bool{true, false} {
		name := "baseline=delete-batch"
		if each {
			name = "baseline=delete-each"
		}
		b.Run(name, func(b *testing.B) { benchmarkOutboxRelay(b, each) })
	}
}

func benchmarkOutboxRelay(b *testing.B, deleteEach bool) {
	ctx := context.Background()
	db := dbtest.Postgres(b)
	db.SetMaxOpenConns(8)
	ob, err := outbox.Open(ctx, db)
	if err != nil {
		b.Fatal(err)
	}
	url := testkit.RabbitMQURL()
	conn := testkit.DialRabbitMQ(b, url)
	ch, err := conn.Channel()
	if err != nil {
		b.Fatal(err)
	}
	q := testkit.UniqueName("streamgen-bench.outbox")
	if _, err := ch.QueueDeclare(q, true, false, false, false, nil); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _, _ = ch.QueueDelete(q, false, false, false) })
	rb := rabbitmq.New(url, rabbitmq.WithConnectionName("streamgen-bench-outbox"))
	b.Cleanup(func() { _ = rb.Close() })
	relay := ob.Relay(rb)

	fill := func(b *testing.B) {
		if _, err := ch.QueuePurge(q, false); err != nil {
			b.Fatal(err)
		}
		fillOutbox(b, db, ob, q, benchRows)
	}
	check := func(b *testing.B, moved int) {
		if moved != benchRows {
			b.Fatalf("moved %d messages, want %d", moved, benchRows)
		}
		if n := rowsLeft(b, db); n != 0 {
			b.Fatalf("%d rows left", n)
		}
	}
	benchpair.Run(b, benchpair.Pair{
		Units: benchRows, Unit: "msg", Warmup: 1,
		Streamgen: func(b *testing.B) time.Duration {
			fill(b)
			start := time.Now()
			n, err := relay.Flush(ctx)
			took := time.Since(start)
			if err != nil {
				b.Fatal(err)
			}
			check(b, n)
			return took
		},
		Baseline: func(b *testing.B) time.Duration {
			fill(b)
			start := time.Now()
			n := rawRelay(b, db, conn, deleteEach)
			took := time.Since(start)
			check(b, n)
			return took
		},
	})
}

// fillOutbox commits n messages to queue, 500 a transaction.
func fillOutbox(b *testing.B, db *sql.DB, ob *outbox.Outbox, queue string, n int) {
	b.Helper()
	ctx := context.Background()
	body := benchpair.OrderJSON(256)
	for start := 0; start < n; start += 500 {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		for i := start; i < min(start+500, n); i++ {
			m := runtime.Message{ID: fmt.Sprintf("m-%d", i), Type: "OrderPlaced", ContentType: "application/json", Body: body}
			if err := ob.Tx(tx).Publish(ctx, queue, m); err != nil {
				b.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
}

// rawRelay is the baseline of BenchmarkOutboxRelay: it moves every row of
// the outbox table to RabbitMQ, reading 1,000 rows at a time and
// publishing each on a confirm channel with up to 256 confirms in flight;
// it deletes each row once its confirm came (deleteEach), or a batch's
// rows in one statement once all their confirms came. It returns how many
// it moved.
func rawRelay(b *testing.B, db *sql.DB, conn *amqp.Connection, deleteEach bool) int {
	const window = 256
	ctx := context.Background()
	pub, err := conn.Channel()
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = pub.Close() }()
	if err := pub.Confirm(false); err != nil {
		b.Fatal(err)
	}
	var pending []rawInflight
	var confirmed []int64
	moved := 0
	settle := func() {
		p := pending[0]
		pending = pending[1:]
		if ok, err := p.dc.WaitContext(ctx); !ok || err != nil {
			b.Fatalf("raw relay: not confirmed: %v", err)
		}
		if deleteEach {
			if _, err := db.ExecContext(ctx, "DELETE FROM streamgen_outbox WHERE id = $1", p.id); err != nil {
				b.Fatal(err)
			}
		} else {
			confirmed = append(confirmed, p.id)
		}
		moved++
	}
	after := int64(0)
	for {
		rows, err := db.QueryContext(ctx, `SELECT id, route, message_id, message_type, content_type, body FROM streamgen_outbox
WHERE id > $1 ORDER BY id LIMIT 1000`, after)
		if err != nil {
			b.Fatal(err)
		}
		read := 0
		for rows.Next() {
			var id int64
			var route, msgID, typ, ct string
			var body []byte
			if err := rows.Scan(&id, &route, &msgID, &typ, &ct, &body); err != nil {
				b.Fatal(err)
			}
			read, after = read+1, id
			dc, err := pub.PublishWithDeferredConfirm("", route, true, false, amqp.Publishing{
				MessageId: msgID, Type: typ, ContentType: ct, DeliveryMode: amqp.Persistent, Timestamp: time.Now(), Body: body,
			})
			if err != nil {
				b.Fatal(err)
			}
			pending = append(pending, rawInflight{id, dc})
			if len(pending) >= window {
				settle()
			}
		}
		if err := rows.Close(); err != nil {
			b.Fatal(err)
		}
		if read == 0 {
			break
		}
		if !deleteEach {
			for len(pending) > 0 {
				settle()
			}
			if _, err := db.ExecContext(ctx, "DELETE FROM streamgen_outbox WHERE id = ANY($1::bigint[])", confirmed); err != nil {
				b.Fatal(err)
			}
			confirmed = confirmed[:0]
		}
	}
	for len(pending) > 0 {
		settle()
	}
	return moved
}

// rawInflight is a row the raw relay published, and its confirm to come.
type rawInflight struct {
	id int64
	dc *amqp.DeferredConfirmation
}

// benchTxs is how many transactions a round of BenchmarkOutboxTx commits.
const benchTxs = 500

// BenchmarkOutboxTx measures a transaction that publishes one message
// through ob.Tx on PostgreSQL against the same transaction with a plain
// INSERT of the same row into the outbox table (the body encoded with
// encoding/json on both sides): the time of a transaction, streamgen's
// over the baseline's.
func BenchmarkOutboxTx(b *testing.B) {
	ctx := context.Background()
	db := dbtest.Postgres(b)
	ob, err := outbox.Open(ctx, db)
	if err != nil {
		b.Fatal(err)
	}
	order := benchpair.NewOrder(256)
	round := func(b *testing.B, publish func(tx *sql.Tx, i int) error) time.Duration {
		if _, err := db.ExecContext(ctx, "DELETE FROM streamgen_outbox"); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		for i := range benchTxs {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				b.Fatal(err)
			}
			if err := publish(tx, i); err != nil {
				b.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(start)
	}
	benchpair.Run(b, benchpair.Pair{
		Units: benchTxs, Unit: "op", Warmup: 1, TimeRatio: true,
		Streamgen: func(b *testing.B) time.Duration {
			return round(b, func(tx *sql.Tx, i int) error {
				return runtime.Publish(ctx, ob.Tx(tx), runtime.Queue("orders"), "OrderPlaced", &order, runtime.WithMessageID(fmt.Sprintf("m-%d", i)))
			})
		},
		Baseline: func(b *testing.B) time.Duration {
			return round(b, func(tx *sql.Tx, i int) error {
				body, err := json.Marshal(&order)
				if err != nil {
					return err
				}
				_, err = tx.ExecContext(ctx, `INSERT INTO streamgen_outbox (exchange, route, message_id, message_type, content_type, headers, properties, body)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, "", "orders", fmt.Sprintf("m-%d", i), "OrderPlaced", "application/json", "{}", "{}", body)
				return err
			})
		},
	})
}
