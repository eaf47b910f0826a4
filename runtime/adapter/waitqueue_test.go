package adapter_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/adapter"
)

func TestWaitQueueFor(t *testing.T) {
	retrying := []runtime.Handler{runtime.Handle("Job", runtime.Policy{MaxAttempts: 9}, func(context.Context, *struct{}, runtime.Metadata) runtime.Outcome { return runtime.Ack() })}
	single := &runtime.Subscription{Name: "jobs", RetryDelays: []time.Duration{30 * time.Second}, Handlers: retrying}
	ladder := &runtime.Subscription{Name: "jobs", RetryDelays: []time.Duration{time.Second, 10 * time.Second, time.Minute}, Handlers: retrying}
	for _, tc := range []struct {
		name      string
		sub       *runtime.Subscription
		attempt   int
		requested time.Duration
		want      string
	}{
		{"single delay, attempt 1", single, 1, 0, "jobs.retry"},
		{"single delay, attempt 7", single, 7, 0, "jobs.retry"},
		{"single delay, a longer delay asked", single, 1, time.Hour, "jobs.retry"},
		{"ladder, attempt 1", ladder, 1, 0, "jobs.retry.1s"},
		{"ladder, attempt 2", ladder, 2, 0, "jobs.retry.10s"},
		{"ladder, attempt 3", ladder, 3, 0, "jobs.retry.1m"},
		{"ladder, past the last step", ladder, 8, 0, "jobs.retry.1m"},
		{"ladder, attempt 0 counts as 1", ladder, 0, 0, "jobs.retry.1s"},
		{"asked for less than the first step", ladder, 3, 200 * time.Millisecond, "jobs.retry.1s"},
		{"asked for exactly a step", ladder, 1, 10 * time.Second, "jobs.retry.10s"},
		{"asked for between steps rounds up", ladder, 1, 11 * time.Second, "jobs.retry.1m"},
		{"asked for more than the longest", ladder, 1, time.Hour, "jobs.retry.1m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := adapter.WaitQueueFor(adapter.WaitQueues(tc.sub), tc.attempt, tc.requested); got.Name != tc.want {
				t.Errorf("WaitQueueFor(WaitQueues(), %d, %v) = %s, want %s", tc.attempt, tc.requested, got.Name, tc.want)
			}
		})
	}
}

// BenchmarkWaitQueueFor picks from wait queues built once, as the Consumer
// does on every RabbitMQ retry: it should allocate nothing.
func BenchmarkWaitQueueFor(b *testing.B) {
	ladder := &runtime.Subscription{Name: "jobs", RetryDelays: []time.Duration{time.Second, 10 * time.Second, time.Minute},
		Handlers: []runtime.Handler{runtime.Handle("Job", runtime.Policy{MaxAttempts: 9}, func(context.Context, *struct{}, runtime.Metadata) runtime.Outcome { return runtime.Ack() })}}
	qs := adapter.WaitQueues(ladder)
	b.ReportAllocs()
	for b.Loop() {
		adapter.WaitQueueFor(qs, 2, 0)
		adapter.WaitQueueFor(qs, 1, 11*time.Second)
	}
}

// A retry_delay ladder declares one wait queue per step; attempt n waits in
// step min(n, steps), and a requested delay rounds up to a step.
func ExampleWaitQueueFor() {
	orders := &runtime.Subscription{Name: "orders", RetryDelays: []time.Duration{time.Second, 10 * time.Second, time.Minute}, Handlers: []runtime.Handler{
		runtime.Handle("Order", runtime.Policy{MaxAttempts: 5}, func(context.Context, *struct{}, runtime.Metadata) runtime.Outcome {
			return runtime.Ack()
		}),
	}}
	for _, q := range adapter.WaitQueues(orders) {
		fmt.Println(q.Name, q.TTL)
	}
	for attempt := 1; attempt <= 4; attempt++ {
		fmt.Printf("attempt %d waits in %s\n", attempt, adapter.WaitQueueFor(adapter.WaitQueues(orders), attempt, 0).Name)
	}
	fmt.Println("RetryAfter(5s) waits in", adapter.WaitQueueFor(adapter.WaitQueues(orders), 1, 5*time.Second).Name)
	// Output:
	// orders.retry.1s 1s
	// orders.retry.10s 10s
	// orders.retry.1m 1m0s
	// attempt 1 waits in orders.retry.1s
	// attempt 2 waits in orders.retry.10s
	// attempt 3 waits in orders.retry.1m
	// attempt 4 waits in orders.retry.1m
	// RetryAfter(5s) waits in orders.retry.10s
}
