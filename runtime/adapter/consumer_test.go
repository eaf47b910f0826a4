package adapter_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/adapter"
	"github.com/streamgen/streamgen/runtime/internal/counters"
)

type job struct {
	ID uint64 `json:"id"`
}

type invoice struct {
	Amount int `json:"amount"`
}

// probe is a handler whose outcome the test sets, and which records what it
// was called with.
type probe struct {
	outcome func(md runtime.Metadata) runtime.Outcome
	calls   []runtime.Metadata
	jobs    []job
	ctxs    []context.Context
}

func (p *probe) handler(messageType string, policy runtime.Policy) runtime.Handler {
	return runtime.Handle(messageType, policy, func(ctx context.Context, j *job, md runtime.Metadata) runtime.Outcome {
		p.calls = append(p.calls, md)
		p.jobs = append(p.jobs, *j)
		p.ctxs = append(p.ctxs, ctx)
		if p.outcome == nil {
			return runtime.Ack()
		}
		return p.outcome(md)
	})
}

func returning(o runtime.Outcome) func(runtime.Metadata) runtime.Outcome {
	return func(runtime.Metadata) runtime.Outcome { return o }
}

var errBoom = errors.New("boom")

// delivery is the attempt-th delivery of job 7: it carries attempt-1 as
// its retry count.
func delivery(attempt int) *adapter.Delivery {
	return &adapter.Delivery{MessageID: "m-1", Type: "Job", ContentType: "application/json", Body: []byte(`{"id":7}`),
		Headers: retryCount(attempt - 1)}
}

func retryCount(n int) map[string]string {
	if n <= 0 {
		return map[string]string{}
	}
	return map[string]string{runtime.RetryCountHeader: strconv.Itoa(n)}
}

func okHandler(messageType string, p runtime.Policy) runtime.Handler {
	return runtime.Handle(messageType, p, func(context.Context, *job, runtime.Metadata) runtime.Outcome { return runtime.Ack() })
}

// recorder is a Transport and Acknowledger that records what the Consumer
// has it do.
type recorder struct {
	mu     sync.Mutex
	did    []string
	copies []sentCopy
	send   error // what Send returns
}

type sentCopy struct {
	kind    adapter.CopyKind
	queue   string
	id      string
	headers map[string]string
}

func (r *recorder) Send(_ context.Context, d *adapter.Delivery, cp *adapter.Copy, done func(error)) {
	r.mu.Lock()
	r.did = append(r.did, "send "+cp.Queue)
	r.copies = append(r.copies, sentCopy{kind: cp.Kind, queue: cp.Queue, id: cp.MessageID, headers: cp.Headers(d.Headers)})
	err := r.send
	r.mu.Unlock()
	done(err)
}

func (r *recorder) record(what string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.did = append(r.did, what)
	return nil
}

func (r *recorder) Ack(context.Context, *adapter.Delivery) error     { return r.record("ack") }
func (r *recorder) Reject(context.Context, *adapter.Delivery) error  { return r.record("reject") }
func (r *recorder) Requeue(context.Context, *adapter.Delivery) error { return r.record("requeue") }
func (r *recorder) Release(context.Context, *adapter.Delivery) error { return r.record("release") }

func (r *recorder) actions() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.did, ", ")
}

func newConsumer(sub *runtime.Subscription, kind runtime.BrokerKind) (*adapter.Consumer, *logCapture) {
	c, logs, _ := newRecorded(sub, kind)
	return c, logs
}

func newRecorded(sub *runtime.Subscription, kind runtime.BrokerKind) (*adapter.Consumer, *logCapture, *recorder) {
	logs := newLogCapture()
	tr := &recorder{}
	c := adapter.NewConsumer(sub, runtime.Env{Logger: logs.logger()}, adapter.Rules{Kind: kind}, tr)
	return c, logs, tr
}

// The retry state machine: what each outcome becomes under each policy, on
// the attempt given.
func TestProcessAppliesThePolicyToTheOutcome(t *testing.T) {
	fail := runtime.Retry().Because(errBoom)
	for _, tc := range []struct {
		name    string
		kind    runtime.BrokerKind
		policy  runtime.Policy
		out     runtime.Outcome
		attempt int
		want    adapter.Verdict
	}{
		{"ack", runtime.RabbitMQ, runtime.Policy{MaxAttempts: 3}, runtime.Ack(), 1,
			adapter.Verdict{Kind: adapter.VerdictAck, Attempt: 1, MaxAttempts: 3, MessageType: "Job"}},
		{"failure with attempts left retries through the wait queue (rabbitmq)", runtime.RabbitMQ, runtime.Policy{MaxAttempts: 3, DeadLetter: "dl"}, fail, 1,
			adapter.Verdict{Kind: adapter.VerdictRetry, Queue: "jobs.retry", Delay: runtime.DefaultRetryDelay, Reason: "boom", Attempt: 1, MaxAttempts: 3, MessageType: "Job"}},
		{"failure with attempts left retries via out_retry to the subscription itself (zeromq)", runtime.ZeroMQ, runtime.Policy{MaxAttempts: 3, OutRetry: "jobs"}, fail, 2,
			adapter.Verdict{Kind: adapter.VerdictRetry, Queue: "jobs", Reason: "boom", Attempt: 2, MaxAttempts: 3, MessageType: "Job"}},
		{"failure with attempts left retries via a named out_retry (zeromq)", runtime.ZeroMQ, runtime.Policy{MaxAttempts: 3, OutRetry: "jobs.retry"}, fail, 2,
			adapter.Verdict{Kind: adapter.VerdictRetry, Queue: "jobs.retry", Reason: "boom", Attempt: 2, MaxAttempts: 3, MessageType: "Job"}},
		{"the delay asked for is kept", runtime.ZeroMQ, runtime.Policy{MaxAttempts: 3, OutRetry: "jobs.retry"}, runtime.OutcomeOf(runtime.RetryAfter(30*time.Second, errBoom)), 1,
			adapter.Verdict{Kind: adapter.VerdictRetry, Delay: 30 * time.Second, Queue: "jobs.retry", Reason: "boom", Attempt: 1, MaxAttempts: 3, MessageType: "Job"}},
		{"a retry without a reason says so", runtime.RabbitMQ, runtime.Policy{MaxAttempts: 2}, runtime.Retry(), 1,
			adapter.Verdict{Kind: adapter.VerdictRetry, Queue: "jobs.retry", Delay: runtime.DefaultRetryDelay, Reason: "the handler asked for it", Attempt: 1, MaxAttempts: 2, MessageType: "Job"}},
		{"exhausted with a dead letter parks", runtime.RabbitMQ, runtime.Policy{MaxAttempts: 3, DeadLetter: "dl"}, fail, 3,
			adapter.Verdict{Kind: adapter.VerdictPark, Queue: "dl", Reason: "failed on attempt 3 of 3: boom", Attempt: 3, MaxAttempts: 3, MessageType: "Job"}},
		{"a count past the cap makes it the last attempt, never one beyond", runtime.RabbitMQ, runtime.Policy{MaxAttempts: 3, DeadLetter: "dl"}, fail, 9,
			adapter.Verdict{Kind: adapter.VerdictPark, Queue: "dl", Reason: "failed on attempt 3 of 3: boom", Attempt: 3, MaxAttempts: 3, MessageType: "Job"}},
		{"exhausted without a dead letter drops", runtime.ZeroMQ, runtime.Policy{MaxAttempts: 5, OutRetry: "jobs"}, fail, 5,
			adapter.Verdict{Kind: adapter.VerdictDrop, Reason: "failed on attempt 5 of 5: boom", Attempt: 5, MaxAttempts: 5, MessageType: "Job"}},
		{"no max_attempts with a dead letter parks at once", runtime.ZeroMQ, runtime.Policy{DeadLetter: "dl"}, fail, 1,
			adapter.Verdict{Kind: adapter.VerdictPark, Queue: "dl", Reason: "failed: boom", Attempt: 1, MaxAttempts: 1, MessageType: "Job"}},
		{"no max_attempts and no dead letter drops at once", runtime.ZeroMQ, runtime.Policy{}, fail, 1,
			adapter.Verdict{Kind: adapter.VerdictDrop, Reason: "failed, and nothing brings it back (no max_attempts, no dead_letter): boom", Attempt: 1, MaxAttempts: 1, MessageType: "Job"}},
		{"DeadLetterNow parks, skipping attempts", runtime.RabbitMQ, runtime.Policy{MaxAttempts: 5, DeadLetter: "dl"}, runtime.OutcomeOf(runtime.DeadLetter(errBoom)), 1,
			adapter.Verdict{Kind: adapter.VerdictPark, Queue: "dl", Reason: "dead-lettered by the handler: boom", Attempt: 1, MaxAttempts: 5, MessageType: "Job"}},
		{"DeadLetterNow without a dead letter rejects", runtime.RabbitMQ, runtime.Policy{MaxAttempts: 5}, runtime.DeadLetterNow(), 2,
			adapter.Verdict{Kind: adapter.VerdictReject, Reason: "dead-lettered by the handler: the handler asked for it", Attempt: 2, MaxAttempts: 5, MessageType: "Job"}},
		{"DropNow drops despite attempts and a dead letter", runtime.RabbitMQ, runtime.Policy{MaxAttempts: 5, DeadLetter: "dl"}, runtime.OutcomeOf(runtime.Drop(errBoom)), 1,
			adapter.Verdict{Kind: adapter.VerdictDrop, Reason: "dropped by the handler: boom", Attempt: 1, MaxAttempts: 5, MessageType: "Job"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &probe{outcome: returning(tc.out)}
			c, _ := newConsumer(&runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{p.handler("Job", tc.policy)}}, tc.kind)
			got, _ := c.Handle(t.Context(), delivery(tc.attempt))
			if got != tc.want {
				t.Errorf("verdict\n got %+v\nwant %+v", got, tc.want)
			}
			if len(p.calls) != 1 {
				t.Errorf("the handler was called %d times, want once", len(p.calls))
			}
		})
	}
}

// The handler gets the decoded message, the caller's context, and metadata
// describing the delivery. (A redelivered message reaches a handler on a
// quorum queue when the broker counts no crash: RabbitMQ 4.3 hands back a
// message released at shutdown so.)
func TestProcessPassesMessageContextAndMetadata(t *testing.T) {
	p := &probe{}
	c, _ := newConsumer(&runtime.Subscription{Name: "jobs", QueueType: runtime.QuorumQueue, Handlers: []runtime.Handler{p.handler("Job", runtime.Policy{MaxAttempts: 4})}}, runtime.RabbitMQ)
	type key struct{}
	ctx := context.WithValue(t.Context(), key{}, "caller")
	raw := &struct{ tag string }{"raw"}
	d := &adapter.Delivery{MessageID: "m-9", Type: "Job", Body: []byte(`{"id":42}`),
		Headers: map[string]string{"tenant": "acme", runtime.RetryCountHeader: "1"}, Redelivered: true, Raw: raw}
	if v, _ := c.Handle(ctx, d); v.Kind != adapter.VerdictAck {
		t.Fatalf("verdict %+v", v)
	}
	if len(p.jobs) != 1 || p.jobs[0].ID != 42 {
		t.Fatalf("the handler got %+v, want job 42", p.jobs)
	}
	if p.ctxs[0].Value(key{}) != "caller" {
		t.Error("the handler's context is not the caller's")
	}
	md := p.calls[0]
	if md.Subscription != "jobs" || md.MessageID != "m-9" || md.MessageType != "Job" || md.Attempt != 2 || md.MaxAttempts != 4 ||
		md.Headers["tenant"] != "acme" || !md.Redelivered || md.Raw != raw {
		t.Errorf("metadata %+v", md)
	}
}

// Poison never reaches a handler: it is parked on the dead-letter queue, or
// rejected without one.
func TestProcessPoison(t *testing.T) {
	for _, tc := range []struct {
		name        string
		kind        runtime.BrokerKind
		d           adapter.Delivery
		reason      string
		messageType string
		maxAttempts int
		queue       string // the dead-letter queue with dead letters configured
	}{
		{"oversize", runtime.RabbitMQ, adapter.Delivery{Type: "Job", Body: []byte(`{"id":1234567890}`)},
			"payload of 17 bytes exceeds max_payload_bytes=16", "Job", 1, "jobs.dead"},
		{"missing type on rabbitmq", runtime.RabbitMQ, adapter.Delivery{Body: []byte(`{}`)},
			"the message has no type, so no handler can take it", "", 1, "jobs.dead"},
		{"missing type on zeromq with two handlers", runtime.ZeroMQ, adapter.Delivery{Body: []byte(`{}`)},
			"the message has no type, so no handler can take it", "", 1, "jobs.dead"},
		{"unknown type", runtime.RabbitMQ, adapter.Delivery{Type: "Refund", Body: []byte(`{}`)},
			`no handler for message type "Refund" (this subscription handles "Job", "Invoice")`, "Refund", 1, "jobs.dead"},
		{"undecodable body goes to its handler's dead letter", runtime.ZeroMQ, adapter.Delivery{Type: "Invoice", Body: []byte(`{"amount":"ten"}`)},
			"body does not decode into Invoice: runtime: decode: json: ", "Invoice", 2, "invoices.dead"},
	} {
		for _, withDL := range []bool{true, false} {
			name := tc.name + map[bool]string{true: ", dead letters configured", false: ", no dead letters"}[withDL]
			t.Run(name, func(t *testing.T) {
				jobPolicy, invoicePolicy := runtime.Policy{MaxAttempts: 3}, runtime.Policy{MaxAttempts: 2}
				if withDL {
					jobPolicy.DeadLetter, invoicePolicy.DeadLetter = "jobs.dead", "invoices.dead"
				}
				if tc.kind == runtime.ZeroMQ {
					jobPolicy.OutRetry, invoicePolicy.OutRetry = "jobs", "jobs"
				}
				jobs := &probe{}
				var invoices int
				sub := &runtime.Subscription{Name: "jobs", MaxPayloadBytes: 16, Handlers: []runtime.Handler{
					jobs.handler("Job", jobPolicy),
					runtime.Handle("Invoice", invoicePolicy, func(context.Context, *invoice, runtime.Metadata) runtime.Outcome {
						invoices++
						return runtime.Ack()
					}),
				}}
				c, _ := newConsumer(sub, tc.kind)
				d := tc.d
				v, _ := c.Handle(t.Context(), &d)
				if len(jobs.calls) != 0 || invoices != 0 {
					t.Fatalf("a handler was called for poison")
				}
				if !v.Poison || !strings.HasPrefix(v.Reason, tc.reason) || v.MessageType != tc.messageType || v.Attempt != 1 || v.MaxAttempts != tc.maxAttempts {
					t.Errorf("verdict %+v: want poison, reason %q, type %q, attempt 1 of %d", v, tc.reason, tc.messageType, tc.maxAttempts)
				}
				switch {
				case withDL && (v.Kind != adapter.VerdictPark || v.Queue != tc.queue):
					t.Errorf("verdict %v to %q, want park to %s", v.Kind, v.Queue, tc.queue)
				case !withDL && (v.Kind != adapter.VerdictReject || v.Queue != ""):
					t.Errorf("verdict %v to %q, want reject", v.Kind, v.Queue)
				}
				if n := c.Metrics().Delivered.Load(); n != 1 {
					t.Errorf("Delivered = %d, want 1: poison counts as delivered", n)
				}
			})
		}
	}
}

// A ZeroMQ sender may leave the type out; a subscription with one handler
// knows what it means.
func TestProcessZeroMQSingleHandlerAcceptsAMissingType(t *testing.T) {
	p := &probe{}
	c, _ := newConsumer(&runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{p.handler("Job", runtime.Policy{})}}, runtime.ZeroMQ)
	d := delivery(1)
	d.Type = ""
	if v, _ := c.Handle(t.Context(), d); v.Kind != adapter.VerdictAck || v.MessageType != "Job" {
		t.Fatalf("verdict %+v, want ack as Job", v)
	}
	if len(p.calls) != 1 || p.calls[0].MessageType != "Job" || p.jobs[0].ID != 7 {
		t.Fatalf("calls %+v", p.calls)
	}
}

// A panic is recovered, logged with its stack, and is a failure like any
// other.
func TestProcessRecoversAPanic(t *testing.T) {
	for _, tc := range []struct {
		name    string
		policy  runtime.Policy
		attempt int
		kind    adapter.VerdictKind
		reason  string
	}{
		{"attempts left: retried", runtime.Policy{MaxAttempts: 2}, 1, adapter.VerdictRetry, "handler panicked: kaboom"},
		{"exhausted, no dead letter: dropped", runtime.Policy{MaxAttempts: 2}, 2, adapter.VerdictDrop, "failed on attempt 2 of 2: handler panicked: kaboom"},
		{"exhausted, dead letter: parked", runtime.Policy{DeadLetter: "dl"}, 1, adapter.VerdictPark, "failed: handler panicked: kaboom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &probe{outcome: func(runtime.Metadata) runtime.Outcome { panic("kaboom") }}
			c, logs := newConsumer(&runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{p.handler("Job", tc.policy)}}, runtime.RabbitMQ)
			v, _ := c.Handle(t.Context(), delivery(tc.attempt))
			if v.Kind != tc.kind || v.Reason != tc.reason || v.Poison {
				t.Errorf("verdict %+v, want %v with reason %q", v, tc.kind, tc.reason)
			}
			recs := logs.find("handler panicked; treating it as a failure")
			if len(recs) != 1 {
				t.Fatalf("%d panic log lines, want 1: %v", len(recs), logs.all())
			}
			r := recs[0]
			if r.level != slog.LevelError || r.attrs["subscription"] != "jobs" || r.attrs["message_id"] != "m-1" || r.attrs["panic"] != "kaboom" ||
				!strings.Contains(r.attrs["stack"], "TestProcessRecoversAPanic") {
				t.Errorf("panic log %v: want error level, subscription, message id, panic value and a stack naming the handler", r)
			}
		})
	}
}

func TestProcessDispatchesByMessageType(t *testing.T) {
	var got []string
	sub := &runtime.Subscription{Name: "mixed", Handlers: []runtime.Handler{
		runtime.Handle("Job", runtime.Policy{}, func(_ context.Context, j *job, md runtime.Metadata) runtime.Outcome {
			got = append(got, md.MessageType)
			return runtime.Ack()
		}),
		runtime.Handle("Invoice", runtime.Policy{MaxAttempts: 4}, func(_ context.Context, inv *invoice, md runtime.Metadata) runtime.Outcome {
			got = append(got, md.MessageType)
			if inv.Amount != 10 || md.MaxAttempts != 4 {
				t.Errorf("invoice handler got %+v, max %d", inv, md.MaxAttempts)
			}
			return runtime.Ack()
		}),
	}}
	c, _ := newConsumer(sub, runtime.RabbitMQ)
	c.Handle(t.Context(), &adapter.Delivery{Type: "Invoice", Body: []byte(`{"amount":10}`)})
	c.Handle(t.Context(), &adapter.Delivery{Type: "Job", Body: []byte(`{"id":1}`)})
	if strings.Join(got, ",") != "Invoice,Job" {
		t.Errorf("handled %v, want Invoice then Job", got)
	}
}

// Settle logs every retry, park, reject and drop with the subscription,
// message id and reason, at the right level, and counts it.
func TestSettleLogsAndCounts(t *testing.T) {
	for _, tc := range []struct {
		name    string
		v       adapter.Verdict
		err     error
		level   slog.Level
		msg     string
		attrs   map[string]string
		counter func(*counters.Subscription) int64
	}{
		{"ack", adapter.Verdict{Kind: adapter.VerdictAck, Attempt: 1, MaxAttempts: 1, MessageType: "Job"}, nil,
			slog.LevelDebug, "message handled", map[string]string{"attempt": "1", "message_type": "Job"},
			func(m *counters.Subscription) int64 { return m.Acked.Load() }},
		{"retry", adapter.Verdict{Kind: adapter.VerdictRetry, Delay: 10 * time.Second, Queue: "jobs.retry", Reason: "boom", Attempt: 1, MaxAttempts: 3, MessageType: "Job"}, nil,
			slog.LevelInfo, "message will be retried", map[string]string{"delay": "10s", "via": "jobs.retry", "reason": "boom", "max_attempts": "3"},
			func(m *counters.Subscription) int64 { return m.Retried.Load() }},
		{"park", adapter.Verdict{Kind: adapter.VerdictPark, Queue: "jobs.dead", Reason: "failed on attempt 3 of 3: boom", Attempt: 3, MaxAttempts: 3, MessageType: "Job"}, nil,
			slog.LevelWarn, "message parked", map[string]string{"dead_letter": "jobs.dead", "reason": "failed on attempt 3 of 3: boom", "poison": "false", "attempt": "3"},
			func(m *counters.Subscription) int64 { return m.Parked.Load() }},
		{"reject", adapter.Verdict{Kind: adapter.VerdictReject, Reason: "no handler", Poison: true, Attempt: 1, MaxAttempts: 1}, nil,
			slog.LevelWarn, "message rejected without requeue", map[string]string{"reason": "no handler", "poison": "true"},
			func(m *counters.Subscription) int64 { return m.Rejected.Load() }},
		{"drop", adapter.Verdict{Kind: adapter.VerdictDrop, Reason: "dropped by the handler: boom", Attempt: 2, MaxAttempts: 5, MessageType: "Job"}, nil,
			slog.LevelWarn, "message dropped", map[string]string{"reason": "dropped by the handler: boom"},
			func(m *counters.Subscription) int64 { return m.Dropped.Load() }},
		{"a verdict that could not be carried out", adapter.Verdict{Kind: adapter.VerdictPark, Queue: "jobs.dead", Reason: "boom", Attempt: 3, MaxAttempts: 3}, errors.New("dead-letter queue unroutable; nacked without requeue"),
			slog.LevelError, "could not park the message", map[string]string{"reason": "boom", "err": "dead-letter queue unroutable; nacked without requeue"},
			func(m *counters.Subscription) int64 { return m.Failed.Load() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, logs := newConsumer(&runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{(&probe{}).handler("Job", runtime.Policy{})}}, runtime.RabbitMQ)
			c.Settle(delivery(tc.v.Attempt), tc.v, tc.err)
			recs := logs.all()
			if len(recs) != 1 {
				t.Fatalf("%d log lines, want 1: %v", len(recs), recs)
			}
			r := recs[0]
			if r.level != tc.level || r.msg != tc.msg || r.attrs["subscription"] != "jobs" || r.attrs["message_id"] != "m-1" {
				t.Errorf("log %v: want %s %q naming subscription jobs and message m-1", r, tc.level, tc.msg)
			}
			for k, want := range tc.attrs {
				if r.attrs[k] != want {
					t.Errorf("log attribute %s = %q, want %q (%v)", k, r.attrs[k], want, r)
				}
			}
			if n := tc.counter(c.Metrics()); n != 1 {
				t.Errorf("counter = %d, want 1", n)
			}
			m := c.Metrics()
			total := m.Acked.Load() + m.Retried.Load() + m.Parked.Load() + m.Rejected.Load() + m.Dropped.Load() + m.Failed.Load()
			if total != 1 {
				t.Errorf("%d counters moved, want exactly 1", total)
			}
		})
	}
}

// Discard settles what never reached Process: counted as delivered, and
// dropped with a warning naming the subscription, the message and the
// reason (poison); or, when the adapter could not run it, counted failed
// with the error.
func TestDiscardCountsAndSettlesADrop(t *testing.T) {
	c, logs := newConsumer(&runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{(&probe{}).handler("Job", runtime.Policy{})}}, runtime.ZeroMQ)
	malformed := &adapter.Delivery{MessageID: "m-1"}
	v := c.Discard(malformed, "malformed message: 2 frames, want 3", nil)
	if want := (adapter.Verdict{Kind: adapter.VerdictDrop, Poison: true, Reason: "malformed message: 2 frames, want 3"}); v != want {
		t.Errorf("Discard = %+v, want %+v", v, want)
	}
	late := delivery(2)
	v = c.Discard(late, "not handled before the shutdown deadline", errBoom)
	if want := (adapter.Verdict{Kind: adapter.VerdictDrop, Reason: "not handled before the shutdown deadline", Attempt: 2, MaxAttempts: 1, MessageType: "Job"}); v != want {
		t.Errorf("Discard with an error = %+v, want %+v", v, want)
	}
	m := c.Metrics()
	if m.Delivered.Load() != 2 || m.Dropped.Load() != 1 || m.Failed.Load() != 1 {
		t.Errorf("counters delivered %d, dropped %d, failed %d; want 2, 1, 1", m.Delivered.Load(), m.Dropped.Load(), m.Failed.Load())
	}
	recs := logs.all()
	if len(recs) != 2 {
		t.Fatalf("%d log lines, want 2: %v", len(recs), recs)
	}
	if r := recs[0]; r.level != slog.LevelWarn || r.msg != "message dropped" || r.attrs["subscription"] != "jobs" ||
		r.attrs["message_id"] != "m-1" || r.attrs["reason"] != "malformed message: 2 frames, want 3" {
		t.Errorf("first line %v, want a drop warning naming jobs, m-1 and the reason", r)
	}
	if r := recs[1]; r.level != slog.LevelError || r.msg != "could not drop the message" || r.attrs["err"] != errBoom.Error() ||
		r.attrs["reason"] != "not handled before the shutdown deadline" || r.attrs["attempt"] != "2" {
		t.Errorf("second line %v, want an error naming the reason, the error and the attempt", r)
	}
}

func TestNewConsumerDefaultsAndAccessors(t *testing.T) {
	sub := &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{(&probe{}).handler("Job", runtime.Policy{})}}
	c := adapter.NewConsumer(sub, runtime.Env{}, adapter.Rules{Kind: runtime.RabbitMQ}, &recorder{})
	if c.Subscription() != sub || c.Name() != "jobs" || c.Logger() == nil || c.Metrics() == nil {
		t.Fatalf("accessors: %v %q %v %v", c.Subscription(), c.Name(), c.Logger(), c.Metrics())
	}
	// JSON decodes by default; a nil logger and metrics do not panic.
	if v, _ := c.Handle(t.Context(), delivery(1)); v.Kind != adapter.VerdictAck {
		t.Errorf("verdict %+v", v)
	}
	c.Settle(delivery(1), adapter.Verdict{Kind: adapter.VerdictDrop}, nil)

	// Consumers of one App share its Metrics, per broker and subscription.
	m := counters.NewSet()
	a := adapter.NewConsumer(sub, runtime.Env{Metrics: m}, adapter.Rules{Kind: runtime.RabbitMQ}, &recorder{})
	b := adapter.NewConsumer(sub, runtime.Env{Metrics: m}, adapter.Rules{Kind: runtime.RabbitMQ}, &recorder{})
	z := adapter.NewConsumer(sub, runtime.Env{Metrics: m}, adapter.Rules{Kind: runtime.ZeroMQ}, &recorder{})
	if a.Metrics() != b.Metrics() || a.Metrics() == z.Metrics() {
		t.Error("metrics are not shared per broker kind and subscription")
	}
}

func TestVerdictKindString(t *testing.T) {
	for k, want := range map[adapter.VerdictKind]string{
		adapter.VerdictAck: "ack", adapter.VerdictRetry: "retry", adapter.VerdictPark: "park",
		adapter.VerdictReject: "reject", adapter.VerdictDrop: "drop", adapter.VerdictRelease: "release", adapter.VerdictIsolate: "isolate",
		adapter.VerdictKind(42): "VerdictKind(42)",
	} {
		if got := k.String(); got != want {
			t.Errorf("String() = %q, want %q", got, want)
		}
	}
}

// settleAck returns a Consumer that logs at info level, a delivery and an
// ack's verdict for it.
func settleAck() (*adapter.Consumer, *adapter.Delivery, adapter.Verdict) {
	c := adapter.NewConsumer(&runtime.Subscription{Name: "jobs"},
		runtime.Env{Logger: slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))},
		adapter.Rules{Kind: runtime.RabbitMQ}, &recorder{})
	return c, &adapter.Delivery{MessageID: "m-1"}, adapter.Verdict{Kind: adapter.VerdictAck, Attempt: 1, MaxAttempts: 1, MessageType: "Job"}
}

// Each Settle of an ack counts once (BenchmarkSettleAck counts what it
// allocates).
func TestSettleOfAnAckCountsIt(t *testing.T) {
	c, d, v := settleAck()
	for range 3 {
		c.Settle(d, v, nil)
	}
	if got := c.Metrics().Acked.Load(); got != 3 {
		t.Fatalf("acked counter is %d after 3 acks", got)
	}
}

// BenchmarkSettleAck: an acknowledged message costs no allocation in
// Settle while debug logging is off: it runs once per message. make bench
// checks the allocs/op.
func BenchmarkSettleAck(b *testing.B) {
	c, d, v := settleAck()
	b.ReportAllocs()
	n := int64(0)
	for b.Loop() {
		c.Settle(d, v, nil)
		n++
	}
	if got := c.Metrics().Acked.Load(); got != n {
		b.Fatalf("acked counter is %d after %d acks", got, n)
	}
}

// A handler with no dead-letter queue that dead-letters a message on a
// RabbitMQ queue which dead-letters into the subscription's own
// dead-letter queue (another handler's) drops it: a reject would park it
// there without the reason.
func TestARejectOnAQueueThatDeadLettersIsADrop(t *testing.T) {
	p := &probe{outcome: returning(runtime.DeadLetterNow())}
	sub := &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
		okHandler("Invoice", runtime.Policy{DeadLetter: "jobs.dead"}),
		p.handler("Job", runtime.Policy{MaxAttempts: 2}),
	}}
	c, _, tr := newRecorded(sub, runtime.RabbitMQ)
	v, _ := c.Handle(t.Context(), delivery(1))
	if v.Kind != adapter.VerdictDrop || tr.actions() != "ack" {
		t.Errorf("verdict %v, did %q; want a drop, acked", v.Kind, tr.actions())
	}
	sub.Handlers = sub.Handlers[1:] // no dead-letter queue: the queue does not dead-letter
	c, _, tr = newRecorded(sub, runtime.RabbitMQ)
	if v, _ := c.Handle(t.Context(), delivery(1)); v.Kind != adapter.VerdictReject || tr.actions() != "reject" {
		t.Errorf("verdict %v, did %q; want a reject, for an operator's dead-letter exchange", v.Kind, tr.actions())
	}
}
