package adapter_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/adapter"
)

// printer is the smallest Transport a broker with acknowledgements needs:
// it says what the Consumer has it do.
type printer struct{}

func (printer) Send(_ context.Context, _ *adapter.Delivery, cp *adapter.Copy, done func(error)) {
	fmt.Printf("  send %s to %s with %v\n", cp.Kind, cp.Queue, cp.Set[0])
	done(nil)
}
func (printer) Ack(context.Context, *adapter.Delivery) error    { fmt.Println("  ack"); return nil }
func (printer) Reject(context.Context, *adapter.Delivery) error { fmt.Println("  reject"); return nil }
func (printer) Requeue(context.Context, *adapter.Delivery) error {
	fmt.Println("  requeue")
	return nil
}
func (printer) Release(context.Context, *adapter.Delivery) error {
	fmt.Println("  release")
	return nil
}

// An adapter hands each delivery to the Consumer, which decides and builds
// everything: here the same failing handler is retried through the wait
// queue while attempts remain, then parked.
func Example() {
	type Job struct {
		ID int `json:"id"`
	}
	jobs := &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
		runtime.Handle("Job", runtime.Policy{MaxAttempts: 2, DeadLetter: "jobs.dead"},
			func(ctx context.Context, job *Job, md runtime.Metadata) runtime.Outcome {
				return runtime.OutcomeOf(errors.New("the job failed"))
			}),
	}}
	c := adapter.NewConsumer(jobs, runtime.Env{}, adapter.Rules{Kind: runtime.RabbitMQ}, printer{})
	for _, count := range []string{"", "1"} {
		d := &adapter.Delivery{MessageID: "m-1", Type: "Job", Body: []byte(`{"id":1}`),
			Headers: map[string]string{runtime.RetryCountHeader: count}}
		v, _ := c.Handle(context.Background(), d)
		fmt.Printf("attempt %d: %s (%s)\n", d.Attempt(), v.Kind, v.Reason)
	}
	// Output:
	//   send retry copy to jobs.retry with {x-retry-count 1}
	//   ack
	// attempt 1: retry (the job failed)
	//   send dead letter to jobs.dead with {x-streamgen-attempts 2}
	//   ack
	// attempt 2: park (failed on attempt 2 of 2: the job failed)
}
