package rabbitmq_test

import (
	"context"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime/deadletter"
	"github.com/streamgen/streamgen/runtime/rabbitmq"
)

// A queue opened with Dial whose connection the broker closed (as a
// restart does) connects again for the next operation: Len, Scan and
// Purge work, and the queue is as it was.
//
// Each operation has a minute of its own: the test runs rabbitmqctl a
// dozen times, which on RabbitMQ 4 and a busy machine takes seconds each,
// too long to share the test's two minutes.
func TestADialledQueueConnectsAgainAfterItsConnectionCloses(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q := e.name("reconnect")
	e.declare(q, nil)
	e.publish(q, amqp.Publishing{MessageId: "a", Body: []byte("1")}, amqp.Publishing{MessageId: "b", Body: []byte("2")},
		amqp.Publishing{MessageId: "c", Body: []byte("3")})
	dq, err := rabbitmq.DialDeadLetterQueue(context.Background(), e.url, q)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = dq.Close() }()
	if n, err := dq.Len(opCtx(t)); err != nil || n != 3 {
		t.Fatalf("Len = %d, %v", n, err)
	}
	for round := range 2 {
		testkit.CloseConnection(t, "streamgen dlq "+q+" (dead letters)")
		if n, err := dq.Len(opCtx(t)); err != nil || n != 3-round {
			t.Fatalf("round %d: Len after the connection closed = %d, %v", round, n, err)
		}
		testkit.CloseConnection(t, "streamgen dlq "+q+" (dead letters)")
		var seen []string
		if err := dq.Scan(opCtx(t), func(l *deadletter.Letter) error { seen = append(seen, l.MessageID()); return nil }); err != nil || len(seen) != 3-round {
			t.Fatalf("round %d: Scan after the connection closed = %v, %v", round, seen, err)
		}
		testkit.CloseConnection(t, "streamgen dlq "+q+" (dead letters)")
		rep, err := dq.Purge(opCtx(t), deadletter.Selection{IDs: []string{seen[0]}}, false)
		if err != nil || rep.Done != 1 {
			t.Fatalf("round %d: Purge after the connection closed = %+v, %v", round, rep, err)
		}
	}
	if got := ids(e.drain(q)); len(got) != 1 || got[0] != "c" {
		t.Fatalf("the queue holds %v, want [c]", got)
	}
}

// opCtx is the context of one operation: a minute, ended with the test.
func opCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}
