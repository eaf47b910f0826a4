package streamtest_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// retrying mounts a quorum subscription "orders" whose handler answers
// each attempt with outcome(attempt), recording every call.
func retrying(h *streamtest.Harness, rec *calls, retry runtime.RetryPath, outcome func(attempt int) runtime.Outcome) {
	h.App().Mount(h.Broker(), &runtime.Subscription{
		Name:        "orders",
		QueueType:   runtime.QuorumQueue,
		Retry:       retry,
		RetryDelays: []time.Duration{5 * time.Second},
		Handlers: []runtime.Handler{runtime.Handle("Order", runtime.Policy{MaxAttempts: 3, DeadLetter: "orders.dead"},
			func(_ context.Context, _ *job, md runtime.Metadata) runtime.Outcome {
				rec.add(md)
				return outcome(md.Attempt)
			})},
	})
}

// On RabbitMQ 4.3 a quorum subscription's queue waits out its retries
// itself: no copy, no wait queue, the attempts counted exactly, and the
// dead letter explained as on the wait-queue path.
func TestBrokerRetryOnRabbitMQ43(t *testing.T) {
	var rec calls
	h := streamtest.New(t, runtime.RabbitMQ, streamtest.WithRabbitMQVersion(4, 3))
	retrying(h, &rec, runtime.RetryAuto, func(int) runtime.Outcome { return runtime.Retry().Because(errJobFailed) })
	h.Start()
	h.Publish("orders", "Order", job{ID: 1}, runtime.WithMessageID("o-1"))
	h.Wait()
	for i, at := range []time.Duration{5 * time.Second, 5 * time.Second} {
		if n := len(h.Queue("orders.retry")); n != 0 {
			t.Fatalf("after attempt %d the wait queue holds %d copies, want none", i+1, n)
		}
		h.Advance(at - time.Millisecond)
		if n := rec.len(); n != i+1 {
			t.Fatalf("before the retry delay passed: %d calls, want %d", n, i+1)
		}
		h.Advance(time.Millisecond)
		if n := rec.len(); n != i+2 {
			t.Fatalf("once the retry delay passed: %d calls, want %d", n, i+2)
		}
	}
	var attempts []int
	for _, md := range rec.list() {
		attempts = append(attempts, md.Attempt)
	}
	if !slices.Equal(attempts, []int{1, 2, 3}) {
		t.Errorf("attempts %v, want 1, 2, 3", attempts)
	}
	ds := h.Deliveries("orders")
	for i := range 2 {
		if v := ds[i].Verdict; v.Kind != streamtest.VerdictRetry || !v.ByBroker || v.Queue != "" || v.Delay != 5*time.Second {
			t.Errorf("delivery %d: verdict %+v; want a retry the queue waits out for 5s", i+1, v)
		}
	}
	dead := h.Queue("orders.dead")
	if len(dead) != 1 || dead[0].Headers[runtime.HeaderDeadLetterAttempts] != "3" ||
		dead[0].Headers[runtime.HeaderDeadLetterReason] != "failed on attempt 3 of 3: "+errJobFailed.Error() {
		t.Fatalf("dead letters %+v, want o-1 after 3 attempts with its reason", dead)
	}
	if got := dead[0].Headers[runtime.RetryCountHeader]; got != "" {
		t.Errorf("the dead letter carries retry count %q, want none", got)
	}
	if logs := h.Logs().Find(0, "message will be retried"); len(logs) != 2 || logs[0].Attr("via") != "the queue's delayed retry" {
		t.Errorf("retry log lines %v, want two via the queue's delayed retry", logs)
	}
}

// Where the queue cannot wait out a retry itself, or the subscription
// chose wait queues, retries are copies through the wait queue, as before.
func TestBrokerRetryFallsBackToWaitQueues(t *testing.T) {
	for _, c := range []struct {
		name    string
		retry   runtime.RetryPath
		version [2]int
	}{
		{"RabbitMQ 3.x", runtime.RetryAuto, [2]int{3, 13}},
		{"RabbitMQ 4.2", runtime.RetryBroker, [2]int{4, 2}},
		{"retry=queue on 4.3", runtime.RetryQueue, [2]int{4, 3}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var rec calls
			h := streamtest.New(t, runtime.RabbitMQ, streamtest.WithRabbitMQVersion(c.version[0], c.version[1]))
			retrying(h, &rec, c.retry, func(int) runtime.Outcome { return runtime.Retry().Because(errJobFailed) })
			h.Start()
			h.Publish("orders", "Order", job{ID: 1}, runtime.WithMessageID("o-1"))
			h.Wait()
			if w := h.Queue("orders.retry"); len(w) != 1 || w[0].Headers[runtime.RetryCountHeader] != "1" {
				t.Fatalf("the wait queue holds %+v, want the retry copy", w)
			}
			h.Advance(5 * time.Second)
			h.Advance(5 * time.Second)
			if n := rec.len(); n != 3 {
				t.Fatalf("%d calls, want 3", n)
			}
			if v := h.Deliveries("orders")[0].Verdict; v.ByBroker || v.Queue != "orders.retry" {
				t.Errorf("first verdict %+v, want a copy to orders.retry", v)
			}
		})
	}
}

// A handler's own delay (RetryAfter) picks among the subscription's delays
// as on the wait-queue path: with one delay, the queue's, so the message
// is handed back too. A copy that waited in the wait queue (sent before
// the subscription moved to the queue's own retry) goes on counting from
// its retry count.
func TestBrokerRetryKeepsCountingAcrossAWaitQueue(t *testing.T) {
	var rec calls
	h := streamtest.New(t, runtime.RabbitMQ, streamtest.WithRabbitMQVersion(4, 3))
	h.App().Mount(h.Broker(), &runtime.Subscription{
		Name:        "orders",
		QueueType:   runtime.QuorumQueue,
		RetryDelays: []time.Duration{5 * time.Second},
		Handlers: []runtime.Handler{runtime.Handle("Order", runtime.Policy{MaxAttempts: 4, DeadLetter: "orders.dead"},
			func(_ context.Context, _ *job, md runtime.Metadata) runtime.Outcome {
				rec.add(md)
				switch md.Attempt {
				case 2:
					return runtime.Retry().Because(errJobFailed)
				case 3:
					return runtime.Retry().After(time.Minute).Because(errJobFailed)
				}
				return runtime.Ack()
			})},
	})
	h.Start()
	// A copy of attempt 1, as the wait-queue path left it.
	h.Publish("orders", "Order", job{ID: 1}, runtime.WithMessageID("o-1"), runtime.WithHeader(runtime.RetryCountHeader, "1"))
	h.Wait()
	h.Advance(5 * time.Second) // attempt 3 asks for a minute: the queue's 5s
	h.Advance(5 * time.Second)
	if w := h.Queue("orders.retry"); len(w) != 0 {
		t.Errorf("the wait queue holds %+v, want nothing", w)
	}
	var got []string
	for i, d := range h.Deliveries("orders") {
		got = append(got, fmt.Sprintf("%d:%d:%v:%v:%v", i+1, d.Attempt, d.Verdict.Kind, d.Verdict.ByBroker, d.Verdict.Delay))
	}
	want := []string{"1:2:retry:true:5s", "2:3:retry:true:5s", "3:4:ack:false:0s"}
	if !slices.Equal(got, want) {
		t.Errorf("deliveries %v, want %v", got, want)
	}
}

// Subscription.Validate refuses retry=broker where the queue can never
// wait out a retry itself.
func TestBrokerRetryRefusedWhereItCannotWork(t *testing.T) {
	handler := runtime.Handle("Order", runtime.Policy{MaxAttempts: 3}, func(context.Context, *job, runtime.Metadata) runtime.Outcome { return runtime.Ack() })
	for _, c := range []struct {
		name string
		sub  runtime.Subscription
		want string
	}{
		{"classic", runtime.Subscription{Name: "a", Retry: runtime.RetryBroker}, "retry=broker needs a quorum queue"},
		{"ladder", runtime.Subscription{Name: "a", Retry: runtime.RetryBroker, QueueType: runtime.QuorumQueue, RetryDelays: []time.Duration{time.Second, time.Minute}}, "retry=broker takes one retry_delay"},
		{"unknown", runtime.Subscription{Name: "a", Retry: "later", QueueType: runtime.QuorumQueue}, "retry=later is not a retry path"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := c.sub
			s.Handlers = []runtime.Handler{handler}
			err := s.Validate(runtime.RabbitMQ)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Validate: %v; want an error saying %q", err, c.want)
			}
		})
	}
}
