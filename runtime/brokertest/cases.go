package brokertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime"
)

// Job and Invoice are the message types of the suite.
type (
	Job struct {
		ID   uint64 `json:"id"`
		Note string `json:"note,omitempty"`
	}
	Invoice struct {
		ID          uint64 `json:"id"`
		AmountCents uint64 `json:"amount_cents"`
	}
)

// testCase is one conformance case. It takes a testing.TB so the suite's
// own tests can run a case against a broken transport and see it fail.
type testCase struct {
	name string
	run  func(t testing.TB, tr Transport)
}

var cases = []testCase{
	{"PublishedMessageIsHandledOnceWithMetadata", publishedMessageIsHandledOnce},
	{"FailureIsRetriedWithTheRetryCount", failureIsRetried},
	{"ExhaustedMessageIsParkedOnTheDeadLetterQueue", exhaustedMessageIsParked},
	{"UndecodableBodyIsParkedWithoutReachingTheHandler", undecodableBodyIsParked},
	{"DecodePanicIsParkedAsPoison", decodePanicIsParked},
	{"PoisonWithoutDeadLetterQueueIsRejected", poisonWithoutDeadLetterIsRejected},
	{"DeadLetterSkipsTheRemainingAttempts", deadLetterSkipsRemainingAttempts},
	{"DropForgetsTheMessageWithAWarning", dropForgetsTheMessage},
	{"PanicIsRecoveredAndRetried", panicIsRecoveredAndRetried},
	{"MessageTypesAreDispatchedOnOneSubscription", messageTypesAreDispatched},
	{"GracefulShutdownLetsAnInFlightHandlerFinish", gracefulShutdownLetsHandlerFinish},
	{"HeaderNamesAreShownAsTheBrokerShowsThem", headerNamesAsTheBrokerShowsThem},
	{"MultiLineReasonIsParkedAsTheBrokerCarriesIt", multiLineReasonIsParked},
	{"CountAboveTheCapIsTheLastAttempt", countAboveTheCapIsTheLastAttempt},
	{"UnreadableCountIsPoison", unreadableCountIsPoison},
	{"MiddlewareWrapsEveryCallAndMayChangeTheOutcome", middlewareWrapsEveryCall},
	{"MiddlewarePanicIsRecoveredAndRetried", middlewarePanicIsRecovered},
	{"HandlerTimeoutIsAFailure", handlerTimeoutIsAFailure},
	{"LateResultCountsAsThatResult", lateResultCounts},
	{"ObserverFollowsDeliveriesAndItsHeadersTravelOnCopies", observerHeadersTravelOnCopies},
	// The codecs and the handler of every message type: codecs.go.
	{"EachCodecRoundTripsOnOneQueue", eachCodecRoundTrips},
	{"CorruptBodyOfEachCodecIsParkedWithItsReason", corruptBodiesAreParked},
	{"HandlerOfEveryTypeTakesTheOthersWithRetriesAndDeadLetters", everyTypeHandlerTakesTheOthers},
	{"RequestIsAnsweredAndAParkedOneToldWhere", requestIsAnswered},
}

var errFailed = errors.New("brokertest: the handler failed on purpose")

// A published message reaches its handler once, as attempt 1, with its
// metadata: subscription, message id, type, the cap in force, and the
// application headers it was published with.
func publishedMessageIsHandledOnce(t testing.TB, tr Transport) {
	q := uniqueName(t)
	f := newFixture(t, tr, q)
	var got handlerCalls[Job]
	f.start(f.subscription(q, runtime.Handle("Job", f.policy(3, ""), func(ctx context.Context, j *Job, md runtime.Metadata) runtime.Outcome {
		got.add(ctx, j, md)
		return runtime.Ack()
	})))
	f.publish(q, "Job", Job{ID: 1, Note: "hello"}, runtime.WithMessageID("m-1"), runtime.WithHeader("x-tenant", "acme"))
	f.waitFor("the handler to be called", func() bool { return got.len() >= 1 })
	f.waitFor("the delivery to be acked", func() bool { return f.stats(q).Acked >= 1 })
	f.stop()

	mds := got.metadata()
	if len(mds) != 1 {
		t.Fatalf("the handler was called %d times, want once", len(mds))
	}
	md := mds[0]
	if md.Subscription != q || md.MessageID != "m-1" || md.MessageType != "Job" {
		t.Errorf("metadata names subscription %q, message %q, type %q; want %q, m-1, Job", md.Subscription, md.MessageID, md.MessageType, q)
	}
	if md.Attempt != 1 || md.MaxAttempts != 3 {
		t.Errorf("metadata says attempt %d of %d, want 1 of 3", md.Attempt, md.MaxAttempts)
	}
	if md.Headers["x-tenant"] != "acme" {
		t.Errorf("metadata headers %v lack x-tenant: acme", md.Headers)
	}
	if n := md.Headers[runtime.RetryCountHeader]; n != "" && n != "0" {
		t.Errorf("a first delivery carries %s %q", runtime.RetryCountHeader, n)
	}
	if m := got.messages()[0]; m != (Job{ID: 1, Note: "hello"}) {
		t.Errorf("the handler got %+v, want the published job", m)
	}
	if st := f.stats(q); st.Delivered != 1 || st.Acked != 1 {
		t.Errorf("counters %+v, want 1 delivered and 1 acked", st)
	}
}

// A failure is retried: the second delivery is attempt 2, carries the retry
// count 1, and the same message.
func failureIsRetried(t testing.TB, tr Transport) {
	q := uniqueName(t)
	f := newFixture(t, tr, q)
	var got handlerCalls[Job]
	f.start(f.subscription(q, runtime.Handle("Job", f.policy(3, ""), func(ctx context.Context, j *Job, md runtime.Metadata) runtime.Outcome {
		got.add(ctx, j, md)
		if md.Attempt == 1 {
			return f.retryLater(errFailed)
		}
		return runtime.Ack()
	})))
	f.publish(q, "Job", Job{ID: 2}, runtime.WithMessageID("m-2"), runtime.WithHeader("x-tenant", "acme"))
	f.eventually("the second delivery to be acked", func() bool { return f.stats(q).Acked >= 1 })
	f.stop()

	mds := got.metadata()
	if got := attemptsOf(mds); !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("the handler saw attempts %v, want [1 2]", got)
	}
	second := mds[1]
	if n := second.Headers[tr.retryCountHeader()]; n != "1" {
		t.Errorf("the retry copy carries %s %q, want \"1\" (headers %v)", tr.retryCountHeader(), n, second.Headers)
	}
	if second.MessageID != "m-2" || second.MessageType != "Job" || second.Headers["x-tenant"] != "acme" {
		t.Errorf("the retry copy has id %q, type %q, headers %v; want the original's", second.MessageID, second.MessageType, second.Headers)
	}
	if m := got.messages()[1]; m != (Job{ID: 2}) {
		t.Errorf("the retry copy decoded to %+v, want the original job", m)
	}
	if st := f.stats(q); st.Delivered != 2 || st.Retried != 1 || st.Acked != 1 {
		t.Errorf("counters %+v, want 2 delivered, 1 retried, 1 acked", st)
	}
}

// A message that fails max_attempts times is parked on the dead-letter
// queue, where a subscription reads it back with the explanation headers.
// The parked copy starts a fresh count: the dead-letter subscription sees
// attempt 1.
func exhaustedMessageIsParked(t testing.TB, tr Transport) {
	q := uniqueName(t)
	dl := q + ".dead"
	f := newFixture(t, tr, q, dl)
	var work, dead handlerCalls[Job]
	f.start(
		f.subscription(q, runtime.Handle("Job", f.policy(3, dl), func(ctx context.Context, j *Job, md runtime.Metadata) runtime.Outcome {
			work.add(ctx, j, md)
			return f.retryLater(errFailed)
		})),
		f.reader(dl, &dead),
	)
	f.publish(q, "Job", Job{ID: 3}, runtime.WithMessageID("m-3"), runtime.WithHeader("x-tenant", "acme"))
	f.eventually("the dead letter to be read back", func() bool { return dead.len() >= 1 })
	f.stop()

	if got := attemptsOf(work.metadata()); !slices.Equal(got, []int{1, 2, 3}) {
		t.Fatalf("the handler saw attempts %v, want [1 2 3]", got)
	}
	mds := dead.metadata()
	if len(mds) != 1 {
		t.Fatalf("the dead-letter subscription got %d messages, want 1", len(mds))
	}
	md := mds[0]
	if md.MessageID != "m-3" || md.MessageType != "Job" || dead.messages()[0] != (Job{ID: 3}) {
		t.Errorf("the dead letter is %q/%q %+v, want the original message", md.MessageID, md.MessageType, dead.messages()[0])
	}
	h := md.Headers
	if h[runtime.HeaderDeadLetterAttempts] != "3" || h[runtime.HeaderDeadLetterSource] != q ||
		h[runtime.HeaderDeadLetterPoison] != "false" || !strings.Contains(h[runtime.HeaderDeadLetterReason], errFailed.Error()) ||
		h[runtime.HeaderDeadLetterTime] == "" || h["x-tenant"] != "acme" {
		t.Errorf("dead letter headers %v: want attempts 3, source %s, poison false, the handler's error as reason, a time, and x-tenant", h, q)
	}
	if md.Attempt != 1 {
		t.Errorf("the dead-letter subscription saw attempt %d, want 1: a parked copy starts a fresh count", md.Attempt)
	}
	if st := f.stats(q); st.Delivered != 3 || st.Retried != 2 || st.Parked != 1 {
		t.Errorf("counters %+v, want 3 delivered, 2 retried, 1 parked", st)
	}
	requireLog(t, f, slog.LevelWarn, "message parked", q, "m-3", errFailed.Error())
}

// A body that does not decode is poison: it never reaches the handler, uses
// no retries, and is parked with poison=true. The subscription goes on
// serving the next message.
func undecodableBodyIsParked(t testing.TB, tr Transport) {
	poisonBodyIsParked[Job](t, tr, `{"id":"not a number"}`, "does not decode")
}

// A body whose decoding panics (here in the type's own UnmarshalJSON) is
// poison too, parked with the panic as its reason; the worker goes on.
func decodePanicIsParked(t testing.TB, tr Transport) {
	poisonBodyIsParked[panickyJob](t, tr, `{"id":1,"panic":true}`, "decoding panicked: brokertest: UnmarshalJSON panicked on purpose")
}

// panickyJob is a Job whose UnmarshalJSON panics on a body with "panic".
type panickyJob Job

// UnmarshalJSON decodes b as a Job, and panics when b has "panic".
func (j *panickyJob) UnmarshalJSON(b []byte) error {
	if strings.Contains(string(b), "panic") {
		panic("brokertest: UnmarshalJSON panicked on purpose")
	}
	return json.Unmarshal(b, (*Job)(j))
}

// poisonBodyIsParked publishes body to a handler of T: it must be parked as
// poison with a reason that has reason in it, and Job 4 published after it
// handled.
func poisonBodyIsParked[T any](t testing.TB, tr Transport, body, reason string) {
	q := uniqueName(t)
	dl := q + ".dead"
	f := newFixture(t, tr, q, dl)
	var work handlerCalls[T]
	var dead handlerCalls[map[string]any]
	f.start(
		f.subscription(q, runtime.Handle("Job", f.policy(3, dl), func(ctx context.Context, j *T, md runtime.Metadata) runtime.Outcome {
			work.add(ctx, j, md)
			return runtime.Ack()
		})),
		f.subscription(dl, runtime.Handle("Job", f.policy(0, ""), func(ctx context.Context, m *map[string]any, md runtime.Metadata) runtime.Outcome {
			dead.add(ctx, m, md)
			return runtime.Ack()
		})),
	)
	f.publishRaw(q, runtime.Message{ID: "m-poison", Type: "Job", ContentType: "application/json", Body: []byte(body)})
	f.eventually("the poison message to be parked", func() bool { return dead.len() >= 1 })
	f.publish(q, "Job", Job{ID: 4}, runtime.WithMessageID("m-after"))
	f.eventually("the next message to be handled", func() bool { return work.len() >= 1 })
	f.stop()

	if mds := work.metadata(); len(mds) != 1 || mds[0].MessageID != "m-after" {
		t.Fatalf("the handler saw %v, want only m-after: poison must not reach it", mds)
	}
	mds := dead.metadata()
	if len(mds) != 1 || mds[0].MessageID != "m-poison" {
		t.Fatalf("the dead-letter subscription got %v, want m-poison", mds)
	}
	h := mds[0].Headers
	if h[runtime.HeaderDeadLetterPoison] != "true" || h[runtime.HeaderDeadLetterAttempts] != "1" ||
		!strings.Contains(h[runtime.HeaderDeadLetterReason], reason) || h[runtime.HeaderDeadLetterSource] != q {
		t.Errorf("dead letter headers %v: want poison true, attempts 1, a reason with %q, source %s", h, reason, q)
	}
	if st := f.stats(q); st.Retried != 0 || st.Parked != 1 || st.Acked != 1 {
		t.Errorf("counters %+v, want no retry, 1 parked, 1 acked", st)
	}
}

// Poison on a subscription with no dead-letter queue is rejected (RabbitMQ:
// nack without requeue; ZeroMQ: dropped); the subscription goes on.
func poisonWithoutDeadLetterIsRejected(t testing.TB, tr Transport) {
	q := uniqueName(t)
	f := newFixture(t, tr, q)
	var work handlerCalls[Job]
	f.start(f.subscription(q, runtime.Handle("Job", f.policy(3, ""), func(ctx context.Context, j *Job, md runtime.Metadata) runtime.Outcome {
		work.add(ctx, j, md)
		return runtime.Ack()
	})))
	f.publishRaw(q, runtime.Message{ID: "m-unknown", Type: "Nobody", ContentType: "application/json", Body: []byte(`{}`)})
	f.eventually("the poison message to be rejected", func() bool { return f.stats(q).Rejected >= 1 })
	f.publish(q, "Job", Job{ID: 5}, runtime.WithMessageID("m-after"))
	f.eventually("the next message to be handled", func() bool { return work.len() >= 1 })
	f.stop()

	if mds := work.metadata(); len(mds) != 1 || mds[0].MessageID != "m-after" {
		t.Fatalf("the handler saw %v, want only m-after", mds)
	}
	if st := f.stats(q); st.Rejected != 1 || st.Retried != 0 {
		t.Errorf("counters %+v, want 1 rejected, no retry", st)
	}
	requireLog(t, f, slog.LevelWarn, "message rejected without requeue", q, "m-unknown", `no handler for message type "Nobody"`)
}

// DeadLetter(err) parks the message at once, whatever attempts remain.
func deadLetterSkipsRemainingAttempts(t testing.TB, tr Transport) {
	q := uniqueName(t)
	dl := q + ".dead"
	f := newFixture(t, tr, q, dl)
	var work, dead handlerCalls[Job]
	f.start(
		f.subscription(q, runtime.Handle("Job", f.policy(5, dl), func(ctx context.Context, j *Job, md runtime.Metadata) runtime.Outcome {
			work.add(ctx, j, md)
			return runtime.OutcomeOf(runtime.DeadLetter(errFailed))
		})),
		f.reader(dl, &dead),
	)
	f.publish(q, "Job", Job{ID: 6}, runtime.WithMessageID("m-6"))
	f.eventually("the dead letter to be read back", func() bool { return dead.len() >= 1 })
	f.stop()

	if n := work.len(); n != 1 {
		t.Fatalf("the handler was called %d times, want once", n)
	}
	mds := dead.metadata()
	if len(mds) != 1 || mds[0].MessageID != "m-6" {
		t.Fatalf("the dead-letter subscription got %v, want m-6", mds)
	}
	h := mds[0].Headers
	if h[runtime.HeaderDeadLetterAttempts] != "1" || !strings.Contains(h[runtime.HeaderDeadLetterReason], "dead-lettered by the handler") ||
		!strings.Contains(h[runtime.HeaderDeadLetterReason], errFailed.Error()) {
		t.Errorf("dead letter headers %v: want attempts 1 and the handler's reason", h)
	}
	if st := f.stats(q); st.Retried != 0 || st.Parked != 1 {
		t.Errorf("counters %+v, want no retry, 1 parked", st)
	}
}

// Drop(err) forgets the message at once, with a warning naming the
// subscription, the message id and the reason; nothing is retried or parked.
func dropForgetsTheMessage(t testing.TB, tr Transport) {
	q := uniqueName(t)
	dl := q + ".dead"
	f := newFixture(t, tr, q, dl)
	var work, dead handlerCalls[Job]
	f.start(
		f.subscription(q, runtime.Handle("Job", f.policy(3, dl), func(ctx context.Context, j *Job, md runtime.Metadata) runtime.Outcome {
			work.add(ctx, j, md)
			if j.ID == 7 {
				return runtime.OutcomeOf(runtime.Drop(errFailed))
			}
			return runtime.OutcomeOf(runtime.DeadLetter(errFailed))
		})),
		f.reader(dl, &dead),
	)
	f.publish(q, "Job", Job{ID: 7}, runtime.WithMessageID("m-dropped"))
	f.waitFor("the dropped message to be settled", func() bool { return f.stats(q).Dropped >= 1 })
	// A parked message after it: once it is read back, a wrongly parked or
	// retried copy of the dropped one would have shown up too.
	f.publish(q, "Job", Job{ID: 8}, runtime.WithMessageID("m-parked"))
	f.eventually("the later dead letter to be read back", func() bool { return dead.len() >= 1 })
	f.stop()

	if mds := dead.metadata(); len(mds) != 1 || mds[0].MessageID != "m-parked" {
		t.Fatalf("the dead-letter subscription got %v, want only m-parked", mds)
	}
	if mds := work.metadata(); len(mds) != 2 || mds[0].MessageID != "m-dropped" {
		t.Fatalf("the handler saw %v, want m-dropped once then m-parked", mds)
	}
	if st := f.stats(q); st.Dropped != 1 || st.Retried != 0 || st.Parked != 1 {
		t.Errorf("counters %+v, want 1 dropped, no retry, 1 parked", st)
	}
	requireLog(t, f, slog.LevelWarn, "message dropped", q, "m-dropped", errFailed.Error())
}

// A handler that panics fails: the panic is logged with the first frames
// of its stack, from the handler, the whole stack at debug, and the
// message is retried.
func panicIsRecoveredAndRetried(t testing.TB, tr Transport) {
	q := uniqueName(t)
	f := newFixture(t, tr, q)
	var got handlerCalls[Job]
	f.start(f.subscription(q, runtime.Handle("Job", f.policy(2, ""), func(ctx context.Context, j *Job, md runtime.Metadata) runtime.Outcome {
		got.add(ctx, j, md)
		if md.Attempt == 1 {
			panic("brokertest: a panicking handler")
		}
		return runtime.Ack()
	})))
	f.publish(q, "Job", Job{ID: 9}, runtime.WithMessageID("m-9"))
	f.eventually("the retry to be acked", func() bool { return f.stats(q).Acked >= 1 })
	f.stop()

	if got := attemptsOf(got.metadata()); !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("the handler saw attempts %v, want [1 2]", got)
	}
	requirePanicLogs(t, f, "handler", q, "m-9", "brokertest.panicIsRecoveredAndRetried.func")
}

// Several message types on one subscription each reach their own handler.
func messageTypesAreDispatched(t testing.TB, tr Transport) {
	q := uniqueName(t)
	f := newFixture(t, tr, q)
	var jobs handlerCalls[Job]
	var invoices handlerCalls[Invoice]
	f.start(f.subscription(q,
		runtime.Handle("Job", f.policy(0, ""), func(ctx context.Context, j *Job, md runtime.Metadata) runtime.Outcome {
			jobs.add(ctx, j, md)
			return runtime.Ack()
		}),
		runtime.Handle("Invoice", f.policy(2, ""), func(ctx context.Context, inv *Invoice, md runtime.Metadata) runtime.Outcome {
			invoices.add(ctx, inv, md)
			return runtime.Ack()
		}),
	))
	f.publish(q, "Invoice", Invoice{ID: 10, AmountCents: 500}, runtime.WithMessageID("m-invoice"))
	f.publish(q, "Job", Job{ID: 11}, runtime.WithMessageID("m-job"))
	f.waitFor("both messages to be handled", func() bool { return jobs.len() >= 1 && invoices.len() >= 1 })
	f.stop()

	if mds := jobs.metadata(); len(mds) != 1 || mds[0].MessageID != "m-job" || mds[0].MessageType != "Job" || mds[0].MaxAttempts != 1 {
		t.Errorf("the Job handler saw %v, want m-job of type Job, max 1 attempt", mds)
	}
	if mds := invoices.metadata(); len(mds) != 1 || mds[0].MessageID != "m-invoice" || mds[0].MessageType != "Invoice" || mds[0].MaxAttempts != 2 {
		t.Errorf("the Invoice handler saw %v, want m-invoice of type Invoice, max 2 attempts", mds)
	}
	if got := invoices.messages(); len(got) == 1 && got[0] != (Invoice{ID: 10, AmountCents: 500}) {
		t.Errorf("the Invoice handler got %+v", got[0])
	}
}

// A graceful stop waits for the handler in flight: its context stays live,
// it finishes, its delivery is settled, and Run returns nil.
func gracefulShutdownLetsHandlerFinish(t testing.TB, tr Transport) {
	q := uniqueName(t)
	f := newFixture(t, tr, q)
	started := make(chan struct{})
	var startOnce sync.Once
	release := make(chan struct{})
	var got handlerCalls[Job]
	f.start(f.subscription(q, runtime.Handle("Job", f.policy(0, ""), func(ctx context.Context, j *Job, md runtime.Metadata) runtime.Outcome {
		startOnce.Do(func() { close(started) })
		select {
		case <-release:
		case <-ctx.Done():
		}
		got.add(ctx, j, md)
		return runtime.Ack()
	})))
	f.publish(q, "Job", Job{ID: 12}, runtime.WithMessageID("m-12"))
	select {
	case <-started:
	case <-time.After(tr.Timeout):
		t.Fatal("the handler was not called")
	}
	stopped := make(chan error, 1)
	go func() { stopped <- f.stopApp() }()
	f.waitFor("the app to shut the broker down", func() bool {
		select {
		case <-f.spy.called:
			return true
		default:
			return false
		}
	})
	// A broker that does not wait for the handler lets Run return now. A
	// correct one never does, so this window only costs time.
	select {
	case err := <-stopped:
		t.Fatalf("App.Run returned while a handler was still running: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	if err := <-stopped; err != nil {
		t.Fatalf("the app did not stop cleanly: %v", err)
	}

	if live := got.liveContexts(); len(live) != 1 || !live[0] {
		t.Fatalf("handler contexts live at return: %v, want [true]: a graceful stop must not cancel a handler in flight", live)
	}
	if st := f.stats(q); st.Acked != 1 {
		t.Errorf("counters %+v, want the in-flight delivery acked", st)
	}
}

// requireLog fails t unless a record at level with message msg names the
// subscription, the message id and a reason containing reason.
func requireLog(t testing.TB, f *fixture, level slog.Level, msg, subscription, messageID, reason string) {
	t.Helper()
	for _, r := range f.logs.Find(level, msg) {
		if r.Attr("subscription") == subscription && r.Attr("message_id") == messageID && strings.Contains(r.Attr("reason"), reason) {
			return
		}
	}
	t.Errorf("no %s record %q naming subscription %s, message id %s and reason %q", level, msg, subscription, messageID, reason)
}

// requirePanicLogs requires the logs of a panic in what ("handler",
// "middleware") on messageID: an error line whose stack starts at the
// function that panicked, named fn, and holds no more than the first
// frames, and a debug line with the whole stack.
func requirePanicLogs(t testing.TB, f *fixture, what, subscription, messageID, fn string) {
	t.Helper()
	var short, full bool
	for _, r := range f.logs.Find(slog.LevelError, what+" panicked; treating it as a failure") {
		s := r.Attr("stack")
		if r.Attr("subscription") == subscription && r.Attr("message_id") == messageID &&
			strings.Contains(strings.SplitN(s, "\n", 2)[0], fn) && strings.Count(s, "\n\t") <= 5 && !strings.Contains(s, "goroutine") {
			short = true
		}
	}
	for _, r := range f.logs.Find(slog.LevelDebug, what+" panic stack") {
		if r.Attr("subscription") == subscription && r.Attr("message_id") == messageID && strings.Contains(r.Attr("stack"), "goroutine") {
			full = true
		}
	}
	if !short || !full {
		t.Errorf("the %s panic on %s was not logged with subscription, message id, its first frames from %s (%v), and its whole stack at debug (%v):\n%s",
			what, messageID, fn, short, full, f.logs)
	}
}

// A handler sees header names as the broker shows them: RabbitMQ keeps
// their case, ZeroMQ writes them in lower case.
func headerNamesAsTheBrokerShowsThem(t testing.TB, tr Transport) {
	q := uniqueName(t)
	f := newFixture(t, tr, q)
	var got handlerCalls[Job]
	f.start(f.subscription(q, runtime.Handle("Job", f.policy(1, ""), func(ctx context.Context, j *Job, md runtime.Metadata) runtime.Outcome {
		got.add(ctx, j, md)
		return runtime.Ack()
	})))
	f.publish(q, "Job", Job{ID: 11}, runtime.WithMessageID("m-11"), runtime.WithHeader("X-Tenant", "acme"))
	f.waitFor("the handler to be called", func() bool { return got.len() >= 1 })
	f.stop()
	h := got.metadata()[0].Headers
	want, other := "X-Tenant", "x-tenant"
	if tr.Kind == runtime.ZeroMQ {
		want, other = other, want
	}
	if _, shown := h[other]; h[want] != "acme" || shown {
		t.Errorf("headers %v: want %s: acme (and no %s) on %s", h, want, other, tr.Kind)
	}
}

// A reason with line breaks is parked as the broker can carry it: as it is
// on RabbitMQ, on one line on ZeroMQ, whose header values are lines.
func multiLineReasonIsParked(t testing.TB, tr Transport) {
	q := uniqueName(t)
	dl := q + ".dead"
	f := newFixture(t, tr, q, dl)
	var dead handlerCalls[Job]
	f.start(
		f.subscription(q, runtime.Handle("Job", f.policy(0, dl), func(ctx context.Context, j *Job, md runtime.Metadata) runtime.Outcome {
			return runtime.OutcomeOf(errors.New("line one\nline two\r\nline three"))
		})),
		f.reader(dl, &dead),
	)
	f.publish(q, "Job", Job{ID: 12}, runtime.WithMessageID("m-12"))
	f.eventually("the dead letter to be read back", func() bool { return dead.len() >= 1 })
	f.stop()
	want := "failed: line one\nline two\r\nline three"
	if tr.Kind == runtime.ZeroMQ {
		want = "failed: line one line two line three"
	}
	if got := dead.metadata()[0].Headers[runtime.HeaderDeadLetterReason]; got != want {
		t.Errorf("parked reason %q, want %q on %s", got, want, tr.Kind)
	}
}

// A retry count beyond any policy's cap (a sender's bug, or a forged one)
// makes the delivery the last attempt, never one beyond: the handler sees
// attempt 3 of 3, and the message is then parked with 3 attempts.
func countAboveTheCapIsTheLastAttempt(t testing.TB, tr Transport) {
	q := uniqueName(t)
	dl := q + ".dead"
	f := newFixture(t, tr, q, dl)
	var work, dead handlerCalls[Job]
	f.start(
		f.subscription(q, runtime.Handle("Job", f.policy(3, dl), func(ctx context.Context, j *Job, md runtime.Metadata) runtime.Outcome {
			work.add(ctx, j, md)
			return f.retryLater(errFailed)
		})),
		f.reader(dl, &dead),
	)
	f.publish(q, "Job", Job{ID: 13}, runtime.WithMessageID("m-13"), runtime.WithHeader(tr.retryCountHeader(), "99999999999999999999"))
	f.eventually("the dead letter to be read back", func() bool { return dead.len() >= 1 })
	f.stop()
	mds := work.metadata()
	if len(mds) != 1 || mds[0].Attempt != 3 || mds[0].MaxAttempts != 3 {
		t.Fatalf("the handler saw %d deliveries (attempts %v), want one, attempt 3 of 3", len(mds), attemptsOf(mds))
	}
	if got := dead.metadata()[0].Headers[runtime.HeaderDeadLetterAttempts]; got != "3" {
		t.Errorf("parked with %s %q, want 3", runtime.HeaderDeadLetterAttempts, got)
	}
	if st := f.stats(q); st.Retried != 0 || st.Parked != 1 {
		t.Errorf("counters %+v, want no retry and 1 parked", st)
	}
}

// A retry count that cannot be read is poison on every broker: no handler
// sees the message, and it is parked with the reason.
func unreadableCountIsPoison(t testing.TB, tr Transport) {
	q := uniqueName(t)
	dl := q + ".dead"
	f := newFixture(t, tr, q, dl)
	var work, dead handlerCalls[Job]
	f.start(
		f.subscription(q, runtime.Handle("Job", f.policy(3, dl), func(ctx context.Context, j *Job, md runtime.Metadata) runtime.Outcome {
			work.add(ctx, j, md)
			return runtime.Ack()
		})),
		f.reader(dl, &dead),
	)
	for i, bad := range []string{"abc", "-1", "1.5", "+1"} {
		f.publish(q, "Job", Job{ID: uint64(20 + i)}, runtime.WithMessageID(fmt.Sprint("m-bad-", i)), runtime.WithHeader(tr.retryCountHeader(), bad))
	}
	f.publish(q, "Job", Job{ID: 30}, runtime.WithMessageID("m-good"))
	f.eventually("the four dead letters to be read back", func() bool { return dead.len() >= 4 })
	f.waitFor("the good message to be handled", func() bool { return work.len() >= 1 })
	f.stop()
	if mds := work.metadata(); len(mds) != 1 || mds[0].MessageID != "m-good" {
		t.Errorf("the handler saw %d messages, want only m-good", len(mds))
	}
	for _, md := range dead.metadata() {
		if md.Headers[runtime.HeaderDeadLetterPoison] != "true" || !strings.Contains(md.Headers[runtime.HeaderDeadLetterReason], "retry count") {
			t.Errorf("dead letter %s headers %v, want poison with the reason", md.MessageID, md.Headers)
		}
	}
	requireLog(t, f, slog.LevelWarn, "message parked", q, "m-bad-0", "retry count")
}
