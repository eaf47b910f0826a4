package rabbitmq_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/rabbitmq"
)

type Order struct {
	ID string `json:"id"`
}

// A service mounts its subscriptions on a Broker and runs the App until it
// is told to stop. A generated Mount function builds the subscription;
// here it is written out.
func Example() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	rb := rabbitmq.New("amqp://guest:guest@127.0.0.1:5672/", rabbitmq.WithConnectionName("orders"))
	app := runtime.NewApp("orders", runtime.WithLogger(slog.Default()))
	app.Mount(rb, &runtime.Subscription{
		Name:        "orders.placed",
		Broker:      runtime.RabbitMQ,
		RetryDelays: []time.Duration{time.Second, 10 * time.Second, time.Minute},
		Concurrency: 4,
		Handlers: []runtime.Handler{
			runtime.Handle("Order", runtime.Policy{MaxAttempts: 5, DeadLetter: "orders.parked"},
				func(ctx context.Context, o *Order, md runtime.Metadata) runtime.Outcome {
					slog.Info("order", "id", o.ID, "attempt", md.Attempt)
					return runtime.Ack()
				}),
		},
	})
	if err := app.Run(ctx); err != nil {
		slog.Error("orders stopped", "err", err)
	}
}

// A producer publishes without an App; the Broker connects on first use.
func ExampleBroker_Publish() {
	rb := rabbitmq.New("amqp://guest:guest@127.0.0.1:5672/", rabbitmq.WithConnectionName("checkout"))
	defer rb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := runtime.Publish(ctx, rb, runtime.Queue("orders.placed"), "Order", Order{ID: "o-1"}); err != nil {
		slog.Error("publish", "err", err)
	}
}

// TLS: an amqps:// URL and, for a private CA or client certificates, a
// TLS configuration.
func ExampleWithTLSConfig() {
	rb := rabbitmq.New("amqps://billing:secret@rabbit.internal:5671/",
		rabbitmq.WithTLSConfig(&tls.Config{MinVersion: tls.VersionTLS12}),
		rabbitmq.WithReconnectBackoff(200*time.Millisecond, 30*time.Second, 0.2),
	)
	defer rb.Close()
}

// QueueNames lists what a Broker declares for its subscriptions: a tool
// that provisions or cleans up queues uses it.
func ExampleQueueNames() {
	ack := func(context.Context, *Order, runtime.Metadata) runtime.Outcome { return runtime.Ack() }
	placed := &runtime.Subscription{
		Name:        "orders.placed",
		RetryDelays: []time.Duration{time.Second, time.Minute},
		Handlers:    []runtime.Handler{runtime.Handle("Order", runtime.Policy{MaxAttempts: 3, DeadLetter: "orders.parked"}, ack)},
	}
	for _, name := range rabbitmq.QueueNames(placed) {
		fmt.Println(name)
	}
	// Output:
	// orders.placed
	// orders.placed.retry.1s
	// orders.placed.retry.1m
	// orders.placed.suspect
	// orders.parked
}

// RedactURL hides the password of every address of a list, as the Broker
// does in its logs and errors.
func ExampleRedactURL() {
	fmt.Println(rabbitmq.RedactURL("amqp://billing:s3cret@rabbit-1:5672/prod,amqp://billing:s3cret@rabbit-2:5672/prod"))
	// Output: amqp://billing:xxxxx@rabbit-1:5672/prod,amqp://billing:xxxxx@rabbit-2:5672/prod
}
