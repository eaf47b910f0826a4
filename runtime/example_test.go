package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// A handler returns an error or an Outcome; OutcomeOf shows what the
// runtime makes of an error, wrapped or not.
func Example_outcomes() {
	errCard := errors.New("card declined")
	for _, err := range []error{
		nil,
		errCard,
		runtime.RetryAfter(30*time.Second, errCard),
		fmt.Errorf("invoice 7: %w", runtime.DeadLetter(errCard)),
		runtime.Drop(errCard),
	} {
		fmt.Println(runtime.OutcomeOf(err))
	}
	fmt.Println(runtime.Retry().After(time.Minute))
	// Output:
	// ack
	// retry: card declined
	// retry after 30s: card declined
	// dead-letter: invoice 7: card declined
	// drop: card declined
	// retry after 1m0s
}

// Validate reports every rule a subscription breaks for the broker it runs
// on, naming the annotation key.
func ExampleSubscription_Validate() {
	jobs := &runtime.Subscription{Name: "jobs", RetryDelays: []time.Duration{10 * time.Second}, Handlers: []runtime.Handler{
		runtime.Handle("Job", runtime.Policy{MaxAttempts: 5}, func(context.Context, *struct{}, runtime.Metadata) runtime.Outcome {
			return runtime.Ack()
		}),
	}}
	err := jobs.Validate(runtime.ZeroMQ)
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var problem *runtime.ValidationError
		if errors.As(e, &problem) {
			fmt.Printf("%s: %s\n", problem.Key, problem.Msg)
		}
	}
	// Output:
	// retry_delay: retry_delay is for rabbitmq: on zeromq return runtime.RetryAfter(d, err) from the handler; remove retry_delay
	// max_attempts: max_attempts=5 needs a destination for the retry copies on zeromq: add out_retry=self (back into this bound queue) or out_retry=<queue>
}

// The App counts what became of each subscription's deliveries, in
// process; Stats reads the counters, as a test or a demo does. Exporting
// them is an Observer's work (runtime/promstream, runtime/otelstream).
func ExampleApp_Stats() {
	type Job struct {
		ID int `json:"id"`
	}
	jobs := &runtime.Subscription{Name: "jobs", Broker: runtime.ZeroMQ, Handlers: []runtime.Handler{
		runtime.Handle("Job", runtime.Policy{}, func(_ context.Context, job *Job, _ runtime.Metadata) runtime.Outcome {
			if job.ID == 3 {
				return runtime.DropNow()
			}
			return runtime.Ack()
		}),
	}}
	broker := streamtest.NewBroker(runtime.ZeroMQ, streamtest.NewClock(time.Time{}))
	app := runtime.NewApp("billing")
	app.Mount(broker, jobs)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- app.Run(ctx) }()
	<-app.Ready()
	for id := 1; id <= 3; id++ {
		_ = runtime.Publish(ctx, broker, runtime.Queue("jobs"), "Job", Job{ID: id})
	}
	_ = broker.Wait(ctx)
	stop()
	<-done
	for _, s := range app.Stats() {
		fmt.Printf("%s %s: delivered %d, acked %d, dropped %d\n", s.Broker, s.Subscription, s.Delivered, s.Acked, s.Dropped)
	}
	// Output:
	// zeromq jobs: delivered 3, acked 2, dropped 1
}

// Middleware wraps each handler call: the App's outermost, then the
// subscription's, each in the order given. Here the subscription's
// middleware forgives a failure the handler reports.
func ExampleMiddleware() {
	named := func(name string) runtime.Middleware {
		return func(ctx context.Context, msg any, md runtime.Metadata, next runtime.Next) runtime.Outcome {
			fmt.Println(name, "before")
			out := next(ctx, msg, md)
			fmt.Println(name, "after:", out)
			return out
		}
	}
	forgive := func(ctx context.Context, msg any, md runtime.Metadata, next runtime.Next) runtime.Outcome {
		out := next(ctx, msg, md)
		if out.Action() == runtime.ActionRetry {
			fmt.Println("forgiven:", out.Err())
			return runtime.Ack()
		}
		return out
	}
	jobs := &runtime.Subscription{Name: "jobs", Middleware: []runtime.Middleware{named("subscription"), forgive}, Handlers: []runtime.Handler{
		runtime.Handle("Job", runtime.Policy{}, func(context.Context, *struct{}, runtime.Metadata) runtime.Outcome {
			fmt.Println("handler")
			return runtime.Retry().Because(errors.New("flaky"))
		}),
	}}

	clock := streamtest.NewClock(time.Time{})
	broker := streamtest.NewBroker(runtime.RabbitMQ, clock)
	app := runtime.NewApp("billing", runtime.WithClock(clock), runtime.WithMiddleware(named("app")))
	app.Mount(broker, jobs)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- app.Run(ctx) }()
	<-app.Ready()
	_ = runtime.Publish(ctx, broker, runtime.Queue("jobs"), "Job", struct{}{})
	_ = broker.Wait(ctx)
	stop()
	<-done
	fmt.Println("verdict:", broker.Deliveries("jobs")[0].Verdict.Kind)
	// Output:
	// app before
	// subscription before
	// handler
	// forgiven: flaky
	// subscription after: ack
	// app after: ack
	// verdict: ack
}

// A batch handler fails some messages of its batch and handles the
// others: each failed message is retried or parked on its own, with its
// own error, and the others are acknowledged.
func ExampleBatchFailures() {
	type row struct {
		ID int `json:"id"`
	}
	rows := &runtime.Subscription{Name: "rows", BatchSize: 3, BatchWait: time.Hour, Handlers: []runtime.Handler{
		runtime.HandleBatch[row]("Row", runtime.Policy{MaxAttempts: 3, DeadLetter: "rows.dead"}, nil, func(ctx context.Context, rs []row) error {
			var failed runtime.BatchFailures
			for i, r := range rs {
				switch r.ID {
				case 2:
					failed.Fail(i, runtime.DeadLetter(errors.New("row 2 is malformed")))
				case 3:
					failed.Fail(i, errors.New("row 3 hit a lock"))
				}
			}
			return failed.Err()
		}),
	}}

	clock := streamtest.NewClock(time.Time{})
	broker := streamtest.NewBroker(runtime.RabbitMQ, clock)
	app := runtime.NewApp("rows", runtime.WithClock(clock))
	app.Mount(broker, rows)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- app.Run(ctx) }()
	<-app.Ready()
	for id := 1; id <= 3; id++ {
		_ = runtime.Publish(ctx, broker, runtime.Queue("rows"), "Row", row{ID: id}, runtime.WithMessageID(fmt.Sprintf("row-%d", id)))
	}
	_ = broker.Wait(ctx)
	stop()
	<-done
	verdicts := map[string]string{}
	for _, d := range broker.Deliveries("rows") {
		verdicts[d.MessageID] = strings.TrimSpace(d.Verdict.Kind.String() + " " + d.Verdict.Reason)
	}
	for id := 1; id <= 3; id++ {
		fmt.Printf("row-%d: %s\n", id, verdicts[fmt.Sprintf("row-%d", id)])
	}
	// Output:
	// row-1: ack
	// row-2: park dead-lettered by the handler: row 2 is malformed
	// row-3: retry row 3 hit a lock
}
