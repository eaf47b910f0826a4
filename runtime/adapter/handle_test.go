package adapter_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/adapter"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

func failing(policy runtime.Policy) *runtime.Subscription {
	p := &probe{outcome: returning(runtime.Retry().Because(fmt.Errorf("line one\nline two")))}
	return &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{p.handler("Job", policy)}}
}

// Handle carries the verdict out through the Transport: what is sent
// where, and how the original is settled afterwards.
func TestHandleCarriesOutTheVerdict(t *testing.T) {
	for _, tc := range []struct {
		name    string
		kind    runtime.BrokerKind
		sub     *runtime.Subscription
		attempt int
		send    error
		want    string
		failed  bool
	}{
		{"ack", runtime.RabbitMQ, &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{})}}, 1, nil, "ack", false},
		{"retry: copy to the wait queue, then ack", runtime.RabbitMQ, failing(runtime.Policy{MaxAttempts: 2}), 1, nil, "send jobs.retry, ack", false},
		{"park: copy to the dead-letter queue, then ack", runtime.RabbitMQ, failing(runtime.Policy{MaxAttempts: 2, DeadLetter: "dl"}), 2, nil, "send dl, ack", false},
		{"exhausted without a dead letter: ack (drop)", runtime.RabbitMQ, failing(runtime.Policy{MaxAttempts: 2}), 2, nil, "ack", false},
		{"poison without a dead letter: reject", runtime.RabbitMQ, &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{okHandler("Other", runtime.Policy{})}}, 1, nil, "reject", false},
		{"an unroutable copy rejects the original", runtime.RabbitMQ, failing(runtime.Policy{MaxAttempts: 2}), 1, fmt.Errorf("returned: %w", adapter.ErrUnroutable), "send jobs.retry, reject", true},
		{"a failed copy requeues the original", runtime.RabbitMQ, failing(runtime.Policy{MaxAttempts: 2}), 1, fmt.Errorf("nacked"), "send jobs.retry, requeue", true},
		{"ack=auto settles nothing", runtime.RabbitMQ, &runtime.Subscription{Name: "jobs", AutoAck: true, Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{})}}, 1, nil, "", false},
		{"ack=auto cannot reject", runtime.RabbitMQ, &runtime.Subscription{Name: "jobs", AutoAck: true, Handlers: []runtime.Handler{okHandler("Other", runtime.Policy{})}}, 1, nil, "", true},
		{"zeromq: an ack does nothing", runtime.ZeroMQ, &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{})}}, 1, nil, "", false},
		{"zeromq: a retry without delay is sent at once, nothing settled", runtime.ZeroMQ, failing(runtime.Policy{MaxAttempts: 2, OutRetry: "jobs"}), 1, nil, "send jobs", false},
		{"zeromq: a failed copy is lost", runtime.ZeroMQ, failing(runtime.Policy{MaxAttempts: 2, OutRetry: "jobs"}), 1, fmt.Errorf("peer gone"), "send jobs", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _, tr := newRecorded(tc.sub, tc.kind)
			tr.send = tc.send
			c.Handle(t.Context(), delivery(tc.attempt))
			if got := tr.actions(); got != tc.want {
				t.Errorf("actions %q, want %q", got, tc.want)
			}
			if failed := c.Metrics().Failed.Load() == 1; failed != tc.failed {
				t.Errorf("failed = %v, want %v", failed, tc.failed)
			}
		})
	}
}

// The copies are built in one place, to the broker's header rules.
func TestCopiesFollowTheBrokersHeaderRules(t *testing.T) {
	headers := map[string]string{
		"X-Tenant": "acme", "x-death": "broker bookkeeping", "x-first-death-queue": "q",
		"X-Streamgen-Reason": "forged", "x-streamgen-source": "forged too", "X-Retry-Count": "1",
		runtime.HeaderReplays: "2",
	}
	for _, tc := range []struct {
		name    string
		kind    runtime.BrokerKind
		policy  runtime.Policy
		header  string // the retry count header in force
		attempt int
		want    map[string]string // headers the copy must carry
		absent  []string          // headers it must not
	}{
		// Every copy on every broker leaves behind the headers that
		// describe the original's past deliveries (headers.FromPast).
		{"rabbitmq retry copy", runtime.RabbitMQ, runtime.Policy{MaxAttempts: 3}, "", 2,
			map[string]string{"X-Tenant": "acme", "x-retry-count": "2", runtime.HeaderReplays: "2"},
			[]string{"x-death", "x-first-death-queue", "X-Retry-Count", "X-Streamgen-Reason", "x-streamgen-source"}},
		{"rabbitmq dead letter keeps the line break, strips forged x-streamgen-*", runtime.RabbitMQ, runtime.Policy{MaxAttempts: 2, DeadLetter: "dl"}, "", 2,
			map[string]string{"X-Tenant": "acme", runtime.HeaderDeadLetterReason: "failed on attempt 2 of 2: line one\nline two", runtime.HeaderDeadLetterSource: "jobs", runtime.HeaderDeadLetterAttempts: "2", runtime.HeaderDeadLetterPoison: "false",
				runtime.HeaderReplays: "2"}, // a replayed message parked again still shows its replays
			[]string{"x-death", "X-Streamgen-Reason", "X-Retry-Count", "x-retry-count"}},
		{"zeromq retry copy: names in lower case", runtime.ZeroMQ, runtime.Policy{MaxAttempts: 3, OutRetry: "jobs"}, "", 2,
			map[string]string{"x-tenant": "acme", "x-retry-count": "2"},
			[]string{"X-Tenant", "x-death", "x-first-death-queue", "x-streamgen-reason", "x-streamgen-source"}},
		{"zeromq dead letter: one-line reason", runtime.ZeroMQ, runtime.Policy{MaxAttempts: 2, OutRetry: "jobs", DeadLetter: "dl"}, "", 2,
			map[string]string{"x-tenant": "acme", runtime.HeaderDeadLetterReason: "failed on attempt 2 of 2: line one line two", runtime.HeaderDeadLetterSource: "jobs", runtime.HeaderReplays: "2"},
			[]string{"x-retry-count"}},
		{"zeromq renamed retry count header", runtime.ZeroMQ, runtime.Policy{MaxAttempts: 3, OutRetry: "jobs"}, "X-Attempts-Before", 2,
			map[string]string{"x-attempts-before": "2"},
			[]string{"x-retry-count"}}, // a count of a past delivery, whatever the subscription calls its own
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &recorder{}
			c := adapter.NewConsumer(failing(tc.policy), runtime.Env{Clock: streamtest.NewClock(time.Time{})},
				adapter.Rules{Kind: tc.kind, RetryCountHeader: tc.header}, tr)
			d := delivery(1)
			for k, v := range headers {
				d.Headers[k] = v
			}
			name := tc.header
			if name == "" {
				name = runtime.RetryCountHeader
			}
			d.Headers[strings.ToLower(name)] = fmt.Sprint(tc.attempt - 1)
			if tc.header != "" {
				d.Headers["x-retry-count"] = "1" // an ordinary header now
			}
			c.Handle(t.Context(), d)
			if len(tr.copies) != 1 {
				t.Fatalf("%d copies sent (%s), want 1", len(tr.copies), tr.actions())
			}
			got := tr.copies[0]
			if got.id != "m-1" {
				t.Errorf("copy id %q, want the original's", got.id)
			}
			for k, v := range tc.want {
				if got.headers[k] != v {
					t.Errorf("header %s = %q, want %q (all: %v)", k, got.headers[k], v, got.headers)
				}
			}
			for _, k := range tc.absent {
				if _, ok := got.headers[k]; ok {
					t.Errorf("header %s is on the copy: %v", k, got.headers)
				}
			}
		})
	}
}

// A handler on ZeroMQ sees header names as the real broker shows them.
func TestZeroMQHandlersSeeLowerCaseHeaderNames(t *testing.T) {
	p := &probe{}
	c, _ := newConsumer(&runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{p.handler("Job", runtime.Policy{})}}, runtime.ZeroMQ)
	d := delivery(1)
	d.Headers["X-Tenant"] = "acme"
	c.Handle(t.Context(), d)
	if len(p.calls) != 1 || p.calls[0].Headers["x-tenant"] != "acme" {
		t.Fatalf("handler saw %v, want x-tenant", p.calls)
	}
}

// One rule for the retry count on every broker: unreadable is poison, a
// count beyond the cap (or beyond the policy's) is the last attempt.
func TestRetryCountRule(t *testing.T) {
	for _, kind := range []runtime.BrokerKind{runtime.RabbitMQ, runtime.ZeroMQ} {
		for _, bad := range []string{"abc", "-1", "1.5", " 1", "+1", "0x2"} {
			t.Run(fmt.Sprintf("%s/%q", kind, bad), func(t *testing.T) {
				policy := runtime.Policy{MaxAttempts: 3, DeadLetter: "dl"}
				if kind == runtime.ZeroMQ {
					policy.OutRetry = "jobs"
				}
				p := &probe{}
				c, logs, tr := newRecorded(&runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{p.handler("Job", policy)}}, kind)
				d := delivery(1)
				d.Headers[runtime.RetryCountHeader] = bad
				v, _ := c.Handle(t.Context(), d)
				if len(p.calls) != 0 || v.Kind != adapter.VerdictPark || !v.Poison || !strings.Contains(v.Reason, "retry count header") {
					t.Errorf("verdict %+v, handler calls %d: want poison parked without a call", v, len(p.calls))
				}
				if len(tr.copies) != 1 || tr.copies[0].queue != "dl" {
					t.Errorf("copies %+v, want one to dl", tr.copies)
				}
				if recs := logs.find("message parked"); len(recs) != 1 || recs[0].attrs["message_id"] != "m-1" {
					t.Errorf("log %v, want one park line naming the message", logs.all())
				}
			})
		}
		for _, big := range []string{"99999999999999999999", "1073741824", "10"} {
			t.Run(fmt.Sprintf("%s/%s", kind, big), func(t *testing.T) {
				policy := runtime.Policy{MaxAttempts: 3, DeadLetter: "dl"}
				if kind == runtime.ZeroMQ {
					policy.OutRetry = "jobs"
				}
				p := &probe{outcome: returning(runtime.Retry())}
				c, _, _ := newRecorded(&runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{p.handler("Job", policy)}}, kind)
				d := delivery(1)
				d.Headers[runtime.RetryCountHeader] = big
				v, _ := c.Handle(t.Context(), d)
				if len(p.calls) != 1 || p.calls[0].Attempt != 3 || v.Kind != adapter.VerdictPark || v.Attempt != 3 {
					t.Errorf("calls %v, verdict %+v: want the 3rd (last) attempt, then parked", p.calls, v)
				}
			})
		}
	}
	// A broker's own cycle count (RabbitMQ x-death) is capped the same way.
	p := &probe{outcome: returning(runtime.Retry())}
	c, _ := newConsumer(&runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{p.handler("Job", runtime.Policy{MaxAttempts: 3})}}, runtime.RabbitMQ)
	d := delivery(1)
	d.RetryCycles = 10
	if v, _ := c.Handle(t.Context(), d); v.Attempt != 3 || v.Kind != adapter.VerdictDrop {
		t.Errorf("verdict %+v for 10 forged cycles, want attempt 3 of 3, dropped", v)
	}
}

// Odd bodies are poison with the reason: a JSON null, a content type the
// codec cannot read.
func TestOddBodiesArePoison(t *testing.T) {
	for _, tc := range []struct {
		name, contentType, body, reason string
		poison                          bool
	}{
		{"null", "application/json", "null", "the body is null", true},
		{"null with spaces", "", " null\n", "the body is null", true},
		{"msgpack", "application/msgpack", `{"id":7}`, `content type "application/msgpack" cannot be read by the codec`, true},
		{"json with a charset", "application/json; charset=utf-8", `{"id":7}`, "", false},
		{"a +json type", "application/vnd.acme+json", `{"id":7}`, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &probe{}
			c, _ := newConsumer(&runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{p.handler("Job", runtime.Policy{DeadLetter: "dl"})}}, runtime.RabbitMQ)
			d := delivery(1)
			d.ContentType, d.Body = tc.contentType, []byte(tc.body)
			v, _ := c.Handle(t.Context(), d)
			if v.Poison != tc.poison || !strings.Contains(v.Reason, tc.reason) {
				t.Errorf("verdict %+v, want poison=%v with %q", v, tc.poison, tc.reason)
			}
			if tc.poison == (len(p.calls) > 0) {
				t.Errorf("handler calls %d", len(p.calls))
			}
		})
	}
}

// A ZeroMQ retry copy waits out its delay on the App's clock; Stop loses
// what still waits, settling each as lost with the real attempt numbers.
func TestZeroMQDelayedCopies(t *testing.T) {
	clock := streamtest.NewClock(time.Time{})
	logs := newLogCapture()
	tr := &recorder{}
	p := &probe{outcome: returning(runtime.OutcomeOf(runtime.RetryAfter(time.Minute, errBoom)))}
	c := adapter.NewConsumer(&runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{p.handler("Job", runtime.Policy{MaxAttempts: 5, OutRetry: "jobs"})}},
		runtime.Env{Logger: logs.logger(), Clock: clock}, adapter.Rules{Kind: runtime.ZeroMQ}, tr)
	c.Handle(t.Context(), delivery(1))
	c.Handle(t.Context(), delivery(2))
	if tr.actions() != "" || c.WaitingCopies() != 2 {
		t.Fatalf("sent %q, waiting %d: want nothing sent before the delay, 2 waiting", tr.actions(), c.WaitingCopies())
	}
	clock.Advance(time.Minute)
	if tr.actions() != "send jobs, send jobs" || c.Metrics().Retried.Load() != 2 {
		t.Fatalf("after the delay: %q, retried %d", tr.actions(), c.Metrics().Retried.Load())
	}
	c.Handle(t.Context(), delivery(3))
	if n := c.Stop(); n != 1 {
		t.Fatalf("Stop lost %d, want 1", n)
	}
	if err := c.WaitCopies(t.Context()); err != nil {
		t.Fatal(err)
	}
	recs := logs.find("could not retry the message")
	if len(recs) != 1 || recs[0].attrs["attempt"] != "3" || recs[0].attrs["max_attempts"] != "5" || !strings.Contains(recs[0].attrs["err"], "copy is lost") {
		t.Errorf("loss log %v, want attempt 3 of 5 and the reason", logs.all())
	}
	// After Stop a new copy is lost at once.
	c.Handle(t.Context(), delivery(4))
	if c.Metrics().Failed.Load() != 2 {
		t.Errorf("failed %d, want 2", c.Metrics().Failed.Load())
	}
}

// Once the handlers' context has ended, a delivery is no longer settled
// where the broker can take it back, and reported lost where it cannot.
func TestHandleAfterTheShutdownDeadline(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for _, kind := range []runtime.BrokerKind{runtime.RabbitMQ, runtime.ZeroMQ} {
		p := &probe{}
		c, logs, tr := newRecorded(&runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{p.handler("Job", runtime.Policy{})}}, kind)
		c.Handle(ctx, delivery(1))
		if len(p.calls) != 0 || tr.actions() != "" || c.Metrics().Failed.Load() != 1 {
			t.Errorf("%s: calls %d, actions %q, failed %d", kind, len(p.calls), tr.actions(), c.Metrics().Failed.Load())
		}
		if len(logs.all()) != 1 {
			t.Errorf("%s: logs %v", kind, logs.all())
		}
	}
}

// A flood of poison is counted in full, but logged at a bounded rate; the
// first line after a quiet spell says how many were left out.
func TestPoisonLogsAreRateLimited(t *testing.T) {
	clock := streamtest.NewClock(time.Time{})
	logs := newLogCapture()
	c := adapter.NewConsumer(&runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{})}},
		runtime.Env{Logger: logs.logger(), Clock: clock}, adapter.Rules{Kind: runtime.ZeroMQ}, &recorder{})
	for i := range 1000 {
		d := delivery(1)
		d.MessageID, d.Type = fmt.Sprint("bad-", i), "Refund"
		c.Handle(t.Context(), d)
	}
	if n := c.Metrics().Rejected.Load(); n != 1000 {
		t.Fatalf("rejected %d, want all 1000 counted", n)
	}
	lines := logs.find("message rejected without requeue")
	if len(lines) != 100 {
		t.Fatalf("%d poison lines for 1000 messages at once, want the burst of 100", len(lines))
	}
	clock.Advance(time.Second)
	d := delivery(1)
	d.MessageID, d.Type = "later", "Refund"
	c.Handle(t.Context(), d)
	lines = logs.find("message rejected without requeue")
	if last := lines[len(lines)-1]; last.attrs["message_id"] != "later" || last.attrs["poison_lines_left_out"] != "900" {
		t.Errorf("line after the quiet spell %v, want it to name later and 900 lines left out", last)
	}
}
