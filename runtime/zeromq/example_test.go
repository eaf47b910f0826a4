package zeromq_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/zeromq"
)

// A job worker that retries a failed job into its own bound queue, at most
// three deliveries. The handler and its policy are what a generated Mount
// builds from //stream:subscriber "jobs" broker=zeromq max_attempts=3
// out_retry=self.
func Example() {
	type Job struct {
		ID int `json:"id"`
	}
	done := make(chan struct{})
	work := runtime.Handle("Job", runtime.Policy{MaxAttempts: 3, OutRetry: "jobs"},
		func(_ context.Context, job *Job, md runtime.Metadata) runtime.Outcome {
			fmt.Printf("job %d, attempt %d of %d\n", job.ID, md.Attempt, md.MaxAttempts)
			if md.Attempt < 3 {
				return runtime.Retry().After(10 * time.Millisecond).Because(errors.New("not yet"))
			}
			close(done)
			return runtime.Ack()
		})

	zq := zeromq.New(zeromq.Queue("jobs", zeromq.Bind("tcp://127.0.0.1:0")))
	app := runtime.NewApp("billing")
	app.Mount(zq, &runtime.Subscription{Name: "jobs", Broker: runtime.ZeroMQ, Handlers: []runtime.Handler{work}})

	ctx, stop := context.WithCancel(context.Background())
	stopped := make(chan error)
	go func() { stopped <- app.Run(ctx) }()
	<-app.Ready()

	if err := runtime.Publish(ctx, zq, runtime.Queue("jobs"), "Job", Job{ID: 7}); err != nil {
		fmt.Println(err)
	}
	<-done
	stop()
	fmt.Println("stopped:", <-stopped)
	// Output:
	// job 7, attempt 1 of 3
	// job 7, attempt 2 of 3
	// job 7, attempt 3 of 3
	// stopped: <nil>
}

// A ventilator hands each job to one of the workers that dial in.
func ExampleVentilator() {
	type Task struct {
		N int `json:"n"`
	}
	// The sending service binds the PUSH side (port 0: any free port).
	vent := zeromq.New(zeromq.Queue("tasks", zeromq.Ventilator("tcp://127.0.0.1:0")))
	if err := vent.Listen(); err != nil {
		fmt.Println(err)
		return
	}
	defer vent.Shutdown(context.Background())

	// A worker service dials it.
	handled := make(chan int)
	worker := runtime.NewApp("worker")
	zq := zeromq.New(zeromq.Queue("tasks", zeromq.Dial(vent.Addr("tasks"))))
	worker.Mount(zq, &runtime.Subscription{Name: "tasks", Handlers: []runtime.Handler{
		runtime.Handle("Task", runtime.Policy{}, func(_ context.Context, t *Task, _ runtime.Metadata) runtime.Outcome {
			handled <- t.N
			return runtime.Ack()
		}),
	}})
	ctx, stop := context.WithCancel(context.Background())
	stopped := make(chan error)
	go func() { stopped <- worker.Run(ctx) }()
	<-worker.Ready()

	// Publish waits for a worker to be connected.
	if err := runtime.Publish(ctx, vent, runtime.Queue("tasks"), "Task", Task{N: 1}); err != nil {
		fmt.Println(err)
	}
	fmt.Println("handled task", <-handled)
	stop()
	<-stopped
	// Output:
	// handled task 1
}
