package brokertest

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/observe"
)

// steps records the steps of middleware and handlers, in order.
type steps struct {
	mu   sync.Mutex
	list []string
}

func (s *steps) add(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.list = append(s.list, fmt.Sprintf(format, args...))
}

func (s *steps) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.list, " ")
}

// stepping is a middleware that records its name and the attempt around
// next, and the outcome next returned.
func stepping(s *steps, name string) runtime.Middleware {
	return func(ctx context.Context, msg any, md runtime.Metadata, next runtime.Next) runtime.Outcome {
		s.add("%s>%d", name, md.Attempt)
		out := next(ctx, msg, md)
		s.add("<%s(%s)", name, out.Action())
		return out
	}
}

// The App's middleware wraps the subscription's, which wraps the handler,
// on every delivery; the Outcome a middleware returns is the one carried
// out: here the subscription's middleware forgives the second failure,
// so the message is acked, not parked.
func middlewareWrapsEveryCall(t testing.TB, tr Transport) {
	q := uniqueName(t)
	dl := q + ".dead"
	var s steps
	f := newFixtureWith(t, tr, []runtime.Option{runtime.WithMiddleware(stepping(&s, "app"))}, q, dl)
	var got handlerCalls[Job]
	sub := f.subscription(q, runtime.Handle("Job", f.policy(2, dl), func(ctx context.Context, j *Job, md runtime.Metadata) runtime.Outcome {
		got.add(ctx, j, md)
		s.add("handler")
		return f.retryLater(errFailed)
	}))
	sub.Middleware = []runtime.Middleware{stepping(&s, "sub"), func(ctx context.Context, msg any, md runtime.Metadata, next runtime.Next) runtime.Outcome {
		out := next(ctx, msg, md)
		if md.Attempt == 2 {
			return runtime.Ack() // forgiven
		}
		return out
	}}
	f.start(sub)
	f.publish(q, "Job", Job{ID: 21}, runtime.WithMessageID("m-21"))
	f.eventually("the second delivery to be acked", func() bool { return f.stats(q).Acked >= 1 })
	f.stop()

	want := "app>1 sub>1 handler <sub(retry) <app(retry) app>2 sub>2 handler <sub(ack) <app(ack)"
	if got := s.String(); got != want {
		t.Errorf("middleware steps\n got %s\nwant %s", got, want)
	}
	if st := f.stats(q); st.Delivered != 2 || st.Retried != 1 || st.Acked != 1 || st.Parked != 0 {
		t.Errorf("counters %+v, want 2 delivered, 1 retried, 1 acked, none parked", st)
	}
}

// A panicking middleware is a failure like a panicking handler: logged
// with its stack, retried.
func middlewarePanicIsRecovered(t testing.TB, tr Transport) {
	q := uniqueName(t)
	f := newFixture(t, tr, q)
	var got handlerCalls[Job]
	sub := f.subscription(q, runtime.Handle("Job", f.policy(2, ""), func(ctx context.Context, j *Job, md runtime.Metadata) runtime.Outcome {
		got.add(ctx, j, md)
		return runtime.Ack()
	}))
	sub.Middleware = []runtime.Middleware{func(ctx context.Context, msg any, md runtime.Metadata, next runtime.Next) runtime.Outcome {
		if md.Attempt == 1 {
			panic("brokertest: a panicking middleware")
		}
		return next(ctx, msg, md)
	}}
	f.start(sub)
	f.publish(q, "Job", Job{ID: 22}, runtime.WithMessageID("m-22"))
	f.eventually("the retry to be acked", func() bool { return f.stats(q).Acked >= 1 })
	f.stop()

	if got := attemptsOf(got.metadata()); !slices.Equal(got, []int{2}) {
		t.Fatalf("the handler saw attempts %v, want [2]: the first call panicked before it", got)
	}
	if st := f.stats(q); st.Retried != 1 || st.Acked != 1 {
		t.Errorf("counters %+v, want 1 retried, 1 acked", st)
	}
	requireLog(t, f, slog.LevelInfo, "message will be retried", q, "m-22", "middleware panicked: brokertest: a panicking middleware")
	requirePanicLogs(t, f, "middleware", q, "m-22", "brokertest.middlewarePanicIsRecovered.func")
}

// A handler call that outlives Policy.Timeout has its context cancelled
// and is a failure that says so: retried, then parked with that reason.
func handlerTimeoutIsAFailure(t testing.TB, tr Transport) {
	q := uniqueName(t)
	dl := q + ".dead"
	f := newFixture(t, tr, q, dl)
	var work, dead handlerCalls[Job]
	p := f.policy(2, dl)
	p.Timeout = 50 * time.Millisecond
	f.start(
		f.subscription(q, runtime.Handle("Job", p, func(ctx context.Context, j *Job, md runtime.Metadata) runtime.Outcome {
			<-ctx.Done()
			work.add(ctx, j, md)
			return runtime.OutcomeOf(ctx.Err())
		})),
		f.reader(dl, &dead),
	)
	f.publish(q, "Job", Job{ID: 23}, runtime.WithMessageID("m-23"))
	f.eventually("the dead letter to be read back", func() bool { return dead.len() >= 1 })
	f.stop()

	if got := attemptsOf(work.metadata()); !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("the handler saw attempts %v, want [1 2]", got)
	}
	if reason := dead.metadata()[0].Headers[runtime.HeaderDeadLetterReason]; reason != "failed on attempt 2 of 2: handler timed out after 50ms" {
		t.Errorf("the dead letter's reason is %q, want the timeout", reason)
	}
	requireLog(t, f, slog.LevelInfo, "message will be retried", q, "m-23", "handler timed out after 50ms")
}

// A handler that ignores its context and returns nil after its timeout
// has done its work: it is acknowledged, not retried, and a warning says
// that it was late.
func lateResultCounts(t testing.TB, tr Transport) {
	q := uniqueName(t)
	f := newFixture(t, tr, q)
	var work handlerCalls[Job]
	p := f.policy(3, "")
	p.Timeout = 20 * time.Millisecond
	f.start(f.subscription(q, runtime.Handle("Job", p, func(ctx context.Context, j *Job, md runtime.Metadata) runtime.Outcome {
		time.Sleep(5 * p.Timeout) // ignores ctx
		work.add(ctx, j, md)
		return runtime.Ack()
	})))
	f.publish(q, "Job", Job{ID: 24}, runtime.WithMessageID("m-24"))
	f.waitFor("the delivery to be settled", func() bool {
		st := f.stats(q)
		return st.Acked+st.Retried+st.Dropped+st.Failed >= 1
	})
	f.stop()

	if st := f.stats(q); st.Delivered != 1 || st.Acked != 1 || st.Retried != 0 || work.len() != 1 {
		t.Errorf("counters %+v after %d calls, want one delivery, acked, no retry", st, work.len())
	}
	for _, r := range f.logs.Find(slog.LevelWarn, "handler returned after its timeout; its result counts, but the timeout is too short or the handler ignores its context") {
		if r.Attr("subscription") == q && r.Attr("message_id") == "m-24" && r.Attr("timeout") == "20ms" && r.Attr("outcome") == "ack" {
			return
		}
	}
	t.Errorf("no warning that the result of m-24 on %s came after the 20ms timeout", q)
}

// traceObserver is an Observer that sets "x-trace: <message id>/<attempt>"
// on every copy of a delivery, and records what it learns.
type traceObserver struct {
	mu     sync.Mutex
	starts []observe.DeliveryStart
	ends   map[string][]string // verdicts by subscription
}

func (o *traceObserver) StartDelivery(ctx context.Context, d observe.DeliveryStart) (context.Context, observe.DeliveryObservation) {
	o.mu.Lock()
	defer o.mu.Unlock()
	d.Headers = maps.Clone(d.Headers)
	o.starts = append(o.starts, d)
	return ctx, &traceObservation{o: o, sub: d.Subscription, trace: fmt.Sprintf("%s/%d", d.MessageID, d.Attempt)}
}

func (o *traceObserver) StartConsumer(observe.ConsumerInfo) func() { return func() {} }
func (o *traceObserver) BrokerEvent(observe.Event)                 {}

// of returns what the observer learned of the deliveries of subscription:
// how each started, and the verdicts, in the order they ended.
func (o *traceObserver) of(subscription string) ([]observe.DeliveryStart, []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var starts []observe.DeliveryStart
	for _, s := range o.starts {
		if s.Subscription == subscription {
			starts = append(starts, s)
		}
	}
	return starts, slices.Clone(o.ends[subscription])
}

type traceObservation struct {
	o     *traceObserver
	sub   string
	trace string
}

func (t *traceObservation) CopyHeaders(set func(name, value string)) { set("x-trace", t.trace) }

func (t *traceObservation) End(s observe.Settlement) {
	t.o.mu.Lock()
	defer t.o.mu.Unlock()
	if t.o.ends == nil {
		t.o.ends = map[string][]string{}
	}
	t.o.ends[t.sub] = append(t.o.ends[t.sub], s.Verdict)
}

// The App's Observer hears of every delivery, and the headers it sets on
// a delivery's copies travel with the retry copy and the dead letter, so
// that the next delivery carries them: what a trace context needs.
func observerHeadersTravelOnCopies(t testing.TB, tr Transport) {
	q := uniqueName(t)
	dl := q + ".dead"
	obs := &traceObserver{}
	f := newFixtureWith(t, tr, []runtime.Option{runtime.WithObserver(obs)}, q, dl)
	var dead handlerCalls[Job]
	f.start(
		f.subscription(q, runtime.Handle("Job", f.policy(2, dl), func(context.Context, *Job, runtime.Metadata) runtime.Outcome {
			return f.retryLater(errFailed)
		})),
		f.reader(dl, &dead),
	)
	f.publish(q, "Job", Job{ID: 24}, runtime.WithMessageID("m-24"), runtime.WithHeader("x-trace", "from the publisher"))
	f.eventually("the dead letter to be read back", func() bool { return dead.len() >= 1 })
	f.eventually("the dead letter to be acked", func() bool { return f.stats(dl).Acked >= 1 })
	f.stop()

	starts, verdicts := obs.of(q)
	if len(starts) != 2 {
		t.Fatalf("the observer saw %d deliveries of %s, want 2", len(starts), q)
	}
	for i, want := range []string{"from the publisher", "m-24/1"} {
		if s := starts[i]; s.Headers["x-trace"] != want || s.Attempt != i+1 || s.MessageID != "m-24" || s.Broker != string(tr.Kind) {
			t.Errorf("delivery %d: the observer saw %+v, want attempt %d on %s with x-trace %q", i+1, s, i+1, tr.Kind, want)
		}
	}
	if got := dead.metadata()[0].Headers["x-trace"]; got != "m-24/2" {
		t.Errorf("the dead letter carries x-trace %q, want the last attempt's m-24/2", got)
	}
	if !slices.Equal(verdicts, []string{"retry", "park"}) {
		t.Errorf("the observer heard the verdicts %v of %s, want [retry park]", verdicts, q)
	}
	if starts, verdicts := obs.of(dl); len(starts) != 1 || starts[0].Attempt != 1 || !slices.Equal(verdicts, []string{"ack"}) {
		t.Errorf("the observer saw %+v of %s, ending %v; want one first attempt, acked", starts, dl, verdicts)
	}
}
