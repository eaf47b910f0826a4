package orders_test

import (
	"context"
	"crypto/rand"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/examples/internal/demo"
	"github.com/streamgen/streamgen/examples/orders"
	"github.com/streamgen/streamgen/internal/brokerurl"
	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/rabbitmq"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// requireBroker fails the test loudly when the test broker does not answer:
// broker tests are never skipped.
func requireBroker(t *testing.T, url string) {
	t.Helper()
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatalf("RabbitMQ does not answer at %s (%v): start one with rabbitmq-server -detached, or point STREAMGEN_RABBITMQ_URL at one",
			rabbitmq.RedactURL(url), err)
	}
	conn.Close()
}

// The generated wiring on a real broker, under queue names of this test's
// own: the retry ladder's wait queues, the type dispatch, and the parked
// messages with their explanation headers.
func TestOrdersOnRabbitMQ(t *testing.T) {
	url := brokerurl.RabbitMQ()
	requireBroker(t, url)
	prefix := "test-orders-" + rand.Text()[:10] + "."
	b := demo.Prefix(rabbitmq.New(url, rabbitmq.WithConnectionName("orders-test")), prefix)
	logs := streamtest.NewLogRecorder(nil)
	testkit.RestoreDefaultLogger(t)
	slog.SetDefault(logs.Logger()) // the handlers log through slog.Default
	app := runtime.NewApp("orders-test", runtime.WithLogger(logs.Logger()))
	orders.Mount(app, b)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx) }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			if err := <-done; err != nil {
				t.Errorf("the app stopped with %v", err)
			}
		}
	}
	t.Cleanup(func() {
		stop()
		if err := demo.Delete(url, rabbitmq.QueueNames(b.Subscriptions()...)); err != nil {
			t.Errorf("cleanup: %v", err)
		}
		if err := demo.DeleteExchanges(url, b.Exchanges()); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	select {
	case <-app.Ready():
	case err := <-done:
		stopped = true
		t.Fatalf("the app did not start: %v", err)
	}

	send := []func() error{
		func() error {
			return orders.PublishOrderPlaced(ctx, b, orders.OrderPlaced{ID: "o-1", TotalCents: 1250}, runtime.WithMessageID("o-1"))
		},
		func() error {
			return orders.PublishOrderPlaced(ctx, b, orders.OrderPlaced{ID: "o-2", TotalCents: 800, PaymentFailures: 2}, runtime.WithMessageID("o-2"))
		},
		func() error {
			return orders.PublishOrderPlaced(ctx, b, orders.OrderPlaced{ID: "o-3", TotalCents: 4200, PaymentFailures: 99}, runtime.WithMessageID("o-3"))
		},
		func() error {
			return orders.PublishOrderPlaced(ctx, b, orders.OrderPlaced{ID: "o-4"}, runtime.WithMessageID("o-4"))
		},
		func() error {
			return orders.PublishOrderCancelled(ctx, b, orders.OrderCancelled{ID: "o-1", Reason: "changed my mind"}, runtime.WithMessageID("c-1"))
		},
		func() error {
			return runtime.Publish(ctx, b, runtime.Queue("orders.received"), "OrderRefunded", map[string]string{"id": "o-1"}, runtime.WithMessageID("r-1"))
		},
	}
	for _, f := range send {
		if err := f(); err != nil {
			t.Fatal(err)
		}
	}
	waitCtx, waitCancel := context.WithTimeout(ctx, time.Minute)
	defer waitCancel()
	received, audit := b.Name("orders.received"), b.Name("orders.audit")
	if err := demo.WaitFor(waitCtx, app.Stats, map[string]runtime.SubscriptionStats{
		received: {Delivered: 1 + 3 + 5 + 1 + 1 + 1, Acked: 3, Retried: 2 + 4, Parked: 3},
		// Each event published to the exchange once, and only those: not
		// r-1, sent to orders.received by name, nor the retry copies.
		audit: {Delivered: 5, Acked: 5},
	}); err != nil {
		t.Fatal(err)
	}
	stop()

	// The audit got its own copy of each event, once.
	var audited []string
	for _, r := range logs.Find(slog.LevelInfo, "audited") {
		if r.Attr("subscription") != audit {
			t.Errorf("an audit line from %s", r.Attr("subscription"))
		}
		audited = append(audited, r.Attr("message_id"))
	}
	slices.Sort(audited)
	if want := []string{"c-1", "o-1", "o-2", "o-3", "o-4"}; !slices.Equal(audited, want) {
		t.Errorf("audited %v, want %v", audited, want)
	}

	// o-3 walked the ladder: 500ms, 1s, 2s, 2s.
	var via []string
	for _, r := range logs.Find(slog.LevelInfo, "message will be retried") {
		if r.Attr("message_id") == "o-3" {
			via = append(via, strings.TrimPrefix(r.Attr("via"), received))
		}
	}
	if want := []string{".retry.500ms", ".retry.1s", ".retry.2s", ".retry.2s"}; !slices.Equal(via, want) {
		t.Errorf("o-3 waited in %v, want %v", via, want)
	}

	parked, err := demo.Peek(url, b.Name("orders.parked"))
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]demo.QueuedMessage{}
	for _, m := range parked {
		byID[m.MessageID] = m
	}
	if len(parked) != 3 {
		t.Fatalf("%d messages parked, want o-3, o-4 and r-1: %+v", len(parked), parked)
	}
	for id, want := range map[string]map[string]string{
		"o-3": {
			runtime.HeaderDeadLetterReason:   "failed on attempt 5 of 5: order o-3: the payment service is unavailable",
			runtime.HeaderDeadLetterAttempts: "5",
			runtime.HeaderDeadLetterPoison:   "false",
			runtime.HeaderDeadLetterSource:   received,
		},
		"o-4": {
			runtime.HeaderDeadLetterReason:   "dead-lettered by the handler: order o-4: the order has no total",
			runtime.HeaderDeadLetterAttempts: "1",
			runtime.HeaderDeadLetterPoison:   "false",
		},
		"r-1": {
			runtime.HeaderDeadLetterAttempts: "1",
			runtime.HeaderDeadLetterPoison:   "true",
		},
	} {
		m, ok := byID[id]
		if !ok {
			t.Errorf("%s is not parked", id)
			continue
		}
		for k, v := range want {
			if m.Headers[k] != v {
				t.Errorf("parked %s: %s = %q, want %q", id, k, m.Headers[k], v)
			}
		}
	}
	if r := byID["r-1"].Headers[runtime.HeaderDeadLetterReason]; !strings.Contains(r, `no handler for message type "OrderRefunded"`) {
		t.Errorf("r-1 parked because %q", r)
	}
}
