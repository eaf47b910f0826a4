// Command billing-demo runs the billing service of package billing on
// loopback ZeroMQ sockets (ephemeral ports, no server to install), sends it
// jobs and invoices, and tells what happens as it happens: each delivery
// with its attempt out of the maximum, each retry with its delay, each drop
// and each parked message with its reason. It ends with the service's
// counters per subscription.
//
// The service runs on a clock 100 times faster than the wall clock, so a
// retry "in 30s" takes 0.3 seconds and the demo is over in a few seconds.
// It exits with status 1 when what it expects does not happen, so it is a
// smoke test too. make demo runs it.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/streamgen/streamgen/examples/billing"
	"github.com/streamgen/streamgen/examples/internal/demo"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/zeromq"
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
	// speed is how many times faster than the wall clock the service's
	// clock runs.
	speed int
	// timeout bounds the real time the demo waits for each step.
	timeout time.Duration
	steps   []demo.Step
}

func defaultSettings() settings {
	return settings{speed: 100, timeout: 8 * time.Second, steps: defaultSteps()}
}

func defaultSteps() []demo.Step {
	// Each step waits until its messages are settled, so the lines of one
	// message never mix with another's and every run tells the same story.
	jobs := runtime.SubscriptionStats{Delivered: 1 + 3, Acked: 2, Retried: 2}
	jobsThen := runtime.SubscriptionStats{Delivered: 1 + 3 + 5, Acked: 2, Retried: 2 + 4, Dropped: 1}
	return []demo.Step{
		{
			Title: "Two jobs: job-1 succeeds at once; job-2 fails twice, so it is retried twice, and then succeeds.",
			Send: func(ctx context.Context, p runtime.Publisher) error {
				if err := billing.PublishJob(ctx, p, billing.Job{ID: 1, AmountCents: 1250}, runtime.WithMessageID("job-1")); err != nil {
					return err
				}
				return billing.PublishJob(ctx, p, billing.Job{ID: 2, AmountCents: 800, FailAttempts: 2}, runtime.WithMessageID("job-2"))
			},
			Want: map[string]runtime.SubscriptionStats{"jobs": jobs},
		},
		{
			Title: "job-3 always fails: it gets five deliveries in all, then it is dropped.",
			Send: func(ctx context.Context, p runtime.Publisher) error {
				return billing.PublishJob(ctx, p, billing.Job{ID: 3, AmountCents: 4200, FailAttempts: 99}, runtime.WithMessageID("job-3"))
			},
			Want: map[string]runtime.SubscriptionStats{"jobs": jobsThen},
		},
		{
			Title: "Two invoices: inv-1 is sent; inv-2 has no amount, so it is parked on invoices.dead, where Park reads it.",
			Send: func(ctx context.Context, p runtime.Publisher) error {
				if err := billing.PublishInvoiceToInvoices(ctx, p, billing.Invoice{ID: 1, AmountCents: 1250}, runtime.WithMessageID("inv-1")); err != nil {
					return err
				}
				return billing.PublishInvoiceToInvoices(ctx, p, billing.Invoice{ID: 2}, runtime.WithMessageID("inv-2"))
			},
			Want: map[string]runtime.SubscriptionStats{
				"jobs":          jobsThen,
				"invoices":      {Delivered: 2, Acked: 1, Parked: 1},
				"invoices.dead": {Delivered: 1, Acked: 1},
			},
		},
	}
}

// run runs the demo, writing its account to out. It returns an error when
// the service fails or the counters do not end as the steps expect.
func run(ctx context.Context, out io.Writer, s settings) error {
	clock := demo.NewScaledClock(s.speed)
	// ZeroMQ has no acknowledgements; the runtime says so once per
	// subscription, which the reader of the demo can do without.
	narrator := demo.NewNarrator(out, clock.Now).Hiding("ZeroMQ cannot acknowledge").WithDeadLetterQueues("invoices.dead")
	logger := slog.New(narrator)
	previous := slog.Default()
	slog.SetDefault(logger) // the handlers log through slog.Default
	defer slog.SetDefault(previous)

	narrator.Printf("streamgen demo: the billing service (examples/billing) on ZeroMQ over loopback.\n")
	narrator.Printf("Its clock runs %d× fast: a retry in %v takes %v here. Times below are on that clock,\n", clock.Factor(), billing.Backoff, clock.Real(billing.Backoff))
	narrator.Printf("so the machine's own small delays show %d× larger too. Each line is one log record of\n", clock.Factor())
	narrator.Printf("the runtime or of a handler, told as a sentence.\n\n")

	zq := zeromq.New(
		zeromq.Queue("jobs", zeromq.Bind("tcp://127.0.0.1:0")),
		zeromq.Queue("invoices", zeromq.Bind("tcp://127.0.0.1:0")),
		zeromq.Queue("invoices.dead", zeromq.Bind("tcp://127.0.0.1:0")),
	)
	app := runtime.NewApp("billing", runtime.WithLogger(logger), runtime.WithClock(clock), runtime.WithShutdownTimeout(5*time.Second))
	billing.Mount(app, zq)

	svc, err := demo.Start(ctx, app)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted: %w", ctx.Err())
		}
		return fmt.Errorf("the service did not start: %w", err)
	}
	defer svc.Stop()

	narrator.Printf("\nThe service is up:\n")
	for _, q := range []struct{ name, policy string }{
		{"jobs", fmt.Sprintf("max_attempts=5 out_retry=self; a failed job returns runtime.RetryAfter(%v, err)", billing.Backoff)},
		{"invoices", "dead_letter=invoices.dead"},
		{"invoices.dead", "read by Park"},
	} {
		narrator.Printf("  %-14s %-22s %s\n", q.name, zq.Addr(q.name), q.policy)
	}

	if err := demo.Play(ctx, narrator, zq, app.Stats, s.steps, s.timeout); err != nil {
		return err
	}

	narrator.Printf("\nStopping the service.\n")
	if err := svc.Stop(); err != nil {
		return fmt.Errorf("the service stopped with an error: %w", err)
	}
	stats := app.Stats()
	fmt.Fprintf(out, "\nWhat the service counted (app.Stats):\n\n")
	if err := demo.WriteSummary(out, stats); err != nil {
		return err
	}
	if len(s.steps) > 0 {
		if err := demo.Check(stats, s.steps[len(s.steps)-1].Want); err != nil {
			return fmt.Errorf("after the stop: %w", err)
		}
	}
	fmt.Fprintf(out, "\nEverything happened as expected.\n")
	return nil
}
