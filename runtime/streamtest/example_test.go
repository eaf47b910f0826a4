package streamtest_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// The harness needs a *testing.T; a Broker and a Clock do the same work
// without one. Here the reference's job worker fails every time: five
// deliveries 30 seconds apart, then the message is dropped.
func Example() {
	type Job struct {
		ID uint64 `json:"id"`
	}
	jobs := &runtime.Subscription{Name: "jobs", Broker: runtime.ZeroMQ, Handlers: []runtime.Handler{
		runtime.Handle("Job", runtime.Policy{MaxAttempts: 5, OutRetry: "jobs"},
			func(ctx context.Context, job *Job, md runtime.Metadata) runtime.Outcome {
				return runtime.OutcomeOf(runtime.RetryAfter(30*time.Second, errors.New("the job failed")))
			}),
	}}

	clock := streamtest.NewClock(time.Time{})
	broker := streamtest.NewBroker(runtime.ZeroMQ, clock)
	app := runtime.NewApp("billing", runtime.WithClock(clock))
	app.Mount(broker, jobs)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- app.Run(ctx) }()
	<-app.Ready()

	_ = runtime.Publish(ctx, broker, runtime.Queue("jobs"), "Job", Job{ID: 1})
	for range 5 {
		_ = broker.Advance(ctx, 30*time.Second)
	}
	stop()
	fmt.Println("run:", <-done)

	for _, d := range broker.Deliveries("jobs") {
		fmt.Printf("%s attempt %d, retry count %d: %s\n", d.Time.Format(time.TimeOnly), d.Attempt, d.RetryCount(), d.Verdict.Kind)
	}
	// Output:
	// run: <nil>
	// 00:00:00 attempt 1, retry count 0: retry
	// 00:00:30 attempt 2, retry count 1: retry
	// 00:01:00 attempt 3, retry count 2: retry
	// 00:01:30 attempt 4, retry count 3: retry
	// 00:02:00 attempt 5, retry count 4: drop
}

// A Clock alone: timers fire in due order, each at its due time.
func ExampleClock() {
	clock := streamtest.NewClock(time.Time{})
	for _, d := range []time.Duration{3 * time.Second, time.Second, 2 * time.Second} {
		clock.AfterFunc(d, func() { fmt.Println("fired", d, "at", clock.Now().Format(time.TimeOnly)) })
	}
	clock.Advance(2 * time.Second)
	fmt.Println("pending:", clock.Pending())
	clock.Advance(time.Minute)
	fmt.Println("now:", clock.Now().Format(time.TimeOnly))
	// Output:
	// fired 1s at 00:00:01
	// fired 2s at 00:00:02
	// pending: 1
	// fired 3s at 00:00:03
	// now: 00:01:02
}
