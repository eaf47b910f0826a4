package otelstream_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/observe"
	"github.com/streamgen/streamgen/runtime/otelstream"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

type job struct {
	ID int `json:"id"`
}

var errFailed = errors.New("the job failed")

// failingJobs is the subscription "jobs" whose handler always fails,
// retried until maxAttempts, then parked on jobs.dead; dead reads
// jobs.dead back.
func failingJobs(kind runtime.BrokerKind, maxAttempts int, delay time.Duration) (jobs, dead *runtime.Subscription) {
	return failing(kind, "jobs", maxAttempts, delay)
}

// failing is failingJobs on the queue name and name.dead.
func failing(kind runtime.BrokerKind, name string, maxAttempts int, delay time.Duration) (jobs, dead *runtime.Subscription) {
	p := runtime.Policy{MaxAttempts: maxAttempts, DeadLetter: name + ".dead"}
	if kind == runtime.ZeroMQ {
		p.OutRetry = name
	}
	jobs = &runtime.Subscription{Name: name, Broker: kind, Handlers: []runtime.Handler{
		runtime.Handle("Job", p, func(context.Context, *job, runtime.Metadata) runtime.Outcome {
			return runtime.OutcomeOf(runtime.RetryAfter(delay, errFailed))
		}),
	}}
	if kind == runtime.RabbitMQ {
		jobs.RetryDelays = []time.Duration{delay}
	}
	dead = &runtime.Subscription{Name: name + ".dead", Broker: kind, Handlers: []runtime.Handler{
		runtime.Handle("Job", runtime.Policy{}, func(context.Context, *job, runtime.Metadata) runtime.Outcome { return runtime.Ack() }),
	}}
	return jobs, dead
}

// On the harness, for both brokers: a publish through the Observer's
// Publisher, each attempt, the parking and the dead letter's reading form
// one trace, each span the child of the one before; each delivery's span
// is named and attributed after the messaging conventions.
func TestOneCausalChainOnTheHarness(t *testing.T) {
	for _, kind := range []runtime.BrokerKind{runtime.RabbitMQ, runtime.ZeroMQ} {
		t.Run(string(kind), func(t *testing.T) {
			tm := newTelemetry(t)
			h := streamtest.New(t, kind, streamtest.WithQuietLogs(), streamtest.WithAppOptions(runtime.WithObserver(tm.obs)))
			jobs, dead := failingJobs(kind, 3, time.Second)
			h.App().Mount(h.Broker(), jobs, dead)
			h.Start()

			ctx, caller := tm.tracer.Start(context.Background(), "caller")
			if err := runtime.Publish(ctx, tm.obs.Publisher(h.Broker()), runtime.Queue("jobs"), "Job", job{ID: 1}, runtime.WithMessageID("m-1")); err != nil {
				t.Fatal(err)
			}
			caller.End()
			h.Wait()
			h.Advance(time.Second)
			h.Advance(time.Second)
			h.Wait()

			sends, attempts, deads := tm.named("send jobs"), tm.named("process jobs"), tm.named("process jobs.dead")
			if len(sends) != 1 || len(attempts) != 3 || len(deads) != 1 {
				t.Fatalf("%d send, %d process jobs, %d process jobs.dead spans, want 1, 3, 1:%s", len(sends), len(attempts), len(deads), describe(tm.spans.Ended()))
			}
			root := tm.named("caller")[0]
			requireChain(t, root, sends[0], attempts[0], attempts[1], attempts[2], deads[0])

			send := sends[0]
			// On RabbitMQ the destination is the exchange, the default
			// one ("") for a publish to a queue, whose name is the
			// routing key.
			destination, key := "jobs", ""
			if kind == runtime.RabbitMQ {
				destination, key = "", "jobs"
			}
			if send.SpanKind() != trace.SpanKindProducer || attr(send, "messaging.operation.type") != "send" ||
				!hasAttr(send, "messaging.destination.name") || attr(send, "messaging.destination.name") != destination ||
				attr(send, "messaging.rabbitmq.destination.routing_key") != key ||
				attr(send, "messaging.system") != string(kind) || attr(send, "messaging.message.id") != "m-1" {
				t.Errorf("send span %v %v", send.SpanKind(), send.Attributes())
			}
			for i, s := range attempts {
				want := map[string]string{
					"messaging.system": string(kind), "messaging.destination.name": "jobs", "messaging.operation.type": "process",
					"messaging.operation.name": "process", "messaging.message.id": "m-1", "streamgen.message_type": "Job",
					"streamgen.attempt": itoa(i + 1), "streamgen.retry_count": itoa(i), "streamgen.max_attempts": "3",
				}
				for k, v := range want {
					if got := attr(s, k); got != v {
						t.Errorf("attempt %d: %s = %q, want %q", i+1, k, got, v)
					}
				}
				if s.SpanKind() != trace.SpanKindConsumer || s.Status().Code != codes.Error {
					t.Errorf("attempt %d: kind %v, status %v; want a consumer span with status Error", i+1, s.SpanKind(), s.Status())
				}
			}
			if v := attr(attempts[1], "streamgen.verdict"); v != "retry" {
				t.Errorf("attempt 2 verdict %q, want retry", v)
			}
			if v, st := attr(attempts[2], "streamgen.verdict"), attempts[2].Status(); v != "park" || st.Description != "park: failed on attempt 3 of 3: the job failed" {
				t.Errorf("attempt 3: verdict %q, status %v; want park with the reason", v, st)
			}
			if d := deads[0]; attr(d, "streamgen.verdict") != "ack" || d.Status().Code != codes.Unset || attr(d, "streamgen.attempt") != "1" {
				t.Errorf("dead letter span: verdict %q, status %v, attempt %s", attr(d, "streamgen.verdict"), d.Status(), attr(d, "streamgen.attempt"))
			}

			m := tm.metric(t, otelstream.MetricHandlerDuration)
			if n := histogramCount(t, m, map[string]string{"messaging.destination.name": "jobs", "streamgen.verdict": "retry", "messaging.system": string(kind)}); n != 2 {
				t.Errorf("%d handler durations of retried calls, want 2", n)
			}
			if n := histogramCount(t, m, map[string]string{"messaging.destination.name": "jobs", "streamgen.verdict": "park"}); n != 1 {
				t.Errorf("%d handler durations of parked calls, want 1", n)
			}
			if n := histogramCount(t, m, map[string]string{"messaging.destination.name": "jobs.dead", "streamgen.verdict": "ack"}); n != 1 {
				t.Errorf("%d handler durations on jobs.dead, want 1", n)
			}
			inFlight := tm.metric(t, otelstream.MetricInFlight)
			for _, sub := range []string{"jobs", "jobs.dead"} {
				if v, ok := sumValue(t, inFlight, map[string]string{"messaging.destination.name": sub}); !ok || v != 0 {
					t.Errorf("%s in flight = %d (%v), want 0 once idle", sub, v, ok)
				}
			}
		})
	}
}

// While a handler runs, its delivery is in flight.
func TestInFlightWhileAHandlerRuns(t *testing.T) {
	tm := newTelemetry(t)
	h := streamtest.New(t, runtime.RabbitMQ, streamtest.WithQuietLogs(), streamtest.WithAppOptions(runtime.WithObserver(tm.obs)))
	running, release := make(chan struct{}), make(chan struct{})
	h.App().Mount(h.Broker(), &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
		runtime.Handle("Job", runtime.Policy{}, func(context.Context, *job, runtime.Metadata) runtime.Outcome {
			close(running)
			<-release
			return runtime.Ack()
		}),
	}})
	h.Start()
	h.Publish("jobs", "Job", job{ID: 1})
	<-running
	if v, _ := sumValue(t, tm.metric(t, otelstream.MetricInFlight), map[string]string{"messaging.destination.name": "jobs"}); v != 1 {
		t.Errorf("in flight while the handler runs = %d, want 1", v)
	}
	close(release)
	h.Wait()
	if v, _ := sumValue(t, tm.metric(t, otelstream.MetricInFlight), map[string]string{"messaging.destination.name": "jobs"}); v != 0 {
		t.Errorf("in flight once handled = %d, want 0", v)
	}
}

// ZeroMQ retry copies waiting for their delay in memory are gauged per
// subscription, until the consumer stops.
func TestCopiesWaitingOnZeroMQ(t *testing.T) {
	tm := newTelemetry(t)
	h := streamtest.New(t, runtime.ZeroMQ, streamtest.WithQuietLogs(), streamtest.WithAppOptions(runtime.WithObserver(tm.obs)))
	jobs, dead := failingJobs(runtime.ZeroMQ, 3, time.Minute)
	h.App().Mount(h.Broker(), jobs, dead)
	h.Start()
	h.Publish("jobs", "Job", job{ID: 1})
	h.Publish("jobs", "Job", job{ID: 2})
	h.Wait()
	want := map[string]string{"messaging.system": "zeromq", "messaging.destination.name": "jobs"}
	if v, ok := gaugeValue(t, tm.metric(t, otelstream.MetricCopiesWaiting), want); !ok || v != 2 {
		t.Errorf("copies waiting = %d (%v), want 2", v, ok)
	}
	h.Advance(time.Minute)
	if v, _ := gaugeValue(t, tm.metric(t, otelstream.MetricCopiesWaiting), want); v != 2 {
		t.Errorf("copies waiting after the second attempts = %d, want 2 again", v)
	}
	h.Advance(time.Minute)
	if v, _ := gaugeValue(t, tm.metric(t, otelstream.MetricCopiesWaiting), want); v != 0 {
		t.Errorf("copies waiting once both are parked = %d, want 0", v)
	}
	if err := h.Stop(); err != nil {
		t.Fatal(err)
	}
	if m, found := tm.find(t, otelstream.MetricCopiesWaiting); found {
		if _, ok := gaugeValue(t, m, want); ok {
			t.Error("a stopped consumer is still gauged")
		}
	}
}

// Poison gets a span too, marked poison, with no handler duration.
func TestPoisonSpan(t *testing.T) {
	tm := newTelemetry(t)
	h := streamtest.New(t, runtime.RabbitMQ, streamtest.WithQuietLogs(), streamtest.WithAppOptions(runtime.WithObserver(tm.obs)))
	jobs, dead := failingJobs(runtime.RabbitMQ, 3, time.Second)
	h.App().Mount(h.Broker(), jobs, dead)
	h.Start()
	if err := h.Broker().Publish(context.Background(), "jobs", runtime.Message{ID: "m-bad", Type: "Job", Body: []byte("{")}); err != nil {
		t.Fatal(err)
	}
	h.Wait()
	spans := tm.named("process jobs")
	if len(spans) != 1 {
		t.Fatalf("%d spans:%s", len(spans), describe(tm.spans.Ended()))
	}
	s := spans[0]
	if attr(s, "streamgen.poison") != "true" || attr(s, "streamgen.verdict") != "park" || s.Status().Code != codes.Error {
		t.Errorf("poison span %v %v", s.Attributes(), s.Status())
	}
	if m, ok := tm.find(t, otelstream.MetricHandlerDuration); ok {
		if n := histogramCount(t, m, map[string]string{"messaging.destination.name": "jobs"}); n != 0 {
			t.Errorf("%d handler durations for poison, want 0", n)
		}
	}
}

// A message published by another client, with the trace context in a
// header of another case (RabbitMQ keeps a name's case), continues that
// trace; a message without one starts a new trace, even when the
// handlers' context carries a span.
func TestExtractsTheSendersContext(t *testing.T) {
	tm := newTelemetry(t)
	h := streamtest.New(t, runtime.RabbitMQ, streamtest.WithQuietLogs(), streamtest.WithAppOptions(runtime.WithObserver(tm.obs)))
	h.App().Mount(h.Broker(), &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
		runtime.Handle("Job", runtime.Policy{}, func(context.Context, *job, runtime.Metadata) runtime.Outcome { return runtime.Ack() }),
	}})
	h.Start()
	ctx, sender := tm.tracer.Start(context.Background(), "other client")
	headers := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, headers)
	sender.End()
	for _, m := range []runtime.Message{
		{ID: "m-1", Type: "Job", Body: []byte(`{"id":1}`), Headers: map[string]string{"Traceparent": headers["traceparent"]}},
		{ID: "m-2", Type: "Job", Body: []byte(`{"id":2}`)},
	} {
		if err := h.Broker().Publish(context.Background(), "jobs", m); err != nil {
			t.Fatal(err)
		}
	}
	h.Wait()
	spans := tm.named("process jobs")
	if len(spans) != 2 {
		t.Fatalf("%d spans:%s", len(spans), describe(tm.spans.Ended()))
	}
	byID := map[string]trace.SpanContext{}
	parents := map[string]trace.SpanContext{}
	for _, s := range spans {
		byID[attr(s, "messaging.message.id")] = s.SpanContext()
		parents[attr(s, "messaging.message.id")] = s.Parent()
	}
	root := tm.named("other client")[0].SpanContext()
	if parents["m-1"].SpanID() != root.SpanID() || byID["m-1"].TraceID() != root.TraceID() {
		t.Errorf("m-1's span is not the child of the sender's")
	}
	if parents["m-2"].IsValid() || byID["m-2"].TraceID() == root.TraceID() {
		t.Errorf("m-2's span has parent %v: want a new trace", parents["m-2"])
	}
}

// Reconnects are counted and confirm latencies recorded by broker, with
// error.type on a failed publish.
func TestBrokerEvents(t *testing.T) {
	tm := newTelemetry(t)
	tm.obs.BrokerEvent(observe.Event{Kind: observe.Reconnected, Broker: string(runtime.RabbitMQ)})
	tm.obs.BrokerEvent(observe.Event{Kind: observe.Reconnected, Broker: string(runtime.RabbitMQ)})
	tm.obs.BrokerEvent(observe.Event{Kind: observe.Reconnected, Broker: string(runtime.ZeroMQ)})
	tm.obs.BrokerEvent(observe.Event{Kind: observe.Confirmed, Broker: string(runtime.RabbitMQ), Duration: 3 * time.Millisecond})
	tm.obs.BrokerEvent(observe.Event{Kind: observe.Confirmed, Broker: string(runtime.RabbitMQ), Duration: time.Second, Err: errors.New("nacked")})
	rc := tm.metric(t, otelstream.MetricReconnects)
	if v, _ := sumValue(t, rc, map[string]string{"messaging.system": "rabbitmq"}); v != 2 {
		t.Errorf("rabbitmq reconnects = %d, want 2", v)
	}
	if v, _ := sumValue(t, rc, map[string]string{"messaging.system": "zeromq"}); v != 1 {
		t.Errorf("zeromq reconnects = %d, want 1", v)
	}
	cd := tm.metric(t, otelstream.MetricConfirmDuration)
	if n := histogramCount(t, cd, map[string]string{"messaging.system": "rabbitmq"}); n != 2 {
		t.Errorf("%d confirm durations, want 2", n)
	}
	if n := histogramCount(t, cd, map[string]string{"error.type": "_OTHER"}); n != 1 {
		t.Errorf("%d failed confirms, want 1", n)
	}
}

// The Publisher encodes with the wrapped publisher's codec, and a failed
// publish ends its span with the error.
func TestPublisherKeepsTheCodecAndRecordsErrors(t *testing.T) {
	tm := newTelemetry(t)
	h := streamtest.New(t, runtime.RabbitMQ, streamtest.WithQuietLogs(), streamtest.WithCodec(upperJSON{}))
	p := tm.obs.Publisher(h.Broker())
	if _, ok := p.(interface{ Codec() runtime.Codec }).Codec().(upperJSON); !ok {
		t.Errorf("the Publisher's codec is %T, want the broker's", p.(interface{ Codec() runtime.Codec }).Codec())
	}
	errDown := errors.New("broker down")
	err := tm.obs.Publisher(failingPublisher{errDown}).Publish(context.Background(), "jobs", runtime.Message{Type: "Job"})
	if !errors.Is(err, errDown) {
		t.Fatalf("Publish: %v", err)
	}
	if c := tm.obs.Publisher(failingPublisher{errDown}).(interface{ Codec() runtime.Codec }).Codec(); c != nil {
		t.Errorf("codec of a publisher without one: %v", c)
	}
	s := tm.named("send jobs")
	if len(s) != 1 || s[0].Status().Code != codes.Error || s[0].Status().Description != "broker down" || attr(s[0], "messaging.system") != "" {
		t.Errorf("send spans %s", describe(s))
	}
}

type upperJSON struct{ runtime.JSON }

type failingPublisher struct{ err error }

func (p failingPublisher) Publish(context.Context, string, runtime.Message) error { return p.err }

func itoa(n int) string { return strconv.Itoa(n) }
