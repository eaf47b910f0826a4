package promstream_test

import (
	"testing"
	"time"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/promstream"
	"github.com/streamgen/streamgen/runtime/rabbitmq"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// closeConnection makes the broker close the connection named exactly
// name.
func closeConnection(t testing.TB, name string) { t.Helper(); testkit.CloseConnection(t, name) }

// On RabbitMQ: the handled, retried and parked deliveries are counted,
// the broker's confirms of the publish, the retry copy and the dead letter
// are timed, and when the broker closes the consuming connection the
// reconnect is counted and consuming goes on.
func TestRabbitMQ(t *testing.T) {
	testkit.NoLeaks(t)
	conn := testkit.DialRabbitMQ(t, testkit.RabbitMQURL())
	q := testkit.UniqueName("promstream")
	t.Cleanup(func() {
		ch, err := conn.Channel()
		if err != nil {
			t.Errorf("cleanup: %v", err)
			return
		}
		defer ch.Close()
		for _, name := range []string{q, q + ".retry", q + ".dead", q + ".suspect"} {
			if _, err := ch.QueueDelete(name, false, false, false); err != nil {
				t.Errorf("delete %s: %v", name, err)
			}
		}
	})
	c, reg := newRegistered(t)
	connName := "streamgen-test-prom-" + q
	rb := rabbitmq.New(testkit.RabbitMQURL(), rabbitmq.WithConnectionName(connName))
	app := runtime.NewApp("promstream-test", runtime.WithObserver(c), runtime.WithShutdownTimeout(20*time.Second))
	jobs, _ := jobsSubscription(runtime.RabbitMQ, q, 50*time.Millisecond)
	app.Mount(rb, jobs)
	stop := streamtest.RunApp(t, app)

	settled := func(outcome string) float64 {
		return value(t, reg, promstream.MetricSettled, map[string]string{"broker": "rabbitmq", "subscription": q, "message_type": "Job", "outcome": outcome})
	}
	publish := func(id int) {
		t.Helper()
		if err := runtime.Publish(t.Context(), rb, runtime.Queue(q), "Job", job{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	publish(1)
	publish(3)
	testkit.Eventually(t, "job 1 acked and job 3 parked", func() bool { return settled("acked") == 1 && settled("parked") == 1 })
	if n := settled("retried"); n != 2 {
		t.Errorf("%v retried, want 2", n)
	}
	// Two publishes, two retry copies, one dead letter.
	testkit.Eventually(t, "five confirms timed", func() bool {
		return value(t, reg, promstream.MetricConfirmDuration, map[string]string{"broker": "rabbitmq", "outcome": "confirmed"}) == 5
	})
	reconnects := map[string]string{"broker": "rabbitmq"}
	if n := value(t, reg, promstream.MetricReconnects, reconnects); n != 0 {
		t.Fatalf("%v reconnects before any, want 0", n)
	}

	closeConnection(t, connName+" (consume)")
	testkit.Eventually(t, "the reconnect counted", func() bool { return value(t, reg, promstream.MetricReconnects, reconnects) == 1 })
	publish(1)
	testkit.Eventually(t, "a job acked after the reconnect", func() bool { return settled("acked") == 2 })
	if err := stop(); err != nil {
		t.Fatalf("the App did not stop cleanly: %v", err)
	}
	if n := value(t, reg, promstream.MetricInFlight, map[string]string{"broker": "rabbitmq", "subscription": q}); n != 0 {
		t.Errorf("%v in flight after the App stopped, want 0", n)
	}
}
