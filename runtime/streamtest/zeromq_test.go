package streamtest_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// A message without a type reaches the one handler of a ZeroMQ
// subscription; with two handlers nobody can tell, so it is poison.
func TestZeroMQMessageWithoutTypeNeedsASingleHandler(t *testing.T) {
	var jobs calls
	h := streamtest.New(t, runtime.ZeroMQ, streamtest.WithQuietLogs())
	handler := runtime.Handle("Job", runtime.Policy{DeadLetter: "dead"}, func(_ context.Context, _ *job, md runtime.Metadata) runtime.Outcome {
		jobs.add(md)
		return runtime.Ack()
	})
	h.App().Mount(h.Broker(),
		&runtime.Subscription{Name: "single", Handlers: []runtime.Handler{handler}},
		&runtime.Subscription{Name: "double", Handlers: []runtime.Handler{handler,
			runtime.Handle("Invoice", runtime.Policy{}, func(context.Context, *invoice, runtime.Metadata) runtime.Outcome { return runtime.Ack() }),
		}},
	)
	h.Start()
	for _, q := range []string{"single", "double"} {
		if err := h.Broker().Publish(t.Context(), q, runtime.Message{ID: "untyped-" + q, Body: []byte(`{"id":1}`)}); err != nil {
			t.Fatal(err)
		}
	}
	h.Wait()
	if mds := jobs.list(); len(mds) != 1 || mds[0].Subscription != "single" || mds[0].MessageType != "Job" {
		t.Fatalf("handler calls %+v, want one on single as Job", mds)
	}
	if dead := h.Queue("dead"); len(dead) != 1 || dead[0].ID != "untyped-double" || dead[0].Headers[runtime.HeaderDeadLetterPoison] != "true" {
		t.Fatalf("dead holds %v, want the untyped message of double, as poison", dead)
	}
}

// ZeroMQ has no nack: a rejected message is simply gone.
func TestZeroMQRejectedMessageIsGone(t *testing.T) {
	h := streamtest.New(t, runtime.ZeroMQ, streamtest.WithQuietLogs())
	h.App().Mount(h.Broker(), &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
		runtime.Handle("Job", runtime.Policy{}, func(context.Context, *job, runtime.Metadata) runtime.Outcome { return runtime.Ack() })}})
	h.Start()
	if err := h.Broker().Publish(t.Context(), "jobs", runtime.Message{ID: "x", Type: "Refund", Body: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	h.Wait()
	ds := h.Deliveries("jobs")
	if len(ds) != 1 || ds[0].Verdict.Kind != streamtest.VerdictReject {
		t.Fatalf("deliveries %+v, want one rejected", ds)
	}
	if n := len(h.Rejected("jobs")); n != 0 {
		t.Errorf("%d messages recorded as nacked on ZeroMQ, which cannot nack", n)
	}
	requireWarning(t, h.Logs(), "message rejected without requeue", "jobs", "x", `no handler for message type "Refund"`)
}

// out_retry names another subscription: the copies go there, and the same
// handler mounted there takes them with the count carried on.
func TestZeroMQRetryCopiesGoToTheOutRetryDestination(t *testing.T) {
	var rec calls
	handler := func() runtime.Handler {
		return runtime.Handle("Job", runtime.Policy{MaxAttempts: 3, OutRetry: "work.retry"}, func(_ context.Context, _ *job, md runtime.Metadata) runtime.Outcome {
			rec.add(md)
			return runtime.OutcomeOf(runtime.RetryAfter(time.Second, errJobFailed))
		})
	}
	h := streamtest.New(t, runtime.ZeroMQ, streamtest.WithQuietLogs())
	h.App().Mount(h.Broker(),
		&runtime.Subscription{Name: "work", Handlers: []runtime.Handler{handler()}},
		&runtime.Subscription{Name: "work.retry", Handlers: []runtime.Handler{handler()}},
	)
	h.Start()
	h.Publish("work", "Job", job{ID: 1})
	h.Advance(time.Second)
	h.Advance(time.Second)
	var got []string
	for _, md := range rec.list() {
		got = append(got, md.Subscription)
	}
	if want := []string{"work", "work.retry", "work.retry"}; !slices.Equal(got, want) {
		t.Fatalf("deliveries on %v, want %v", got, want)
	}
	if got := attempts(h.Deliveries("work.retry")); !slices.Equal(got, []int{2, 3}) {
		t.Errorf("work.retry saw attempts %v, want [2 3]", got)
	}
}

// A retry with no delay sends the copy at once: no Advance needed.
func TestZeroMQPlainRetryIsImmediate(t *testing.T) {
	var rec calls
	h := streamtest.New(t, runtime.ZeroMQ, streamtest.WithQuietLogs())
	h.App().Mount(h.Broker(), &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
		runtime.Handle("Job", runtime.Policy{MaxAttempts: 3, OutRetry: "jobs"}, func(_ context.Context, _ *job, md runtime.Metadata) runtime.Outcome {
			rec.add(md)
			return runtime.OutcomeOf(errJobFailed)
		})}})
	h.Start()
	h.Publish("jobs", "Job", job{ID: 1}, runtime.WithMessageID("j"))
	h.Wait()
	if got := attempts(h.Deliveries("jobs")); !slices.Equal(got, []int{1, 2, 3}) {
		t.Fatalf("attempts %v, want [1 2 3] without the clock moving", got)
	}
	if !h.Now().Equal(streamtest.DefaultStart()) {
		t.Errorf("the clock moved to %v", h.Now())
	}
	requireWarning(t, h.Logs(), "message dropped", "jobs", "j", "failed on attempt 3 of 3")
}

// A retry count that is not a non-negative number makes the message
// poison on ZeroMQ, as on RabbitMQ: no handler sees it; without a dead
// letter it is rejected, which on ZeroMQ drops it, counted and logged.
func TestZeroMQMalformedRetryCountIsPoison(t *testing.T) {
	var rec calls
	h := streamtest.New(t, runtime.ZeroMQ, streamtest.WithQuietLogs())
	h.App().Mount(h.Broker(), &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
		runtime.Handle("Job", runtime.Policy{MaxAttempts: 5, OutRetry: "jobs"}, func(_ context.Context, _ *job, md runtime.Metadata) runtime.Outcome {
			rec.add(md)
			return runtime.Ack()
		})}})
	h.Start()
	h.Publish("jobs", "Job", job{ID: 1}, runtime.WithMessageID("neg"), runtime.WithHeader(runtime.RetryCountHeader, "-1"))
	h.Publish("jobs", "Job", job{ID: 2}, runtime.WithMessageID("fine"), runtime.WithHeader(runtime.RetryCountHeader, "2"))
	h.Wait()
	if mds := rec.list(); len(mds) != 1 || mds[0].MessageID != "fine" || mds[0].Attempt != 3 {
		t.Fatalf("handler calls %+v, want only the well-formed message, as attempt 3", mds)
	}
	requireWarning(t, h.Logs(), "message rejected without requeue", "jobs", "neg", `retry count header x-retry-count is unreadable: runtime: retry count "-1"`)
	ds := h.Deliveries("jobs")
	if len(ds) != 2 || ds[0].MessageID != "neg" || ds[0].Verdict.Kind != streamtest.VerdictReject || !ds[0].Verdict.Poison {
		t.Errorf("deliveries %+v, want the malformed one first, rejected as poison", ds)
	}
	if st := h.App().Stats(); len(st) != 1 || st[0].Delivered != 2 || st[0].Rejected != 1 || st[0].Acked != 1 {
		t.Errorf("counters %+v, want 2 delivered, 1 rejected, 1 acked", st)
	}
}

// Retry copies waiting in memory at shutdown are lost, counted and logged.
func TestZeroMQCopiesWaitingAtShutdownAreLost(t *testing.T) {
	h := streamtest.New(t, runtime.ZeroMQ, streamtest.WithQuietLogs())
	h.App().Mount(h.Broker(), &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
		runtime.Handle("Job", runtime.Policy{MaxAttempts: 5, OutRetry: "jobs"}, func(context.Context, *job, runtime.Metadata) runtime.Outcome {
			return runtime.OutcomeOf(runtime.RetryAfter(time.Minute, errJobFailed))
		})}})
	h.Start()
	h.Publish("jobs", "Job", job{ID: 1})
	h.Publish("jobs", "Job", job{ID: 2})
	h.Wait()
	if n := h.Pending(); n != 2 {
		t.Fatalf("%d copies waiting, want 2", n)
	}
	if err := h.Stop(); err != nil {
		t.Fatal(err)
	}
	if n := h.Broker().Lost(); n != 2 {
		t.Errorf("Lost() = %d, want 2", n)
	}
	if n := h.Pending(); n != 0 {
		t.Errorf("%d timers still pending after the stop", n)
	}
	var logged bool
	for _, r := range h.Logs().Records() {
		if strings.HasPrefix(r.Message, "retry copies still waiting for their delay in memory are lost at shutdown") && r.Attr("subscription") == "jobs" && r.Attr("lost") == "2" {
			logged = true
		}
	}
	if !logged {
		t.Errorf("no warning counting the lost copies: %v", warnings(h.Logs()))
	}
	h.Advance(time.Hour)
	if n := len(h.Deliveries("jobs")); n != 2 {
		t.Errorf("%d deliveries after the stop and an hour, want the 2 first ones", n)
	}
}

// A retry count above the cap makes the delivery the last attempt, as on
// the real adapter: attempt 3 of 3, then parked, not taken for malformed.
func TestZeroMQHugeRetryCountIsParked(t *testing.T) {
	var rec calls
	h := streamtest.New(t, runtime.ZeroMQ, streamtest.WithQuietLogs())
	h.App().Mount(h.Broker(), &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
		runtime.Handle("Job", runtime.Policy{MaxAttempts: 3, OutRetry: "jobs", DeadLetter: "jobs.dead"}, func(_ context.Context, _ *job, md runtime.Metadata) runtime.Outcome {
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
	if dead := h.Queue("jobs.dead"); len(dead) != 1 || dead[0].Headers[runtime.HeaderDeadLetterAttempts] != strconv.Itoa(want) {
		t.Errorf("jobs.dead holds %v, want the message with %d attempts", dead, want)
	}
}
