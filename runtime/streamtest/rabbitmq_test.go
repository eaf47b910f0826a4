package streamtest_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// A backoff ladder: attempt n waits in step min(n, steps), each step its own
// wait queue, and a copy returns to the queue when its step's TTL passes.
func TestRabbitMQLadderStepsWaitInTheirOwnWaitQueues(t *testing.T) {
	var rec calls
	h := streamtest.New(t, runtime.RabbitMQ)
	h.App().Mount(h.Broker(), &runtime.Subscription{
		Name:        "orders",
		RetryDelays: []time.Duration{time.Second, 10 * time.Second, time.Minute},
		Handlers: []runtime.Handler{runtime.Handle("Order", runtime.Policy{MaxAttempts: 5, DeadLetter: "orders.dead"},
			func(_ context.Context, _ *job, md runtime.Metadata) runtime.Outcome {
				rec.add(md)
				return runtime.Retry().Because(errJobFailed)
			})},
	})
	h.Start()
	h.Publish("orders", "Order", job{ID: 1}, runtime.WithMessageID("o-1"))
	h.Wait()

	// Each step: the copy sits in its wait queue until the TTL has passed.
	steps := []struct {
		queue string
		ttl   time.Duration
	}{
		{"orders.retry.1s", time.Second},
		{"orders.retry.10s", 10 * time.Second},
		{"orders.retry.1m", time.Minute},
		{"orders.retry.1m", time.Minute},
	}
	for i, s := range steps {
		waiting := h.Queue(s.queue)
		if len(waiting) != 1 || waiting[0].Headers[runtime.RetryCountHeader] != strconv.Itoa(i+1) {
			t.Fatalf("after attempt %d: %s holds %v, want one copy with retry count %d", i+1, s.queue, waiting, i+1)
		}
		h.Advance(s.ttl - time.Millisecond)
		if n := rec.len(); n != i+1 {
			t.Fatalf("%v before the TTL of %s: %d deliveries, want %d", time.Millisecond, s.queue, n, i+1)
		}
		h.Advance(time.Millisecond)
		if n := rec.len(); n != i+2 {
			t.Fatalf("at the TTL of %s: %d deliveries, want %d", s.queue, n, i+2)
		}
		if n := len(h.Queue(s.queue)); n != 0 && i < 3 && steps[i+1].queue != s.queue {
			t.Fatalf("%s still holds %d copies after they expired", s.queue, n)
		}
	}
	ds := h.Deliveries("orders")
	for i, s := range steps {
		if v := ds[i].Verdict; v.Kind != streamtest.VerdictRetry || v.Queue != s.queue || v.Delay != s.ttl {
			t.Errorf("delivery %d: verdict %v via %q after %v; want retry via %s after %v", i+1, v.Kind, v.Queue, v.Delay, s.queue, s.ttl)
		}
	}
	if v := ds[4].Verdict; v.Kind != streamtest.VerdictPark || v.Queue != "orders.dead" {
		t.Errorf("the fifth delivery's verdict is %v to %q, want park to orders.dead", v.Kind, v.Queue)
	}
	if dead := h.Queue("orders.dead"); len(dead) != 1 || dead[0].Headers[runtime.HeaderDeadLetterAttempts] != "5" {
		t.Errorf("orders.dead holds %v, want the message after 5 attempts", dead)
	}
	// The retry log names the wait queue and the delay applied.
	var retryLogs []string
	for _, r := range h.Logs().Find(slog.LevelInfo, "message will be retried") {
		retryLogs = append(retryLogs, r.Attr("via")+" "+r.Attr("delay"))
	}
	want := []string{"orders.retry.1s 1s", "orders.retry.10s 10s", "orders.retry.1m 1m0s", "orders.retry.1m 1m0s"}
	if !slices.Equal(retryLogs, want) {
		t.Errorf("retry log lines %v, want %v", retryLogs, want)
	}
}

// RetryAfter(d) on RabbitMQ picks the smallest step at least d long, or the
// longest step when none is.
func TestRabbitMQRetryAfterRoundsUpToALadderStep(t *testing.T) {
	for _, tc := range []struct {
		asked time.Duration
		queue string
		ttl   time.Duration
	}{
		{500 * time.Millisecond, "orders.retry.1s", time.Second},
		{5 * time.Second, "orders.retry.10s", 10 * time.Second},
		{10 * time.Second, "orders.retry.10s", 10 * time.Second},
		{time.Hour, "orders.retry.1m", time.Minute},
	} {
		t.Run(tc.asked.String(), func(t *testing.T) {
			var rec calls
			h := streamtest.New(t, runtime.RabbitMQ, streamtest.WithQuietLogs())
			h.App().Mount(h.Broker(), &runtime.Subscription{
				Name:        "orders",
				RetryDelays: []time.Duration{time.Second, 10 * time.Second, time.Minute},
				Handlers: []runtime.Handler{runtime.Handle("Order", runtime.Policy{MaxAttempts: 2},
					func(_ context.Context, _ *job, md runtime.Metadata) runtime.Outcome {
						rec.add(md)
						return runtime.Retry().After(tc.asked)
					})},
			})
			h.Start()
			h.Publish("orders", "Order", job{ID: 1})
			h.Wait()
			if n := len(h.Queue(tc.queue)); n != 1 {
				t.Fatalf("%s holds %d copies, want 1", tc.queue, n)
			}
			h.Advance(tc.ttl - time.Millisecond)
			if rec.len() != 1 {
				t.Fatalf("the copy came back before the TTL of %s", tc.queue)
			}
			h.Advance(time.Millisecond)
			if rec.len() != 2 {
				t.Fatalf("the copy did not come back after the TTL of %s", tc.queue)
			}
		})
	}
}

// Poison never reaches a handler and uses no retries: parked with a reason
// when there is a dead-letter queue, rejected without requeue when not.
func TestRabbitMQPoisonIsParkedOrRejected(t *testing.T) {
	poison := []struct {
		name   string
		msg    runtime.Message
		reason string
	}{
		{"oversize", runtime.Message{ID: "big", Type: "Job", Body: []byte(`{"id":1,"pad":"` + strings.Repeat("x", 64) + `"}`)}, "exceeds max_payload_bytes=32"},
		{"missing type", runtime.Message{ID: "untyped", Body: []byte(`{"id":1}`)}, "has no type"},
		{"unknown type", runtime.Message{ID: "unknown", Type: "Refund", Body: []byte(`{"id":1}`)}, `no handler for message type "Refund"`},
		{"undecodable", runtime.Message{ID: "garbled", Type: "Job", Body: []byte(`{"id":`)}, "does not decode into Job"},
	}
	for _, withDL := range []bool{true, false} {
		for _, p := range poison {
			t.Run(p.name+map[bool]string{true: " with dead letter", false: " without"}[withDL], func(t *testing.T) {
				var rec calls
				policy := runtime.Policy{MaxAttempts: 3}
				if withDL {
					policy.DeadLetter = "jobs.dead"
				}
				h := streamtest.New(t, runtime.RabbitMQ, streamtest.WithQuietLogs())
				h.App().Mount(h.Broker(), &runtime.Subscription{Name: "jobs", MaxPayloadBytes: 32, Handlers: []runtime.Handler{
					runtime.Handle("Job", policy, func(_ context.Context, _ *job, md runtime.Metadata) runtime.Outcome {
						rec.add(md)
						return runtime.Ack()
					})}})
				h.Start()
				if err := h.Broker().Publish(t.Context(), "jobs", p.msg); err != nil {
					t.Fatal(err)
				}
				h.Advance(time.Hour) // no retry may come of it
				if n := rec.len(); n != 0 {
					t.Fatalf("the handler was called %d times for poison", n)
				}
				ds := h.Deliveries("jobs")
				if len(ds) != 1 || !ds[0].Verdict.Poison || !strings.Contains(ds[0].Verdict.Reason, p.reason) {
					t.Fatalf("deliveries %+v, want one poison verdict with reason %q", ds, p.reason)
				}
				dead, rejected := h.Queue("jobs.dead"), h.Rejected("jobs")
				if withDL {
					if len(dead) != 1 || dead[0].ID != p.msg.ID || dead[0].Headers[runtime.HeaderDeadLetterPoison] != "true" ||
						!strings.Contains(dead[0].Headers[runtime.HeaderDeadLetterReason], p.reason) {
						t.Fatalf("jobs.dead holds %v, want %s marked poison with reason %q", dead, p.msg.ID, p.reason)
					}
					if len(rejected) != 0 {
						t.Errorf("rejected %v as well as parked", rejected)
					}
					requireWarning(t, h.Logs(), "message parked", "jobs", p.msg.ID, p.reason)
				} else {
					if len(rejected) != 1 || rejected[0].ID != p.msg.ID {
						t.Fatalf("rejected %v, want %s", rejected, p.msg.ID)
					}
					if len(dead) != 0 {
						t.Errorf("jobs.dead holds %v without being configured", dead)
					}
					requireWarning(t, h.Logs(), "message rejected without requeue", "jobs", p.msg.ID, p.reason)
				}
			})
		}
	}
}

// DeadLetterNow without a dead-letter queue rejects the message; with
// ack=auto a rejected message is simply gone (the broker already considered
// it delivered), so a broker-level dead-letter exchange would not get it,
// and Settle reports the reject that could not be carried out, as the
// adapter does.
func TestRabbitMQRejectDependsOnTheAckMode(t *testing.T) {
	for _, auto := range []bool{false, true} {
		t.Run(map[bool]string{false: "manual", true: "auto"}[auto], func(t *testing.T) {
			h := streamtest.New(t, runtime.RabbitMQ, streamtest.WithQuietLogs())
			h.App().Mount(h.Broker(), &runtime.Subscription{Name: "jobs", AutoAck: auto, Handlers: []runtime.Handler{
				runtime.Handle("Job", runtime.Policy{}, func(context.Context, *job, runtime.Metadata) runtime.Outcome {
					return runtime.DeadLetterNow().Because(errors.New("never"))
				})}})
			h.Start()
			h.Publish("jobs", "Job", job{ID: 1})
			h.Wait()
			ds := h.Deliveries("jobs")
			if len(ds) != 1 || ds[0].Verdict.Kind != streamtest.VerdictReject {
				t.Fatalf("deliveries %+v, want one rejected", ds)
			}
			want := map[bool]int{false: 1, true: 0}[auto]
			if n := len(h.Rejected("jobs")); n != want {
				t.Errorf("%d messages recorded as nacked without requeue, want %d", n, want)
			}
			st := h.App().Stats()[0]
			if !auto && (ds[0].Err != nil || st.Rejected != 1 || st.Failed != 0) {
				t.Errorf("ack=manual: err %v, counters %+v; want rejected and counted so", ds[0].Err, st)
			}
			if auto && (ds[0].Err == nil || !strings.Contains(ds[0].Err.Error(), "cannot be rejected") || st.Rejected != 0 || st.Failed != 1) {
				t.Errorf("ack=auto: err %v, counters %+v; want the reject reported as failed", ds[0].Err, st)
			}
		})
	}
}

// ack=auto still parks poison on the dead-letter queue.
func TestRabbitMQAutoAckParksPoison(t *testing.T) {
	h := streamtest.New(t, runtime.RabbitMQ, streamtest.WithQuietLogs())
	h.App().Mount(h.Broker(), &runtime.Subscription{Name: "jobs", AutoAck: true, Handlers: []runtime.Handler{
		runtime.Handle("Job", runtime.Policy{DeadLetter: "jobs.dead"}, func(context.Context, *job, runtime.Metadata) runtime.Outcome {
			return runtime.Ack()
		})}})
	h.Start()
	if err := h.Broker().Publish(t.Context(), "jobs", runtime.Message{ID: "p", Type: "Job", Body: []byte("{")}); err != nil {
		t.Fatal(err)
	}
	h.Wait()
	if dead := h.Queue("jobs.dead"); len(dead) != 1 || dead[0].ID != "p" {
		t.Fatalf("jobs.dead holds %v, want the poison message", dead)
	}
}

// A retry count that is not a number is poison, on RabbitMQ as on ZeroMQ:
// no handler sees it, and it is parked with the reason, each one logged.
func TestRabbitMQMalformedRetryCountIsPoison(t *testing.T) {
	var rec calls
	h := streamtest.New(t, runtime.RabbitMQ, streamtest.WithQuietLogs())
	h.App().Mount(h.Broker(), &runtime.Subscription{Name: "jobs", RetryDelays: []time.Duration{time.Second}, Handlers: []runtime.Handler{
		runtime.Handle("Job", runtime.Policy{MaxAttempts: 2, DeadLetter: "jobs.dead"}, func(_ context.Context, _ *job, md runtime.Metadata) runtime.Outcome {
			rec.add(md)
			return runtime.Retry()
		})}})
	h.Start()
	h.Publish("jobs", "Job", job{ID: 1}, runtime.WithMessageID("odd"), runtime.WithHeader(runtime.RetryCountHeader, "many"))
	h.Publish("jobs", "Job", job{ID: 2}, runtime.WithMessageID("odder"), runtime.WithHeader(runtime.RetryCountHeader, "-1"))
	h.Advance(time.Second)
	if mds := rec.list(); len(mds) != 0 {
		t.Fatalf("handler calls %+v, want none", mds)
	}
	dead := h.Queue("jobs.dead")
	if len(dead) != 2 || dead[0].ID != "odd" || dead[1].ID != "odder" || dead[0].Headers[runtime.HeaderDeadLetterPoison] != "true" {
		t.Fatalf("jobs.dead holds %+v, want both, as poison", dead)
	}
	requireWarning(t, h.Logs(), "message parked", "jobs", "odd", "retry count header x-retry-count is unreadable")
	requireWarning(t, h.Logs(), "message parked", "jobs", "odder", "retry count header x-retry-count is unreadable")
}

// On RabbitMQ the wait queues belong to the broker: a copy waiting there at
// shutdown is kept, and returns to its queue when the TTL passes.
func TestRabbitMQWaitQueueOutlivesTheApp(t *testing.T) {
	h := streamtest.New(t, runtime.RabbitMQ, streamtest.WithQuietLogs())
	h.App().Mount(h.Broker(), &runtime.Subscription{Name: "jobs", RetryDelays: []time.Duration{time.Minute}, Handlers: []runtime.Handler{
		runtime.Handle("Job", runtime.Policy{MaxAttempts: 3}, func(context.Context, *job, runtime.Metadata) runtime.Outcome {
			return runtime.Retry()
		})}})
	h.Start()
	h.Publish("jobs", "Job", job{ID: 1}, runtime.WithMessageID("kept"))
	h.Wait()
	if err := h.Stop(); err != nil {
		t.Fatal(err)
	}
	if n := h.Broker().Lost(); n != 0 {
		t.Errorf("Lost() = %d on RabbitMQ, want 0", n)
	}
	if w := h.Queue("jobs.retry"); len(w) != 1 {
		t.Fatalf("jobs.retry holds %d copies after the stop, want 1", len(w))
	}
	h.Advance(time.Minute)
	if q := h.Queue("jobs"); len(q) != 1 || q[0].ID != "kept" || q[0].Headers[runtime.RetryCountHeader] != "1" {
		t.Fatalf("after the TTL, jobs holds %v, want the copy with retry count 1 waiting for a consumer", q)
	}
}

// A retry count above the cap makes the delivery the last attempt, as on
// the real adapter: attempt 3 of 3, then parked.
func TestRabbitMQHugeRetryCountIsParked(t *testing.T) {
	var rec calls
	h := streamtest.New(t, runtime.RabbitMQ, streamtest.WithQuietLogs())
	h.App().Mount(h.Broker(), &runtime.Subscription{Name: "jobs", RetryDelays: []time.Duration{time.Second}, Handlers: []runtime.Handler{
		runtime.Handle("Job", runtime.Policy{MaxAttempts: 3, DeadLetter: "jobs.dead"}, func(_ context.Context, _ *job, md runtime.Metadata) runtime.Outcome {
			rec.add(md)
			return runtime.Retry()
		})}})
	h.Start()
	h.Publish("jobs", "Job", job{ID: 1}, runtime.WithMessageID("huge"), runtime.WithHeader(runtime.RetryCountHeader, "9223372036854775807"))
	h.Wait()
	want := 3 // the last attempt, never one beyond max_attempts
	if mds := rec.list(); len(mds) != 1 || mds[0].Attempt != want {
		t.Fatalf("handler calls %+v, want one, attempt %d", mds, want)
	}
	if kinds := verdictKinds(h.Deliveries("jobs")); !slices.Equal(kinds, []streamtest.VerdictKind{streamtest.VerdictPark}) {
		t.Fatalf("verdicts %v, want [park]", kinds)
	}
	if w := h.Queue("jobs.retry"); len(w) != 0 {
		t.Errorf("jobs.retry holds %v, want no retry copy", w)
	}
	if dead := h.Queue("jobs.dead"); len(dead) != 1 || dead[0].Headers[runtime.HeaderDeadLetterAttempts] != strconv.Itoa(want) {
		t.Errorf("jobs.dead holds %v, want the message with %d attempts", dead, want)
	}
}
