package fleet_test

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/examples/fleet"
	"github.com/streamgen/streamgen/examples/internal/demo"
	"github.com/streamgen/streamgen/internal/brokerurl"
	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/rabbitmq"
)

// The generated Mount and publishers on a real RabbitMQ, under queue
// names of this test's own: protobuf, its JSON mapping, MessagePack and
// CBOR reach their handlers, the diagnostics the handler of every message
// type, and the poison is parked with its reason.
func TestFleetOnRabbitMQ(t *testing.T) {
	url := brokerurl.RabbitMQ()
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatalf("RabbitMQ does not answer at %s (%v): start one with rabbitmq-server -detached, or point STREAMGEN_RABBITMQ_URL at one", rabbitmq.RedactURL(url), err)
	}
	conn.Close()
	testkit.NoLeaks(t)
	b := demo.Prefix(rabbitmq.New(url, rabbitmq.WithConnectionName("fleet-test")), "test-fleet-"+rand.Text()[:10]+".")
	f := fleet.New()
	app := runtime.NewApp("fleet-test")
	fleet.Mount(app, b, f)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the app stopped with %v", err)
		}
		if err := demo.Delete(url, rabbitmq.QueueNames(b.Subscriptions()...)); err != nil {
			t.Errorf("cleanup: %v", err)
		}
		if err := demo.Delete(url, []string{b.Name("fleet.parked")}); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	select {
	case <-app.Ready():
	case <-time.After(testkit.Patience):
		t.Fatal("the app did not start")
	}
	send(t, ctx, b)
	parked := func() map[string]string {
		msgs, err := demo.Peek(url, b.Name("fleet.parked"))
		if err != nil {
			t.Fatal(err)
		}
		reasons := map[string]string{}
		for _, m := range msgs {
			reasons[m.MessageID] = m.Headers[runtime.HeaderDeadLetterReason]
		}
		return reasons
	}
	testkit.Eventually(t, "the messages were handled and the poison parked", func() bool {
		return len(f.Other()) == 1 && len(f.Alerts("truck-1")) == 1 && len(f.Fuel()) == 1 && f.Position("van-2") != nil && len(parked()) == 3
	})
	check(t, f)
	checkParked(t, parked())
}
