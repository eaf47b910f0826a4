package adapter_test

import (
	"context"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/adapter"
	"github.com/streamgen/streamgen/runtime/clock"
	"github.com/streamgen/streamgen/runtime/observe"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// recordingObserver records what the Consumer tells it; each observation
// sets the headers in set on every copy.
type recordingObserver struct {
	set map[string]string

	mu        sync.Mutex
	starts    []observe.DeliveryStart
	ends      []observe.Settlement
	consumers []observe.ConsumerInfo
	stopped   int
}

type obsKey struct{}

func (o *recordingObserver) StartDelivery(ctx context.Context, d observe.DeliveryStart) (context.Context, observe.DeliveryObservation) {
	o.mu.Lock()
	defer o.mu.Unlock()
	d.Headers = maps.Clone(d.Headers)
	o.starts = append(o.starts, d)
	return context.WithValue(ctx, obsKey{}, d.MessageID), &recordedDelivery{o: o}
}

func (o *recordingObserver) StartConsumer(c observe.ConsumerInfo) func() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.consumers = append(o.consumers, c)
	return func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		o.stopped++
	}
}

func (o *recordingObserver) BrokerEvent(observe.Event) {}

func (o *recordingObserver) settlements() []observe.Settlement {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]observe.Settlement(nil), o.ends...)
}

type recordedDelivery struct {
	o     *recordingObserver
	ended bool
}

func (r *recordedDelivery) CopyHeaders(set func(name, value string)) {
	for k, v := range r.o.set {
		set(k, v)
	}
}

func (r *recordedDelivery) End(s observe.Settlement) {
	r.o.mu.Lock()
	defer r.o.mu.Unlock()
	if r.ended {
		panic("End called twice")
	}
	r.ended = true
	r.o.ends = append(r.o.ends, s)
}

func newObserved(sub *runtime.Subscription, kind runtime.BrokerKind, obs observe.Observer, clock clock.Clock) (*adapter.Consumer, *recorder) {
	tr := &recorder{}
	c := adapter.NewConsumer(sub, runtime.Env{Logger: newLogCapture().logger(), Observer: obs, Clock: clock}, adapter.Rules{Kind: kind}, tr)
	return c, tr
}

// The Observer learns of each delivery before it is decoded, its context
// reaches the middleware and the handler, and it is told once how the
// delivery ended, with how long the handler ran.
func TestObserverFollowsEachDelivery(t *testing.T) {
	obs := &recordingObserver{}
	var mwCtx, handlerCtx any
	sub := &runtime.Subscription{Name: "jobs",
		Handlers: []runtime.Handler{runtime.Handle("Job", runtime.Policy{MaxAttempts: 3}, func(ctx context.Context, _ *job, md runtime.Metadata) runtime.Outcome {
			handlerCtx = ctx.Value(obsKey{})
			time.Sleep(5 * time.Millisecond)
			return runtime.Retry().Because(errBoom)
		})},
		Middleware: []runtime.Middleware{func(ctx context.Context, msg any, md runtime.Metadata, next runtime.Next) runtime.Outcome {
			mwCtx = ctx.Value(obsKey{})
			return next(ctx, msg, md)
		}},
	}
	c, _ := newObserved(sub, runtime.RabbitMQ, obs, nil)
	if len(obs.consumers) != 1 || obs.consumers[0].Subscription != "jobs" || obs.consumers[0].Broker != string(runtime.RabbitMQ) || obs.consumers[0].WaitingCopies() != 0 || !slices.Equal(obs.consumers[0].MessageTypes, []string{"Job"}) {
		t.Fatalf("consumers %+v, want the jobs consumer on rabbitmq, taking Job", obs.consumers)
	}
	d := delivery(2)
	d.Headers["tenant"] = "acme"
	c.Handle(t.Context(), d)

	if len(obs.starts) != 1 {
		t.Fatalf("%d starts, want 1", len(obs.starts))
	}
	st := obs.starts[0]
	if st.Broker != string(runtime.RabbitMQ) || st.Subscription != "jobs" || st.MessageID != "m-1" || st.MessageType != "Job" ||
		st.Attempt != 2 || st.RetryCount != 1 || st.Headers["tenant"] != "acme" {
		t.Errorf("start %+v", st)
	}
	if mwCtx != "m-1" || handlerCtx != "m-1" {
		t.Errorf("the observer's context reached the middleware as %v and the handler as %v", mwCtx, handlerCtx)
	}
	ends := obs.settlements()
	if len(ends) != 1 {
		t.Fatalf("%d ends, want 1", len(ends))
	}
	e := ends[0]
	if e.Verdict != "retry" || e.Reason != "boom" || e.Queue != "jobs.retry" || e.Attempt != 2 || e.MaxAttempts != 3 || e.MessageType != "Job" ||
		!e.Handled || e.HandlerDuration < 5*time.Millisecond || e.Err != nil || e.Poison {
		t.Errorf("settlement %+v", e)
	}
	c.Stop()
	c.Stop()
	if obs.stopped != 1 {
		t.Errorf("the consumer's watch was stopped %d times, want once", obs.stopped)
	}
}

// Poison, a delivery whose copy fails, and a message an adapter discards
// are observed too; none of them was handled.
func TestObserverSeesPoisonFailuresAndDiscards(t *testing.T) {
	obs := &recordingObserver{}
	c, tr := newObserved(&runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{DeadLetter: "jobs.dead"})}}, runtime.RabbitMQ, obs, nil)
	poison := delivery(1)
	poison.Body = []byte("{")
	c.Handle(t.Context(), poison)
	tr.send = errBoom
	poison2 := delivery(1)
	poison2.Type = "Nobody"
	c.Handle(t.Context(), poison2)
	c.Discard(&adapter.Delivery{MessageID: "m-bad"}, "malformed message: two frames", nil)

	ends := obs.settlements()
	if len(ends) != 3 || len(obs.starts) != 3 {
		t.Fatalf("%d starts and %d ends, want 3 of each", len(obs.starts), len(ends))
	}
	if e := ends[0]; e.Verdict != "park" || !e.Poison || e.Handled || e.Err != nil || e.Queue != "jobs.dead" {
		t.Errorf("poison: %+v", e)
	}
	if e := ends[1]; e.Verdict != "park" || e.Err == nil {
		t.Errorf("a park whose copy failed: %+v, want its error", e)
	}
	if e, s := ends[2], obs.starts[2]; e.Verdict != "drop" || !e.Poison || e.Reason != "malformed message: two frames" || s.MessageID != "m-bad" {
		t.Errorf("a discarded message: start %+v, end %+v", s, e)
	}
}

// Each copy carries the headers the observation sets, in place of the
// original's of the same name in any case, normalised as the broker
// carries headers; the runtime's own headers cannot be set.
func TestObserverSetsCopyHeaders(t *testing.T) {
	obs := &recordingObserver{set: map[string]string{
		"traceparent":                  "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		"Baggage":                      "tenant=acme\nline",
		runtime.RetryCountHeader:       "99",
		runtime.HeaderDeadLetterReason: "forged",
	}}
	for _, tc := range []struct {
		name    string
		kind    runtime.BrokerKind
		policy  runtime.Policy
		attempt int
		want    map[string]string
		absent  []string
	}{
		{"rabbitmq retry copy", runtime.RabbitMQ, runtime.Policy{MaxAttempts: 3}, 1,
			map[string]string{"traceparent": obs.set["traceparent"], "Baggage": "tenant=acme\nline", "x-retry-count": "1", "tenant": "acme"},
			[]string{"Traceparent", "baggage"}},
		{"rabbitmq dead letter", runtime.RabbitMQ, runtime.Policy{MaxAttempts: 1, DeadLetter: "jobs.dead"}, 1,
			map[string]string{"traceparent": obs.set["traceparent"], runtime.HeaderDeadLetterReason: "failed on attempt 1 of 1: boom"},
			[]string{"Traceparent", runtime.RetryCountHeader}},
		{"zeromq retry copy", runtime.ZeroMQ, runtime.Policy{MaxAttempts: 3, OutRetry: "jobs"}, 2,
			map[string]string{"traceparent": obs.set["traceparent"], "baggage": "tenant=acme line", "x-retry-count": "2"},
			[]string{"Traceparent", "Baggage"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &probe{outcome: returning(runtime.Retry().Because(errBoom))}
			c, tr := newObserved(&runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{p.handler("Job", tc.policy)}}, tc.kind, obs, nil)
			d := delivery(tc.attempt)
			d.Headers["Traceparent"] = "00-11111111111111111111111111111111-2222222222222222-01"
			d.Headers["tenant"] = "acme"
			c.Handle(t.Context(), d)
			if len(tr.copies) != 1 {
				t.Fatalf("copies %+v", tr.copies)
			}
			got := tr.copies[0].headers
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("copy header %s = %q, want %q (headers %v)", k, got[k], v, got)
				}
			}
			for _, k := range tc.absent {
				if _, ok := got[k]; ok {
					t.Errorf("copy carries %s: %v", k, got)
				}
			}
		})
	}
}

// A ZeroMQ retry copy that waits in memory ends its observation once it
// is scheduled; WaitingCopies tells the Observer about it.
func TestObserverAndZeroMQDelayedCopies(t *testing.T) {
	clock := streamtest.NewClock(time.Time{})
	obs := &recordingObserver{set: map[string]string{"traceparent": "tp"}}
	p := &probe{outcome: returning(runtime.OutcomeOf(runtime.RetryAfter(time.Minute, errBoom)))}
	c, tr := newObserved(&runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{p.handler("Job", runtime.Policy{MaxAttempts: 3, OutRetry: "jobs"})}},
		runtime.ZeroMQ, obs, clock)
	c.Handle(t.Context(), delivery(1))
	ends := obs.settlements()
	if len(ends) != 1 || ends[0].Verdict != "retry" || ends[0].Delay != time.Minute || ends[0].Err != nil {
		t.Fatalf("settlements %+v, want the scheduled retry", ends)
	}
	if n := obs.consumers[0].WaitingCopies(); n != 1 {
		t.Errorf("WaitingCopies() = %d, want 1", n)
	}
	clock.Advance(time.Minute)
	if tr.actions() != "send jobs" || tr.copies[0].headers["traceparent"] != "tp" {
		t.Errorf("after the delay: %q %v", tr.actions(), tr.copies)
	}
	if n := len(obs.settlements()); n != 1 {
		t.Errorf("%d settlements after the copy was sent, want still 1", n)
	}
	c.Stop()
}

// nilObserver returns nil for both results of StartDelivery.
type nilObserver struct{ recordingObserver }

func (*nilObserver) StartDelivery(context.Context, observe.DeliveryStart) (context.Context, observe.DeliveryObservation) {
	return nil, nil
}

// An Observer that follows nothing of a delivery (nil results) does not
// stop it: the handler runs with the Consumer's context and copies go out.
func TestObserverMayFollowNothing(t *testing.T) {
	p := &probe{outcome: returning(runtime.Retry().Because(errBoom))}
	c, tr := newObserved(&runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{p.handler("Job", runtime.Policy{MaxAttempts: 2})}}, runtime.RabbitMQ, &nilObserver{}, nil)
	v, err := c.Handle(t.Context(), delivery(1))
	if v.Kind != adapter.VerdictRetry || err != nil || tr.actions() != "send jobs.retry, ack" || p.ctxs[0] == nil {
		t.Errorf("verdict %+v, err %v, actions %q", v, err, tr.actions())
	}
}
