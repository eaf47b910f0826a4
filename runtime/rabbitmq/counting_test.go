package rabbitmq

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
)

// A worker stops while a retry copy waits; a new worker resumes at the
// real attempt and parks after exactly max_attempts deliveries in all.
func TestCountSurvivesAWorkerRestart(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	q := adm.queue("restart")
	policy := runtime.Policy{MaxAttempts: 3, DeadLetter: q + ".dl"}
	ttl := time.Second

	var first calls
	a1 := startApp(t, newTestBroker(), 20*time.Second, sub(q, ttl, handler("Job", policy, &first, alwaysFail)))
	a1.waitReady()
	publishJob(t, a1.broker, q, "Job", job{ID: 1})
	testkit.Eventually(t, "the first retry copy to wait", func() bool { return adm.ready(q+".retry") == 1 })
	if err := a1.stop(); err != nil {
		t.Fatalf("first worker stopped with %v", err)
	}
	if got := first.attempts(); !slices.Equal(got, []int{1}) {
		t.Fatalf("first worker saw attempts %v, want [1]", got)
	}

	var second calls
	a2 := runApp(t, newTestBroker(), sub(q, ttl, handler("Job", policy, &second, alwaysFail)))
	testkit.Eventually(t, "the message to be parked", func() bool { return adm.ready(q+".dl") == 1 })
	if got := second.attempts(); !slices.Equal(got, []int{2, 3}) {
		t.Errorf("second worker saw attempts %v, want [2 3]", got)
	}
	d, _ := adm.get(q + ".dl")
	if d.Headers[runtime.HeaderDeadLetterAttempts] != "3" {
		t.Errorf("parked after %v attempts, want 3", d.Headers[runtime.HeaderDeadLetterAttempts])
	}
	testkit.Eventually(t, "the park to be counted", func() bool { return a2.stats(q).Parked == 1 })
	if st := a2.stats(q); st.Retried != 1 || st.Parked != 1 {
		t.Errorf("second worker stats = %+v, want 1 retried, 1 parked", st)
	}
}

// Two workers on one queue share each message's count: every message is
// delivered exactly max_attempts times in all, as attempts 1..max, however
// the broker spreads the deliveries. The first worker takes every first
// attempt alone; the second joins while the copies wait, so later
// attempts are shared between the two.
func TestTwoWorkersShareTheCount(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	q := adm.queue("shared")
	const maxAttempts, messages = 3, 10
	policy := runtime.Policy{MaxAttempts: maxAttempts, DeadLetter: q + ".dl"}

	type seen struct{ worker, attempt int }
	var mu sync.Mutex
	byID := map[int][]seen{}
	worker := func(n int) runtime.Handler {
		return runtime.Handle("Job", policy, func(_ context.Context, j *job, md runtime.Metadata) runtime.Outcome {
			mu.Lock()
			byID[j.ID] = append(byID[j.ID], seen{n, md.Attempt})
			mu.Unlock()
			return runtime.Retry().Because(errFailed)
		})
	}
	ttl := 2 * time.Second
	a1 := runApp(t, newTestBroker(), sub(q, ttl, worker(1)))
	for i := range messages {
		publishJob(t, a1.broker, q, "Job", job{ID: i})
	}
	testkit.Eventually(t, "every first retry copy to wait", func() bool { return adm.ready(q+".retry") == messages })
	runApp(t, newTestBroker(), sub(q, ttl, worker(2)))
	testkit.Eventually(t, "every message to be parked", func() bool { return adm.ready(q+".dl") == messages })

	mu.Lock()
	defer mu.Unlock()
	split := 0
	for id := range messages {
		var attempts []int
		workers := map[int]bool{}
		for _, s := range byID[id] {
			attempts = append(attempts, s.attempt)
			workers[s.worker] = true
		}
		slices.Sort(attempts)
		if !slices.Equal(attempts, []int{1, 2, 3}) {
			t.Errorf("message %d: attempts %v, want [1 2 3]", id, attempts)
		}
		if len(workers) == 2 {
			split++
		}
	}
	if split == 0 {
		t.Errorf("no message was handled by both workers; the test shows nothing about sharing (deliveries: %v)", byID)
	}
}

// A retry copy in the wait queue carries the count and none of the
// broker's bookkeeping: no x-death, no x-first/last-death-*, no
// expiration.
func TestRetryCopyInTheWaitQueue(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	q := adm.queue("copy")
	var c calls
	a := runApp(t, newTestBroker(), sub(q, time.Hour, handler("Job", runtime.Policy{MaxAttempts: 3}, &c, alwaysFail)))
	adm.publish(q, amqp.Publishing{
		MessageId: "c-1", Type: "Job", ContentType: "application/json", Body: []byte(`{"id":1}`),
		Expiration: "3600000", CorrelationId: "corr-1", AppId: "test", Priority: 2,
		Headers: amqp.Table{
			"tenant": "acme",
			// A message that was dead-lettered before carries the
			// broker's history; a copy must leave it behind.
			"x-death":              []any{amqp.Table{"queue": "elsewhere", "reason": "rejected", "count": int64(1), "exchange": "", "routing-keys": []any{"elsewhere"}}},
			"x-first-death-queue":  "elsewhere",
			"x-first-death-reason": "rejected",
			"x-last-death-queue":   "elsewhere",
		},
	})
	testkit.Eventually(t, "the retry copy to wait", func() bool { return adm.ready(q+".retry") == 1 })
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	d, ok := adm.get(q + ".retry")
	if !ok {
		t.Fatal("the wait queue is empty")
	}
	if d.Headers[runtime.RetryCountHeader] != "1" {
		t.Errorf("copy carries retry count %v, want \"1\"", d.Headers[runtime.RetryCountHeader])
	}
	for k := range d.Headers {
		if k == "x-death" || strings.HasPrefix(k, "x-first-death") || strings.HasPrefix(k, "x-last-death") {
			t.Errorf("copy carries %s: %v", k, d.Headers[k])
		}
	}
	if d.Expiration != "" {
		t.Errorf("copy carries expiration %q", d.Expiration)
	}
	if d.MessageId != "c-1" || d.Type != "Job" || d.CorrelationId != "corr-1" || d.AppId != "test" || d.Priority != 2 ||
		d.ContentType != "application/json" || d.DeliveryMode != amqp.Persistent || d.Headers["tenant"] != "acme" || string(d.Body) != `{"id":1}` {
		t.Errorf("copy does not keep the original's properties: %+v", d)
	}
	if c.len() != 1 {
		t.Errorf("handler ran %d times, want 1", c.len())
	}
}
