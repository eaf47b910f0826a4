// Command orders-demo runs the orders service of package orders against
// the local RabbitMQ, sends it orders, and tells what happens as it
// happens: each delivery with its attempt out of the maximum, each retry
// with the wait queue of the ladder it waits in, each parked message with
// its reason. The orders are published once, to the topic exchange orders;
// two queues are bound to it, orders.received and orders.audit, and each
// gets its own copy: the audit sees every event once, however often
// orders.received retries it. It ends with the service's counters and with what sits in
// orders.parked, read with basic.get: the x-streamgen-* headers say why
// each message is there.
//
// The broker is $STREAMGEN_RABBITMQ_URL, else
// amqp://guest:guest@127.0.0.1:5672/. make demo-rabbitmq starts a local one
// first when it is installed and not running.
//
// The demo starts from empty queues: before the service consumes, it
// purges orders.received, orders.audit, the wait queues and orders.parked
// of whatever an earlier run left. What it parks stays in orders.parked afterwards, for a
// person to look at; the next run empties it again. It exits with status 1
// when what it expects does not happen, so it is a smoke test too.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/streamgen/streamgen/examples/internal/demo"
	"github.com/streamgen/streamgen/examples/orders"
	"github.com/streamgen/streamgen/internal/brokerurl"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/rabbitmq"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Stdout, defaultSettings()); err != nil {
		fmt.Fprintf(os.Stderr, "\nThe demo failed: %v\n", err)
		os.Exit(1)
	}
}

// settings are what a run of the demo does and expects.
type settings struct {
	url string
	// prefix goes before every queue and exchange name; tests set one of
	// their own so that they do not meet other runs on the broker.
	prefix string
	// timeout bounds the real time the demo waits for each step.
	timeout time.Duration
	steps   []step
	// parked maps the id of each message expected in orders.parked to the
	// start of its x-streamgen-reason header.
	parked map[string]string
}

// step is one part of the demo: what it sends, and the counters of
// orders.received and orders.audit expected once it is over.
type step struct {
	title string
	send  func(ctx context.Context, p runtime.Publisher) error
	want  runtime.SubscriptionStats
	audit runtime.SubscriptionStats
}

func defaultSettings() settings {
	return settings{
		url:     brokerurl.RabbitMQ(),
		timeout: 30 * time.Second,
		steps:   defaultSteps(),
		parked: map[string]string{
			"o-3": "failed on attempt 5 of 5: order o-3: the payment service is unavailable",
			"o-4": "dead-lettered by the handler: order o-4: the order has no total",
			"r-1": `no handler for message type "OrderRefunded"`,
		},
	}
}

func defaultSteps() []step {
	return []step{
		{
			title: "Three orders, each published once to the exchange orders (routing key order.placed): orders.received and orders.audit each get a copy. " +
				"o-1 is paid at once, o-2's payment fails twice, o-3's always fails; the audit sees each order once, not the retries.",
			send: func(ctx context.Context, p runtime.Publisher) error {
				for _, o := range []orders.OrderPlaced{
					{ID: "o-1", Customer: "ada", TotalCents: 1250},
					{ID: "o-2", Customer: "grace", TotalCents: 800, PaymentFailures: 2},
					{ID: "o-3", Customer: "alan", TotalCents: 4200, PaymentFailures: 99},
				} {
					if err := orders.PublishOrderPlaced(ctx, p, o, runtime.WithMessageID(o.ID)); err != nil {
						return err
					}
				}
				return nil
			},
			want:  runtime.SubscriptionStats{Delivered: 1 + 3 + 5, Acked: 2, Retried: 2 + 4, Parked: 1},
			audit: runtime.SubscriptionStats{Delivered: 3, Acked: 3},
		},
		{
			title: "Through the exchange: a cancellation (c-1, routing key order.cancelled) and an order without a total (o-4). " +
				"Straight to orders.received: r-1, an OrderRefunded that no handler takes.",
			send: func(ctx context.Context, p runtime.Publisher) error {
				if err := orders.PublishOrderCancelled(ctx, p, orders.OrderCancelled{ID: "o-1", Reason: "changed my mind"}, runtime.WithMessageID("c-1")); err != nil {
					return err
				}
				if err := orders.PublishOrderPlaced(ctx, p, orders.OrderPlaced{ID: "o-4", Customer: "edsger"}, runtime.WithMessageID("o-4")); err != nil {
					return err
				}
				return runtime.Publish(ctx, p, runtime.Queue("orders.received"), "OrderRefunded", map[string]string{"id": "o-1"}, runtime.WithMessageID("r-1"))
			},
			want:  runtime.SubscriptionStats{Delivered: 9 + 3, Acked: 2 + 1, Retried: 6, Parked: 1 + 2},
			audit: runtime.SubscriptionStats{Delivered: 3 + 2, Acked: 3 + 2},
		},
	}
}

// purgingBroker empties the queues of the subscriptions it starts before
// it starts them, so that the demo begins from empty queues whatever an
// earlier run left in them.
type purgingBroker struct {
	demo.Broker
	url string
}

func (b *purgingBroker) Start(ctx context.Context, env runtime.Env, subs []*runtime.Subscription) error {
	queues := rabbitmq.QueueNames(subs...)
	n, err := demo.Purge(b.url, queues)
	if err != nil {
		return err
	}
	env.Logger.Info(fmt.Sprintf("emptied %s: %d messages were left from an earlier run", strings.Join(queues, ", "), n))
	return b.Broker.Start(ctx, env, subs)
}

// run runs the demo, writing its account to out. It returns an error when
// the service fails or what it expects does not happen.
func run(ctx context.Context, out io.Writer, s settings) error {
	start := time.Now()
	narrator := demo.NewNarrator(out, time.Now)
	logger := slog.New(narrator)
	previous := slog.Default()
	slog.SetDefault(logger) // the handlers log through slog.Default
	defer slog.SetDefault(previous)

	b := demo.Prefix(&purgingBroker{Broker: rabbitmq.New(s.url, rabbitmq.WithConnectionName("orders-demo")), url: s.url}, s.prefix)
	received, audit, parkedQueue := b.Name("orders.received"), b.Name("orders.audit"), b.Name("orders.parked")

	fmt.Fprintf(out, "streamgen demo: the orders service (examples/orders) on RabbitMQ at %s.\n", rabbitmq.RedactURL(s.url))
	fmt.Fprintf(out, "Each line is one log record of the runtime or of a handler, told as a sentence;\n")
	fmt.Fprintf(out, "times are real. %s: max_attempts=5, retry_delay=500ms,1s,2s, dead_letter=%s.\n", received, parkedQueue)
	fmt.Fprintf(out, "Both %s (order.placed, order.cancelled) and %s (order.#) are bound to the topic exchange %s.\n\n", received, audit, b.Name("orders"))

	app := runtime.NewApp("orders", runtime.WithLogger(logger), runtime.WithShutdownTimeout(10*time.Second))
	orders.Mount(app, b)

	svc, err := demo.Start(ctx, app)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted: %w", ctx.Err())
		}
		return fmt.Errorf("the service did not start (make demo-rabbitmq starts a local broker when one is installed): %w", err)
	}
	defer svc.Stop()

	steps := make([]demo.Step, len(s.steps))
	for i, st := range s.steps {
		steps[i] = demo.Step{Title: st.title, Send: st.send, Want: map[string]runtime.SubscriptionStats{received: st.want, audit: st.audit}}
	}
	if err := demo.Play(ctx, narrator, b, app.Stats, steps, s.timeout); err != nil {
		return err
	}

	fmt.Fprintf(out, "\nStopping the service.\n")
	if err := svc.Stop(); err != nil {
		return fmt.Errorf("the service stopped with an error: %w", err)
	}
	stats := app.Stats()
	fmt.Fprintf(out, "\nWhat the service counted (app.Stats()), in %.1fs:\n\n", time.Since(start).Seconds())
	if err := demo.WriteSummary(out, stats); err != nil {
		return err
	}
	if len(s.steps) > 0 {
		last := s.steps[len(s.steps)-1]
		if err := demo.Check(stats, map[string]runtime.SubscriptionStats{received: last.want, audit: last.audit}); err != nil {
			return fmt.Errorf("after the stop: %w", err)
		}
	}

	parked, err := demo.Peek(s.url, parkedQueue)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nWhat sits in %s (read with basic.get, then handed back):\n", parkedQueue)
	writeParked(out, parked)
	if err := checkParked(parked, s.parked); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nThey stay in %s for you to look at with streamgen dlq (go run ./cmd/streamgen dlq in this\n", parkedQueue)
	fmt.Fprintf(out, "repository); the next run of the demo empties it first.\n")
	fmt.Fprintf(out, "  streamgen dlq ls %s                the letters by group: count, types, source, reason\n", parkedQueue)
	fmt.Fprintf(out, "  streamgen dlq show %s              each letter: why it is there, its headers and body\n", parkedQueue)
	fmt.Fprintf(out, "  streamgen dlq replay -id o-3 %s    o-3 back to %s, for a fresh set of attempts\n", parkedQueue, received)
	fmt.Fprintf(out, "\nEverything happened as expected.\n")
	return nil
}

// writeParked writes each parked message with its explanation headers.
func writeParked(out io.Writer, parked []demo.QueuedMessage) {
	for _, m := range parked {
		fmt.Fprintf(out, "\n  %s (%s) %s\n", m.MessageID, m.Type, m.Body)
		for _, k := range slices.Sorted(maps.Keys(m.Headers)) {
			if strings.HasPrefix(k, "x-streamgen-") {
				fmt.Fprintf(out, "    %-22s %s\n", k+":", m.Headers[k])
			}
		}
	}
}

// checkParked returns an error unless parked holds exactly the messages of
// want, each with a reason that starts as want says.
func checkParked(parked []demo.QueuedMessage, want map[string]string) error {
	var problems []string
	seen := map[string]bool{}
	for _, m := range parked {
		seen[m.MessageID] = true
		prefix, ok := want[m.MessageID]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s is parked, unexpectedly", m.MessageID))
		case !strings.HasPrefix(m.Headers[runtime.HeaderDeadLetterReason], prefix):
			problems = append(problems, fmt.Sprintf("%s is parked because %q, want %q", m.MessageID, m.Headers[runtime.HeaderDeadLetterReason], prefix))
		}
	}
	for _, id := range slices.Sorted(maps.Keys(want)) {
		if !seen[id] {
			problems = append(problems, fmt.Sprintf("%s is not parked", id))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("the parked messages are not what was expected: %s", strings.Join(problems, "; "))
	}
	return nil
}
