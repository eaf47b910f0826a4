package adapter_test

import (
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/adapter"
)

// quorumRetrying is a quorum subscription whose handler retries, with one
// retry delay of 5s.
func quorumRetrying(retry runtime.RetryPath) *runtime.Subscription {
	return &runtime.Subscription{Name: "jobs", QueueType: runtime.QuorumQueue, Retry: retry, RetryDelays: []time.Duration{5 * time.Second},
		Handlers: []runtime.Handler{(&probe{}).handler("Job", runtime.Policy{MaxAttempts: 3, DeadLetter: "jobs.dead"})}}
}

// The queue retries by itself only on a quorum queue of RabbitMQ 4.3 and
// later, with one delay, unless the subscription chose wait queues; and
// then it is declared with the delayed-retry arguments, "returned" so that
// a crash is never delayed, nor counted as a retry.
func TestBrokerRetryArguments(t *testing.T) {
	v43, v42 := adapter.RabbitMQVersion{Major: 4, Minor: 3}, adapter.RabbitMQVersion{Major: 4, Minor: 2}
	ladder := quorumRetrying(runtime.RetryAuto)
	ladder.RetryDelays = []time.Duration{time.Second, time.Minute}
	classic := quorumRetrying(runtime.RetryAuto)
	classic.QueueType = ""
	for _, c := range []struct {
		name  string
		sub   *runtime.Subscription
		v     adapter.RabbitMQVersion
		delay time.Duration
		why   string
	}{
		{"auto on 4.3", quorumRetrying(runtime.RetryAuto), v43, 5 * time.Second, ""},
		{"broker on 4.3", quorumRetrying(runtime.RetryBroker), v43, 5 * time.Second, ""},
		{"broker on 4.2", quorumRetrying(runtime.RetryBroker), v42, 0, "the broker is older than RabbitMQ 4.3, whose quorum queues delay a message handed back"},
		{"queue on 4.3", quorumRetrying(runtime.RetryQueue), v43, 0, ""},
		{"a ladder on 4.3", ladder, v43, 0, "a queue delays a message handed back by one delay, and retry_delay is a ladder"},
		{"classic on 4.3", classic, v43, 0, "a classic queue cannot delay a message itself"},
	} {
		t.Run(c.name, func(t *testing.T) {
			delay, ok, why := adapter.BrokerRetry(c.sub, c.v)
			if delay != c.delay || ok != (c.delay > 0) || why != c.why {
				t.Errorf("BrokerRetry: %v, %v, %q; want %v, %q", delay, ok, why, c.delay, c.why)
			}
			args := adapter.QueueArguments(c.sub, c.v)
			want := map[string]any{}
			if c.delay > 0 {
				want = map[string]any{"x-delayed-retry-type": "returned", "x-delayed-retry-min": int64(5000), "x-delayed-retry-max": int64(5000)}
			}
			got := map[string]any{}
			for _, k := range adapter.DelayedRetryArguments() {
				if v, ok := args[k]; ok {
					got[k] = v
				}
			}
			if !maps.Equal(got, want) {
				t.Errorf("delayed-retry arguments %v, want %v", got, want)
			}
		})
	}
}

// On a queue that retries by itself a failed attempt is handed back, with
// no copy; a message not started before shutdown goes back to its queue
// as a copy of the same attempt, since handed back it would count as a
// retry; a suspect's retry takes the wait queue.
func TestBrokerRetrySettles(t *testing.T) {
	// consumer is the Consumer of a quorum subscription whose handler
	// always fails, on a queue that retries by itself after 5s.
	consumer := func() (*adapter.Consumer, *recorder) {
		p := &probe{outcome: func(runtime.Metadata) runtime.Outcome { return runtime.Retry().Because(errors.New("the job failed")) }}
		sub := quorumRetrying(runtime.RetryAuto)
		sub.Handlers = []runtime.Handler{p.handler("Job", runtime.Policy{MaxAttempts: 3, DeadLetter: "jobs.dead"})}
		tr := &recorder{}
		c := adapter.NewConsumer(sub, runtime.Env{}, adapter.Rules{Kind: runtime.RabbitMQ}, tr)
		c.UseBrokerRetry(5 * time.Second)
		return c, tr
	}
	t.Run("retry", func(t *testing.T) {
		c, tr := consumer()
		d := delivery(1)
		d.BrokerRetries = 1 // handed back once already
		v, err := c.Handle(t.Context(), d)
		if err != nil || v.Kind != adapter.VerdictRetry || !v.ByBroker || v.Delay != 5*time.Second || v.Attempt != 2 {
			t.Errorf("verdict %+v, %v; want attempt 2 handed back for 5s", v, err)
		}
		if got := tr.actions(); got != "release" {
			t.Errorf("transport did %q, want release", got)
		}
	})
	t.Run("last attempt", func(t *testing.T) {
		c, tr := consumer()
		d := delivery(2) // one retry through a wait queue...
		d.BrokerRetries = 1
		v, _ := c.Handle(t.Context(), d) // ...and one by the queue: the third
		if v.Kind != adapter.VerdictPark || v.Attempt != 3 {
			t.Errorf("verdict %+v, want attempt 3 parked", v)
		}
		if len(tr.copies) != 1 || tr.copies[0].headers[runtime.HeaderDeadLetterAttempts] != "3" {
			t.Errorf("copies %+v, want the dead letter after 3 attempts", tr.copies)
		}
	})
	t.Run("shutdown", func(t *testing.T) {
		c, tr := consumer()
		d := delivery(1)
		d.BrokerRetries = 2
		v := c.Release(t.Context(), d)
		if v.Kind != adapter.VerdictRelease || v.Attempt != 3 {
			t.Errorf("verdict %+v, want attempt 3 released", v)
		}
		if got := tr.actions(); got != "send jobs, ack" {
			t.Errorf("transport did %q, want a copy to jobs, then the ack", got)
		}
		if len(tr.copies) != 1 || tr.copies[0].kind != adapter.ReleaseCopy || tr.copies[0].headers[runtime.RetryCountHeader] != "2" {
			t.Errorf("copies %+v, want a released copy with retry count 2", tr.copies)
		}
	})
	t.Run("suspect", func(t *testing.T) {
		c, tr := consumer()
		d := delivery(1)
		d.Suspect = true
		d.Headers[adapter.HeaderCrashes] = "1"
		v, _ := c.Handle(t.Context(), d)
		if v.Kind != adapter.VerdictRetry || v.ByBroker || v.Queue != "jobs.retry" {
			t.Errorf("verdict %+v, want a copy to jobs.retry", v)
		}
		if len(tr.copies) != 1 || tr.copies[0].kind != adapter.RetryCopy || tr.copies[0].queue != "jobs.retry" {
			t.Errorf("copies %+v, want the retry copy in jobs.retry", tr.copies)
		}
	})
}
