package outbox_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/observe"
	"github.com/streamgen/streamgen/runtime/outbox"
	"github.com/streamgen/streamgen/runtime/rabbitmq"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// rabbit is a connection to the test broker and the queues a test made,
// deleted when it ends.
type rabbit struct {
	t    testing.TB
	conn *amqp.Connection
}

func newRabbit(t testing.TB) *rabbit {
	t.Helper()
	return &rabbit{t: t, conn: testkit.DialRabbitMQ(t, testkit.RabbitMQURL())}
}

// name returns a queue name of the test's own, deleted when it ends.
func (r *rabbit) name(label string) string {
	q := testkit.UniqueName("streamgen-test.outbox." + label)
	r.t.Cleanup(func() {
		conn, err := amqp.Dial(testkit.RabbitMQURL())
		if err != nil {
			return
		}
		defer conn.Close()
		if ch, err := conn.Channel(); err == nil {
			for _, name := range []string{q, q + ".suspect"} { // a subscription's suspect queue too
				_, _ = ch.QueueDelete(name, false, false, false)
			}
		}
	})
	return q
}

// declare declares a durable queue.
func (r *rabbit) declare(q string) {
	r.t.Helper()
	ch, err := r.conn.Channel()
	if err != nil {
		r.t.Fatal(err)
	}
	defer ch.Close()
	if _, err := ch.QueueDeclare(q, true, false, false, false, nil); err != nil {
		r.t.Fatal(err)
	}
}

// drain reads every message of q now, acking each.
func (r *rabbit) drain(q string) []amqp.Delivery {
	r.t.Helper()
	ch, err := r.conn.Channel()
	if err != nil {
		r.t.Fatal(err)
	}
	defer ch.Close()
	var out []amqp.Delivery
	for {
		d, ok, err := ch.Get(q, true)
		if err != nil {
			r.t.Fatal(err)
		}
		if !ok {
			return out
		}
		out = append(out, d)
	}
}

// The relay publishes through RabbitMQ, pipelined, in order, with the
// message's fields; a message to a queue that does not exist stays in the
// outbox, its route waiting, until the queue is declared.
func TestRelayOverRabbitMQ(t *testing.T) {
	databases(t, func(t *testing.T, db *sql.DB) {
		mq := newRabbit(t)
		q, later := mq.name("orders"), mq.name("later")
		mq.declare(q)
		ob := open(t, db, outbox.WithPollInterval(20*time.Millisecond), outbox.WithRetryBackoff(50*time.Millisecond, 200*time.Millisecond))
		rb := rabbitmq.New(testkit.RabbitMQURL(), rabbitmq.WithConnectionName("streamgen-test-outbox"))
		t.Cleanup(func() { _ = rb.Close() })
		for i := range 20 {
			commit(t, db, ob, i%5 == 4, msgs(q, fmt.Sprintf("t%02d", i), 100)...)
		}
		commit(t, db, ob, false, msgs(later, "l", 2)...)
		r := ob.Relay(rb)
		runRelay(t, r)
		var got []amqp.Delivery
		testkit.Eventually(t, "1,600 messages in the queue", func() bool {
			got = append(got, mq.drain(q)...)
			return len(got) >= 1600
		})
		var ids []string
		for _, d := range got {
			ids = append(ids, d.MessageId)
		}
		var want []string
		for i := range 20 {
			if i%5 != 4 {
				want = append(want, idsOf(msgs(q, fmt.Sprintf("t%02d", i), 100))...)
			}
		}
		if !slices.Equal(ids, want) {
			t.Fatalf("received %d messages, not the %d committed in order", len(ids), len(want))
		}
		if d := got[0]; d.Type != "OrderPlaced" || d.ContentType != "application/json" || d.DeliveryMode != amqp.Persistent || string(d.Body) != `{"id":5}` {
			t.Errorf("first message %+v", d)
		}
		testkit.Eventually(t, "the missing queue's route to wait", func() bool {
			w := r.Report().Warnings
			return len(w) == 1 && strings.Contains(w[0], "queue "+later) && strings.Contains(w[0], "no queue")
		})
		// The relay deletes a pass's rows once their confirms are in: a
		// moment after the consumer got the messages.
		testkit.Eventually(t, "the 2 rows to the missing queue, and only they, left", func() bool { return rowsLeft(t, db) == 2 })
		mq.declare(later)
		var rest []amqp.Delivery
		testkit.Eventually(t, "the waiting messages once their queue exists", func() bool {
			rest = append(rest, mq.drain(later)...)
			return len(rest) >= 2
		})
		if rest[0].MessageId != "l-1" || rest[1].MessageId != "l-2" || len(rest) != 2 {
			t.Errorf("got %v", rest)
		}
		testkit.Eventually(t, "the table to empty", func() bool { return rowsLeft(t, db) == 0 })
	})
}

// ob.Option runs the relay in the App: a subscription of the App handles
// what the outbox publishes through its broker, the health report shows
// the outbox, and a stop in the middle of a backlog loses nothing: each
// committed message is handled, still in the queue, or still in the
// outbox.
func TestOptionRunsTheRelayInTheApp(t *testing.T) {
	databases(t, func(t *testing.T, db *sql.DB) {
		mq := newRabbit(t)
		q := mq.name("app")
		ob := open(t, db, outbox.WithPollInterval(20*time.Millisecond), outbox.WithBatchSize(200))
		rb := rabbitmq.New(testkit.RabbitMQURL(), rabbitmq.WithConnectionName("streamgen-test-outbox-app"))
		var mu sync.Mutex
		var handled []string
		sub := &runtime.Subscription{Name: q, Broker: runtime.RabbitMQ, Handlers: []runtime.Handler{
			runtime.Handle("OrderPlaced", runtime.Policy{}, func(_ context.Context, _ *order, md runtime.Metadata) runtime.Outcome {
				mu.Lock()
				defer mu.Unlock()
				handled = append(handled, md.MessageID)
				return runtime.Ack()
			}),
		}}
		app := runtime.NewApp("orders", ob.Option(rb), runtime.WithShutdownTimeout(20*time.Second))
		app.Mount(rb, sub)
		stop := streamtest.RunApp(t, app)
		commit(t, db, ob, false, msgs(q, "a", 300)...)
		testkit.Eventually(t, "the App to handle 300 messages", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(handled) == 300
		})
		mu.Lock()
		if !slices.Equal(handled, idsOf(msgs(q, "a", 300))) {
			t.Errorf("handled out of order: %v", handled)
		}
		mu.Unlock()
		testkit.Eventually(t, "the health report to show the outbox", func() bool {
			r := app.Readiness()
			return len(r.Tasks) == 1 && r.Tasks[0].Task == "outbox" && r.Tasks[0].Running && r.Tasks[0].Gauges != nil
		})
		if g := app.Readiness().Tasks[0].Gauges; len(g) != 2 {
			t.Errorf("gauges %v, want %s and %s", g, observe.GaugeOutboxBacklog, observe.GaugeOutboxOldestAge)
		}

		for i := range 10 {
			commit(t, db, ob, false, msgs(q, fmt.Sprintf("b%d", i), 300)...)
		}
		if err := stop(); err != nil {
			t.Fatalf("the App stopped with %v", err)
		}
		left := map[string]bool{}
		rows, err := db.Query("SELECT message_id FROM streamgen_outbox")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			left[id] = true
		}
		rows.Close()
		seen := map[string]bool{}
		for _, id := range handled {
			seen[id] = true
		}
		for _, d := range mq.drain(q) {
			seen[d.MessageId] = true
		}
		for i := range 10 {
			for _, id := range idsOf(msgs(q, fmt.Sprintf("b%d", i), 300)) {
				if !seen[id] && !left[id] {
					t.Fatalf("%s is lost: neither handled, nor in the queue, nor in the outbox", id)
				}
			}
		}
		t.Logf("at the stop: %d handled, %d left in the outbox", len(handled), len(left))
	})
}
